"""The extraction pipeline: images in, a FeatureStore out; batched and resumable.

A run resolves its inputs to items with string ids (relative paths for
files, row numbers for arrays), opens or creates the store, skips every id
already in it, and extracts the rest batch by batch; each batch is one
atomically committed append, so a killed run loses at most the batch in
flight and a rerun picks up where it stopped. A file that cannot be
decoded is skipped and listed in the returned summary; nothing else is lost.

An extractor is any object with ``dim``, ``sparse``, ``config()`` (a JSON
dict saved in the store and compared on resume) and ``transform(images)``
returning an ``(n, dim)`` array or CSR matrix. Extractors that learn from
data (the bag of visual words) also offer ``is_fitted()``,
``fit_images(images)``, ``save_state(folder)`` and ``load_state(folder)``;
their learned state (the codebook) is saved inside the store folder.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._validation import check_positive_int, check_random_state
from ..store import FeatureStore
from ._images import ImageItem, ImageReadError, resolve_images

logger = logging.getLogger(__name__)

# attrs["image_paths"] of stores whose image paths are relative to the store folder.
PATHS_RELATIVE_TO_STORE = "relative-to-store"

__all__ = ["ExtractionSummary", "extract_to_store", "extractor_from_store", "folder_labels", "settings_difference", "stored_paths"]


@dataclass
class ExtractionSummary:
    """What one extraction run did."""

    store_path: str
    n_inputs: int = 0
    n_added: int = 0
    n_already: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (id, reason)
    seconds: float = 0.0

    @property
    def n_failed(self) -> int:
        return len(self.failed)

    def __str__(self) -> str:
        lines = [
            f"{self.store_path}: {self.n_added} added, {self.n_already} already there, "
            f"{self.n_failed} skipped (unreadable) of {self.n_inputs} inputs in {self.seconds:.1f}s"
        ]
        lines += [f"  skipped {item_id}: {reason}" for item_id, reason in self.failed]
        return "\n".join(lines)


def folder_labels(items: Sequence[ImageItem]) -> tuple[np.ndarray, list[str]]:
    """Labels from each id's first folder (``cats/x.jpg`` -> ``cats``); ids at top level get -1."""
    tops = [it.id.split("/", 1)[0] if "/" in it.id else None for it in items]
    names = sorted({t for t in tops if t is not None})
    index = {n: k for k, n in enumerate(names)}
    return np.array([index[t] if t is not None else -1 for t in tops], dtype=np.int64), names


def _canonical(cfg: dict) -> str:
    return json.dumps(cfg, sort_keys=True)


def stored_paths(paths, store_path, attrs: dict) -> list:
    """Image paths as recorded in a store: relative to the store folder when the
    store says so (``attrs["image_paths"]``, every store made since), so that
    they resolve from any working directory and survive moving the store and
    the images together; as given for older stores."""
    if attrs.get("image_paths") != PATHS_RELATIVE_TO_STORE:
        return list(paths)
    base = os.path.abspath(store_path)
    return [None if p is None else Path(os.path.relpath(os.path.abspath(p), base)).as_posix() for p in paths]


def extractor_from_store(store, *, model=None, trust_model: bool = False, num_threads: int | None = None):
    """Rebuild the extractor a store was made with, from its ``attrs["extractor"]``.

    Queries must be extracted exactly like the stored rows: same network,
    input size, normalization, codebook (loaded from the store folder).
    A custom torch model is recorded by name only: pass its file as
    ``model`` (and ``trust_model=True``). The rebuilt settings are checked
    against the recorded ones.
    """
    from ._cnn import EfficientNetLite0, TorchExtractor
    from ._codebook import BagOfWords
    from ._dsift import DenseSift
    from ._vlad import VLAD

    cfg = store.attrs.get("extractor")
    if not isinstance(cfg, dict):
        raise ValueError(f"{store.path}: the store records no extractor settings (it was not made by extracting images)")
    kind = cfg.get("extractor")
    try:
        if kind == "cnn":
            if cfg.get("model") == "efficientnet-lite0-imagenet" and model is None:
                ext = EfficientNetLite0(input_size=cfg["input_size"], l2_normalize=cfg["l2_normalize"], resize=cfg["resize"], num_threads=num_threads)
            else:
                if model is None:
                    raise ValueError(f"{store.path}: made with the torch model {cfg.get('model')!r}; give its file (--model FILE --trust-model)")
                ext = TorchExtractor(model, input_size=cfg["input_size"], mean=cfg["mean"], std=cfg["std"], l2_normalize=cfg["l2_normalize"],
                                     resize=cfg["resize"], num_threads=num_threads, name=cfg.get("model"), trust_model=trust_model)
        elif kind in ("bow", "vlad"):
            d = cfg["descriptor"]
            if d.get("descriptor") != "dense-sift":
                raise ValueError(f"{store.path}: made with the descriptor {d.get('descriptor')!r}, which cannot be rebuilt from the store")
            sift = DenseSift(step=d["step"], bin_sizes=tuple(d["bin_sizes"]), max_side=d["max_side"], resize_to=d["resize_to"],
                             drop_flat=d["drop_flat"], root_sift=d["root_sift"])
            if kind == "bow":
                ext = BagOfWords(sift, n_words=cfg["n_words"], weighting=cfg["weighting"], normalize=cfg["normalize"], sparse=cfg["sparse"],
                                 tree_branching=cfg.get("tree_branching"))
            else:
                ext = VLAD(sift, n_words=cfg["n_words"], power=cfg["power"], intra=cfg["intra"])
            ext.load_state(store.path)
        else:
            raise ValueError(f"{store.path}: unknown extractor {kind!r} in the store's settings")
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{store.path}: the store's extractor settings are incomplete ({exc})") from None
    if _canonical(ext.config()) != _canonical(cfg):
        raise ValueError(f"{store.path}: cannot rebuild the store's extractor ({settings_difference(cfg, ext.config())})")
    return ext


def settings_difference(saved, wanted: dict) -> str:
    """The settings that differ, as ``name: stored X, asked Y`` (nested names dotted).

    Used when a resume is refused: naming the setting beats printing both dictionaries.

    >>> settings_difference({"a": 1, "d": {"step": 8}}, {"a": 1, "d": {"step": 4}})
    'd.step: stored 8, asked 4'
    """
    if not isinstance(saved, dict):
        return "the store records no extractor settings"
    diffs: list[str] = []

    def walk(a, b, prefix):
        for key in sorted(set(a) | set(b), key=str):
            name = f"{prefix}{key}"
            if key not in a:
                diffs.append(f"{name}: not in the store, asked {b[key]!r}")
            elif key not in b:
                diffs.append(f"{name}: stored {a[key]!r}, not asked")
            elif isinstance(a[key], dict) and isinstance(b[key], dict):
                walk(a[key], b[key], name + ".")
            elif _canonical({"v": a[key]}) != _canonical({"v": b[key]}):
                diffs.append(f"{name}: stored {a[key]!r}, asked {b[key]!r}")

    walk(saved, wanted, "")
    return "; ".join(diffs) or "none"


def _per_item(values, n: int, name: str):
    if values is None or isinstance(values, str):
        return values
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{name}: has {len(values)} entries for {n} images")
    return values


def _load_batch(batch: Sequence[ImageItem], summary: ExtractionSummary):
    good, images = [], []
    for it in batch:
        try:
            images.append(it.load())
            good.append(it)
        except (ImageReadError, ValueError, TypeError) as exc:
            logger.warning("skipping %s: %s", it.id, exc)
            summary.failed.append((it.id, str(exc)))
    return good, images


def _fit_sample(items, n_fit_images, rng):
    pick = rng.permutation(len(items))[: n_fit_images] if n_fit_images < len(items) else np.arange(len(items))
    images = []
    for k in np.sort(pick):
        try:
            images.append(items[k].load())
        except (ImageReadError, ValueError, TypeError) as exc:
            logger.warning("codebook sample: skipping %s: %s", items[k].id, exc)
    if not images:
        raise ValueError("no readable image to learn the codebook from")
    return images


def extract_to_store(
    source,
    path,
    extractor,
    *,
    ids: Sequence[str] | None = None,
    root=None,
    labels=None,
    tags=None,
    split=None,
    batch_size: int = 256,
    overwrite: bool = False,
    recursive: bool = True,
    n_fit_images: int = 1000,
    random_state=0,
    attrs: dict | None = None,
    progress: Callable[[int], None] | None = None,
) -> ExtractionSummary:
    """Extract features of images into a FeatureStore, skipping what is already there.

    Parameters
    ----------
    source : folder, list of paths, image array (N, H, W[, C]) or list of arrays
        See :func:`hardneg.features.resolve_images`.
    path : str or Path
        The store folder; created if missing, resumed if present (a resumed
        bag-of-words run uses the codebook saved in the store).
    extractor : object
        e.g. :class:`EfficientNetLite0` or :class:`BagOfWords`.
    ids, root : optional
        Item ids, or the folder that ids of listed paths are relative to.
    labels : sequence of int, ``"folders"`` or None
        One label per input; ``"folders"`` labels files by their first
        sub-folder (class names saved in ``attrs["class_names"]``).
    tags, split : optional
        Per-input tags (lists of str) and split names (or one split for all).
    batch_size : int
        Images per committed batch.
    overwrite : bool
        Replace an existing store instead of resuming it.
    n_fit_images : int
        For extractors that learn (bag of words): images sampled to learn
        the codebook when the store is new.
    random_state : int or None
        Seeds the codebook sample and k-means.
    progress : callable, optional
        Called with the number of inputs just handled (already-present
        ones are reported once at the start).

    Returns
    -------
    ExtractionSummary
        Counts and the list of skipped (unreadable) inputs.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from hardneg.features import extract_to_store, BagOfWords, DenseSift
    >>> imgs = np.random.default_rng(0).integers(0, 255, (6, 48, 48), dtype=np.uint8)
    >>> bow = BagOfWords(DenseSift(step=8, bin_sizes=(4,)), n_words=8, random_state=0)
    >>> s = extract_to_store(imgs, tempfile.mkdtemp() + "/s", bow)
    >>> s.n_added, s.n_failed
    (6, 0)
    """
    t0 = time.perf_counter()
    path = Path(path)
    batch_size = check_positive_int(batch_size, "batch_size")
    items = resolve_images(source, ids=ids, root=root, recursive=recursive)
    if not items:
        raise ValueError(f"source: no images found in {source!r}" if isinstance(source, (str, Path)) else "source: no images given")
    summary = ExtractionSummary(store_path=str(path), n_inputs=len(items))

    extra_attrs = dict(attrs or {})
    if isinstance(labels, str):
        if labels != "folders":
            raise ValueError(f"labels: expected a sequence, 'folders' or None, got {labels!r}")
        labels, class_names = folder_labels(items)
        extra_attrs["class_names"] = class_names
    labels = _per_item(labels, len(items), "labels")
    tags = _per_item(tags, len(items), "tags")
    split = _per_item(split, len(items), "split")

    learns = hasattr(extractor, "fit_images")
    if path.exists() and not overwrite:
        store = FeatureStore.open(path, mode="a")
        saved = store.attrs.get("extractor")
        if saved is None or _canonical(saved) != _canonical(extractor.config()):
            store.close()
            raise ValueError(
                f"{path}: this store was built with other extractor settings ({settings_difference(saved, extractor.config())}); "
                f"rebuild it with overwrite=True (--overwrite on the command line), or extract into a new store"
            )
        if learns:
            try:
                extractor.load_state(path)
            except ValueError:
                if len(store):
                    store.close()
                    raise
                # Killed between creating the store and saving the codebook: learn it again.
                if not extractor.is_fitted():
                    rng = check_random_state(random_state)
                    extractor.fit_images(_fit_sample(items, check_positive_int(n_fit_images, "n_fit_images"), rng), random_state=rng)
                extractor.save_state(path)
    else:
        if learns and not extractor.is_fitted():
            rng = check_random_state(random_state)
            extractor.fit_images(_fit_sample(items, check_positive_int(n_fit_images, "n_fit_images"), rng), random_state=rng)
        store_attrs = {"extractor": extractor.config(), "image_paths": PATHS_RELATIVE_TO_STORE, **extra_attrs}
        store = FeatureStore.create(path, extractor.dim, sparse=extractor.sparse, overwrite=overwrite, attrs=store_attrs)
        if learns:
            extractor.save_state(path)

    with store:
        present = set(store.ids().tolist()) if len(store) else set()
        todo = [it for it in items if it.id not in present]
        summary.n_already = len(items) - len(todo)
        if progress is not None and summary.n_already:
            progress(summary.n_already)
        logger.info("%s: %d inputs, %d already extracted, %d to do", path, len(items), summary.n_already, len(todo))
        for lo in range(0, len(todo), batch_size):
            batch = todo[lo : lo + batch_size]
            good, images = _load_batch(batch, summary)
            if good:
                X = _transform_isolating_failures(extractor, good, images, summary)
                if X is not None:
                    good = X[0]
                    rows = [it.index for it in good]
                    store.append(
                        X[1],
                        ids=[it.id for it in good],
                        paths=stored_paths([it.path for it in good], path, store.attrs),
                        labels=None if labels is None else [labels[r] for r in rows],
                        tags=None if tags is None else [tags[r] for r in rows],
                        split=split if split is None or isinstance(split, str) else [split[r] for r in rows],
                    )
                    summary.n_added += len(good)
            if progress is not None:
                progress(len(batch))
    summary.seconds = time.perf_counter() - t0
    if summary.failed:
        logger.warning("%d inputs could not be read and were skipped", summary.n_failed)
    return summary


def _transform_isolating_failures(extractor, good, images, summary):
    """Transform a batch; if it fails, retry image by image so one bad image costs only itself."""
    try:
        return good, extractor.transform(images)
    except (ValueError, TypeError) as exc:
        logger.info("batch failed (%s); retrying image by image", exc)
    kept, rows = [], []
    for it, img in zip(good, images):
        try:
            rows.append(extractor.transform([img]))
            kept.append(it)
        except (ValueError, TypeError) as exc:
            summary.failed.append((it.id, str(exc)))
    if not kept:
        return None
    return kept, (sp.vstack(rows, format="csr") if sp.issparse(rows[0]) else np.concatenate(rows))
