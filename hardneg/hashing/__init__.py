"""Compact binary codes for query-by-example: TSVM hashing on binary
hierarchical trees (Cevikalp et al., CVIU 2017) and the baselines it is
compared against (LSH, PCA-ITQ, PCA-RR, SKLSH, product quantization).

All hashers share one API: ``fit(X, y=None, X_unlabeled=None)``,
``transform(X)`` -> packed uint8 codes (``np.packbits`` order), ``save(path)``
and ``Class.load(path)`` (or :func:`load_hasher` for any kind).

Examples
--------
>>> from sklearn.datasets import load_digits
>>> from hardneg.hashing import TSVMHashing
>>> from hardneg.eval import hamming_rank
>>> X, y = load_digits(return_X_y=True)
>>> h = TSVMHashing(n_bits=9, random_state=0).fit(X[:500], y[:500], X_unlabeled=X[500:1000])
>>> codes = h.transform(X)
>>> idx, dist = hamming_rank(codes[:1], codes, k=5)
>>> idx.shape
(1, 5)
"""

import os

from hardneg._persist import ModelFileError, model_kind
from hardneg.hashing._base import BaseHasher
from hardneg.hashing._hierarchy import build_hierarchy, class_similarity, convex_hull_distances, normalized_cut
from hardneg.hashing._itq import PCAITQHasher
from hardneg.hashing._lsh import LSHHasher
from hardneg.hashing._pca_rr import PCARRHasher
from hardneg.hashing._pq import PQHasher
from hardneg.hashing._sklsh import SKLSHHasher
from hardneg.hashing._tsvm_hashing import TSVMHashing

# method name (CLI, benchmarks) -> class
HASHERS: dict[str, type[BaseHasher]] = {
    "tsvm": TSVMHashing,
    "lsh": LSHHasher,
    "pca-itq": PCAITQHasher,
    "pca-rr": PCARRHasher,
    "sklsh": SKLSHHasher,
    "pq": PQHasher,
}


def load_hasher(path: str | os.PathLike) -> BaseHasher:
    """Load any hasher model file, whatever its kind.

    Parameters
    ----------
    path : str or path-like
        A model file saved by a hasher's ``save``.

    Returns
    -------
    BaseHasher
        The fitted hasher of the kind the file records.

    Raises
    ------
    ModelFileError
        If the file is not a hasher model (or is damaged).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from hardneg.hashing import LSHHasher, load_hasher
    >>> X = np.random.default_rng(0).normal(size=(50, 8))
    >>> path = os.path.join(tempfile.mkdtemp(), "lsh.npz")
    >>> _ = LSHHasher(n_bits=16, random_state=0).fit(X).save(path)
    >>> type(load_hasher(path)).__name__
    'LSHHasher'
    """
    kind = model_kind(path)
    for cls in HASHERS.values():
        if cls._kind == kind:
            return cls.load(path)
    raise ModelFileError(f"{path}: holds a {kind!r} model, not a hasher")


__all__ = [
    "HASHERS",
    "BaseHasher",
    "LSHHasher",
    "PCAITQHasher",
    "PCARRHasher",
    "PQHasher",
    "SKLSHHasher",
    "TSVMHashing",
    "build_hierarchy",
    "class_similarity",
    "convex_hull_distances",
    "load_hasher",
    "normalized_cut",
]
