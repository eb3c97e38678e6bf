"""Exemplar SVMs by stochastic subgradient descent (Pegasos), batched over exemplars.

Zepeda & Pérez (2015) train their exemplar SVMs by SGD. This is Pegasos
(Shalev-Shwartz et al. 2011) on [Zepeda15] Eq. (1) itself, with no bias: at step ``t``,
a mini-batch ``M`` of ``m`` negatives (the same rows for every exemplar of the
batch, so a step is two matrix products) gives the unbiased subgradient::

    g = lam w - alpha_pos [x.w < 1] x + alpha_neg (N / m) sum_{i in M} [1 + z_i.w > 0] z_i

then ``w <- w - eta_t g`` with Bottou's (2012) schedule ``eta_t = eta_0 / (1 +
lam eta_0 t)`` (Pegasos' ``1 / (lam t)`` when ``eta_0`` is large; ``eta_0 = 1 /
(alpha_pos ||x||^2 + alpha_neg N mean ||z||^2)`` keeps the first steps from
overshooting when ``lam`` is small), projected onto the ball ``||w|| <= sqrt(2 F(0) /
lam)`` that holds the minimizer (``F(0) = alpha_pos + alpha_neg N``).

Stopping rule: after every epoch (``N / m`` steps) the objective of the
averaged iterate (the mean over the epoch, "suffix averaging") is computed
over all negatives with one product; training stops when the best objective
so far has improved by less than ``tol`` (relative) in two consecutive epochs,
or after ``max_epochs``; the best averaged iterate is returned.
The result is approximate; :mod:`._exemplar_batch` is the exact solver.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hardneg._typing import ArrayLike
from .._validation import check_random_state
from ._exemplar import check_exclude, check_exemplar_inputs, check_exemplar_params, exclusion_mask

__all__ = ["fit_exemplar_svms_sgd"]


def fit_exemplar_svms_sgd(
    X: ArrayLike,
    Z: ArrayLike,
    *,
    lam: float = 1e-2,
    alpha_pos: float = 1.0,
    alpha_neg: float = 1e-3,
    exclude: ArrayLike | None = None,
    drop_duplicates: bool = True,
    max_epochs: int = 20,
    tol: float = 1e-3,
    minibatch: int = 256,
    batch_size: int = 256,
    random_state: int | np.random.Generator | None = None,
    progress: Callable[[int], object] | None = None,
    stats: dict | None = None,
) -> np.ndarray:
    """Approximately solve [Zepeda15] Eq. (1) for every row of ``X`` by Pegasos.

    Parameters
    ----------
    X : array of shape (n, d)
    Z : array of shape (N, d)
    lam, alpha_pos, alpha_neg : float
        [Zepeda15] Eq. (1)'s weights.
    exclude, drop_duplicates
        Negatives left out, as in :func:`hardneg.svm.fit_exemplar_svms_batch`.
    max_epochs : int
        Most passes over the negatives.
    tol : float
        Stop when two epochs in a row improve the best objective by less than this (relative).
    minibatch : int
        Negatives per step.
    batch_size : int
        Exemplars trained together.
    random_state : None, int or Generator
        Order of the negatives.
    progress : callable, optional
        Called with the number of exemplars finished after each batch.
    stats : dict, optional
        Filled with ``epochs`` (mean epochs run per batch).

    Returns
    -------
    W : ndarray of shape (n, d), X's dtype

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.svm import exemplar_objective, fit_exemplar_svms_batch, fit_exemplar_svms_sgd
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(400, 10)); X = rng.normal(size=(3, 10))
    >>> kw = dict(lam=0.01, alpha_pos=1.0, alpha_neg=0.01)
    >>> f_sgd = exemplar_objective(fit_exemplar_svms_sgd(X, Z, random_state=0, max_epochs=50, **kw), X, Z, **kw)
    >>> f_opt = exemplar_objective(fit_exemplar_svms_batch(X, Z, tol=1e-6, **kw), X, Z, **kw)
    >>> bool(np.all(f_sgd < 1.1 * f_opt))
    True
    """
    lam, alpha_pos, alpha_neg = check_exemplar_params(lam, alpha_pos, alpha_neg)
    X, Z = check_exemplar_inputs(X, Z)
    n, N = X.shape[0], Z.shape[0]
    exclude = check_exclude(exclude, n, N)
    for name, value in (("max_epochs", max_epochs), ("minibatch", minibatch), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}: must be a positive integer, got {value!r}")
    rng = check_random_state(random_state)
    m = min(minibatch, N)
    radius = np.sqrt(2.0 * (alpha_pos + alpha_neg * N) / lam)
    zz = float(np.einsum("ij,ij->", Z, Z, dtype=np.float64)) / N
    W = np.empty_like(X)
    epochs_run = []
    for lo in range(0, n, batch_size):
        hi = min(lo + batch_size, n)
        Xb = X[lo:hi]
        keep = ~exclusion_mask(Xb, Z, Xb @ Z.T, exclude[lo:hi], drop_duplicates=drop_duplicates)
        keep_f = keep.astype(X.dtype)
        w = np.zeros_like(Xb)
        xx = np.einsum("ij,ij->i", Xb, Xb, dtype=np.float64)
        eta0 = (1.0 / (alpha_pos * xx + alpha_neg * N * zz)).astype(X.dtype)[:, None]
        best: tuple[float, np.ndarray] | None = None
        stale = 0
        t = 0
        for epoch in range(max_epochs):
            order = rng.permutation(N)
            avg = np.zeros_like(Xb)
            steps = 0
            for s in range(0, N - m + 1, m):
                t += 1
                rows = order[s : s + m]
                Zm = Z[rows]
                pos = (np.einsum("ij,ij->i", w, Xb) < 1.0).astype(X.dtype)
                hinge = ((1.0 + w @ Zm.T) > 0.0) * keep_f[:, rows]
                grad = lam * w - alpha_pos * pos[:, None] * Xb + (alpha_neg * N / m) * (hinge @ Zm)
                w = w - (eta0 / (1.0 + lam * eta0 * t)) * grad
                norms = np.linalg.norm(w, axis=1, keepdims=True)
                w *= np.minimum(1.0, radius / np.maximum(norms, 1e-30))
                avg += w
                steps += 1
            avg /= max(steps, 1)
            obj = _objective(avg, Xb, Z, keep, lam, alpha_pos, alpha_neg)
            total = float(obj.sum())
            gained = best is None or total < best[0] * (1.0 - tol)
            if best is None or total < best[0]:
                best = (total, avg)
            stale = 0 if gained else stale + 1
            if stale >= 2:
                break
        epochs_run.append(epoch + 1)
        if best is None:  # unreachable: max_epochs >= 1, and the first epoch always sets it
            raise RuntimeError("exemplar SGD ran no epoch")
        W[lo:hi] = best[1]
        if progress is not None:
            progress(hi - lo)
    if stats is not None:
        stats["epochs"] = float(np.mean(epochs_run)) if epochs_run else 0.0
    return W


def _objective(W, Xb, Z, keep, lam, alpha_pos, alpha_neg) -> np.ndarray:
    neg = np.maximum(0.0, 1.0 + W @ Z.T) * keep
    pos = np.maximum(0.0, 1.0 - np.einsum("ij,ij->i", W, Xb))
    return 0.5 * lam * np.einsum("ij,ij->i", W, W) + alpha_pos * pos + alpha_neg * neg.sum(axis=1, dtype=np.float64)
