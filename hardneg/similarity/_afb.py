"""SOLIS-AFB: adaptive FOBOS (Duchi, Hazan & Singer 2011), [Gao17] Eq. (17)-(19), Algorithm 3.

Composite mirror descent with the AdaGrad metric
``H_t = δI + diag(G_t)^{1/2}``, ``G_t = Σ_{τ<=t} g_τ²`` ([Gao17] Eq. (18)):

    w_{t+1} = argmin_w  η g_tᵀw + ηλ||w||_1 + ½ (w - w_t)ᵀ H_t (w - w_t),

whose solution per word is ([Gao17] Eq. (19)) ``w_{t+1,j} = soft(w_{t,j} - η g_{t,j} /
H_{t,jj}, ηλ / H_{t,jj})``.

Sign: ``g = -x ⊙ (x⁺ - x⁻)``; the paper prints ``+`` in [Gao17] Eq. (19b).

Lazy: a word untouched for ``k`` updates keeps its ``H_jj`` and owes ``k``
soft-thresholds of ``ηλ / H_jj``: one soft-threshold by ``k ηλ / H_jj``.
State rows: 0 ``w``, 1 the sum of squared gradients, 2 the update count at
the word's last catch-up, 3 a cache of ``1 / H_jj`` (refreshed on update, so
a catch-up costs a multiplication, not a square root and a division).
"""

from __future__ import annotations

import math
from numbers import Real

import numba
import numpy as np

from hardneg._typing import RandomState
from .._validation import Interval
from ._base import SolisBase, register_solver
from ._prox import DELTA, ETA, LAM, W0, soft

__all__ = ["SolisAFB"]


@numba.njit(cache=True, inline="always")
def afb_weight(j, S, g, p):
    owed = g[0] - S[2, j]
    w = S[0, j]
    if owed > 0.0:
        w = soft(w, owed * p[ETA] * p[LAM] * S[3, j])
        S[0, j] = w
        S[2, j] = g[0]
    return w


@numba.njit(cache=True, inline="always")
def afb_update(j, v, S, g, p):
    """[Gao17] Eq. (18)-(19) with g = -v (the clock has already moved to this update)."""
    S[1, j] += v * v
    inv_h = 1.0 / (p[DELTA] + math.sqrt(S[1, j]))
    S[3, j] = inv_h
    S[0, j] = soft(S[0, j] + p[ETA] * v * inv_h, p[ETA] * p[LAM] * inv_h)
    S[2, j] = g[0]


@register_solver("afb", weight=afb_weight, update=afb_update)
class SolisAFB(SolisBase):
    """Sparse online similarity learning by adaptive FOBOS (S-AFB).

    Parameters
    ----------
    lam : float
        l1 strength λ.
    eta : float
        Learning rate η (see :class:`SolisADA` on its scale); default 0.1
        (why: ``docs/methods/solis.md``, "Why these defaults").
    delta : float
        δ > 0 of ``H_t = δI + diag(G_t)^{1/2}``.
    w_init : float
        Initial weights: 0 (paper) or 1.
    n_triplets : int
        Triplets drawn from ``y`` when ``fit`` gets no triplets.
    random_state : int, Generator or None

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from hardneg.similarity import SolisAFB
    >>> X = sp.csr_matrix(np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]))
    >>> # H = 1 + sqrt(1) = 2: w = soft(0 + 1 * (1, -1) / 2, 0.2 / 2)
    >>> SolisAFB(lam=0.2, eta=1.0, delta=1.0).fit(X, triplets=[[0, 1, 2]]).w_.round(6).tolist()
    [0.4, -0.4]
    """

    _n_state = 4
    _param_slots = {"lam": LAM, "eta": ETA, "delta": DELTA, "w_init": W0}
    _parameter_constraints = {
        **SolisBase._parameter_constraints,
        "eta": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, None, closed="neither")],
    }
    _nonneg_rows = (1,)
    _clock_rows = ((2, 0),)  # the update count at the last catch-up
    _inv_h_row = 3

    def __init__(self, lam: float = 1e-4, *, eta: float = 0.1, delta: float = 1e-2, w_init: float = 0.0, n_triplets: int = 100_000, random_state: RandomState = None):
        self.lam = lam
        self.eta = eta
        self.delta = delta
        self.w_init = w_init
        self.n_triplets = n_triplets
        self.random_state = random_state

    def _init_state(self, n_words: int, w0: float) -> np.ndarray:
        state = np.zeros((4, n_words), np.float64)
        state[0] = w0
        state[3] = 1.0 / self.delta
        return state
