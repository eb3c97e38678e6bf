"""The service's shared handles: store, id lookup, search modes, models, jobs."""

from __future__ import annotations

import ipaddress
import logging
import re
import shutil
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._imaging import MAX_IMAGE_PIXELS
from ..concept import DEFAULT_N_ITER
from ._batch import MicroBatcher
from ._errors import ServeError
from ._images import ImageQuery, Thumbnails
from ._jobs import JobManager
from ._modes import HammingMode, open_modes
from ._registry import ModelRegistry

logger = logging.getLogger(__name__)

# Ids may be relative paths ("cats/x.jpg", as extraction writes them); they are only
# looked up, never joined to a path, but "." / ".." segments, absolute paths,
# backslashes and control characters are refused outright.
ID_RE = re.compile(r"^[^\x00-\x1f\x7f\\/][^\x00-\x1f\x7f\\]{0,511}$")
MAX_K = 1000


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_models_dir(store_path) -> Path:
    """``<store>.models`` beside the store folder."""
    p = Path(store_path).resolve()
    return p.with_name(p.name + ".models")


@dataclass
class Settings:
    host: str = "127.0.0.1"
    token: str | None = None
    max_upload_bytes: int = 8 << 20
    max_image_pixels: int = MAX_IMAGE_PIXELS
    workers: int = 2
    thumbnail_size: int = 96
    concept_iterations: int = DEFAULT_N_ITER
    concept_bins: int = 100
    concept_positives: int = 100
    memory_bytes: int = 2 << 30
    nprobe: int | None = None
    batch_window_s: float = 0.001
    max_batch: int = 64
    batch_workers: int = 2

    @property
    def token_required(self) -> bool:
        return self.token is not None


#: ``mode_files`` keys -> (file name a search mode opens in its folder, sidecars beside it)
MODE_FILES = {"hasher": ("hasher.npz", ()), "index": ("hamming.index", (".ids.npz",)),
              "similarity_index": ("inverted.npz", ())}


def _stage_mode_files(models_dir: Path, mode_files: dict) -> Path:
    """A private folder where the search modes find the given files under their fixed names
    (symbolic links; a file not given links to ``models_dir``'s own, when it has one)."""
    unknown = set(mode_files) - set(MODE_FILES)
    if unknown:
        raise ValueError(f"mode_files: unknown keys {sorted(unknown)} (expected {', '.join(MODE_FILES)})")
    stage = Path(tempfile.mkdtemp(prefix="hardneg-serve-modes-"))
    try:
        for key, (name, sidecars) in MODE_FILES.items():
            given = mode_files.get(key)
            src = Path(given).resolve() if given is not None else (models_dir / name).resolve()
            if given is not None and not src.is_file():
                raise ValueError(f"{key.replace('_', '-')} {given}: no such file")
            if not src.is_file():
                continue
            (stage / name).symlink_to(src)
            for suffix in sidecars:
                side = src.with_name(src.name + suffix)
                if not side.is_file():
                    raise ValueError(f"{key.replace('_', '-')} {given or src}: its sidecar {side.name} is missing beside "
                                     "it (`hardneg hash index -o FILE` writes FILE and FILE.ids.npz; keep them together)")
                (stage / (name + suffix)).symlink_to(side)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return stage


class ServeState:
    def __init__(self, store_path, models_dir=None, settings: Settings | None = None, mode_files: dict | None = None):
        from hardneg.store import FeatureStore

        self.settings = settings or Settings()
        self.store = FeatureStore.open(store_path)
        self.models_dir = Path(models_dir) if models_dir is not None else default_models_dir(store_path)
        self.models_dir.mkdir(parents=True, exist_ok=True)
        ids = self.store.ids()
        self.ids = ids
        self.row_of = {str(v): i for i, v in enumerate(ids)}
        items = self.store.items
        self.labels = self.store.labels()
        self.tags = [t or [] for t in items.column("tags").to_pylist()]
        self.splits = items.column("split").to_pylist() if "split" in items.column_names else [None] * len(ids)
        self.class_names = self.store.attrs.get("class_names")
        self.tag_counts = Counter(t for ts in self.tags for t in ts)
        # Dense stores that fit the budget are held in memory once: every query, concept
        # training (pool and candidates) and concept scan then skips Zarr decoding.
        self.matrix = None
        if not self.store.is_sparse and len(ids) * self.store.dim * 4 <= self.settings.memory_bytes and len(ids):
            self.matrix = np.ascontiguousarray(self.store.to_numpy(), dtype=np.float32)
        # --hasher / --index / --similarity-index: the modes open them through links under their fixed names
        given = {k: v for k, v in (mode_files or {}).items() if v is not None}
        self._stage = _stage_mode_files(self.models_dir, given) if given else None
        self.modes = open_modes(self.store, self._stage or self.models_dir, self.matrix)
        if self.settings.nprobe is not None:
            ham = self.modes.get("hamming")
            if not isinstance(ham, HammingMode) or not ham.approximate:
                logger.warning("nprobe=%d ignored: no approximate Hamming index here", self.settings.nprobe)
            else:
                ham.set_nprobe(self.settings.nprobe)
        # concurrent queries of batched modes share one search call (max_batch=1: each query alone)
        self.batcher = None
        if self.settings.max_batch > 1:
            self.batcher = MicroBatcher(self._search_batch, window_s=self.settings.batch_window_s,
                                        max_batch=self.settings.max_batch, workers=self.settings.batch_workers,
                                        name="hardneg-search")
        self.registry = ModelRegistry(self.models_dir)
        self.jobs = JobManager(self.settings.workers)
        self.thumbs = Thumbnails(self.store, self.settings.thumbnail_size, max_pixels=self.settings.max_image_pixels)
        self.image_query = ImageQuery(self.store)
        # Concepts learn from the train split when the store has one (as `hardneg concept train`)
        self.concept_split = "train" if "train" in self.splits else None
        # The CNN / BoW extractor takes seconds to load: load it now, in the background, so
        # the first upload does not wait for it (/api/info says when it is ready).
        self.extractor_error: str | None = None
        self._extractor_ready = threading.Event()
        if self.image_query.kind not in (None, "pixels"):
            threading.Thread(target=self._load_extractor, name="hardneg-extractor", daemon=True).start()
        else:
            self._extractor_ready.set()
        self.started = time.time()
        logger.info("serving %s (%d items, modes: %s)", self.store.path, len(ids), ", ".join(self.modes))

    def _load_extractor(self) -> None:
        q = self.image_query
        try:
            size = q.target_size or 64
            noise = np.random.default_rng(0).integers(0, 256, (size, size, 3), dtype=np.uint8)
            q.transform(noise)  # builds the extractor once (what takes seconds) and warms it up
        except ServeError as exc:  # it cannot be built here: uploads answer the same message
            self.extractor_error = exc.message
            logger.error("%s", exc.message)
        except Exception:  # noqa: BLE001 - built, but the warm-up image was refused: uploads will tell
            logger.debug("feature extractor warm-up image refused", exc_info=True)
        finally:
            self._extractor_ready.set()

    @property
    def extractor_status(self) -> str:
        """``none`` (no uploads), ``loading``, ``ready`` or ``failed``."""
        if not self.image_query.available:
            return "none"
        if not self._extractor_ready.is_set():
            return "loading"
        return "failed" if self.extractor_error else "ready"

    # ---- lookups that raise the right HTTP error
    def row(self, item_id: str) -> int:
        if (not isinstance(item_id, str) or not ID_RE.fullmatch(item_id)
                or any(part in (".", "..", "") for part in item_id.split("/"))):
            raise ServeError(422, f"item id {item_id!r}: not a valid id (no '.' or '..' path parts, leading '/', "
                                  "'\\' or control characters)")
        row = self.row_of.get(item_id)
        if row is None:
            raise ServeError(404, f"item {item_id!r} is not in the store")
        return row

    def rows(self, item_ids, what: str) -> np.ndarray:
        return np.array([self.row(i) for i in item_ids], dtype=np.int64)

    def mode(self, name: str):
        mode = self.modes.get(name)
        if mode is None:
            raise ServeError(404, f"search mode {name!r} is not available here (available: {', '.join(self.modes)})")
        return mode

    def check_k(self, k: int) -> int:
        if k < 1 or k > min(MAX_K, len(self.ids)):
            raise ServeError(422, f"k={k}: must be between 1 and {min(MAX_K, len(self.ids))}")
        return k

    def check_page(self, k: int, offset: int) -> tuple[int, int]:
        """A page of ranked results: ``k`` of them from position ``offset`` (within the first MAX_K)."""
        self.check_k(k)
        if offset < 0 or offset + k > MAX_K:
            raise ServeError(422, f"offset={offset}, k={k}: a page must lie within the first {MAX_K} results "
                                  f"(0 <= offset and offset + k <= {MAX_K})")
        return k, offset

    def vector(self, row: int) -> np.ndarray:
        if self.matrix is not None:
            return self.matrix[row]
        x = self.store.take(np.array([row]))
        x = x.toarray() if hasattr(x, "toarray") else np.asarray(x)
        return np.asarray(x[0], np.float32)

    def item(self, row: int, score=None) -> dict:
        label = int(self.labels[row])
        name = None
        if self.class_names and 0 <= label < len(self.class_names):
            name = self.class_names[label]
        return {"id": str(self.ids[row]), "label": label, "label_name": name, "tags": self.tags[row],
                "split": self.splits[row], "score": None if score is None else float(score)}

    @property
    def data(self):
        """What concept training and scanning read: the in-memory rows, or the store."""
        return self.store if self.matrix is None else self.matrix

    def _search_batch(self, key, vectors: list) -> list:
        """The micro-batcher's call: queries sharing (mode, k, exact, nprobe), searched at once."""
        mode_name, k, exact, nprobe = key
        res = self.modes[mode_name].search(np.stack(vectors), k, exact=exact, nprobe=nprobe)
        return [(q.rows, q.scores) for q in res.queries()]

    def close(self) -> None:
        if self.batcher is not None:
            self.batcher.close()
        self.jobs.shutdown()
        self.store.close()
        if self._stage is not None:
            shutil.rmtree(self._stage, ignore_errors=True)
