"""Loader for the ``xlsa17`` zero-shot benchmark files (Xian et al., "Zero-shot learning —
the good, the bad and the ugly", CVPR 2017): ``res101.mat`` and ``att_splits.mat``.

``res101.mat`` holds ``features`` (2048 × N, ResNet-101) and ``labels`` (N × 1,
1-based class numbers); ``att_splits.mat`` holds ``att`` (attributes × classes),
the proposed splits ``trainval_loc``, ``test_seen_loc``, ``test_unseen_loc``
(and ``train_loc``, ``val_loc``), all 1-based MATLAB row indices, and
``allclasses_names``. The loader converts everything to 0-based NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["XLSA17", "XLSA17Items", "descriptions_path", "import_xlsa17", "load_xlsa17", "write_attribute_csv", "xlsa17_items"]

_SPLITS = ("trainval_loc", "test_seen_loc", "test_unseen_loc")
_OPTIONAL_SPLITS = ("train_loc", "val_loc")


@dataclass
class XLSA17:
    """One xlsa17 data set, 0-based.

    Parameters
    ----------
    X : (N, d) float32 features
    y : (N,) int64 class index (0-based)
    class_attributes : (C, a) float32, row ``c`` is class ``c``
    class_names : list of str
    splits : dict of (n,) int64 row indices: ``trainval``, ``test_seen``, ``test_unseen`` (and ``train``, ``val`` when present)
    """

    X: np.ndarray
    y: np.ndarray
    class_attributes: np.ndarray
    class_names: list
    splits: dict

    @property
    def seen_classes(self) -> np.ndarray:
        """Sorted class indices of the ``trainval`` rows (the classes seen in training)."""
        return np.unique(self.y[self.splits["trainval"]])

    @property
    def unseen_classes(self) -> np.ndarray:
        """Sorted class indices of the ``test_unseen`` rows (the classes never seen in training)."""
        return np.unique(self.y[self.splits["test_unseen"]])


def _name(cell) -> str:
    a = np.asarray(cell)
    while a.dtype == object and a.size == 1:
        a = np.asarray(a.reshape(-1)[0])
    return str(a.reshape(-1)[0]) if a.size == 1 else "".join(map(str, a.reshape(-1)))


def _numeric(mat: dict, key: str, path, dtype=None) -> np.ndarray:
    """Field ``key`` as a real numeric array, or a one-line error naming the file (a string, cell or struct is refused)."""
    a = np.asarray(mat[key])
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{path}: field {key!r} holds {a.dtype} data, expected a numeric matrix")
    return a if dtype is None else a.astype(dtype)


def load_xlsa17(folder: str | Path, *, features_file: str = "res101.mat", splits_file: str = "att_splits.mat") -> XLSA17:
    """Read ``res101.mat`` and ``att_splits.mat`` from ``folder`` (e.g. ``xlsa17/data/AWA2``).

    Parameters
    ----------
    folder : str or Path
        The data set's folder.
    features_file, splits_file : str
        The two files' names in it.

    Returns
    -------
    XLSA17
        Features, 0-based labels, class attributes, class names and splits.

    Raises
    ------
    FileNotFoundError
        For a missing file.
    ValueError
        (One line) for an unreadable file, a missing field, a shape mismatch or an index out of range.

    Examples
    --------
    >>> import numpy as np, tempfile, scipy.io
    >>> d = tempfile.mkdtemp()
    >>> scipy.io.savemat(d + "/res101.mat", {"features": np.ones((4, 6)), "labels": np.array([[1], [1], [2], [3], [3], [2]])})
    >>> scipy.io.savemat(d + "/att_splits.mat", {"att": np.eye(3), "trainval_loc": np.array([[1], [2], [3], [6]]),
    ...     "test_seen_loc": np.array([[3]]), "test_unseen_loc": np.array([[4], [5]]),
    ...     "allclasses_names": np.array([["a"], ["b"], ["c"]], dtype=object)})
    >>> ds = load_xlsa17(d)
    >>> ds.X.shape, ds.y.tolist(), ds.splits["test_unseen"].tolist(), ds.unseen_classes.tolist()
    ((6, 4), [0, 0, 1, 2, 2, 1], [3, 4], [2])
    """
    import scipy.io

    folder = Path(folder)
    mats = {}
    for fname in (features_file, splits_file):
        path = folder / fname
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file (expected the xlsa17 files {features_file} and {splits_file})")
        try:
            mats[fname] = scipy.io.loadmat(str(path))
        except Exception as exc:  # noqa: BLE001 -- scipy's MatReadError, IndexError, struct.error...: all mean a junk file
            raise ValueError(f"{path}: not a readable MATLAB file ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    res, att = mats[features_file], mats[splits_file]
    for mat, fname, keys in ((res, features_file, ("features", "labels")), (att, splits_file, ("att", *_SPLITS))):
        missing = [k for k in keys if k not in mat]
        if missing:
            raise ValueError(f"{folder / fname}: missing field(s) {missing}")
    F = _numeric(res, "features", folder / features_file, np.float32)
    labels = _numeric(res, "labels", folder / features_file).reshape(-1)
    if F.ndim != 2 or F.shape[1] != labels.size:
        raise ValueError(f"{folder / features_file}: features {F.shape} (d × N) do not match {labels.size} labels")
    A = _numeric(att, "att", folder / splits_file, np.float32)
    if A.ndim != 2:
        raise ValueError(f"{folder / splits_file}: att must be 2-D (attributes × classes), got {A.shape}")
    n_classes = A.shape[1]
    if labels.size and (labels.min() < 1 or labels.max() > n_classes or not np.all(labels == np.round(labels))):
        raise ValueError(f"{folder / features_file}: labels must be 1-based class numbers in 1..{n_classes}")
    if not np.isfinite(F).all() or not np.isfinite(A).all():
        raise ValueError(f"{folder}: features or attributes hold NaN or infinity")
    splits = {}
    for key in (*_SPLITS, *(k for k in _OPTIONAL_SPLITS if k in att)):
        loc = _numeric(att, key, folder / splits_file).reshape(-1).astype(np.int64)
        if loc.size and (loc.min() < 1 or loc.max() > labels.size):
            raise ValueError(f"{folder / splits_file}: {key} holds indices outside 1..{labels.size} (MATLAB rows are 1-based)")
        splits[key[: -len("_loc")]] = loc - 1
    if "allclasses_names" in att:
        names = [_name(c) for c in np.asarray(att["allclasses_names"], dtype=object).reshape(-1)]
        if len(names) != n_classes:
            raise ValueError(f"{folder / splits_file}: {len(names)} class names for {n_classes} classes")
    else:
        names = [str(i) for i in range(n_classes)]
    return XLSA17(X=np.ascontiguousarray(F.T), y=labels.astype(np.int64) - 1, class_attributes=np.ascontiguousarray(A.T),
                  class_names=names, splits=splits)


# ---------------------------------------------------------------------------- importer into a FeatureStore

#: xlsa17 split -> the store's split (``hardneg zsl`` trains on ``train``, tests on ``test``).
STORE_SPLITS = {"trainval": "train", "test_seen": "test", "test_unseen": "test"}
#: Prefix of the tag that keeps an item's own xlsa17 split (``xlsa17:test_unseen``).
SPLIT_TAG_PREFIX = "xlsa17:"
#: Suffix of the descriptions CSV written beside an imported store (``STORE.descriptions.csv``).
DESCRIPTIONS_SUFFIX = ".descriptions.csv"


@dataclass
class XLSA17Items:
    """The item table an xlsa17 folder becomes, in store row order.

    Rows come in the order of ``trainval_loc``, then ``test_seen_loc``, then
    ``test_unseen_loc``, then any row in none of them, so that the store's
    ``train`` rows are the training images of the old folder path in the same
    order (a model trained on either is the same model).

    Attributes
    ----------
    order : (N,) int64, xlsa17 row of each store row
    ids : list of str, ``"<name>-<xlsa17 row>"``
    labels : (N,) int64 class number (0-based)
    split : list of str or None, ``train`` / ``test`` (:data:`STORE_SPLITS`)
    tags : list of [class name, ``xlsa17:<split>``] (the class name alone for rows in no split)
    """

    order: np.ndarray
    ids: list
    labels: np.ndarray
    split: list
    tags: list


def xlsa17_items(ds: XLSA17, name: str = "xlsa17") -> XLSA17Items:
    """Row order, ids, labels, splits and tags of ``ds`` as a FeatureStore holds them.

    Raises ``ValueError`` when the three proposed splits share a row (a store
    row has one split).

    Examples
    --------
    >>> import numpy as np
    >>> ds = XLSA17(X=np.zeros((4, 2), np.float32), y=np.array([0, 1, 2, 0]), class_attributes=np.eye(3, dtype=np.float32),
    ...             class_names=["a", "b", "c"], splits={"trainval": np.array([3, 1]), "test_seen": np.array([0]),
    ...                                                  "test_unseen": np.array([2])})
    >>> it = xlsa17_items(ds)
    >>> it.order.tolist(), it.split, it.tags[0]
    ([3, 1, 0, 2], ['train', 'train', 'test', 'test'], ['a', 'xlsa17:trainval'])
    """
    parts = [np.asarray(ds.splits[k], dtype=np.int64) for k in STORE_SPLITS]
    seen = np.zeros(ds.y.size, dtype=bool)
    for key, rows in zip(STORE_SPLITS, parts):
        if np.unique(rows).size != rows.size or seen[rows].any():
            raise ValueError(f"{key}_loc: shares rows with another split (or repeats one); a store row has one split, "
                             "so the xlsa17 splits must be disjoint")
        seen[rows] = True
    rest = np.flatnonzero(~seen)
    order = np.concatenate([*parts, rest])
    split: list[str | None] = []
    tags: list[list[str]] = []
    for key, rows in zip(STORE_SPLITS, parts):
        split += [STORE_SPLITS[key]] * rows.size
        tags += [[ds.class_names[c], SPLIT_TAG_PREFIX + key] for c in ds.y[rows]]
    split += [None] * rest.size
    tags += [[ds.class_names[c]] for c in ds.y[rest]]
    return XLSA17Items(order=order, ids=[f"{name}-{i}" for i in order], labels=ds.y[order], split=split, tags=tags)


def descriptions_path(store) -> Path:
    """Where :func:`import_xlsa17` writes the class attribute table: ``<store>.descriptions.csv``."""
    store = Path(store)
    return store.with_name(store.name + DESCRIPTIONS_SUFFIX)


def write_attribute_csv(path, class_names, attributes) -> Path:
    """Write one row per class, ``class,a0,a1,...`` under a header, atomically.

    Values are written with ``repr`` of the float, so a float32 table reads
    back bit for bit.
    """
    import csv
    import io

    from hardneg._atomic import atomic_path

    A = np.asarray(attributes, dtype=np.float32)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["class", *(f"a{j}" for j in range(A.shape[1]))])
    for name, row in zip(class_names, A):
        w.writerow([name, *(repr(float(v)) for v in row)])
    with atomic_path(path) as tmp:
        tmp.write_text(buf.getvalue(), encoding="utf-8")
    return Path(path)


def import_xlsa17(folder, store, *, overwrite: bool = False, batch: int = 10_000, descriptions=None,
                  progress=None) -> tuple[Path, Path]:
    """Write an xlsa17 folder into a new FeatureStore and its class attributes into a CSV.

    The store holds the ``res101`` features (one row per image, rows ordered
    as :func:`xlsa17_items` says), the class number as ``label``, the class
    name as a tag, the split as ``train`` (trainval) or ``test`` (test_seen,
    test_unseen), the xlsa17 split itself as the tag ``xlsa17:<split>``, and
    ``attrs`` ``dataset``, ``class_names`` and ``descriptions`` (the CSV's file
    name). The attribute table (one row per class, ``att`` of
    ``att_splits.mat``) goes to ``descriptions`` (default
    ``<store>.descriptions.csv``, beside the store: a store folder holds only
    its own files, so ``overwrite`` can replace it safely).

    ``overwrite`` replaces an existing store (by the store's own rules) and an
    existing CSV file; without it either one existing is refused before anything
    is written. Returns ``(store path, CSV path)``.

    Examples
    --------
    >>> import numpy as np, tempfile, scipy.io
    >>> d = tempfile.mkdtemp()
    >>> scipy.io.savemat(d + "/res101.mat", {"features": np.ones((4, 3)), "labels": np.array([[1], [2], [2]])})
    >>> scipy.io.savemat(d + "/att_splits.mat", {"att": np.eye(2), "trainval_loc": np.array([[2]]),
    ...     "test_seen_loc": np.array([[3]]), "test_unseen_loc": np.array([[1]]),
    ...     "allclasses_names": np.array([["cat"], ["dog"]], dtype=object)})
    >>> store, csv = import_xlsa17(d, d + "/s")
    >>> from hardneg.store import FeatureStore
    >>> fs = FeatureStore.open(store)
    >>> fs.labels().tolist(), fs.ids().tolist(), fs.select(split="train").tolist()
    ([1, 1, 0], ['xlsa17-1', 'xlsa17-2', 'xlsa17-0'], [0])
    >>> csv.name, csv.read_text().splitlines()[1]
    ('s.descriptions.csv', 'cat,1.0,0.0')
    """
    from hardneg.store import FeatureStore
    from hardneg.store._feature_store import check_output_not_input

    store = Path(store)
    csv_path = Path(descriptions) if descriptions is not None else descriptions_path(store)
    check_output_not_input(store, folder, what="store")
    if csv_path.is_dir():
        raise IsADirectoryError(f"{csv_path}: is a folder; the descriptions CSV needs a file name")
    if not overwrite:
        for p in (store, csv_path):
            if p.exists() or p.is_symlink():
                raise FileExistsError(f"{p}: already exists; pass overwrite=True (--overwrite) to replace it")
    ds = load_xlsa17(folder)
    name = Path(folder).resolve().name or "xlsa17"
    items = xlsa17_items(ds)
    n = items.order.size
    attrs = {"dataset": f"xlsa17/{name}", "class_names": list(ds.class_names), "descriptions": csv_path.name}
    with FeatureStore.create(store, dim=ds.X.shape[1], overwrite=overwrite, attrs=attrs) as fs:
        for lo in range(0, n, batch):
            hi = min(lo + batch, n)
            fs.append(ds.X[items.order[lo:hi]], ids=items.ids[lo:hi], labels=items.labels[lo:hi],
                      split=items.split[lo:hi], tags=items.tags[lo:hi])
            if progress is not None:
                progress(hi - lo)
    write_attribute_csv(csv_path, ds.class_names, ds.class_attributes)
    return store, csv_path
