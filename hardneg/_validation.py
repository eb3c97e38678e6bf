"""Input checks shared by every estimator and tool.

Inputs are converted once where they enter: dense rows become C-contiguous
float32, sparse rows become CSR float32. Bad input raises ``ValueError`` or
``TypeError`` that names the argument and its shape.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp


def check_matrix(
    X,
    name: str = "X",
    *,
    accept_sparse: bool = False,
    non_negative: bool = False,
    min_rows: int = 1,
    n_features: int | None = None,
    dtype=np.float32,
):
    """Return ``X`` as a 2-D float32 array (or CSR matrix) after checking it.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    name : str
        Argument name used in error messages.
    accept_sparse : bool
        Allow scipy sparse input (converted to CSR). Otherwise sparse input is
        a ``TypeError``.
    non_negative : bool
        Require every value to be >= 0 (histogram-intersection kernels).
    min_rows : int
        Minimum number of rows; ``0`` allows an empty matrix.
    n_features : int, optional
        Required number of columns (a fitted model's dimension).
    """
    if sp.issparse(X):
        if not accept_sparse:
            raise TypeError(f"{name}: sparse input is not supported here; pass a dense array (got {type(X).__name__} of shape {X.shape})")
        X = sp.csr_matrix(X, dtype=dtype)
        X.sum_duplicates()
        values = X.data
    else:
        if isinstance(X, (str, bytes)) or X is None:
            raise TypeError(f"{name}: expected a 2-D numeric array, got {type(X).__name__}")
        try:
            X = np.asarray(X)
        except Exception as exc:  # ragged lists and the like
            raise TypeError(f"{name}: cannot be converted to a numeric array ({exc})") from None
        if X.dtype.kind not in "biuf":
            raise TypeError(f"{name}: expected numeric values, got dtype {X.dtype}")
        if X.ndim != 2:
            raise ValueError(f"{name}: expected a 2-D array of shape (n_samples, n_features), got shape {X.shape}")
        X = np.ascontiguousarray(X, dtype=dtype)
        values = X
    if X.shape[0] < min_rows:
        raise ValueError(f"{name}: needs at least {min_rows} row(s), got shape {X.shape}")
    if X.shape[1] == 0:
        raise ValueError(f"{name}: has no features, shape {X.shape}")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name}: has {X.shape[1]} features but the model expects {n_features} (shape {X.shape})")
    if values.size and not np.isfinite(values).all():
        raise ValueError(f"{name}: contains NaN or infinity (shape {X.shape})")
    if non_negative and values.size and values.min() < 0:
        raise ValueError(
            f"{name}: contains negative values (min {values.min():.4g}); the histogram-intersection kernel needs non-negative features"
        )
    return X


def check_labels(y, n_samples: int, name: str = "y") -> np.ndarray:
    """Return 1-D labels of length ``n_samples``."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of labels, got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(f"{name}: has {y.shape[0]} labels for {n_samples} samples")
    return y


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")
    return int(value)


def check_k(k, n_items: int, name: str = "k") -> int:
    """``k`` for top-k retrieval: 1 <= k <= n_items."""
    k = check_positive_int(k, name)
    if k > n_items:
        raise ValueError(f"{name}={k} is larger than the collection ({n_items} items)")
    return k


def check_random_state(random_state) -> np.random.Generator:
    """One generator, made once in ``fit`` (None, an int, or a Generator)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, numbers.Integral):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise TypeError(f"random_state: expected None, an int or a numpy Generator, got {type(random_state).__name__}")
