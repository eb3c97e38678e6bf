"""SOLIS-ADA: adaptive regularized dual averaging (Duchi, Hazan & Singer 2011),
[Gao17] Eq. (20)-(22), Algorithm 4 — the paper's recommended solver.

With ``ḡ_t`` the average subgradient and ``H_t = δI + diag(G_t)^{1/2}``,
``G_t = Σ g_τ²``, [Gao17] Eq. (20)

    w_{t+1} = argmin_w  η ḡ_tᵀw + ηλ||w||_1 + 1/(2t) (w - w_1)ᵀ H_t (w - w_1)

has the closed form ([Gao17] Eq. (22)) ``w_{t+1,j} = soft(w_1 - η t ḡ_{t,j} / H_{t,jj},
η t λ / H_{t,jj})``; for ``w_1 = 0`` that is ``sign(-ḡ_{t,j}) (η t / H_{t,jj})
[|ḡ_{t,j}| - λ]_+``.

Sign: ``g = -x ⊙ (x⁺ - x⁻)``; the paper prints ``+`` in [Gao17] Eq. (22b).

Lazy: ``w_j`` depends only on the running sums ``t ḡ_{t,j}`` (state row 0),
``G_{t,j}`` (row 1) and ``t``, so it is computed when read. Row 2 caches
``1 / H_{t,jj}``, refreshed when the word is updated: reading a weight (every
word of every triplet, for the loss) then costs two multiplications instead
of a square root and two divisions.
"""

from __future__ import annotations

import math
from numbers import Real

import numba
import numpy as np

from hardneg._typing import RandomState
from .._validation import Interval, StrOptions
from ._base import SolisBase, register_solver
from ._lazy import CLOCKS
from ._prox import DELTA, ETA, LAM, W0, soft

__all__ = ["SolisADA"]


@numba.njit(cache=True, inline="always")
def ada_weight(j, S, g, p):
    """[Gao17] Eq. (22) for word ``j``."""
    t = g[0]
    if t == 0.0:
        return p[W0]
    inv_h = S[2, j]  # 1 / (δ + √G_j)
    return soft(p[W0] - p[ETA] * S[0, j] * inv_h, p[ETA] * t * p[LAM] * inv_h)


@numba.njit(cache=True, inline="always")
def ada_update(j, v, S, g, p):
    """[Gao17] Eq. (21): accumulate g = -v and g² (and refresh the cached 1 / H_jj)."""
    S[0, j] -= v
    S[1, j] += v * v
    S[2, j] = 1.0 / (p[DELTA] + math.sqrt(S[1, j]))


@register_solver("ada", weight=ada_weight, update=ada_update)
class SolisADA(SolisBase):
    """Sparse online similarity learning by adaptive RDA (S-ADA, the default).

    Parameters
    ----------
    lam : float
        l1 strength λ.
    eta : float
        Step size η, default 0.1. It sets the scale of ``w`` against the hinge's
        margin of 1, so how many triplets stay violated and keep teaching;
        choose it jointly with ``lam`` (why 0.1: ``docs/methods/solis.md``,
        "Why these defaults").
    delta : float
        δ > 0 of ``H_t``.
    w_init : float
        ``w_1``: 0 (paper) or 1 (a correction to the plain dot product).
    clock : {"triplets", "updates"}
        What ``t`` counts. ``"triplets"`` (default, [Gao17] Algorithm 4): every
        triplet advances ``t``, a satisfied one with a zero subgradient, so
        the average gradient and the threshold ``η t λ / H_t`` follow the whole stream.
        ``"updates"``: only violated triplets advance ``t`` (the earlier
        behaviour of this library; a model file written before this
        parameter existed loads with it).
    n_triplets : int
        Triplets drawn from ``y`` when ``fit`` gets no triplets.
    random_state : int, Generator or None

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from hardneg.similarity import SolisADA
    >>> X = sp.csr_matrix(np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]))
    >>> # t = 1, H = 1 + 1: w = soft(0 + (1, -1) / 2, 0.2 / 2)
    >>> SolisADA(lam=0.2, eta=1.0, delta=1.0).fit(X, triplets=[[0, 1, 2]]).w_.round(6).tolist()
    [0.4, -0.4]
    """

    _n_state = 3
    _param_slots = {"lam": LAM, "eta": ETA, "delta": DELTA, "w_init": W0}
    _parameter_constraints = {
        **SolisBase._parameter_constraints,
        "eta": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, None, closed="neither")],
        "clock": [StrOptions(set(CLOCKS))],
    }
    _nonneg_rows = (1,)  # G_t, a sum of squares
    _inv_h_row = 2

    def __init__(self, lam: float = 1e-4, *, eta: float = 0.1, delta: float = 1e-2, w_init: float = 0.0, clock: str = "triplets", n_triplets: int = 100_000, random_state: RandomState = None):
        self.lam = lam
        self.eta = eta
        self.delta = delta
        self.w_init = w_init
        self.clock = clock
        self.n_triplets = n_triplets
        self.random_state = random_state

    def _init_state(self, n_words: int, w0: float) -> np.ndarray:
        state = np.zeros((3, n_words), np.float64)
        state[2] = 1.0 / self.delta
        return state
