"""Whitened LDA exemplar models (Hariharan, Malik & Ramanan 2012): an extra beside the paper.

Zepeda & Pérez (2015) solve an SVM per exemplar ([Zepeda15] Eq. (1)). Hariharan et al.
replace it by linear discriminant analysis with statistics of the negatives
computed once: ``w ∝ Σ⁻¹ (x − μ_N)`` with ``μ_N`` and ``Σ`` the mean and the
covariance of the negatives pool. Encoding is then one matrix product per
batch. This is not in the paper; the benchmarks measure its retrieval
accuracy beside the exact encoder. ``Σ`` is regularized as ``Σ + reg ·
(trace Σ / d) · I`` so that a pool with fewer rows than dimensions still has
an inverse.
"""

from __future__ import annotations

import numpy as np

__all__ = ["lda_statistics", "lda_encode"]


def lda_statistics(Z, reg: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """``(μ_N, Σ⁻¹)`` of the negatives ``Z`` (n, d), float64 (``reg``: ridge relative to the mean variance)."""
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[0] < 2:
        raise ValueError(f"Z: LDA statistics need a 2-D pool of at least 2 rows, got shape {Z.shape}")
    if not (np.isfinite(reg) and reg > 0):
        raise ValueError(f"lda_reg: must be a positive number, got {reg!r}")
    mu = Z.mean(axis=0)
    C = np.cov(Z, rowvar=False).reshape(Z.shape[1], Z.shape[1])
    C.flat[:: C.shape[0] + 1] += reg * max(float(np.trace(C)) / C.shape[0], 1e-12)
    precision = np.linalg.inv(C)
    return mu, (precision + precision.T) / 2


def lda_encode(X, mean, precision) -> np.ndarray:
    """Unnormalized whitened-LDA weights ``(X − μ) Σ⁻¹``, X's float dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.encoding._lda import lda_encode, lda_statistics
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(500, 4)); x = rng.normal(size=(1, 4))
    >>> mu, P = lda_statistics(Z, reg=0.1)
    >>> C = np.cov(Z, rowvar=False); C += 0.1 * np.trace(C) / 4 * np.eye(4)
    >>> bool(np.allclose(lda_encode(x, mu, P), np.linalg.solve(C, (x - Z.mean(0)).ravel())))
    True
    """
    X = np.asarray(X)
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float32
    return ((X - mean.astype(dtype)) @ precision.astype(dtype)).astype(dtype, copy=False)
