"""Exact exemplar SVMs in batches: hard-negative active sets over a shared pool.

Every exemplar of a batch is trained against the same negatives ``Z``, so
the expensive part, scoring all of ``Z``, is one matrix product for the
whole batch. The loop is the hard-negative mining of Malisiewicz et al.
(2011), made exact:

1. one product ``X_b Z^T`` gives, for every exemplar, its hardest negatives
   (largest ``x.z``): the first working set, ``init_size`` rows each;
2. the dual of Eq. (1) restricted to the working set ``A`` is a small
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

Warm start (``warm_start="subsample"``, the default): with 8,000 negatives or
more, the same solver first runs on every 8th negative with ``alpha_neg``
scaled by 8 (recursively), and the full problem starts from that solution:
negatives with ``1 + z.w0 > 0`` start at the bound (one product for the
batch gives their sum), the ``2 * init_size`` nearest the margin form the
working set. Only the starting point changes; wrong starting guesses are
undone by the checks below. Updates of the bound sums after each check are one
``(k, N) @ Z`` product for the batch rather than a pass over ``Z`` per exemplar.

At the end every negative satisfies the KKT conditions of the full problem to
``tol``, so the result is the exact minimizer of Eq. (1) up to the
tolerance, without ever solving over all ``N`` negatives. Support sets are
small (tens to a few hundred negatives at the defaults), which is what makes
this fast.
"""

from __future__ import annotations

import logging

import numba
import numpy as np

from ._exemplar import check_exclude, check_exemplar_inputs, check_exemplar_params, exclusion_mask

__all__ = ["fit_exemplar_svms_batch"]

logger = logging.getLogger(__name__)

#: The warm start solves on every ``_SUBSAMPLE_STEP``-th negative, recursively while at least
#: ``_SUBSAMPLE_MIN`` negatives remain.
_SUBSAMPLE_STEP = 8
_SUBSAMPLE_MIN = 1000

#: Mining rounds in which violators beyond ``max_add`` may be guessed to lie at the upper bound.
_GUESS_ROUNDS = 10


@numba.njit(cache=True, nogil=True)
def _dual_cd(Q, C, v, g, tol, epochs):  # pragma: no cover, no mutate block - compiled
    """Coordinate-descent sweeps on ``max e.v - 1/2 v'Qv, 0 <= v <= C``.

    ``v`` and the gradient ``g = e - Q v`` are updated in place. Returns the
    largest projected gradient seen in the last sweep.
    """
    m = Q.shape[0]
    worst = np.inf
    for _ in range(epochs):
        worst = 0.0
        for j in range(m):
            gj = g[j]
            vj = v[j]
            if (vj <= 0.0 and gj < 0.0) or (vj >= C[j] and gj > 0.0):
                continue
            if abs(gj) > worst:
                worst = abs(gj)
            qjj = Q[j, j]
            # a zero row costs a constant hinge: its variable goes to the bound, w is unchanged
            new = min(max(vj + gj / qjj, 0.0), C[j]) if qjj > 0.0 else C[j]
            d = new - vj
            if d != 0.0:
                v[j] = new
                if qjj > 0.0:
                    for i in range(m):
                        g[i] -= d * Q[i, j]
        if worst <= tol:
            break
    return worst


def _projected_gradient(v, g, C):
    pg = g.copy()
    pg[(v <= 0.0) & (g < 0.0)] = 0.0
    pg[(v >= C) & (g > 0.0)] = 0.0
    return float(np.abs(pg).max(initial=0.0))


def _newton_step(Q, C, v, g) -> bool:
    """One projected Newton step (Bertsekas 1982) on the free variables; True if it gained."""
    free = np.flatnonzero(~(((v <= 0.0) & (g < 0.0)) | ((v >= C) & (g > 0.0))))
    if free.size == 0:
        return False
    QF = Q[np.ix_(free, free)]
    # a tiny ridge: Q has rank <= d and may be singular on the free set
    QF.flat[:: free.size + 1] += 1e-10 * max(float(QF.diagonal().max()), 1e-30)
    try:
        d = np.linalg.solve(QF, g[free])
    except np.linalg.LinAlgError:
        return False
    t = 1.0
    gF = g[free]
    Qcols = Q[:, free]
    for _ in range(30):
        new = np.clip(v[free] + t * d, 0.0, C[free])
        step = new - v[free]
        Qs = Qcols @ step
        gain = float(gF @ step - 0.5 * step @ Qs[free])
        if gain > 0.0:
            v[free] = new
            g -= Qs
            return True
        t *= 0.5
    return False


def _solve_qp(Q, C, v, g, tol, max_epochs):
    """Maximize the working-set dual to projected gradient <= ``tol``: CD sweeps, then Newton steps."""
    done = 0
    worst = np.inf
    while done < max_epochs:
        worst = _dual_cd(Q, C, v, g, tol, 1)
        done += 1
        if worst <= tol:
            break
        _newton_step(Q, C, v, g)
        worst = _projected_gradient(v, g, C)
        if worst <= tol:
            break
    return done, worst


def fit_exemplar_svms_batch(
    X,
    Z,
    *,
    lam: float = 1e-2,
    alpha_pos: float = 1.0,
    alpha_neg: float = 1e-3,
    exclude=None,
    drop_duplicates: bool = True,
    tol: float = 1e-3,
    init_size: int = 64,
    max_add: int = 64,
    max_rounds: int = 100,
    max_epochs: int = 10_000,
    batch_size: int = 256,
    progress=None,
    random_state=None,
    stats: dict | None = None,
    warm_start: str | None = "subsample",
):
    """Solve Eq. (1) exactly for every row of ``X`` by hard-negative active sets.

    Parameters
    ----------
    X : array of shape (n, d)
        Exemplars. Float32 in, float32 products; float64 in, float64 throughout.
    Z : array of shape (N, d)
        Negatives, shared by every exemplar.
    lam, alpha_pos, alpha_neg : float
        Eq. (1)'s regularization and hinge weights.
    exclude : array of int of shape (n,), optional
        A negative row to leave out of each exemplar's set (``-1``: none), e.g.
        the exemplar's own row when the pool itself is encoded (Eq. (3)-(4)).
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
        ``"subsample"`` (default, with 8,000 negatives or more): first solve
        Eq. (1) on every 8th negative with ``alpha_neg`` scaled up by the
        same factor (the same solver, recursively while 8,000 or more
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
    c_pos, c_neg = alpha_pos / lam, alpha_neg / lam
    W0 = None
    if warm_start == "subsample" and N >= _SUBSAMPLE_MIN * _SUBSAMPLE_STEP:
        W0 = _subsample_start(X, Z, exclude, lam=lam, alpha_pos=alpha_pos, alpha_neg=alpha_neg, drop_duplicates=drop_duplicates,
                              tol=tol, init_size=init_size, max_add=max_add, max_rounds=max_rounds, max_epochs=max_epochs,
                              batch_size=batch_size)
    z_sq = np.einsum("ij,ij->i", Z, Z, dtype=np.float64)
    W = np.empty_like(X)
    totals = {"rounds": 0, "support": 0, "working": 0}
    for lo in range(0, n, batch_size):
        hi = min(lo + batch_size, n)
        Xb = X[lo:hi]
        S = Xb @ Z.T  # x.z for every pair: the first working sets and p
        excluded = exclusion_mask(Xb, Z, S, exclude[lo:hi], drop_duplicates=drop_duplicates, z_sq=z_sq)
        _solve_batch(Xb, Z, S, excluded, c_pos, c_neg, tol, init_size, max_add, max_rounds, max_epochs, W[lo:hi], totals,
                     None if W0 is None else W0[lo:hi])
        if progress is not None:
            progress(hi - lo)
    if stats is not None:
        stats.update(rounds=totals["rounds"], support=totals["support"] / max(n, 1), working=totals["working"] / max(n, 1))
    return W


def _subsample_start(X, Z, exclude, *, alpha_neg, **kwargs) -> np.ndarray:
    """Eq. (1) on every ``_SUBSAMPLE_STEP``-th negative, ``alpha_neg`` scaled to keep the negatives' total weight."""
    N = Z.shape[0]
    keep = np.arange(0, N, _SUBSAMPLE_STEP)
    sub_ex = np.where((exclude >= 0) & (exclude % _SUBSAMPLE_STEP == 0), exclude // _SUBSAMPLE_STEP, -1)
    return fit_exemplar_svms_batch(X, Z[keep], alpha_neg=alpha_neg * N / keep.size, exclude=sub_ex, **kwargs)


def _take(st, keep):
    """Keep working-set rows ``keep`` (row 0, the exemplar, always stays)."""
    keep = np.r_[0, keep[keep > 0]] if keep.size else np.array([0])
    st["H"] = st["H"][keep]
    st["Q"] = st["Q"][np.ix_(keep, keep)]
    st["C"], st["v"], st["g"] = st["C"][keep], st["v"][keep], st["g"][keep]
    st["idx"] = st["idx"][keep[1:] - 1]


def _signed_row_sums(Z, pairs) -> np.ndarray:
    """``sum(Z[plus]) - sum(Z[minus])`` for each ``(plus, minus)``, float64; large ones by one product."""
    out = np.zeros((len(pairs), Z.shape[1]))
    big = [k for k, (p, m) in enumerate(pairs) if p.size + m.size >= 64]
    for k, (p, m) in enumerate(pairs):
        if not 0 < p.size + m.size < 64:  # none to sum, or summed by the product below
            continue
        out[k] = Z[p].sum(axis=0, dtype=np.float64) - Z[m].sum(axis=0, dtype=np.float64)
    if big:
        # a (k, N) matrix of +1/-1/0 against Z: GEMM speed instead of one memory-bound pass per exemplar
        M = np.zeros((len(big), Z.shape[0]), dtype=Z.dtype)
        for r, k in enumerate(big):
            M[r, pairs[k][0]] = 1.0
            M[r, pairs[k][1]] = -1.0
        out[big] = (M @ Z).astype(np.float64)
    return out


def _plan_round(st, row, excluded, c_neg, tol, max_add, rounds):
    """Moves of one exemplar after a check; ``row`` is its slack ``1 + z.w`` over all negatives (overwritten).

    Returns None when the exemplar satisfies the optimality conditions, else the
    negatives to guess at the bound (``guess``), to bring back from the bound
    (``back``) and to add to the working set at 0 (``viol``).
    """
    row[excluded] = -np.inf
    # every move here keeps w as it is, so the gradients of the rows that stay are unchanged
    v, g, C = st["v"], st["g"], st["C"]
    k = np.arange(v.size)
    to_upper = (k > 0) & (v >= C) & (g > tol)
    drop = (k > 0) & (v <= 0.0) & (g < -tol)
    if to_upper.any():
        st["upper"][st["idx"][to_upper[1:]]] = True
        st["wU"] += c_neg * st["H"][to_upper].sum(axis=0)
    if to_upper.any() or drop.any():
        _take(st, np.flatnonzero(~(to_upper | drop)))
    # at the bound but no longer violating: back to the working set, at c_neg
    back = np.flatnonzero(st["upper"] & (row < -tol))
    if back.size > max_add:  # bounded like the additions: the working QP stays small
        back = back[np.argpartition(row[back], max_add - 1)[:max_add]]
    row[st["idx"]] = -np.inf
    row[st["upper"]] = -np.inf
    viol = np.flatnonzero(row > tol)
    if viol.size == 0 and back.size == 0:
        return None
    guess = viol[:0]
    if viol.size > max_add:
        if rounds <= _GUESS_ROUNDS:
            # too many to add one by one: guess that the most violating ones end at the bound
            # (a wrong guess shows up in the next check as "back" and is undone), and let the
            # max_add nearest the margin into the working set; only the farther half is guessed (a damped
            # step: guessing all of them makes the next check send most of them back)
            order = np.argsort(row[viol])
            guess, viol = viol[order[(viol.size + max_add) // 2 :]], viol[order[:max_add]]
        else:
            viol = viol[np.argpartition(-row[viol], max_add - 1)[:max_add]]
    return {"guess": guess, "back": back, "viol": viol}


def _grow(st, Z, plan, dsum, c_neg, w_out):
    """Apply a plan: bound sums moved by ``dsum`` (= sum(guess) - sum(back)), new rows joined to the working set."""
    guess, back, viol = plan["guess"], plan["back"], plan["viol"]
    st["upper"][guess] = True
    st["upper"][back] = False
    st["wU"] -= c_neg * dsum
    new = np.concatenate([back, viol])
    Hn = -Z[new].astype(np.float64)
    cross = Hn @ st["H"].T
    Q = st["Q"]
    m, kk = Q.shape[0], new.size
    grown = np.empty((m + kk, m + kk))
    grown[:m, :m] = Q
    grown[m:, :m] = cross
    grown[:m, m:] = cross.T
    grown[m:, m:] = Hn @ Hn.T
    st["Q"] = grown
    st["H"] = np.vstack([st["H"], Hn])
    st["idx"] = np.concatenate([st["idx"], new])
    st["C"] = np.concatenate([st["C"], np.full(kk, c_neg)])
    st["v"] = np.concatenate([st["v"], np.full(back.size, c_neg), np.zeros(viol.size)])
    # the dual gradient of a working row is 1 - h.w (its hinge slack): recomputed from w, which the
    # guesses moved (the rows brought back sit at c_neg, so they leave w as it was)
    w = st["v"] @ st["H"] + st["wU"]
    st["g"] = 1.0 - st["H"] @ w
    w_out[:] = w


def _solve_batch(Xb, Z, S, excluded, c_pos, c_neg, tol, init_size, max_add, max_rounds, max_epochs, out, totals, W0=None):
    B, N = S.shape
    if W0 is not None:
        # warm start: negatives with 1 + z.w0 > 0 start at the bound, the ones nearest the margin in the working set
        S0 = 1.0 + W0.astype(Z.dtype) @ Z.T
        S0[excluded] = np.nan
        k0 = min(2 * init_size, N)
        dist = np.where(excluded, np.inf, np.abs(S0))
        first = np.argpartition(dist, k0 - 1, axis=1)[:, :k0] if k0 < N else np.broadcast_to(np.arange(N), (B, N))
        upper = S0 > 0.0  # NaN (excluded) compares False
        np.put_along_axis(upper, first, False, axis=1)
        sums = (upper.astype(Z.dtype) @ Z).astype(np.float64)  # one product for the batch
    else:
        k0 = min(init_size, N)
        P = np.where(excluded, -np.inf, S)
        if k0 < N:
            first = np.argpartition(-P, k0 - 1, axis=1)[:, :k0]
        else:
            first = np.broadcast_to(np.arange(N), (B, N))
        upper = np.zeros((B, N), dtype=bool)
        sums = np.zeros((B, Z.shape[1]))
    states = []
    for b in range(B):
        idx = first[b][~excluded[b, first[b]]].astype(np.int64)
        # rows of H: the exemplar, then the negated working negatives; the working dual's Q = H H^T
        H = np.vstack([Xb[b : b + 1].astype(np.float64), -Z[idx].astype(np.float64)])
        # negatives fixed at the upper bound c_neg: aggregated, w_U = -c_neg * sum of their rows
        wU = -c_neg * sums[b]
        states.append({
            "idx": idx, "H": H, "Q": H @ H.T, "C": np.r_[c_pos, np.full(idx.size, c_neg)], "v": np.zeros(idx.size + 1),
            "g": 1.0 - H @ wU, "upper": upper[b].copy(), "wU": wU,
        })
    active = np.arange(B)
    rounds = 0
    while active.size:
        rounds += 1
        for b in active:
            st = states[b]
            epochs, worst = _solve_qp(st["Q"], st["C"], st["v"], st["g"], tol, max_epochs)
            if worst > tol:
                logger.debug("exemplar SVM: the working-set QP stopped at %d sweeps (gradient %.2g > tol)", epochs, worst)
            out[b] = st["v"] @ st["H"] + st["wU"]  # w = beta x - sum_i a_i z_i
        totals["rounds"] += active.size
        if rounds >= max_rounds:
            logger.warning("exemplar SVM: %d exemplar(s) still violated the optimality conditions after max_rounds=%d", active.size, max_rounds)
            break
        # one product checks the optimality conditions over all negatives
        slack = 1.0 + out[active] @ Z.T
        plans = []
        for r, b in enumerate(active):
            plan = _plan_round(states[b], slack[r], excluded[b], c_neg, tol, max_add, rounds)
            if plan is not None:
                plans.append((b, plan))
        if plans:
            # the bound sums move by sum(guess) - sum(back) for each exemplar: one product for the whole batch
            delta = _signed_row_sums(Z, [(p["guess"], p["back"]) for _, p in plans])
            for (b, plan), dsum in zip(plans, delta):
                _grow(states[b], Z, plan, dsum, c_neg, out[b])
        active = np.asarray([b for b, _ in plans], dtype=np.int64)
    for st in states:
        totals["support"] += int(np.count_nonzero(st["v"][1:])) + int(st["upper"].sum())
        totals["working"] += st["idx"].size
