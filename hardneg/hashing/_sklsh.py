"""SKLSH: locality-sensitive binary codes from shift-invariant kernels
(Raginsky & Lazebnik, NIPS 2009)."""

from __future__ import annotations

from numbers import Real

import numpy as np

from hardneg._persist import ArraySpec
from hardneg._typing import ArrayLike
from hardneg._validation import RANDOM_STATE, Interval, check_random_state
from hardneg.hashing._base import N_BITS, BaseHasher, check_finite_array

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
    random_state : None, int or Generator
        Seed of the random features (and of the pairs for the default ``gamma``).

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.hashing import SKLSHHasher
    >>> X = np.random.default_rng(0).normal(size=(100, 16))
    >>> SKLSHHasher(n_bits=16, random_state=0).fit(X).transform(X[:2]).shape
    (2, 2)
    """

    _kind = "hash-sklsh"
    _parameter_constraints = {
        "n_bits": [N_BITS],
        "gamma": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, n_bits: int = 64, *, gamma: float | None = None, random_state: int | np.random.Generator | None = None):
        self.n_bits = n_bits
        self.gamma = gamma
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike | None = None, X_unlabeled: ArrayLike | None = None) -> SKLSHHasher:
        """Draw the random Fourier features (and ``gamma`` from the data when it is None).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (at least 2).
        y : Ignored
            Not used (unsupervised), present for API consistency.
        X_unlabeled : Ignored
            Not used, present for the API of the semi-supervised hashers.

        Returns
        -------
        SKLSHHasher
            Fitted hasher (``projections_``, ``phases_``, ``thresholds_``, ``gamma_`` set).
        """
        n_bits = self._check_n_bits()
        X = self._check_X(X, fitting=True)
        self._check_fit_memory(X, n_bits)
        rng = check_random_state(self.random_state)
        gamma = self.gamma
        if gamma is None:
            i = rng.integers(0, X.shape[0], 2000)
            j = rng.integers(0, X.shape[0], 2000)
            sq = np.sum((X[i].astype(np.float64) - X[j]) ** 2, axis=1)
            med = float(np.median(sq[sq > 0])) if (sq > 0).any() else 1.0
            gamma = 1.0 / med
        d = X.shape[1]
        self.projections_ = (rng.normal(size=(d, n_bits)) * np.sqrt(gamma)).astype(np.float32)
        self.phases_ = rng.uniform(0, 2 * np.pi, n_bits).astype(np.float32)
        self.thresholds_ = rng.uniform(-1, 1, n_bits).astype(np.float32)
        self.gamma_ = float(gamma)
        self.n_bits_ = n_bits
        return self

    def embed(self, X: ArrayLike) -> np.ndarray:
        """``cos(w_k . x + b_k) + t_k``: the real values whose signs are the bits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to encode.

        Returns
        -------
        ndarray of float32, shape (n_samples, n_bits)
            The embedding.
        """
        X = self._check_X(X)
        return np.cos(X @ self.projections_ + self.phases_) + self.thresholds_

    def _to_arrays(self):
        return {"projections": self.projections_, "phases": self.phases_, "thresholds": self.thresholds_}

    _schema = {"projections": ArraySpec("f", 2), "phases": ArraySpec("f", 1), "thresholds": ArraySpec("f", 1)}

    def _from_arrays(self, arrays, meta):
        d, n_bits = self.n_features_in_, self.n_bits_
        self.projections_ = check_finite_array(arrays["projections"], "projections", (d, n_bits))
        self.phases_ = check_finite_array(arrays["phases"], "phases", (n_bits,))
        self.thresholds_ = check_finite_array(arrays["thresholds"], "thresholds", (n_bits,))
        # fit draws b_k from [0, 2 pi] and t_k from [-1, 1]
        if self.phases_.min() < 0 or self.phases_.max() > 2 * np.pi + 1e-5 or np.abs(self.thresholds_).max() > 1:
            raise ValueError("phases or thresholds lie outside [0, 2 pi] and [-1, 1]")
        gamma = meta.get("gamma")
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not np.isfinite(gamma) or gamma <= 0:
            raise ValueError(f"gamma={gamma!r} is not a positive number")
        self.gamma_ = float(gamma)

    def _meta(self):
        return {"gamma": self.gamma_}
