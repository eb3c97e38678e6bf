"""The lazy per-triplet loop shared by the four SOLIS solvers (Numba).

One pass over a triplet stream. For a triplet ``(a, p, n)`` only the words
in ``supp(x_a) ∩ (supp(x_p) ∪ supp(x_n))`` carry a non-zero ``v = x_a ⊙
(x_p - x_n)``; only those weights are brought up to date, read for the loss
and, if the triplet is violated (``L = 1 - wᵀv > 0``), updated with the
subgradient ``g = -v``. The l1 truncation of untouched words is owed, not
applied: each solver keeps per word what it needs to apply all owed steps at
once (the step or accumulated threshold at its last update, or the running
gradient sums that its closed form reads), so a triplet costs
``O(nnz(x_a) + nnz(x_p) + nnz(x_n))`` at any vocabulary size. All words are
brought up to date once, when the weights are read (:func:`finalize`).

The clock ``t`` (``glob[0]``) has two declared meanings, compiled as two
specialised loops:

* ``"triplets"`` (the default of S-DA and S-ADA): ``t`` advances on EVERY
  triplet, as in [Gao17] Algorithm 2 and Algorithm 4: a satisfied triplet
  contributes a zero subgradient, so the average gradient ``ḡ_t`` shrinks by
  ``(t-1)/t`` and ``λ_t`` (S-DA) / the threshold ``η t λ / H`` (S-ADA) grow
  with it. The loss is read with ``w_t`` (the clock before the triplet), then
  ``t`` advances.
* ``"updates"``: ``t`` counts violated triplets only; a satisfied triplet
  changes nothing, not even the clock. S-TG and S-AFB always run this way:
  they are step methods (``w_{t+1}`` from ``w_t`` and ``g_t``), their
  per-word state does not read ``t``, and a zero subgradient takes no step;
  S-TG's gravity ``ηλ`` ([Gao17] Eq. (11)) is owed only for the steps taken. S-DA and
  S-ADA accept it as ``clock="updates"`` (this library's earlier behaviour).

This module imports no solver: a solver's file registers its two per-word
rules with :func:`hardneg.similarity._base.register_solver`, and the loop is
compiled for them on first use (:func:`kernels`), so adding a solver is one file.

Parameter vector ``params``: ``[eta, lam, gamma, rho, delta, theta, w_init]``
(index constants below); global state ``glob``: ``[t, accumulated TG
threshold]``; per-word state ``state``: a ``(rows, n_words)`` float64 array
whose rows each solver defines.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numba
import numpy as np

from ._prox import ETA, LAM, as_scalars

__all__ = ["CLOCKS", "SolverRule", "csr_buffers", "gather_v", "kernels", "stream", "weights"]


@numba.njit(cache=True)
def gather_v(a, pos, neg, indptr, indices, data, scratch, touched, vals):
    """Words ``j`` with ``v_j = x_a,j (x_p,j - x_n,j) != 0`` into ``touched``/``vals``;
    returns their count. ``scratch`` is all-zero on entry and on exit."""
    for k in range(indptr[pos], indptr[pos + 1]):
        scratch[indices[k]] += data[k]
    for k in range(indptr[neg], indptr[neg + 1]):
        scratch[indices[k]] -= data[k]
    nt = 0
    for k in range(indptr[a], indptr[a + 1]):
        d = scratch[indices[k]]
        if d != 0.0:
            touched[nt] = indices[k]
            vals[nt] = data[k] * d
            nt += 1
    for k in range(indptr[pos], indptr[pos + 1]):
        scratch[indices[k]] = 0.0
    for k in range(indptr[neg], indptr[neg + 1]):
        scratch[indices[k]] = 0.0
    return nt


class SolverRule(NamedTuple):
    """A SOLIS solver's per-word rules, as the shared loop calls them (all inlined by Numba).

    ``weight(j, S, g, p)`` returns ``w_j`` (paying what word ``j`` owes);
    ``update(j, v, S, g, p)`` applies the subgradient step ``g_j = -v`` to word
    ``j``; ``gravity``: ``glob[1]`` accumulates ``ηλ`` per update, the
    threshold every word owes (S-TG's truncation, [Gao17] Eq. (11)).
    """

    weight: Callable
    update: Callable
    gravity: bool = False


def _make_kernels(weight, update, tg_clock: bool, every_triplet: bool = False):
    """The pass and the read-out, compiled for one solver and clock.

    ``weight`` / ``update`` are that solver's per-word functions (inlined);
    ``tg_clock`` and ``every_triplet`` (the ``"triplets"`` clock) are
    compile-time constants. One specialized loop per solver,
    rather than one loop that branches on the solver at every word, measured
    2-3x faster per triplet (the branches kept Numba from inlining and
    optimizing the per-word work).

    Not ``cache=True``: Numba cannot key a closure over other compiled functions
    stably across processes, so each process missed the cache and wrote one more
    entry to ``__pycache__`` (806 files, 39 MB after a few hundred runs here).
    The loop compiles once per process instead (about a second per solver and clock)."""

    @numba.njit(nogil=True)
    def run_stream(indptr, indices, data, triplets, S, g, p, scratch, touched, vals):
        """Process the triplets in order; return the number of updates."""
        p = as_scalars(p)
        n_updates = 0
        for r in range(triplets.shape[0]):
            nt = gather_v(triplets[r, 0], triplets[r, 1], triplets[r, 2], indptr, indices, data, scratch, touched, vals)
            margin = 0.0
            for q in range(nt):
                margin += weight(touched[q], S, g, p) * vals[q]
            if every_triplet:
                g[0] += 1.0  # [Gao17] Alg. 2 / 4: t advances on every triplet, after the loss is read with w_t
            if 1.0 - margin > 0.0:
                if not every_triplet:
                    g[0] += 1.0
                if tg_clock:
                    g[1] += p[ETA] * p[LAM]  # [Gao17] Eq. (11): the threshold owed by every word this step
                for q in range(nt):
                    update(touched[q], vals[q], S, g, p)
                n_updates += 1
        return n_updates

    @numba.njit(nogil=True)
    def finalize(S, g, p, out):
        """Bring every weight up to date (pay all owed truncation) into ``out``."""
        p = as_scalars(p)
        for j in range(out.shape[0]):
            out[j] = weight(j, S, g, p)

    return run_stream, finalize


#: What the clock ``t`` counts (module docstring); S-DA / S-ADA take either as ``clock=``.
CLOCKS = ("triplets", "updates")

_KERNELS: dict = {}


def kernels(rule: SolverRule, clock: str = "updates"):
    """``(run_stream, finalize)`` compiled for ``rule`` and ``clock`` (made once per pair, then reused)."""
    key = (rule, clock)
    if key not in _KERNELS:
        _KERNELS[key] = _make_kernels(rule.weight, rule.update, rule.gravity, clock == "triplets")
    return _KERNELS[key]


def csr_buffers(X):
    """``(indptr, indices, data, scratch, touched, vals)`` for the kernels."""
    row_nnz = np.diff(X.indptr)
    width = max(1, int(row_nnz.max()) if row_nnz.size else 1)
    return (
        X.indptr.astype(np.int64, copy=False), X.indices.astype(np.int64, copy=False), X.data,
        np.zeros(X.shape[1], np.float64), np.empty(width, np.int64), np.empty(width, np.float64),
    )


def stream(rule: SolverRule, X, triplets, state, glob, params, clock: str = "updates") -> int:
    """Run :func:`run_stream` on a checked CSR ``X`` and ``(n, 3)`` int64 triplets;
    return the number of violated triplets (updates)."""
    indptr, indices, data, scratch, touched, vals = csr_buffers(X)
    return int(kernels(rule, clock)[0](indptr, indices, data, triplets, state, glob, params, scratch, touched, vals))


def weights(rule: SolverRule, state, glob, params) -> np.ndarray:
    """Every weight brought up to date (all owed truncation paid), from the solver state."""
    out = np.empty(state.shape[1], np.float64)
    kernels(rule)[1](state, glob, params, out)  # the read-out does not depend on the clock
    return out
