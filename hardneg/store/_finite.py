"""One fast pass that tells whether a float32 block holds NaN or infinity.

``x * 0`` is 0 for every finite ``x`` and NaN for NaN and ±inf, so the sum of
``x * 0`` over a block is 0 exactly when every value is finite. Allowing the
compiler to reassociate that sum (and nothing else: NaN and infinity keep
their IEEE meaning) lets it vectorize and read the block at memory speed,
without the boolean temporary of ``np.isfinite(X).all()``
(``benchmarks/store_scan.py`` measures its cost on a scan).

Loading that compiled kernel (Numba's import and cache) costs 1-3 s, more
than checking a small store with NumPy: a process checks its first
``NUMPY_BUDGET`` values with ``np.isfinite`` (in blocks, so the temporary
stays small) and switches to the kernel only when its scans are large enough
to repay the load. ``hardneg knn -q ID`` on a 7,000-row store stays quick.
"""

from __future__ import annotations

import numpy as np

_kernel = None
NUMPY_BUDGET = 1 << 25  # values checked by NumPy before the compiled kernel is loaded (~128 MiB of float32)
_BLOCK = 1 << 20  # values per np.isfinite call: a 1 MiB temporary
_checked_by_numpy = 0


def _compiled():
    global _kernel
    if _kernel is None:
        import numba  # imported on first use: opening a store (`store info`) stays fast

        @numba.njit(cache=True, nogil=True, fastmath={"reassoc"})
        def zero_sum(flat):
            acc = flat.dtype.type(0.0)
            for i in range(flat.size):
                acc += flat[i] * flat.dtype.type(0.0)
            return acc

        _kernel = zero_sum
    return _kernel


def all_finite(block: np.ndarray) -> bool:
    """True when no value of the float ``block`` is NaN or infinite."""
    flat = np.asarray(block).reshape(-1)
    if flat.size == 0:
        return True
    global _checked_by_numpy
    if flat.dtype not in (np.float32, np.float64):
        return bool(np.isfinite(flat).all())
    if _kernel is None and _checked_by_numpy + flat.size <= NUMPY_BUDGET:
        _checked_by_numpy += flat.size
        return all(bool(np.isfinite(flat[i:i + _BLOCK]).all()) for i in range(0, flat.size, _BLOCK))
    return _compiled()(flat) == 0.0
