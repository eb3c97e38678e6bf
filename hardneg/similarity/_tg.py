"""SOLIS-TG: truncated gradient (Langford, Li & Zhang 2009), [Gao17] Eq. (9)-(12), Algorithm 1.

Each violated triplet takes a subgradient step and then truncates every
weight toward zero by the gravity ``alpha = eta * lam`` ([Gao17] Eq. (11)), but only
weights whose magnitude is at most ``theta``:

    T(u, alpha, theta) = sign(u) max(|u| - alpha, 0)  if |u| <= theta, else u.

Sign: the subgradient of ``L = max(0, 1 - wᵀv)``, ``v = x ⊙ (x⁺ - x⁻)``, is
``-v``; the paper prints ``+x ⊙ (x⁺ - x⁻)`` in [Gao17] Eq. (12). The code steps along
``+v`` (``w - eta * g``), which lowers the loss.

Lazy truncation: a word untouched for ``k`` updates owes ``k`` truncations;
they only shrink ``|w_j|``, so a weight above ``theta`` stays put and one
below it is soft-thresholded once by the accumulated gravity. Per word the
state keeps the accumulated gravity at its last update (row 1).
"""

from __future__ import annotations

from numbers import Real

import numba
import numpy as np

from hardneg._typing import RandomState
from .._validation import Interval
from ._base import SolisBase, register_solver
from ._prox import ETA, LAM, THETA, W0, soft

__all__ = ["SolisTG"]


@numba.njit(cache=True, inline="always")
def tg_weight(j, S, g, p):
    """``w_j`` after paying the truncation owed since its last update."""
    w = S[0, j]
    owed = g[1] - S[1, j]
    if owed > 0.0:
        if abs(w) <= p[THETA]:
            w = soft(w, owed)
            S[0, j] = w
        S[1, j] = g[1]
    return w


@numba.njit(cache=True, inline="always")
def tg_update(j, v, S, g, p):
    """[Gao17] Eq. (12) with g = -v, then the truncation T of [Gao17] Eq. (11)."""
    w = S[0, j] + p[ETA] * v
    if abs(w) <= p[THETA]:
        w = soft(w, p[ETA] * p[LAM])
    S[0, j] = w
    S[1, j] = g[1]


@register_solver("tg", weight=tg_weight, update=tg_update, gravity=True)
class SolisTG(SolisBase):
    """Sparse online similarity learning by truncated gradient (S-TG).

    Parameters
    ----------
    lam : float
        l1 strength; the gravity per update is ``eta * lam``.
    eta : float
        Learning rate η (see :class:`SolisADA` on its scale); default 0.1
        (why: ``docs/methods/solis.md``, "Why these defaults").
    theta : float
        Truncate only weights with ``|w| <= theta`` (``inf``: always).
    w_init : float
        Initial weight of every word: 0 as in the paper, or 1 to learn a
        correction to the plain dot product (e.g. TF-IDF cosine).
    n_triplets : int
        Triplets drawn from ``y`` when ``fit`` gets no triplets.
    random_state : int, Generator or None

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from hardneg.similarity import SolisTG
    >>> X = sp.csr_matrix(np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]))
    >>> model = SolisTG(lam=0.1, eta=1.0).fit(X, triplets=[[0, 1, 2]])
    >>> model.w_.tolist()   # w = T(0 + 1 * (1, -1), 0.1)
    [0.9, -0.9]
    """

    _n_state = 2
    _param_slots = {"lam": LAM, "eta": ETA, "theta": THETA, "w_init": W0}
    _parameter_constraints = {
        **SolisBase._parameter_constraints,
        "eta": [Interval(Real, 0, None, closed="neither")],
        "theta": [Interval(Real, 0, None, closed="right")],  # (0, inf]: inf truncates every weight
    }
    _nonneg_rows = (1,)
    _clock_rows = ((1, 1),)  # the accumulated gravity at the last update, at most the total

    def __init__(self, lam: float = 1e-4, *, eta: float = 0.1, theta: float = float("inf"), w_init: float = 0.0, n_triplets: int = 100_000, random_state: RandomState = None):
        self.lam = lam
        self.eta = eta
        self.theta = theta
        self.w_init = w_init
        self.n_triplets = n_triplets
        self.random_state = random_state

    def _init_state(self, n_words: int, w0: float) -> np.ndarray:
        state = np.zeros((2, n_words), np.float64)
        state[0] = w0
        return state
