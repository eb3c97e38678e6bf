"""Exact exemplar SVMs in batches: hard-negative active sets over a shared pool.

Every exemplar of a batch is trained against the same negatives ``Z``, so
the expensive part, scoring all of ``Z``, is one matrix product for the
whole batch. The loop is the hard-negative mining of Malisiewicz et al.
(2011), made exact:

1. one product ``X_b Z^T`` gives, for every exemplar, its hardest negatives
   (largest ``x.z``): the first working set, ``init_size`` rows each;
2. the dual of [Zepeda15] Eq. (1) restricted to the working set ``A`` is a small
   box-constrained QP in ``|A| + 1`` variables::

       max  beta + sum_i a_i - 1/2 ||beta x - sum_i a_i z_i||^2
       0 <= beta <= alpha_pos / lam,   0 <= a_i <= alpha_neg / lam

   solved by dual coordinate descent on its Gram matrix (``|A| x |A|``,
   grown by blocks as ``A`` grows; a coordinate step costs ``O(|A|)``, not
   ``O(d)``) until the largest projected gradient is below ``tol``;
3. one product ``W_b Z^T`` checks the optimality conditions over all of
   ``Z``: a negative outside ``A`` (dual variable 0) violates them when
   ``1 + z.w > tol``. The violators (most violating first, at most
   ``max_add`` per round) join ``A`` and step 2 resumes from the current
   solution; an exemplar with no violator is done.

Negatives whose dual variable sits at the upper bound ``alpha_neg / lam``
leave the working set and are kept as one aggregated vector (their fixed
share of ``w``), so the QP holds only the undecided ones. When a check finds
more than ``max_add`` violators, the most violating are guessed to sit at
the bound (in the first mining rounds only); a wrong guess shows up in the
next check as a bound negative with ``1 + z.w < -tol`` and goes back to the
working set.

Warm start (``warm_start="subsample"``, the default): with 2,400 negatives or
more, the same solver first runs on every 8th negative with ``alpha_neg``
scaled by 8 (recursively), and the full problem starts from that solution:
negatives with ``1 + z.w0 > 0`` start at the bound (their sum: one product
for the batch, or the smaller side summed when nearly all or nearly none
are at the bound), the ``init_size`` nearest the margin form the working set. Only the starting point changes; wrong starting guesses are
undone by the checks below.

Cost. Per exemplar and round, the batch's products over ``Z`` are BLAS
matrix products; everything else is one compiled call per exemplar
(:mod:`._exemplar_qp`): the QP, and the moves after a check, which cost a
pass over the exemplar's slack row, ``d`` per moved negative (the bound sum)
and ``d`` per new Gram entry. Those calls release the GIL and run on
``n_threads`` threads.

At the end every negative satisfies the KKT conditions of the full problem to
``tol``, so the result is the exact minimizer of [Zepeda15] Eq. (1) up to the
tolerance, without ever solving over all ``N`` negatives. Support sets are
small (tens to a few hundred negatives at the defaults), which is what makes
this fast.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import numpy as np
from threadpoolctl import ThreadpoolController

from hardneg._typing import ArrayLike
from . import _exemplar_qp as qp
from ._exemplar import check_exclude, check_exemplar_inputs, check_exemplar_params, exclusion_mask

__all__ = ["fit_exemplar_svms_batch"]

logger = logging.getLogger(__name__)

#: The warm start solves on every ``_SUBSAMPLE_STEP``-th negative, recursively while at least
#: ``_SUBSAMPLE_MIN`` negatives remain.
_SUBSAMPLE_STEP = 8
_SUBSAMPLE_MIN = 300

#: Mining rounds in which violators beyond ``max_add`` may be guessed to lie at the upper bound.
_GUESS_ROUNDS = 10



def fit_exemplar_svms_batch(
    X: ArrayLike,
    Z: ArrayLike,
    *,
    lam: float = 1e-2,
    alpha_pos: float = 1.0,
    alpha_neg: float = 1e-3,
    exclude: ArrayLike | None = None,
    drop_duplicates: bool = True,
    tol: float = 1e-3,
    init_size: int = 64,
    max_add: int = 64,
    max_rounds: int = 100,
    max_epochs: int = 10_000,
    batch_size: int = 256,
    progress: Callable[[int], object] | None = None,
    random_state: int | np.random.Generator | None = None,
    stats: dict | None = None,
    warm_start: str | None = "subsample",
    n_threads: int | None = None,
) -> np.ndarray:
    """Solve [Zepeda15] Eq. (1) exactly for every row of ``X`` by hard-negative active sets.

    Parameters
    ----------
    X : array of shape (n, d)
        Exemplars. Float32 in, float32 products; float64 in, float64 throughout.
    Z : array of shape (N, d)
        Negatives, shared by every exemplar.
    lam, alpha_pos, alpha_neg : float
        [Zepeda15] Eq. (1)'s regularization and hinge weights.
    exclude : array of int of shape (n,), optional
        A negative row to leave out of each exemplar's set (``-1``: none), e.g.
        the exemplar's own row when the pool itself is encoded ([Zepeda15] Eq. (3)-(4)).
    drop_duplicates : bool
        Leave out negatives identical to the exemplar.
    tol : float
        Optimality tolerance: the largest projected dual gradient on the
        working set, and the largest hinge slack ``1 + z.w`` allowed outside it.
    init_size : int
        First working set: the ``init_size`` negatives with the largest ``x.z``.
    max_add : int
        Most violators added per exemplar and round.
    max_rounds, max_epochs : int
        Bounds on mining rounds and on coordinate-descent sweeps per round
        (a bound reached is logged; the result is then the best so far).
    batch_size : int
        Exemplars scored per matrix product (memory ``batch_size x N``).
    progress : callable, optional
        Called with the number of exemplars finished after each batch.
    random_state : ignored
        The solver is deterministic; accepted so every solver takes it.
    warm_start : {"subsample", None}
        ``"subsample"`` (default, with 2,400 negatives or more): first solve
        [Zepeda15] Eq. (1) on every 8th negative with ``alpha_neg`` scaled up by the
        same factor (the same solver, recursively while 2,400 or more
        remain), then start the full problem from that solution: its
        negatives with ``1 + z.w0 > 0`` start at the bound, the ones nearest
        the margin in the working set. Only the starting point changes; the
        stopping rule (KKT over all of ``Z`` to ``tol``) is the same, so the
        result is the same minimizer to the tolerance. ``None``: start from
        ``w = 0`` with the ``init_size`` hardest negatives.
    stats : dict, optional
        Filled with ``rounds`` (total mining rounds), ``support`` (mean number
        of negatives with a non-zero dual variable) and ``working`` (mean
        working-set size).
    n_threads : int, optional
        Threads for the per-exemplar work of a batch (default: every CPU).
        The result is deterministic for a given count; another count may
        differ within the tolerance (the order of float sums changes).

    Returns
    -------
    W : ndarray of shape (n, d), X's dtype

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.svm import fit_exemplar_svms_batch
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(200, 256)).astype(np.float32)
    >>> X = rng.normal(size=(4, 256)).astype(np.float32)
    >>> W = fit_exemplar_svms_batch(X, Z, lam=0.01, alpha_pos=1.0, alpha_neg=0.01)
    >>> bool(np.all(np.einsum("ij,ij->i", W, X) > (Z @ W.T).max(axis=0)))  # each scores its exemplar first
    True
    """
    lam, alpha_pos, alpha_neg = check_exemplar_params(lam, alpha_pos, alpha_neg)
    X, Z = check_exemplar_inputs(X, Z)
    n, N = X.shape[0], Z.shape[0]
    exclude = check_exclude(exclude, n, N)
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol: must be a positive number, got {tol!r}")
    for name, value in (("init_size", init_size), ("max_add", max_add), ("max_rounds", max_rounds),
                        ("max_epochs", max_epochs), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}: must be a positive integer, got {value!r}")
    if warm_start not in ("subsample", None):
        raise ValueError(f"warm_start: expected 'subsample' or None, got {warm_start!r}")
    if n_threads is None:
        n_threads = os.cpu_count() or 1
    elif isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) or n_threads < 1:
        raise ValueError(f"n_threads: must be a positive integer or None, got {n_threads!r}")
    c_pos, c_neg = alpha_pos / lam, alpha_neg / lam
    W0 = None
    if warm_start == "subsample" and N >= _SUBSAMPLE_MIN * _SUBSAMPLE_STEP:
        W0 = _subsample_start(X, Z, exclude, lam=lam, alpha_pos=alpha_pos, alpha_neg=alpha_neg, drop_duplicates=drop_duplicates,
                              tol=tol, init_size=init_size, max_add=max_add, max_rounds=max_rounds, max_epochs=max_epochs,
                              batch_size=batch_size, n_threads=n_threads)
    z_sq = np.einsum("ij,ij->i", Z, Z, dtype=np.float64)
    z_total = Z.sum(axis=0, dtype=np.float64)
    W = np.empty_like(X)
    totals = {"rounds": 0, "support": 0, "working": 0}
    with ThreadPoolExecutor(n_threads) if n_threads > 1 else nullcontext() as pool:
        for lo in range(0, n, batch_size):
            hi = min(lo + batch_size, n)
            Xb = X[lo:hi]
            S = Xb @ Z.T  # x.z for every pair: the first working sets and the duplicates
            excluded = exclusion_mask(Xb, Z, S, exclude[lo:hi], drop_duplicates=drop_duplicates, z_sq=z_sq)
            _solve_batch(Xb, Z, z_total, S, excluded, c_pos, c_neg, tol, init_size, max_add, max_rounds, max_epochs, W[lo:hi],
                         totals, None if W0 is None else W0[lo:hi], pool, n_threads)
            if progress is not None:
                progress(hi - lo)
    if stats is not None:
        stats.update(rounds=totals["rounds"], support=totals["support"] / max(n, 1), working=totals["working"] / max(n, 1))
    return W


def _subsample_start(X, Z, exclude, *, alpha_neg, **kwargs) -> np.ndarray:
    """[Zepeda15] Eq. (1) on every ``_SUBSAMPLE_STEP``-th negative, ``alpha_neg`` scaled to keep the negatives' total weight."""
    N = Z.shape[0]
    keep = np.arange(0, N, _SUBSAMPLE_STEP)
    sub_ex = np.where((exclude >= 0) & (exclude % _SUBSAMPLE_STEP == 0), exclude // _SUBSAMPLE_STEP, -1)
    return fit_exemplar_svms_batch(X, Z[keep], alpha_neg=alpha_neg * N / keep.size, exclude=sub_ex, **kwargs)


class _Exemplar:
    """One exemplar's working set (see :mod:`._exemplar_qp`)."""

    __slots__ = ("idx", "v", "g", "C", "Q", "wU", "w")

    def __init__(self, x, Z, first, c_pos, c_neg, wU):
        self.idx = first
        self.v = np.zeros(first.size + 1)
        self.C = np.r_[c_pos, np.full(first.size, c_neg)]
        xx = np.array([[float(x.astype(np.float64) @ x)]])
        self.Q = qp.grow_gram(xx, np.zeros(1, np.int64), x, Z, first[:0], first)
        self.wU = wU
        self.w = np.empty(x.size)
        self.g = np.empty(first.size + 1)
        qp.refresh(x, Z, self.idx, self.v, self.wU, self.w, self.g)


def _bound_sums(Z, upper, z_total) -> np.ndarray:
    """``upper @ Z`` (float64): one product for the rows with many negatives on each side, a sum of the
    smaller side for the others (e.g. all but a few at the bound, as with a small total negative weight)."""
    N = Z.shape[0]
    counts = upper.sum(axis=1)
    lopsided = np.minimum(counts, N - counts) < N // 16
    sums = np.empty((upper.shape[0], Z.shape[1]))
    for b in np.flatnonzero(lopsided):
        sums[b] = qp.bound_sum(Z, upper[b], z_total)
    if not lopsided.all():
        rest = np.flatnonzero(~lopsided)
        sums[rest] = upper[rest].astype(Z.dtype) @ Z
    return sums


#: The process's thread pools (BLAS among them), found at the first threaded round.
_BLAS = None


def _each(pool, k, fn, items) -> list:
    """``[fn(i) for i in items]``, on the pool's threads when there is one (the compiled parts release the GIL).

    Each of the ``k`` threads takes every ``k``-th item (costs vary along a batch); BLAS runs
    single-threaded meanwhile, so its threads do not compete with the pool's.
    """
    global _BLAS
    if pool is None or len(items) < 2:
        return [fn(i) for i in items]
    if _BLAS is None:  # finding the loaded BLAS libraries costs ~0.4 ms: once, not twice per round
        _BLAS = ThreadpoolController()
    with _BLAS.limit(limits=1, user_api="blas"):
        parts = list(pool.map(lambda t: [fn(i) for i in items[t::k]], range(k)))
    out = [None] * len(items)
    for t, part in enumerate(parts):
        out[t::k] = part
    return out


def _solve_batch(Xb, Z, z_total, S, excluded, c_pos, c_neg, tol, init_size, max_add, max_rounds, max_epochs, out, totals, W0, pool,
                 n_threads):
    B, N = S.shape
    k0 = min(init_size, N)
    if W0 is not None:
        # warm start: negatives with 1 + z.w0 > 0 start at the bound, the ones nearest the margin in the working set
        S0 = 1.0 + W0.astype(Z.dtype) @ Z.T
        dist = np.where(excluded, np.inf, np.abs(S0))
        first = np.argpartition(dist, k0 - 1, axis=1)[:, :k0] if k0 < N else np.broadcast_to(np.arange(N), (B, N))
        upper = (S0 > 0.0) & ~excluded
        np.put_along_axis(upper, first, False, axis=1)
        sums = _bound_sums(Z, upper, z_total)
    else:
        P = np.where(excluded, -np.inf, S)
        first = np.argpartition(-P, k0 - 1, axis=1)[:, :k0] if k0 < N else np.broadcast_to(np.arange(N), (B, N))
        upper = np.zeros((B, N), dtype=bool)
        sums = np.zeros((B, Z.shape[1]))
    states = [
        _Exemplar(Xb[b], Z, np.sort(first[b][~excluded[b, first[b]]]).astype(np.int64), c_pos, c_neg, -c_neg * sums[b])
        for b in range(B)
    ]

    def solve(b):
        st = states[b]
        epochs, worst = qp.solve_qp(st.Q, st.C, st.v, st.g, tol, max_epochs)
        if worst > tol:
            logger.debug("exemplar SVM: the working-set QP stopped at %d sweeps (gradient %.2g > tol)", epochs, worst)
        qp.refresh(Xb[b], Z, st.idx, st.v, st.wU, st.w, st.g)
        out[b] = st.w  # w = beta x - sum_i a_i z_i

    def check(b, slack_row, guess):
        st = states[b]
        optimal, st.idx, st.v, st.g, st.C, st.Q = qp.mine(
            slack_row, excluded[b], upper[b], st.idx, st.v, st.g, st.C, st.Q, st.wU, st.w, Xb[b], Z, c_neg, tol, max_add, guess
        )
        return optimal

    active = np.arange(B)
    rounds = 0
    while active.size:
        rounds += 1
        _each(pool, n_threads, solve, active)
        totals["rounds"] += active.size
        if rounds >= max_rounds:
            logger.warning("exemplar SVM: %d exemplar(s) still violated the optimality conditions after max_rounds=%d", active.size, max_rounds)
            break
        # one product checks the optimality conditions over all negatives
        slack = 1.0 + out[active] @ Z.T
        optimal = _each(pool, n_threads, lambda r: check(active[r], slack[r], rounds <= _GUESS_ROUNDS), np.arange(active.size))
        active = active[~np.asarray(optimal, dtype=bool)]
    for b, st in enumerate(states):
        totals["support"] += int(np.count_nonzero(st.v[1:])) + int(upper[b].sum())
        totals["working"] += st.idx.size
