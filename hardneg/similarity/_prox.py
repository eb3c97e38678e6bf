"""Constants and the soft-threshold operator shared by the SOLIS solvers."""

from __future__ import annotations

import numba

# positions in the parameter vector
ETA, LAM, GAMMA, RHO, DELTA, THETA, W0 = range(7)
N_PARAMS = 7


@numba.njit(cache=True, inline="always")
def as_scalars(p):
    """The ``N_PARAMS`` parameters as a tuple: in a kernel, stores into the state arrays cannot
    alias scalars, so they stay in registers instead of being reloaded after every store."""
    return (p[0], p[1], p[2], p[3], p[4], p[5], p[6])


@numba.njit(cache=True, inline="always")
def soft(u, thr):
    """Soft threshold ``sign(u) * max(|u| - thr, 0)``: the l1 proximal step."""
    if u > thr:
        return u - thr
    if u < -thr:
        return u + thr
    return 0.0
