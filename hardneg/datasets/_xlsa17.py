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

__all__ = ["XLSA17", "load_xlsa17"]

_SPLITS = ("trainval_loc", "test_seen_loc", "test_unseen_loc")
_OPTIONAL_SPLITS = ("train_loc", "val_loc")


@dataclass
class XLSA17:
    """One xlsa17 data set, 0-based.

    Attributes
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
        return np.unique(self.y[self.splits["trainval"]])

    @property
    def unseen_classes(self) -> np.ndarray:
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


def load_xlsa17(folder, *, features_file: str = "res101.mat", splits_file: str = "att_splits.mat") -> XLSA17:
    """Read ``res101.mat`` and ``att_splits.mat`` from ``folder`` (e.g. ``xlsa17/data/AWA2``).

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` (one line)
    for a missing field, a shape mismatch or an index out of range.

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
