"""SOLIS-DA: l1-regularized dual averaging (Xiao 2010), [Gao17] Eq. (13)-(16), Algorithm 2.

With ``ḡ_t`` the average of the ``t`` subgradients so far, [Gao17] Eq. (14)

    w_{t+1} = argmin_w  ḡ_tᵀw + λ_t ||w||_1 + (γ / √t) ½ ||w - w_1||²,
    λ_t = λ + γρ / √t                                     (enhanced l1-RDA)

has the closed form ([Gao17] Eq. (16)) ``w_{t+1,j} = soft(w_1 - (√t/γ) ḡ_{t,j},
(√t/γ) λ_t)``, i.e. zero where ``|ḡ_{t,j}| <= λ_t`` (for ``w_1 = 0``).
``w_1`` is the centre of the proximal term (0 in the paper; 1 learns a
correction to the plain dot product).

Sign: the subgradient is ``g = -x ⊙ (x⁺ - x⁻)``; the paper prints ``+`` in
[Gao17] Eq. (15). Lazy: ``w_j`` is a function of the running sum ``G_j = t ḡ_{t,j}``
(state row 0) and ``t`` only, so a weight is computed when read and never
owes anything.
"""

from __future__ import annotations

import math
from numbers import Real

import numba

from hardneg._typing import RandomState
from .._validation import Interval, StrOptions
from ._base import SolisBase, register_solver
from ._lazy import CLOCKS
from ._prox import GAMMA, LAM, RHO, W0, soft

__all__ = ["SolisDA"]


@numba.njit(cache=True, inline="always")
def da_weight(j, S, g, p):
    """[Gao17] Eq. (16) for word ``j`` from ``G_j`` and ``t``."""
    t = g[0]
    if t == 0.0:
        return p[W0]
    c = math.sqrt(t) / p[GAMMA]
    return soft(p[W0] - c * S[0, j] / t, c * p[LAM] + p[RHO])  # (√t/γ) λ_t = √t λ/γ + ρ


@numba.njit(cache=True, inline="always")
def da_update(j, v, S, g, p):
    """[Gao17] Eq. (15): accumulate g = -v."""
    S[0, j] -= v


@register_solver("da", weight=da_weight, update=da_update)
class SolisDA(SolisBase):
    """Sparse online similarity learning by l1-RDA (S-DA).

    Parameters
    ----------
    lam : float
        l1 strength λ.
    gamma : float
        Scale γ of the proximal term ``(γ/√t) ½||w - w_1||²``; 1/γ plays the
        role of a step size. Default 10 (= 1/0.1, the η the other solvers default to).
    rho : float
        Extra sparsity ρ early on: ``λ_t = λ + γρ/√t``.
    w_init : float
        ``w_1``: 0 (paper) or 1.
    clock : {"triplets", "updates"}
        What ``t`` counts. ``"triplets"`` (default, [Gao17] Algorithm 2): every
        triplet advances ``t``, a satisfied one with a zero subgradient, so
        the average gradient and λ_t follow the whole stream.
        ``"updates"``: only violated triplets advance ``t`` (the earlier
        behaviour of this library; a model file written before this
        parameter existed loads with it).
    n_triplets : int
        Triplets drawn from ``y`` when ``fit`` gets no triplets.
    random_state : int, Generator or None

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from hardneg.similarity import SolisDA
    >>> X = sp.csr_matrix(np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]))
    >>> SolisDA(lam=0.1, gamma=1.0).fit(X, triplets=[[0, 1, 2]]).w_.tolist()   # soft((1, -1), 0.1)
    [0.9, -0.9]
    """

    _n_state = 1
    _param_slots = {"lam": LAM, "gamma": GAMMA, "rho": RHO, "w_init": W0}
    _parameter_constraints = {
        **SolisBase._parameter_constraints,
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "rho": [Interval(Real, 0, None, closed="left")],
        "clock": [StrOptions(set(CLOCKS))],
    }

    def __init__(self, lam: float = 1e-4, *, gamma: float = 10.0, rho: float = 0.0, w_init: float = 0.0, clock: str = "triplets", n_triplets: int = 100_000, random_state: RandomState = None):
        self.lam = lam
        self.gamma = gamma
        self.rho = rho
        self.w_init = w_init
        self.clock = clock
        self.n_triplets = n_triplets
        self.random_state = random_state
