"""Baseline encoders for E-SVM: mean-centring, and centring + PCA-whitening.

With few negatives' total weight, every negative of an exemplar SVM ends at
its box bound and the E-SVM encoding is, in closed form, a re-centring by the
pool mean (``w = ((1 + x.s) / ||x||^2) x - s``, ``s = (alpha_neg / lam) sum z``,
[Zepeda15] Eq. (1) solved in the dual). These two encoders are the simpler
methods E-SVM must beat to be worth its cost:

- :class:`CentringEncoder`: ``(x - mu) / ||x - mu||`` with ``mu`` the mean of
  the rows given to ``fit`` (the negatives pool of E-SVM);
- :class:`WhiteningEncoder`: centring, PCA projection on ``n_components``
  directions, each divided by the square root of its variance, then l2 (the
  usual strong baseline of instance retrieval, e.g. Jégou & Chum, ECCV 2012).

Both accept a :class:`hardneg.store.FeatureStore` in ``fit`` (a random sample of
``max_rows`` rows, like E-SVM's pool) and return float32 rows of unit norm.
"""

from __future__ import annotations

import logging
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from .._validation import RANDOM_STATE, Interval, check_random_state, validate_params, validate_X

__all__ = ["CentringEncoder", "WhiteningEncoder"]

logger = logging.getLogger(__name__)


def _l2_rows(X) -> np.ndarray:
    """Rows divided by their l2 norm (a zero row stays zero), float32."""
    X = np.asarray(X, dtype=np.float32)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.ascontiguousarray(X / np.maximum(norms, np.finfo(np.float32).tiny), dtype=np.float32)


def _fit_rows(estimator, X, max_rows: int):
    """The rows ``fit`` learns from: all of ``X``, or a seeded sample of ``max_rows`` (arrays and stores)."""
    from ..store import FeatureStore

    rng = check_random_state(estimator.random_state)
    if isinstance(X, FeatureStore):
        n = len(X)
        rows = np.sort(X.sample(max_rows, random_state=rng)) if n > max_rows else np.arange(n)
        block = X.take(rows)
        X = block.toarray() if hasattr(block, "toarray") else block
        return validate_X(estimator, X, reset=True, min_rows=1)
    X = validate_X(estimator, X, reset=True, min_rows=1)
    if X.shape[0] > max_rows:
        X = X[np.sort(rng.choice(X.shape[0], max_rows, replace=False))]
    return X


class _Base(TransformerMixin, BaseEstimator):
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float32"]
        return tags


class CentringEncoder(_Base):
    """Mean-centring then l2: ``(x - mu) / ||x - mu||``, ``mu`` the mean of the fit rows.

    What E-SVM reduces to when all its negatives are at their bound (see the
    module docstring); the first baseline any E-SVM result is compared with.

    Parameters
    ----------
    max_rows : int
        At most this many rows of ``X`` (a seeded random sample) give ``mu``.
    random_state : None, int or Generator
        The sample, when ``X`` has more than ``max_rows`` rows.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.encoding import CentringEncoder
    >>> enc = CentringEncoder().fit(np.array([[1.0, 1.0], [3.0, 1.0]]))
    >>> enc.mean_.tolist(), enc.transform([[2.0, 3.0]]).tolist()
    ([2.0, 1.0], [[0.0, 1.0]])
    """

    _parameter_constraints = {
        "max_rows": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, max_rows: int = 100_000, *, random_state: int | np.random.Generator | None = None):
        self.max_rows = max_rows
        self.random_state = random_state

    def fit(self, X, y=None):
        """Learn ``mu`` from ``X`` (array or FeatureStore); returns self.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or FeatureStore
            The fit rows; at most ``max_rows`` of them (a seeded sample) are used.
        y : None
            Ignored (scikit-learn's transformer API).

        Returns
        -------
        self : object
            Fitted encoder.
        """
        validate_params(self)
        X = _fit_rows(self, X, self.max_rows)
        self.mean_ = X.astype(np.float64).mean(axis=0).astype(np.float32)
        return self

    def transform(self, X):
        """``(x - mu) / ||x - mu||`` per row, float32 (a row equal to ``mu`` stays zero).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows to encode.

        Returns
        -------
        ndarray of shape (n_samples, n_features), dtype float32
            The centred rows, each of unit l2 norm (or zero).
        """
        X = validate_X(self, X, reset=False, min_rows=0)
        return _l2_rows(X - self.mean_)


class WhiteningEncoder(_Base):
    """Centring, PCA-whitening to ``n_components`` dimensions, then l2.

    ``z = diag(var + eps)^(-1/2) V^T (x - mu)``, ``z / ||z||``, with ``V`` the
    leading eigenvectors of the covariance of the fit rows and ``var`` their
    eigenvalues (scikit-learn's ``PCA(whiten=True)`` followed by l2, computed
    with one thin SVD of the centred rows).

    Parameters
    ----------
    n_components : int or None
        Dimensions kept: at most ``min(n_features, n_rows - 1)``; None keeps
        all of them (noisy when the fit rows are few).
    eps : float
        Added to each variance, relative to the largest one, so directions of
        almost no variance are not blown up.
    max_rows, random_state
        As for :class:`CentringEncoder`.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    components_ : ndarray of shape (n_components_, n_features)
        Principal directions, by decreasing variance.
    explained_variance_ : ndarray of shape (n_components_,)
    n_components_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.encoding import WhiteningEncoder
    >>> X = np.random.default_rng(0).normal(size=(500, 8)) * [10, 5, 1, 1, 1, 1, 1, 0.1]
    >>> enc = WhiteningEncoder(n_components=4).fit(X)
    >>> codes = enc.transform(X)
    >>> codes.shape, bool(np.allclose(np.linalg.norm(codes, axis=1), 1, atol=1e-5))
    ((500, 4), True)
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "eps": [Interval(Real, 0, None, closed="left")],
        "max_rows": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, n_components: int = 256, *, eps: float = 1e-6, max_rows: int = 100_000, random_state: int | np.random.Generator | None = None):
        self.n_components = n_components
        self.eps = eps
        self.max_rows = max_rows
        self.random_state = random_state

    def fit(self, X, y=None):
        """Learn ``mu`` and the whitening from ``X`` (array or FeatureStore); returns self.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or FeatureStore
            The fit rows; at most ``max_rows`` of them (a seeded sample) are used.
        y : None
            Ignored (scikit-learn's transformer API).

        Returns
        -------
        self : object
            Fitted encoder.
        """
        validate_params(self)
        X = _fit_rows(self, X, self.max_rows).astype(np.float64)
        n, d = X.shape
        limit = max(1, min(d, n - 1))
        k = limit if self.n_components is None else int(self.n_components)
        if k > limit:
            logger.warning("n_components=%d is more than the %d directions %d rows of %d features allow; keeping %d",
                           k, limit, n, d, limit)
            k = limit
        mu = X.mean(axis=0)
        # thin SVD of the centred rows: O(min(n, d)^2 max(n, d)), not a d x d eigendecomposition (VLAD: d = 8,192)
        _, sv, vt = np.linalg.svd(X - mu, full_matrices=False)
        var = sv[:k] ** 2 / max(n - 1, 1)
        vecs = vt[:k].T
        # a deterministic sign per direction (eigh's is arbitrary)
        signs = np.sign(vecs[np.abs(vecs).argmax(axis=0), np.arange(k)])
        vecs *= np.where(signs == 0, 1.0, signs)
        self.mean_ = mu.astype(np.float32)
        self.components_ = np.ascontiguousarray(vecs.T, dtype=np.float32)
        self.explained_variance_ = var.astype(np.float32)
        self.n_components_ = k
        floor = float(self.eps) * max(float(var.max()) if k else 0.0, np.finfo(np.float64).tiny)
        self._scale = (1.0 / np.sqrt(var + floor)).astype(np.float32)
        return self

    def transform(self, X):
        """Whitened, l2-normalized rows ``(n, n_components_)``, float32.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows to encode.

        Returns
        -------
        ndarray of shape (n_samples, n_components_), dtype float32
            The whitened rows, each of unit l2 norm (or zero).
        """
        X = validate_X(self, X, reset=False, min_rows=0)
        Z = ((X - self.mean_) @ self.components_.T) * self._scale
        return _l2_rows(Z)
