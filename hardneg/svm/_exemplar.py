"""What every exemplar-SVM solver shares: the objective, the checks, the exclusions.

An exemplar SVM (Malisiewicz et al. 2011; Zepeda & Pérez 2015, [Zepeda15] Eq. (1)) is a
linear SVM with one positive ``x`` against a pool of negatives ``Z``, without
a bias::

    w~(x, Z) = argmin_w  lam/2 ||w||^2 + alpha_pos max(0, 1 - x.w)
                         + alpha_neg sum_i max(0, 1 + z_i.w)          [Zepeda15] Eq. (1)

Multiplying by ``1/lam`` gives the usual form ``1/2 ||w||^2 + sum_i C_i
hinge_i`` with ``C_+ = alpha_pos / lam`` and ``C_- = alpha_neg / lam``: the
box bounds of the dual that :mod:`._exemplar_batch` solves, and the
``C`` (``1/lam``) and ``sample_weight`` (``alpha``) that make scikit-learn's
``LinearSVC(fit_intercept=False, loss="hinge")`` the reference solver
(:func:`fit_exemplar_svms_liblinear`).

The solvers (:mod:`._exemplar_batch`, :mod:`._exemplar_sgd` and the
reference here) import this module and nothing imports them back: the
dispatcher :func:`~hardneg.svm.fit_exemplar_svms` lives in
:mod:`._exemplar_solvers`, above all three.

Every solver takes the same arguments and returns the raw ``w~`` rows
([Zepeda15] Eq. (2)'s normalization is the encoder's job), so one solver serves every
method that trains exemplar SVMs.

Exclusions. A negative may be left out of one exemplar's negative set: the
exemplar's own row when the negatives themselves are encoded (RE-SVM,
[Zepeda15] Eq. (3)-(4)), and any negative identical to the exemplar (a positive and a
negative at the same point can never both be on the right side of the
margin; the SVM would only trade one hinge against the other).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from numbers import Real

import numba
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from hardneg._typing import ArrayLike

__all__ = [
    "check_exclude",
    "check_exemplar_inputs",
    "check_exemplar_params",
    "exemplar_objective",
    "exclusion_mask",
    "fit_exemplar_svms_liblinear",
]

logger = logging.getLogger(__name__)

#: Rows closer than this (squared distance relative to the exemplar's squared
#: norm) count as identical to the exemplar.
DUPLICATE_RTOL = 1e-6


def check_exemplar_params(lam, alpha_pos, alpha_neg) -> tuple[float, float, float]:
    """``lam``, ``alpha_pos``, ``alpha_neg`` as positive finite floats, or ``ValueError``."""
    out = []
    for name, value in (("lam", lam), ("alpha_pos", alpha_pos), ("alpha_neg", alpha_neg)):
        if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(float(value)) or float(value) <= 0:
            raise ValueError(f"{name}: must be a positive finite number, got {value!r}")
        out.append(float(value))
    return out[0], out[1], out[2]


def check_exemplar_inputs(X, Z):
    """Float arrays ``X`` (n, d) and ``Z`` (N, d), same dtype (float64 if either is), finite, no zero exemplar."""
    X = np.asarray(X)
    Z = np.asarray(Z)
    if X.ndim != 2 or Z.ndim != 2:
        raise ValueError(f"X and Z: expected 2-D arrays, got shapes {X.shape} and {Z.shape}")
    if X.shape[1] != Z.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but the negatives Z have {Z.shape[1]} (shapes {X.shape}, {Z.shape})")
    if Z.shape[0] < 1:
        raise ValueError(f"Z: needs at least one negative, got shape {Z.shape}")
    dtype = np.float64 if np.float64 in (X.dtype, Z.dtype) else np.float32
    X = np.ascontiguousarray(X, dtype=dtype)
    Z = np.ascontiguousarray(Z, dtype=dtype)
    for name, A in (("X", X), ("Z", Z)):
        if not np.isfinite(A).all():
            raise ValueError(f"{name}: contains NaN or infinity (shape {A.shape})")
    zero = np.flatnonzero(~X.any(axis=1))
    if zero.size:
        raise ValueError(
            f"X: row {int(zero[0])} is all zeros ({zero.size} such rows); an all-zero exemplar has no direction to encode"
        )
    return X, Z


def check_exclude(exclude, n: int, N: int) -> np.ndarray:
    """``exclude``: None, or one negative row per exemplar to leave out (``-1``: none)."""
    if exclude is None:
        return np.full(n, -1, np.int64)
    exclude = np.asarray(exclude)
    if exclude.shape != (n,) or (exclude.size and exclude.dtype.kind not in "iu"):
        raise ValueError(f"exclude: expected {n} integer row numbers (-1 for none), got shape {exclude.shape} dtype {exclude.dtype}")
    exclude = exclude.astype(np.int64)
    if exclude.size and (exclude.min() < -1 or exclude.max() >= N):
        raise ValueError(f"exclude: row numbers must lie in -1..{N - 1}")
    return exclude


def exclusion_mask(X, Z, S, exclude, *, drop_duplicates: bool = True, z_sq=None) -> np.ndarray:
    """Boolean (n, N): negatives left out of each exemplar's set.

    ``S = X @ Z.T`` (already computed by the caller); ``exclude[b] >= 0``
    names a row to leave out of exemplar ``b``'s negatives; with
    ``drop_duplicates`` every negative identical to the exemplar is left out too.
    """
    mask = np.zeros(S.shape, dtype=bool)
    rows = np.flatnonzero(exclude >= 0)
    mask[rows, exclude[rows]] = True
    if drop_duplicates:
        x_sq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        if z_sq is None:
            z_sq = np.einsum("ij,ij->i", Z, Z, dtype=np.float64)
        _mark_duplicates(S, x_sq, z_sq, DUPLICATE_RTOL if S.dtype == np.float64 else 1e-4, mask)
    return mask


@numba.njit(cache=True, nogil=True)
def _mark_duplicates(S, x_sq, z_sq, eps, mask):  # pragma: no cover - compiled
    """``mask[b, j] |= ||x_b - z_j||^2 <= eps * max(||x_b||^2, ||z_j||^2)``, the distance from the product ``S``.

    One fused pass (no (n, N) float64 temporaries); rounding scales with the norms, hence the relative bound.
    """
    for b in range(S.shape[0]):
        xb = x_sq[b]
        for j in range(S.shape[1]):
            if xb + z_sq[j] - 2.0 * S[b, j] <= eps * max(xb, z_sq[j]):
                mask[b, j] = True


def exemplar_objective(
    W: ArrayLike,
    X: ArrayLike,
    Z: ArrayLike,
    *,
    lam: float,
    alpha_pos: float,
    alpha_neg: float,
    exclude: ArrayLike | None = None,
    drop_duplicates: bool = True,
) -> np.ndarray:
    """[Zepeda15] Eq. (1) at ``W[b]`` for exemplar ``X[b]``, one value per row (float64).

    Negatives left out (``exclude``, duplicates) do not count, as in the solvers.

    Parameters
    ----------
    W : array-like of shape (n_exemplars, n_features)
        One weight vector ``w~`` per exemplar.
    X : array-like of shape (n_exemplars, n_features)
        The exemplars (positives).
    Z : array-like of shape (n_negatives, n_features)
        The negative pool.
    lam, alpha_pos, alpha_neg : float
        [Zepeda15] Eq. (1)'s regularization and hinge weights (positive).
    exclude : array-like of int, shape (n_exemplars,), optional
        A negative row to leave out per exemplar (-1: none).
    drop_duplicates : bool
        Leave out negatives identical to the exemplar.

    Returns
    -------
    ndarray of float64, shape (n_exemplars,)
        The objective of each exemplar's SVM.

    Raises
    ------
    ValueError
        If a weight is not positive, or the shapes of ``W``, ``X``, ``Z`` or ``exclude`` disagree.
    """
    lam, alpha_pos, alpha_neg = check_exemplar_params(lam, alpha_pos, alpha_neg)
    X, Z = check_exemplar_inputs(X, Z)
    W = np.asarray(W, dtype=np.float64)
    if W.shape != X.shape:
        raise ValueError(f"W: expected shape {X.shape}, got {W.shape}")
    exclude = check_exclude(exclude, X.shape[0], Z.shape[0])
    X64, Z64 = X.astype(np.float64), Z.astype(np.float64)
    mask = exclusion_mask(X64, Z64, X64 @ Z64.T, exclude, drop_duplicates=drop_duplicates)
    neg = np.maximum(0.0, 1.0 + W @ Z64.T)
    neg[mask] = 0.0
    pos = np.maximum(0.0, 1.0 - np.einsum("ij,ij->i", W, X64))
    return 0.5 * lam * np.einsum("ij,ij->i", W, W) + alpha_pos * pos + alpha_neg * neg.sum(axis=1)


def fit_exemplar_svms_liblinear(
    X: ArrayLike,
    Z: ArrayLike,
    *,
    lam: float = 1e-2,
    alpha_pos: float = 1.0,
    alpha_neg: float = 1e-3,
    exclude: ArrayLike | None = None,
    drop_duplicates: bool = True,
    tol: float = 1e-6,
    max_iter: int = 100_000,
    progress: Callable[[int], object] | None = None,
    random_state: int | None = 0,
) -> np.ndarray:
    """[Zepeda15] Eq. (1) by one scikit-learn ``LinearSVC`` per exemplar (the obvious baseline).

    ``LinearSVC(C=1/lam, loss="hinge", fit_intercept=False)`` with sample
    weights ``alpha_pos`` for the exemplar and ``alpha_neg`` for each
    negative minimizes [Zepeda15] Eq. (1) divided by ``lam``. It refits on all ``N + 1``
    rows for every exemplar, so it is slow; it is here as the reference the
    fast solvers are tested and timed against.

    Parameters
    ----------
    X : array-like of shape (n_exemplars, n_features)
        The exemplars.
    Z : array-like of shape (n_negatives, n_features)
        The negative pool.
    lam, alpha_pos, alpha_neg : float
        [Zepeda15] Eq. (1)'s regularization and hinge weights (positive).
    exclude : array-like of int, shape (n_exemplars,), optional
        A negative row to leave out per exemplar (-1: none).
    drop_duplicates : bool
        Leave out negatives identical to the exemplar.
    tol, max_iter : float, int
        ``LinearSVC``'s stopping tolerance and iteration cap.
    progress : callable, optional
        Called with 1 after each exemplar.
    random_state : int or None
        ``LinearSVC``'s seed.

    Returns
    -------
    W : ndarray of float64, shape (n_exemplars, n_features)
        The unnormalized weight vectors ``w~``.

    Raises
    ------
    ValueError
        If a weight is not positive, or the shapes of ``X``, ``Z`` or ``exclude`` disagree.
    """
    lam, alpha_pos, alpha_neg = check_exemplar_params(lam, alpha_pos, alpha_neg)
    X, Z = check_exemplar_inputs(X, Z)
    exclude = check_exclude(exclude, X.shape[0], Z.shape[0])
    W = np.empty(X.shape, dtype=np.float64)
    for b in range(X.shape[0]):
        keep = ~exclusion_mask(X[b : b + 1], Z, X[b : b + 1] @ Z.T, exclude[b : b + 1], drop_duplicates=drop_duplicates)[0]
        rows = np.vstack([X[b : b + 1], Z[keep]])
        y = np.r_[1.0, -np.ones(int(keep.sum()))]
        sw = np.r_[alpha_pos, np.full(int(keep.sum()), alpha_neg)]
        if keep.sum() == 0:
            # no negatives left: only the positive hinge, w = x / ||x||^2 when C_+ allows
            xx = float(X[b] @ X[b])
            W[b] = min(alpha_pos / lam, 1.0 / xx) * X[b]
            if progress is not None:
                progress(1)
            continue
        svc = LinearSVC(
            C=1.0 / lam, loss="hinge", fit_intercept=False, dual=True, tol=tol, max_iter=max_iter, random_state=random_state
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            svc.fit(rows, y, sample_weight=sw)
        if any(issubclass(c.category, ConvergenceWarning) for c in caught):
            logger.debug("LinearSVC did not converge for exemplar %d", b)
        W[b] = svc.coef_[0]
        if progress is not None:
            progress(1)
    return W
