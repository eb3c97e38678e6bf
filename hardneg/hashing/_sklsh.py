"""SKLSH: locality-sensitive binary codes from shift-invariant kernels
(Raginsky & Lazebnik, NIPS 2009)."""

from __future__ import annotations

import numpy as np

from hardneg._validation import check_random_state
from hardneg.hashing._base import BaseHasher

__all__ = ["SKLSHHasher"]


class SKLSHHasher(BaseHasher):
    """Bits ``sign(cos(w_k . x + b_k) + t_k)`` with random Fourier features of
    the Gaussian kernel exp(-gamma ||x - y||^2 / 2): ``w_k ~ N(0, gamma I)``,
    ``b_k ~ U[0, 2 pi]``, ``t_k ~ U[-1, 1]``.

    Parameters
    ----------
    n_bits : int
    gamma : float, optional
        Kernel bandwidth; default ``1 / median`` squared distance between
        random training pairs.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.hashing import SKLSHHasher
    >>> X = np.random.default_rng(0).normal(size=(100, 16))
    >>> SKLSHHasher(n_bits=16, random_state=0).fit(X).transform(X[:2]).shape
    (2, 2)
    """

    _kind = "hash-sklsh"

    def __init__(self, n_bits=64, gamma=None, random_state=None):
        self.n_bits = n_bits
        self.gamma = gamma
        self.random_state = random_state

    def fit(self, X, y=None, X_unlabeled=None):
        n_bits = self._check_n_bits()
        X = self._check_X(X, fitting=True)
        rng = check_random_state(self.random_state)
        gamma = self.gamma
        if gamma is None:
            i = rng.integers(0, X.shape[0], 2000)
            j = rng.integers(0, X.shape[0], 2000)
            sq = np.sum((X[i].astype(np.float64) - X[j]) ** 2, axis=1)
            med = float(np.median(sq[sq > 0])) if (sq > 0).any() else 1.0
            gamma = 1.0 / med
        elif not np.isfinite(gamma) or gamma <= 0:
            raise ValueError(f"gamma: must be positive, got {gamma!r}")
        d = X.shape[1]
        self.projections_ = (rng.normal(size=(d, n_bits)) * np.sqrt(gamma)).astype(np.float32)
        self.phases_ = rng.uniform(0, 2 * np.pi, n_bits).astype(np.float32)
        self.thresholds_ = rng.uniform(-1, 1, n_bits).astype(np.float32)
        self.gamma_ = float(gamma)
        self.n_features_in_ = d
        self.n_bits_ = n_bits
        return self

    def embed(self, X):
        X = self._check_X(X)
        return np.cos(X @ self.projections_ + self.phases_) + self.thresholds_

    def _to_arrays(self):
        return {"projections": self.projections_, "phases": self.phases_, "thresholds": self.thresholds_}

    def _from_arrays(self, arrays, meta):
        self.projections_ = arrays["projections"].astype(np.float32)
        self.phases_ = arrays["phases"].astype(np.float32)
        self.thresholds_ = arrays["thresholds"].astype(np.float32)
        if self.projections_.shape != (self.n_features_in_, self.n_bits_):
            raise ValueError(f"projections have shape {self.projections_.shape}")
        self.gamma_ = float(meta.get("gamma", np.nan))

    def _meta(self):
        return {"gamma": self.gamma_}
