"""Compiled parts of the batched exemplar-SVM solver (:mod:`._exemplar_batch`).

One exemplar's state is its working set: ``idx`` (negative rows), the dual
variables ``v`` (``v[0]`` is the exemplar's ``beta``, ``v[1:]`` the working
negatives' ``a_i``), their box bounds ``C``, the gradient ``g = 1 - h.w`` and
the Gram matrix ``Q = H H^T`` of the rows ``h_0 = x``, ``h_i = -z_idx[i]``;
``wU = -c_neg * sum(z over the negatives fixed at the bound)`` and the
primal ``w = beta x - sum_i a_i z_idx[i] + wU``.

Everything here works on one exemplar and touches only its working rows, the
rows it moves, and (in :func:`mine`) one pass over its slack row; the
products over all negatives are the caller's, one per batch.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["bound_sum", "dual_cd", "grow_gram", "mine", "refresh", "solve_qp"]


@numba.njit(cache=True, nogil=True)
def dual_cd(Q, C, v, g, tol, epochs):  # pragma: no cover, no mutate block - compiled
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


@numba.njit(cache=True, nogil=True)
def _is_fixed(vj, gj, cj):  # pragma: no cover - compiled
    """At a bound with the gradient pushing outwards: the box keeps the variable where it is."""
    return (vj <= 0.0 and gj < 0.0) or (vj >= cj and gj > 0.0)


@numba.njit(cache=True, nogil=True)
def projected_gradient(v, g, C):  # pragma: no cover - compiled
    worst = 0.0
    for j in range(v.size):
        if not _is_fixed(v[j], g[j], C[j]) and abs(g[j]) > worst:
            worst = abs(g[j])
    return worst


@numba.njit(cache=True, nogil=True)
def newton_step(Q, C, v, g):  # pragma: no cover - compiled
    """One projected Newton step (Bertsekas 1982) on the free variables; True if it gained."""
    m = v.size
    free = np.empty(m, np.int64)
    k = 0
    for j in range(m):
        if not _is_fixed(v[j], g[j], C[j]):
            free[k] = j
            k += 1
    if k == 0:
        return False
    QF = np.empty((k, k))
    gF = np.empty(k)
    top = 1e-30
    for a in range(k):
        gF[a] = g[free[a]]
        for b in range(k):
            QF[a, b] = Q[free[a], free[b]]
        top = max(top, QF[a, a])
    for a in range(k):  # a tiny ridge: Q has rank <= d and may be singular on the free set
        QF[a, a] += 1e-10 * top
    try:
        d = np.linalg.solve(QF, gF)
    except Exception:  # noqa: BLE001 - a singular system: no Newton step, coordinate descent goes on
        return False
    step = np.empty(k)
    Qs = np.empty(m)
    t = 1.0
    for _ in range(30):
        for a in range(k):
            j = free[a]
            step[a] = min(max(v[j] + t * d[a], 0.0), C[j]) - v[j]
        Qs[:] = 0.0
        for a in range(k):
            if step[a] != 0.0:
                col = free[a]
                for i in range(m):
                    Qs[i] += Q[i, col] * step[a]
        gain = 0.0
        for a in range(k):
            gain += step[a] * (gF[a] - 0.5 * Qs[free[a]])
        if gain > 0.0:
            for a in range(k):
                v[free[a]] += step[a]
            for i in range(m):
                g[i] -= Qs[i]
            return True
        t *= 0.5
    return False


@numba.njit(cache=True, nogil=True)
def solve_qp(Q, C, v, g, tol, max_epochs):  # pragma: no cover - compiled
    """Maximize the working-set dual to projected gradient <= ``tol``: CD sweeps, then Newton steps.

    Returns (sweeps done, largest projected gradient left).
    """
    done = 0
    worst = np.inf
    while done < max_epochs:
        worst = dual_cd(Q, C, v, g, tol, 1)
        done += 1
        if worst <= tol:
            break
        newton_step(Q, C, v, g)
        worst = projected_gradient(v, g, C)
        if worst <= tol:
            break
    return done, worst


@numba.njit(cache=True, nogil=True)
def refresh(x, Z, idx, v, wU, w, g):  # pragma: no cover - compiled
    """``w = v[0] x - sum_i v[i+1] z_idx[i] + wU`` and the exact gradient ``g = 1 - h.w`` (both in place)."""
    D = x.size
    for d in range(D):
        w[d] = wU[d] + v[0] * x[d]
    for i in range(idx.size):
        a = v[i + 1]
        if a != 0.0:
            z = Z[idx[i]]
            for d in range(D):
                w[d] -= a * z[d]
    s = 0.0
    for d in range(D):
        s += x[d] * w[d]
    g[0] = 1.0 - s
    for i in range(idx.size):
        z = Z[idx[i]]
        s = 0.0
        for d in range(D):
            s += z[d] * w[d]
        g[i + 1] = 1.0 + s


@numba.njit(cache=True, nogil=True)
def grow_gram(Q, keep, x, Z, kept, new):  # pragma: no cover, no mutate block - compiled
    """Gram matrix of the rows ``[x, -z_kept, -z_new]`` from ``Q`` (rows ``keep`` of the old ones, row 0 first).

    Only the products with the new rows are computed, in one product in ``Z``'s precision.
    """
    mk, kk = kept.size, new.size
    M = 1 + mk + kk
    out = np.empty((M, M))
    for a in range(1 + mk):
        for b in range(1 + mk):
            out[a, b] = Q[keep[a], keep[b]]
    if kk == 0:
        return out
    rows = np.empty((M, Z.shape[1]), Z.dtype)
    rows[0] = x
    for a in range(mk):
        rows[1 + a] = -Z[kept[a]]
    for a in range(kk):
        rows[1 + mk + a] = -Z[new[a]]
    cross = np.dot(rows[1 + mk :], rows.T)  # (new, all rows)
    for a in range(kk):
        for b in range(M):
            out[1 + mk + a, b] = cross[a, b]
            out[b, 1 + mk + a] = cross[a, b]
    return out


@numba.njit(cache=True, nogil=True)
def bound_sum(Z, upper, total):  # pragma: no cover - compiled
    """``sum(Z[upper])`` (float64) from the smaller side: the rows in ``upper``, or ``total`` minus the rows outside it."""
    n_in = 0
    for j in range(upper.size):
        n_in += upper[j]
    out = np.zeros(Z.shape[1]) if 2 * n_in <= upper.size else total.copy()
    scale = 1.0 if 2 * n_in <= upper.size else -1.0
    for j in range(upper.size):
        if upper[j] == (scale > 0.0):
            z = Z[j]
            for d in range(out.size):
                out[d] += scale * z[d]
    return out


@numba.njit(cache=True, nogil=True)
def _add_rows(wU, Z, rows, scale):  # pragma: no cover - compiled
    for j in rows:
        z = Z[j]
        for d in range(wU.size):
            wU[d] += scale * z[d]


@numba.njit(cache=True, nogil=True)
def mine(slack, excluded, upper, idx, v, g, C, Q, wU, w, x, Z, c_neg, tol, max_add, guess):  # pragma: no cover - compiled
    """One exemplar's moves after a check; ``slack`` is ``1 + z.w`` over all negatives (overwritten).

    Working negatives settled at a bound leave the working set (to the
    bound set ``upper``, or to 0). Then every other negative is checked:
    a negative at 0 with ``slack > tol`` violates, one at the bound with
    ``slack < -tol`` should come back. At most ``max_add`` of each join the
    working set (at their current value, so ``w`` does not move): of the
    returning ones, the farthest from the margin; of the violators, while
    ``guess`` is set, the nearest the margin, and the farther half of the
    rest is guessed to sit at the bound (a damped step: a wrong guess shows
    up in the next check and is undone); without ``guess``, the most violating.

    Returns ``(optimal, idx, v, g, C, Q)``: ``optimal`` when no negative
    violates (the arrays are then the settled working set); ``w`` and
    ``wU`` are updated in place.
    """
    m = idx.size
    N = slack.size
    keep = np.empty(1 + m, np.int64)
    keep[0] = 0
    mk = 0
    for i in range(m):
        j = idx[i]
        if v[i + 1] >= C[i + 1] and g[i + 1] > tol:
            upper[j] = True
            _add_rows(wU, Z, idx[i : i + 1], -c_neg)
        elif not (v[i + 1] <= 0.0 and g[i + 1] < -tol):
            mk += 1
            keep[mk] = i + 1
        slack[j] = np.nan  # decided above: not a candidate below
    keep = keep[: 1 + mk]
    viol = np.empty(N, np.int64)
    back = np.empty(N, np.int64)
    nv = 0
    nb = 0
    for j in range(N):
        if excluded[j]:
            continue
        s = slack[j]
        if upper[j]:
            if s < -tol:
                back[nb] = j
                nb += 1
        elif s > tol:
            viol[nv] = j
            nv += 1
    viol, back = viol[:nv], back[:nb]
    kept = np.empty(mk, np.int64)
    for a in range(mk):
        kept[a] = idx[keep[1 + a] - 1]
    if nv == 0 and nb == 0:
        return True, kept, v[keep].copy(), g[keep].copy(), C[keep].copy(), grow_gram(Q, keep, x, Z, kept, kept[:0])
    if nv > max_add:
        order = np.argsort(slack[viol])  # nearest the margin first
        if guess:
            to_upper = viol[order[(nv + max_add) // 2 :]]
            upper[to_upper] = True
            _add_rows(wU, Z, to_upper, -c_neg)
            viol = viol[order[:max_add]]
        else:
            viol = viol[order[nv - max_add :]]
    if nb > max_add:  # bounded like the additions: the working QP stays small
        back = back[np.argsort(slack[back])[:max_add]]
    # the returning ones join the working set at c_neg: their share moves from wU to the working rows
    upper[back] = False
    _add_rows(wU, Z, back, c_neg)
    new = np.concatenate((back, viol))
    idx2 = np.concatenate((kept, new))
    v2 = np.concatenate((v[keep], np.full(back.size, c_neg), np.zeros(viol.size)))
    C2 = np.concatenate((C[keep], np.full(new.size, c_neg)))
    Q2 = grow_gram(Q, keep, x, Z, kept, new)
    g2 = np.empty(v2.size)
    refresh(x, Z, idx2, v2, wU, w, g2)
    return False, idx2, v2, g2, C2, Q2
