"""The extraction pipeline: images in, a FeatureStore out; batched and resumable.

A run resolves its inputs to items with string ids (for files the path
relative to the folder each was found in, whichever other folders are
listed; row numbers for arrays), opens the store or plans to create it,
skips every id already in it, and extracts the rest batch by batch; each
batch is one atomically committed append, so a killed run loses at most the
batches in flight (the one being appended in the writer thread and the one in
the extractor) and a rerun picks up where it stopped. A file that cannot be
decoded is skipped and listed in the returned summary; nothing else is lost.

What a rerun may not change is refused before anything is written: a stored
id given for another file (the same relative path under another folder), a
stored file given under another id (another id root), other extractor
settings. Class names are numbered by the list the store records
(``attrs["class_names"]``): a rerun numbers new names after it and never
re-numbers. A new store is created only with its first rows, so a run that
fails before (a missing OpenCV or torch, no readable image) leaves none.

An extractor is any object with ``dim``, ``sparse``, ``config()`` (a JSON
dict saved in the store and compared on resume) and ``transform(images)``
returning an ``(n, dim)`` array or CSR matrix. Extractors that learn from
data (the bag of visual words) also offer ``is_fitted()``,
``fit_images(images)``, ``save_state(folder)`` and ``load_state(folder)``;
their learned state (the codebook) is saved inside the store folder.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._validation import check_positive_int, check_random_state
from .._parallel._runner import Runner
from .._parallel._partition import store_url
from ..store import FeatureStore
from ._images import ImageItem, ImageReadError, list_image_files, resolve_images

logger = logging.getLogger(__name__)

# attrs["image_paths"] of stores whose image paths are relative to the store folder.
PATHS_RELATIVE_TO_STORE = "relative-to-store"

__all__ = ["ExtractionSummary", "check_extractor_available", "check_unique_ids", "extract_to_store", "extractor_from_store", "folder_labels",
           "folder_tags", "images_from_folders", "settings_difference", "stored_paths"]


@dataclass
class ExtractionSummary:
    """What one extraction run did.

    Parameters
    ----------
    store_path : str
        The store written.
    n_inputs : int
        Images given.
    n_added : int
        Rows added by this run.
    n_already : int
        Images already in the store (skipped).
    failed : list of (id, reason)
        Images that could not be read (skipped).
    seconds : float
        Wall time of the run.
    """

    store_path: str
    n_inputs: int = 0
    n_added: int = 0
    n_already: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (id, reason)
    seconds: float = 0.0

    @property
    def n_failed(self) -> int:
        """Number of images that could not be read (the length of ``failed``)."""
        return len(self.failed)

    def __str__(self) -> str:
        lines = [
            f"{self.store_path}: {self.n_added} added, {self.n_already} already there, "
            f"{self.n_failed} skipped (unreadable) of {self.n_inputs} inputs in {self.seconds:.1f}s"
        ]
        lines += [f"  skipped {item_id}: {reason}" for item_id, reason in self.failed]
        return "\n".join(lines)


def folder_labels(items: Sequence[ImageItem]) -> tuple[np.ndarray, list[str]]:
    """Labels from each id's first folder (``cats/x.jpg`` -> ``cats``); ids at top level get -1.

    Parameters
    ----------
    items : sequence of ImageItem
        The images, with ids relative to a folder.

    Returns
    -------
    labels : ndarray of int64, shape (n_items,)
        Index into ``names``, or -1.
    names : list of str
        The folder names, sorted.
    """
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

    ext: TorchExtractor | BagOfWords
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
                                     resize=cfg["resize"], num_threads=num_threads, name=cfg["model"], trust_model=trust_model)
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


_CLI_FEATURES = {"cnn": "cnn", "bow": "dsift", "vlad": "vlad"}


def describe_features(cfg, dim: int | None = None) -> str:
    """What an extractor's settings make, in words: ``CNN features (EfficientNet-Lite0, 1280-d)``.

    >>> describe_features({"extractor": "bow", "n_words": 64}, 64)
    'dense-SIFT bag-of-words features (64 words, 64-d)'
    """
    if not isinstance(cfg, dict):
        return "features without recorded extractor settings (imported or made by hand)"
    kind = cfg.get("extractor")
    size = f", {dim}-d" if dim else ""
    if kind == "cnn":
        model = cfg.get("model")
        name = "EfficientNet-Lite0" if model == "efficientnet-lite0-imagenet" else f"the model {model!r}"
        return f"CNN features ({name}{size})"
    if kind == "bow":
        return f"dense-SIFT bag-of-words features ({cfg.get('n_words')} words{size})"
    if kind == "vlad":
        return f"VLAD features over dense SIFT ({cfg.get('n_words')} words{size})"
    return f"{kind!r} features{f' ({dim}-d)' if dim else ''}"


def mixed_settings_message(path, saved, wanted: dict, dim: int | None = None) -> str:
    """One line for a resume refused because the store was made otherwise: the kinds in words,
    or the settings that differ, and what to do."""
    held = describe_features(saved, dim)
    kind = wanted.get("extractor")
    option = f" (--features {_CLI_FEATURES[kind]})" if kind in _CLI_FEATURES else ""
    todo = "extract into a new store (-o NEW.store) or pass --overwrite (overwrite=True) to rebuild this one"
    if not isinstance(saved, dict) or saved.get("extractor") != kind:
        return f"{path} holds {held}, not {describe_features(wanted)}{option}: other extractor settings would mix kinds; {todo}"
    return f"{path} holds {held} made with other extractor settings ({settings_difference(saved, wanted)}): {todo}"


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


def _load_batch(batch: Sequence[ImageItem], summary: ExtractionSummary, extractor=None, n_threads: int | None = None):
    """``(good, images)`` of a batch, read as ``extractor`` needs them (see :func:`._pipeline.load_batch`):
    in threads, and for a CNN already resized to its input; ``n_threads=0``: serially, full size."""
    from ._pipeline import input_geometry, load_batch

    geometry = None if extractor is None else input_geometry(extractor)
    return load_batch(batch, summary, n_threads=n_threads, geometry=geometry)


# at most one codebook status line per this many seconds
STATUS_SECONDS = 2.0


class _Every:
    """``log(msg, *args)`` at most once per ``seconds`` (``force=True``: now)."""

    def __init__(self, seconds: float, log):
        self.seconds, self.log, self.last = seconds, log, -float("inf")

    def __call__(self, msg, *args, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last >= self.seconds:
            self.last = now
            self.log(msg, *args)


def _fit_sample(items, n_fit_images, rng, say=None):
    pick = rng.permutation(len(items))[: n_fit_images] if n_fit_images < len(items) else np.arange(len(items))
    images = []
    for done, k in enumerate(np.sort(pick)):
        if say is not None:
            say("learning the codebook: read %s of %s sample images", f"{done:,}", f"{pick.size:,}")
        try:
            images.append(items[k].load())
        except (ImageReadError, ValueError, TypeError) as exc:
            logger.debug("codebook sample: skipping %s: %s", items[k].id, exc)  # warned once, when its batch comes
    if not images:
        raise ValueError("no readable image to learn the codebook from")
    return images


def check_extractor_available(extractor) -> None:
    """Load what ``extractor`` needs (OpenCV for dense SIFT, torch and the network for a CNN)
    and raise its ImportError now, before an output store exists, rather than at the first batch."""
    from ._dsift import DenseSift, _require_cv2

    if isinstance(getattr(extractor, "descriptor", None), DenseSift) or isinstance(extractor, DenseSift):
        _require_cv2()
    if isinstance(getattr(type(extractor), "active_runtime", None), property) and extractor.active_runtime != "torch":
        return  # the ONNX session is open (exported first if needed); torch is not needed for the run
    if hasattr(extractor, "_load_model") and hasattr(type(extractor), "net"):
        extractor.net  # noqa: B018 - loads torch and the weights once; the extractor keeps them for the run


def _label_names(labels, items) -> tuple[list | None, list | None]:
    """``(values, names)``: per-item labels as given (numbers), or per-item class names
    (``"folders"``, or a sequence holding strings; None or "" for unlabeled)."""
    if labels is None:
        return None, None
    if isinstance(labels, str):
        if labels != "folders":
            raise ValueError(f"labels: expected a sequence, 'folders' or None, got {labels!r}")
        return None, [it.id.split("/", 1)[0] if "/" in it.id else None for it in items]
    labels = _per_item(labels, len(items), "labels")
    if any(isinstance(v, str) for v in labels):
        bad = next((v for v in labels if v is not None and not isinstance(v, str)), None)
        if bad is not None:
            raise TypeError(f"labels: class names and numbers mixed (e.g. {bad!r}); give one kind")
        return None, [v or None for v in labels]
    return labels, None


def _class_names(stored, given, names, store_labelled: bool) -> list | None:
    """The store's class names after this run: the recorded ones keep their numbers, new ones
    are numbered after them (sorted among themselves); never re-numbered."""
    result = None if stored is None else list(stored)
    if given is not None:
        given = [str(n) for n in given]
        if result is None:
            result = given
        else:
            k = min(len(result), len(given))
            if result[:k] != given[:k]:
                raise ValueError(
                    f"class_names: the store numbers its classes {result[:6]}, this run {given[:6]}; "
                    f"give the labels as class names to have them mapped to the store's numbers"
                )
            result = result if len(result) >= len(given) else given
    if names is not None:
        if result is None:
            if store_labelled:
                raise ValueError("labels: the store's labels are class numbers without recorded names; give numbers, not names")
            result = []
        known = set(result)
        result = result + sorted({n for n in names if n is not None and n not in known})
    return result


def _abspath(p) -> str:
    # not realpath: that costs a stat per path component, seconds per 10,000 stored rows
    return os.path.normpath(os.path.abspath(p))


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_unique_ids(ids: Sequence[str], paths: Sequence) -> None:
    """Refuse the same id for two files, naming both (ids relative to each of several folders can repeat)."""
    first: dict[str, object] = {}
    for i, p in zip(ids, paths):
        if i in first:
            raise ValueError(
                f"ids: {i!r} comes from both {first[i]} and {p}: ids are paths relative to each folder given, "
                f"so these folders cannot share a store; extract them into separate stores or rename one"
            )
        first[i] = p


def images_from_folders(sources, *, recursive: bool = True) -> tuple[list[str], list[str]]:
    """Image files under each source and their store ids: ``(paths, ids)``.

    A folder's images get the path relative to *that* folder as id
    (``photos/cats/x.jpg`` -> ``cats/x.jpg``), whichever other folders are
    listed, so a rerun with more folders finds the ids already stored; a file
    given on its own keeps its path as given. The same id from two sources
    is refused (:class:`ValueError`, naming both files).

    >>> images_from_folders([])
    ([], [])
    """
    paths: list[str] = []
    ids: list[str] = []
    for src in sources:
        p = Path(src)
        if p.is_dir():
            files = list_image_files(p, recursive=recursive)
            paths += [str(f) for f in files]
            ids += [f.relative_to(p).as_posix() for f in files]
        elif p.exists():
            paths.append(str(p))
            ids.append(p.as_posix())
        else:
            raise ValueError(f"sources: {src}: no such file or folder")
    check_unique_ids(ids, paths)
    return paths, ids


def folder_tags(ids: Sequence[str], levels: int | None = None) -> list[list[str]]:
    """Every folder of each id as a tag (``animals/mammals/x.png`` -> ``["animals", "mammals"]``),
    or the first ``levels`` of them; ids at top level get no tag.

    >>> folder_tags(["animals/mammals/x.png", "animals/y.png", "z.png"]), folder_tags(["a/b/x.png"], 1)
    ([['animals', 'mammals'], ['animals'], []], [['a']])
    """
    out = []
    for i in ids:
        parts = [p for p in i.split("/")[:-1] if p not in ("", ".")]
        out.append(list(dict.fromkeys(parts if not levels else parts[:levels])))
    return out


def _set_attrs(store, **updates) -> None:
    # FeatureStore has no attrs setter; this is the atomic meta.json commit its appends and item edits use.
    writer = store._require_writable()
    meta = dict(writer.meta)
    meta["attrs"] = {**meta.get("attrs", {}), **updates}
    writer.commit(meta)


class _Extraction:
    """One extraction run, checked before anything is written (:func:`extract_to_store`, in this
    process or on a cluster: the two differ only in where batches are transformed).

    It resolves the inputs to items, maps class names to the store's recorded numbers,
    refuses ids that would change the meaning of stored ones, checks the extractor's settings
    and availability, and learns a codebook when needed. A new store (or one that replaces an
    old store with ``overwrite``) is created only when the first batch has rows to write, so a
    run that fails before that leaves no empty store behind (and an old store in place).
    """

    def __init__(self, source, path, extractor, *, ids, root, labels, tags, split, overwrite, recursive, n_fit_images,
                 random_state, attrs):
        self.path = Path(path)
        self.extractor = extractor
        self.overwrite = overwrite
        if ids is not None and isinstance(source, Sequence) and not isinstance(source, (str, np.ndarray)) and len(ids) == len(source):
            check_unique_ids([str(i) for i in ids], source)
        items = resolve_images(source, ids=ids, root=root, recursive=recursive)
        if not items:
            raise ValueError(f"source: no images found in {source!r}" if isinstance(source, (str, Path)) else "source: no images given")
        self.items = items
        self.summary = ExtractionSummary(store_path=str(self.path), n_inputs=len(items))
        self.labels, names = _label_names(labels, items)
        self.tags = _per_item(tags, len(items), "tags")
        self.split = _per_item(split, len(items), "split")
        attrs = dict(attrs or {})

        self.store = None
        self.created = False
        self.new_attrs: dict = {}
        learns = hasattr(extractor, "fit_images")
        if self.path.exists() and not overwrite:
            store = FeatureStore.open(self.path, mode="a")
            try:
                saved = store.attrs.get("extractor")
                if saved is None or _canonical(saved) != _canonical(extractor.config()):
                    raise ValueError(mixed_settings_message(self.path, saved, extractor.config(), store.dim))
                present = self._check_against(store)
                if any(it.id not in present for it in items):
                    check_extractor_available(extractor)
                stored_names = store.attrs.get("class_names")
                labelled = names is not None and stored_names is None and len(store) > 0 and bool((store.labels() >= 0).any())
                class_names = _class_names(stored_names, attrs.get("class_names"), names, labelled)
                if class_names is not None and class_names != stored_names:
                    self.new_attrs["class_names"] = class_names
                if learns:
                    try:
                        extractor.load_state(self.path)
                    except ValueError:
                        if len(store):
                            raise
                        # Killed between creating the store and saving the codebook: learn it again.
                        if not extractor.is_fitted():
                            self._fit(n_fit_images, random_state)
                        extractor.save_state(self.path)
            except BaseException:
                store.close()
                raise
            self.store = store
        else:
            present = set()
            check_extractor_available(extractor)  # before the codebook is learned and long before a store exists
            class_names = _class_names(None, attrs.get("class_names"), names, False)
            if class_names is not None:
                attrs["class_names"] = class_names
            if learns and not extractor.is_fitted():
                self._fit(n_fit_images, random_state)
            self.create_attrs = {"extractor": extractor.config(), "image_paths": PATHS_RELATIVE_TO_STORE, **attrs}
        if names is not None:
            index = {n: k for k, n in enumerate(class_names)}
            self.labels = [-1 if n is None else index[n] for n in names]
        self.todo = [it for it in items if it.id not in present]
        self.summary.n_already = len(items) - len(self.todo)
        logger.info("%s: %d inputs, %d already extracted, %d to do", self.path, len(items), self.summary.n_already, len(self.todo))

    def _fit(self, n_fit_images, random_state) -> None:
        rng = check_random_state(random_state)
        n = min(check_positive_int(n_fit_images, "n_fit_images"), len(self.items))
        # status lines in the CLI (hardneg.cli._console.task_progress shows "hardneg.status" records),
        # from the first second: reading and describing the sample is most of the time
        say = _Every(STATUS_SECONDS, logging.getLogger("hardneg.status").info)
        say("learning the codebook from %s images (before the first batch)", f"{n:,}", force=True)
        images = _fit_sample(self.items, n, rng, say)
        describe = getattr(getattr(self.extractor, "descriptor", None), "describe", None)
        if describe is None or not hasattr(self.extractor, "fit_descriptors"):
            self.extractor.fit_images(images, random_state=rng)
            return
        sets: list = []
        for start in range(0, len(images), 25):
            say("learning the codebook: described %s of %s images", f"{start:,}", f"{len(images):,}")
            sets += describe(images[start:start + 25])
        say("learning the codebook: k-means of %s descriptors", f"{sum(len(d) for d in sets):,}", force=True)
        self.extractor.fit_descriptors(sets, random_state=rng)

    def _check_against(self, store) -> set:
        """The ids already stored; refuses a stored id given for another file that still exists
        (another folder) and a stored file given under another id (another id root)."""
        if not len(store):
            return set()
        table = store.items
        stored_ids = table.column("id").to_pylist()
        present = set(stored_ids)
        if not any(it.path is not None for it in self.items):
            return present
        from ..store._items import resolve_stored_path

        files = {}
        for i, p in zip(stored_ids, table.column("path").to_pylist()):
            files[i] = None if p is None else _abspath(resolve_stored_path(store, p))
        by_file = {f: i for i, f in files.items() if f is not None}
        for it in self.items:
            if it.path is None:
                continue
            here = _abspath(it.path)
            if it.id in present:
                there = files[it.id]
                if there is not None and there != here and os.path.exists(there) and not _same_file(there, here):
                    raise ValueError(
                        f"{it.id!r}: the store holds this id for {there}, this run gives {here}: ids are paths relative to each "
                        f"folder given, so this would be another image under a stored id; give the folder(s) the store was built "
                        f"from, or extract into a new store"
                    )
            elif here in by_file:
                raise ValueError(
                    f"{it.path}: already in the store as {by_file[here]!r}, this run would add it again as {it.id!r} (another id "
                    f"root); ids are paths relative to each folder given: give the folder(s) the store was built from"
                )
        return present

    def report_present(self, progress) -> None:
        if progress is not None and self.summary.n_already:
            progress(self.summary.n_already)

    def write(self, good: Sequence[ImageItem], X) -> None:
        """Append the rows of ``good``; creates the store on the first rows of a new one."""
        if self.store is None:
            store = FeatureStore.create(self.path, self.extractor.dim, sparse=self.extractor.sparse, overwrite=self.overwrite,
                                        attrs=self.create_attrs)
            self.store, self.created = store, True
        try:
            if self.created and hasattr(self.extractor, "fit_images") and not len(self.store):
                self.extractor.save_state(self.path)
            if self.new_attrs:
                # before the rows that use the new class numbers: names without rows are harmless
                _set_attrs(self.store, **self.new_attrs)
                self.new_attrs = {}
            rows = [it.index for it in good]
            labels, tags, split = self.labels, self.tags, self.split
            self.store.append(
                X,
                ids=[it.id for it in good],
                paths=stored_paths([it.path for it in good], self.path, self.store.attrs),
                labels=None if labels is None else [labels[r] for r in rows],
                tags=None if tags is None else [tags[r] for r in rows],
                split=split if split is None or isinstance(split, str) else [split[r] for r in rows],
            )
        except BaseException:
            self._remove_if_empty()
            raise
        self.summary.n_added += len(good)

    def _remove_if_empty(self) -> None:
        if self.created and self.store is not None and not len(self.store):
            self.store.close()
            self.store = None
            shutil.rmtree(self.path, ignore_errors=True)
            logger.info("%s: removed the empty store this run created", self.path)

    def load(self, batch: Sequence[ImageItem]):
        """``(good, images, failed)`` of one batch; safe in a prefetching thread (its own failure list)."""
        local = ExtractionSummary(store_path=str(self.path))  # this batch's failures only
        good, images = _load_batch(batch, local, self.extractor, self.decode_threads)
        return good, images, local.failed

    def extract_batch(self, batch: Sequence[ImageItem], loaded=None) -> None:
        """Read (unless ``loaded`` by :meth:`load`), transform and append one batch in this process."""
        rows = self.transform_batch(batch, loaded)
        if rows is not None:
            self.write(*rows)

    def transform_batch(self, batch: Sequence[ImageItem], loaded=None):
        """``(good, X)``, the rows of one batch to :meth:`write` (None when none was readable);
        read unless ``loaded`` by :meth:`load`."""
        good, images, failed = self.load(batch) if loaded is None else loaded
        self.summary.failed.extend(failed)
        if not good:
            return None
        return _transform_isolating_failures(self.extractor, good, images, self.summary)

    decode_threads: int | None = None  # threads that decode images (None: the CPU count, at most 8; 0: serial, full size)

    def run(self, batch_size: int, progress=None, *, runner=None, model=None, trust_model: bool = False,
            decode_threads: int | None = None) -> None:
        """The batch loop, in this process or on a Dask cluster (``runner``): batches of
        ``batch_size`` inputs appended in input order, one atomic commit per batch.

        On a cluster the batches are read and transformed on the workers, with the extractor
        rebuilt from the store's own settings (:func:`extractor_from_store`; ``model`` /
        ``trust_model``: the torch model file of a ``--model`` store), so only the inputs
        (image paths) travel; until the store exists (the first batch with a readable image
        creates it, with its codebook) batches run here.
        """
        import functools
        import json
        import os

        self.report_present(progress)
        todo = self.todo
        batches = [todo[a : a + batch_size] for a in range(0, len(todo), batch_size)]
        remote = runner is not None and getattr(runner, "client", None) is not None
        self.decode_threads = decode_threads
        if not remote:
            from ._pipeline import prefetch

            # the next batch is decoded while this one runs through the extractor
            loaded = ((b, self.load(b)) for b in batches) if decode_threads == 0 else prefetch(batches, self.load)
            with contextlib.closing(loaded):  # a failed batch waits for the one being decoded, then stops
                self._transform_and_append(loaded, progress, background=decode_threads != 0)
            return
        done = 0
        while done < len(batches) and (not remote or self.store is None):
            self.extract_batch(batches[done])
            if progress is not None:
                progress(len(batches[done]))
            done += 1
        rest = batches[done:]
        if not rest:
            return
        config = json.dumps(self.store.attrs.get("extractor"), sort_keys=True)
        func = functools.partial(extract_partition, store=store_url(self.store.path), config=config,
                                 model=None if model is None else os.path.abspath(model), trust_model=trust_model)
        work = [[(it.index, it.id, it.path) for it in batch] for batch in rest]
        for batch, (kept, X, failed) in zip(rest, runner.map_ordered(func, work)):
            self.summary.failed.extend(failed)
            if kept:
                by_index = {it.index: it for it in batch}
                self.write([by_index[k] for k in kept], X)
            if progress is not None:
                progress(len(batch))

    def _transform_and_append(self, loaded, progress, *, background: bool) -> None:
        """Transform each loaded batch; with ``background``, batch k is appended in a writer thread
        while batch k + 1 runs through the extractor (the append waits on fsync: ~0.1 s a batch).

        At most one append is pending, and it is finished, its error raised and its progress
        reported before the next one starts, so the store holds the batches in input order
        and a failure (or an interrupt) leaves every batch before it committed.
        """
        if not background:
            for batch, data in loaded:
                self.extract_batch(batch, data)
                if progress is not None:
                    progress(len(batch))
            return
        from concurrent.futures import ThreadPoolExecutor

        # leaving the with-block (normally or by an error) waits for the pending append
        with ThreadPoolExecutor(1, thread_name_prefix="hardneg-append") as writer:
            pending = None  # (future or None, n inputs) of the previous batch
            for batch, data in loaded:
                rows = self.transform_batch(batch, data)
                self._settle(pending, progress)
                pending = (None if rows is None else writer.submit(self.write, *rows), len(batch))
            self._settle(pending, progress)

    @staticmethod
    def _settle(pending, progress) -> None:
        if pending is None:
            return
        fut, n = pending
        if fut is not None:
            fut.result()  # raises the append's error here, in the loop's thread
        if progress is not None:
            progress(n)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def finish(self, t0: float) -> ExtractionSummary:
        """Close the store; a new store that got no row is not left behind."""
        self.close()
        s = self.summary
        s.seconds = time.perf_counter() - t0
        if self.store is None and self.todo:
            example = f" (e.g. {s.failed[0][0]}: {s.failed[0][1]})" if s.failed else ""
            raise ValueError(f"{self.path}: none of the {len(self.todo)} inputs could be read{example}; no store written")
        if s.failed:
            logger.warning("%d inputs could not be read and were skipped", s.n_failed)
        return s


def extract_to_store(
    source: Any,
    path: str | os.PathLike,
    extractor: Any,
    *,
    ids: Sequence[str] | None = None,
    root: str | os.PathLike | None = None,
    labels: Any = None,
    tags: Sequence[Sequence[str]] | None = None,
    split: Any = None,
    batch_size: int = 256,
    overwrite: bool = False,
    recursive: bool = True,
    n_fit_images: int = 1000,
    random_state: int | np.random.Generator | None = 0,
    attrs: dict | None = None,
    progress: Callable[[int], None] | None = None,
    decode_threads: int | None = None,
    runner: Runner | None = None,
    model: str | os.PathLike | None = None,
    trust_model: bool = False,
) -> ExtractionSummary:
    """Extract features of images into a FeatureStore, skipping what is already there.

    Parameters
    ----------
    source : folder, list of paths, image array (N, H, W[, C]) or list of arrays
        See :func:`hardneg.features.resolve_images`.
    path : str or Path
        The store folder; created (when the first batch has rows to write) if
        missing, resumed if present (a resumed bag-of-words run uses the
        codebook saved in the store).
    extractor : object
        e.g. :class:`EfficientNetLite0` or :class:`BagOfWords`.
    ids, root : optional
        Item ids, or the folder that ids of listed paths are relative to. A
        folder's ids are the paths relative to it. On resume, an id already
        stored for another file (that still exists), or a stored file given
        under another id, is refused before anything is written.
    labels : sequence of int, sequence of str, ``"folders"`` or None
        One label per input: class numbers, or class names (None or "" for
        unlabeled); ``"folders"`` names each file's class by its first
        sub-folder. Names are numbered by ``attrs["class_names"]`` in the
        store: recorded names keep their numbers, new ones are numbered
        after them, never re-numbered.
    tags, split : optional
        Per-input tags (lists of str) and split names (or one split for all).
    batch_size : int
        Images per committed batch.
    overwrite : bool
        Replace an existing store instead of resuming it (the old one stays
        until the first batch has rows to write).
    recursive : bool
        Whether a folder's sub-folders are searched too.
    n_fit_images : int
        For extractors that learn (bag of words): images sampled to learn
        the codebook when the store is new.
    random_state : int or None
        Seeds the codebook sample and k-means.
    attrs : dict, optional
        Saved with a new store; ``class_names`` (for numeric labels) may
        extend the store's recorded ones on resume, not re-order them.
    progress : callable, optional
        Called with the number of inputs just handled (already-present
        ones are reported once at the start).
    decode_threads : int, optional
        Threads that decode (and, for a CNN, resize) the images, the next
        batch while the extractor runs on this one. None: the CPU count (at
        most 8); 0: no decoding threads, one image after the other in this
        thread, each decoded full size (the least memory, the slowest).
    runner : Runner, optional
        Where to run: this process (default), or a :class:`~hardneg.distributed.DaskRunner`,
        whose workers read and transform the batches after the one that creates the store,
        with the extractor rebuilt from the store's own settings
        (:func:`extractor_from_store`), so only image paths travel. Image files must be
        readable at the same path on every worker.
    model : str or path-like, optional
        The torch model file of a ``--model`` store, opened by each worker.
    trust_model : bool
        Required to load ``model`` on the workers (a model file is code).

    Returns
    -------
    ExtractionSummary
        Counts and the list of skipped (unreadable) inputs.

    Raises
    ------
    ImportError
        The extractor's library (OpenCV, torch) is missing: raised before any output exists.
    ValueError
        Bad arguments, ids that would change stored ones, or (for a new
        store) no readable input: then no store is left behind.

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
    batch_size = check_positive_int(batch_size, "batch_size")
    run = _Extraction(source, path, extractor, ids=ids, root=root, labels=labels, tags=tags, split=split, overwrite=overwrite,
                      recursive=recursive, n_fit_images=n_fit_images, random_state=random_state, attrs=attrs)
    try:
        run.run(batch_size, progress, runner=runner, model=model, trust_model=trust_model, decode_threads=decode_threads)
    finally:
        run.close()
    return run.finish(t0)


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


# ------------------------------------------------------------------ one batch on a Dask worker
@functools.lru_cache(maxsize=2)
def _extractor(store: str, config: str, model, trust_model: bool):
    # built once per worker process and store; ``config`` (the store's settings) is part of the key
    return extractor_from_store(FeatureStore.open(store), model=model, trust_model=trust_model, num_threads=1)


def extract_partition(batch, *, store: str, config: str, model=None, trust_model: bool = False):
    """``(kept, X, failed)`` for a batch of ``(index, id, path)``: input positions kept, their
    features, and ``(id, reason)`` of unreadable ones.

    The partition function of :meth:`_Extraction.run` on a cluster (and of
    :func:`extract_to_store` with a ``runner``): the extractor is rebuilt from
    the store at ``store`` (a path or URL), so only image paths travel.
    """
    ext = _extractor(store, config, model, trust_model)
    items = [ImageItem(id=i, path=p, index=k) for k, i, p in batch]
    summary = ExtractionSummary(store_path=store)
    good, images = _load_batch(items, summary, ext)  # as in-process: a CNN's images come resized to its input
    X = _transform_isolating_failures(ext, good, images, summary) if good else None
    if X is None:
        return [], None, summary.failed
    return [it.index for it in X[0]], X[1], summary.failed
