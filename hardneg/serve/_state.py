"""The service's shared handles: store, id lookup, search modes, models, jobs."""

from __future__ import annotations

import ipaddress
import logging
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._batch import MicroBatcher
from ._errors import ServeError
from ._images import ImageQuery, Thumbnails
from ._jobs import JobManager
from ._modes import open_modes
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
    max_image_pixels: int = 40_000_000
    workers: int = 2
    thumbnail_size: int = 96
    concept_iterations: int = 10
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


class ServeState:
    def __init__(self, store_path, models_dir=None, settings: Settings | None = None):
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
        self.modes = open_modes(self.store, self.models_dir, self.matrix)
        if self.settings.nprobe is not None:
            ham = self.modes.get("hamming")
            if ham is None or not getattr(ham, "approximate", False):
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
        self.started = time.time()
        logger.info("serving %s (%d items, modes: %s)", self.store.path, len(ids), ", ".join(self.modes))

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
        rows, scores = self.modes[mode_name].search(np.stack(vectors), k, exact=exact, nprobe=nprobe)
        return list(zip(rows, scores))

    def close(self) -> None:
        if self.batcher is not None:
            self.batcher.close()
        self.jobs.shutdown()
        self.store.close()
