"""Input checks and the triplet loss shared by every similarity learner.

Triplets follow metric-learn's convention: an ``(n, 3)`` integer array of row
indices ``(anchor, positive, negative)`` into a sparse matrix ``X``, so a
million triplets need no copies of vectors. ``X`` is a ``scipy.sparse``
matrix or a dense 2-D array (converted once to CSR float32 with sorted
indices) or a sparse
:class:`~hardneg.store.FeatureStore`, of which only the rows the triplets
name are read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from hardneg._typing import ArrayLike
from .._validation import check_matrix, is_store

__all__ = ["check_bow", "check_triplets", "resolve_rows", "triplet_loss"]


def check_bow(X, name: str = "X", *, n_features: int | None = None, estimator=None) -> sp.csr_matrix:
    """``X`` as CSR float32 with sorted indices, non-negative and finite.

    A dense array is accepted and converted to CSR once here (the learners'
    cost per triplet is proportional to the non-zeros, so pass sparse input
    when the vectors are sparse: a dense bag-of-words pays for its zeros
    only in this conversion).
    """
    if X is None or isinstance(X, (str, bytes)):
        raise TypeError(f"{name}: expected a bag-of-words matrix (scipy.sparse CSR or a 2-D array), got {type(X).__name__}")
    X = check_matrix(X, name, accept_sparse=True, min_rows=1, n_features=n_features, estimator=estimator)
    if not sp.issparse(X):
        X = sp.csr_matrix(X)
    if X.nnz and X.data.min() < 0:
        raise ValueError(f"{name}: Negative values in data (min {X.data.min():.4g}); bag-of-words histograms are non-negative")
    if not X.has_sorted_indices:
        X = X.copy()
        X.sort_indices()
    return X


def check_triplets(triplets: ArrayLike, n_rows: int, name: str = "triplets") -> np.ndarray:
    """Triplets as a C-contiguous ``(n, 3)`` int64 array of rows in ``0..n_rows-1``.

    Parameters
    ----------
    triplets : array-like of int, shape (n, 3)
        Row indices ``(anchor, positive, negative)``; integral floats are accepted.
    n_rows : int
        Rows of the data the indices point into.
    name : str
        The argument's name in error messages.

    Returns
    -------
    ndarray of int64, shape (n, 3)

    Raises
    ------
    TypeError
        If ``triplets`` is not an array of integers.
    ValueError
        If it is empty, not of shape (n, 3), or an index is out of range.
    """
    if triplets is None or isinstance(triplets, (str, bytes)):
        raise TypeError(f"{name}: expected an (n, 3) array of row indices, got {type(triplets).__name__}")
    t = np.asarray(triplets)
    if t.size == 0:
        raise ValueError(f"{name}: the triplet stream is empty (shape {t.shape})")
    if t.dtype.kind not in "iu":
        if t.dtype.kind == "f" and np.all(np.isfinite(t)) and np.all(t == np.round(t)):
            t = t.astype(np.int64)
        else:
            raise TypeError(f"{name}: expected integer row indices, got dtype {t.dtype} (shape {t.shape})")
    if t.ndim != 2 or t.shape[1] != 3:
        raise ValueError(f"{name}: expected shape (n, 3) (anchor, positive, negative), got {t.shape}")
    t = np.ascontiguousarray(t, dtype=np.int64)
    lo, hi = int(t.min()), int(t.max())
    if lo < 0 or hi >= n_rows:
        raise ValueError(f"{name}: row indices must lie in [0, {n_rows - 1}] for X with {n_rows} rows, got range [{lo}, {hi}]")
    return t


def resolve_rows(X, triplets, *, n_features: int | None = None, name: str = "X", estimator=None):
    """Check ``X`` and ``triplets`` together; return ``(csr, triplets)``.

    A sparse FeatureStore is read only at the rows the triplets use (the
    triplets are renumbered into that block); a dense store is refused.
    """
    if is_store(X):
        if not X.is_sparse:
            raise TypeError(f"{name}: the store {str(getattr(X, 'path', ''))!r} is in the dense layout; similarity learning needs a sparse (CSR) store")
        t = check_triplets(triplets, len(X))
        rows, inverse = np.unique(t, return_inverse=True)
        block = check_bow(X.take(rows), name, n_features=n_features, estimator=estimator)
        return block, np.ascontiguousarray(inverse.reshape(t.shape), dtype=np.int64)
    X = check_bow(X, name, n_features=n_features, estimator=estimator)
    return X, check_triplets(triplets, X.shape[0])


def triplet_loss(w: ArrayLike, X: Any, triplets: ArrayLike) -> np.ndarray:
    """Hinge loss of each triplet under ``S_w(a, b) = aᵀ diag(w) b`` ([Gao17] Eq. (6)-(7)).

    ``L = max(0, 1 - S_w(x, x⁺) + S_w(x, x⁻))``; with ``v = x ⊙ (x⁺ - x⁻)``
    it is ``max(0, 1 - wᵀv)`` and its subgradient is ``-v`` where ``L > 0``.

    Parameters
    ----------
    w : array-like of shape (n_words,)
        The diagonal of the similarity.
    X : sparse matrix or sparse FeatureStore, shape (n_rows, n_words)
        Bag-of-words rows.
    triplets : array-like of int, shape (n, 3)
        Row indices ``(anchor, positive, negative)``.

    Returns
    -------
    ndarray of float64, shape (n,)
        The loss of each triplet.
    """
    w = np.asarray(w, np.float64)
    X, t = resolve_rows(X, triplets, n_features=w.shape[0])
    A, P, N = X[t[:, 0]], X[t[:, 1]], X[t[:, 2]]
    V = A.multiply(P - N)
    margin = np.asarray(V @ w).ravel()
    return np.maximum(0.0, 1.0 - margin)
