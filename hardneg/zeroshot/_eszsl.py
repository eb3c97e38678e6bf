"""ESZSL: "An embarrassingly simple approach to zero-shot learning" (Romera-Paredes & Torr, ICML 2015)."""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from hardneg._validation import Interval, validate_params, validate_X

from ._common import ZeroShotPredictMixin, candidate_table, training_targets

__all__ = ["ESZSL"]


class ESZSL(ZeroShotPredictMixin, BaseEstimator):
    """Bilinear compatibility ``xᵀ V s`` in closed form (the baseline of Table 1).

    [RomeraParedes15] Eq. (8) (Romera-Paredes & Torr): with ``X`` the (standardized) training
    features (n × d), ``Y ∈ {-1, 1}^{n × z}`` the class indicators and ``S``
    (z × a) the seen classes' attribute vectors,
    ``V = (XᵀX + γ I)⁻¹ Xᵀ Y S (SᵀS + λ I)⁻¹``; a test image goes to
    ``argmax_k xᵀ V s_k``.

    Parameters
    ----------
    gamma : float
        γ, regularization in feature space.
    lam : float
        λ, regularization in attribute space.
    standardize : bool
        Centre and scale features to unit variance first.
    class_attributes : dict, 2-D array, (labels, matrix) or None
        The seen classes' attribute vectors, given once here instead of to
        every ``fit`` (``fit(X, y)`` then works in ``Pipeline``,
        ``cross_val_score`` and ``GridSearchCV``). ``fit``'s own
        ``class_attributes`` or ``sample_attributes`` take precedence. When
        none is given anywhere, each seen class gets a one-hot vector (one
        attribute per class): the model is then an ordinary classifier among
        the seen classes, with no attributes to carry to unseen ones.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.zeroshot import ESZSL
    >>> rng = np.random.default_rng(0)
    >>> attrs = rng.random((8, 5)); y = np.repeat(np.arange(8), 30)
    >>> X = attrs[y] @ rng.normal(size=(5, 20)) + 0.05 * rng.normal(size=(240, 20))
    >>> clf = ESZSL().fit(X[y < 6], y[y < 6], attrs[:6])
    >>> pred = clf.predict(X[y >= 6], class_attributes={6: attrs[6], 7: attrs[7]})
    >>> float((pred == y[y >= 6]).mean()) > 0.8
    True
    """

    _parameter_constraints = {
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "lam": [Interval(Real, 0, None, closed="neither")],
        "standardize": ["boolean"],
        "class_attributes": [None, dict, "array-like"],  # the table's contents: checked by fit, with the other attribute inputs
    }

    def __init__(self, gamma: float = 1.0, *, lam: float = 1.0, standardize: bool = True, class_attributes: Any = None):
        self.gamma = gamma
        self.lam = lam
        self.standardize = standardize
        self.class_attributes = class_attributes

    def fit(self, X, y, class_attributes=None, *, sample_attributes=None):
        """Solve for ``V``; ``class_attributes`` / ``sample_attributes`` as in ZeroShotClassifier
        (per-image vectors enter through their class means); without either, the
        ``class_attributes`` parameter, else one-hot vectors per seen class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training images' features.
        y : array-like of shape (n_samples,)
            Seen class of each image.
        class_attributes : dict, 2-D array or (labels, matrix), optional
            One attribute vector per class (a dict ``{class: vector}``, or a matrix whose
            row ``c`` is class ``c``); every class in ``y`` needs one.
        sample_attributes : array-like of shape (n_samples, n_attributes), optional
            Per-image attribute vectors instead; they enter through their class means.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        validate_params(self)
        X = validate_X(self, X, reset=True).astype(np.float64)
        t = training_targets(y, X.shape[0], class_attributes, sample_attributes, default=self.class_attributes)
        self.mean_ = X.mean(0) if self.standardize else np.zeros(X.shape[1])
        scale = X.std(0) if self.standardize else np.ones(X.shape[1])
        self.scale_ = np.where(scale < 1e-12, 1.0, scale)
        Xs = (X - self.mean_) / self.scale_
        S = t.prototypes.astype(np.float64)
        Y = -np.ones((X.shape[0], S.shape[0]))
        Y[np.arange(X.shape[0]), t.codes] = 1.0
        left = np.linalg.solve(Xs.T @ Xs + self.gamma * np.eye(Xs.shape[1]), Xs.T @ Y @ S)
        self.V_ = np.linalg.solve((S.T @ S + self.lam * np.eye(S.shape[1])).T, left.T).T
        self.classes_, self.prototypes_ = t.classes, t.prototypes
        return self

    def decision_function(self, X, class_attributes=None) -> np.ndarray:
        """Compatibility ``xᵀ V s_k`` for every image and candidate class (larger is better).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Images' features.
        class_attributes : dict, 2-D array or (labels, matrix), optional
            The candidate classes' attribute vectors (e.g. the unseen ones);
            default the seen classes. Columns follow its order (its keys, or row numbers).

        Returns
        -------
        ndarray of shape (n_samples, n_candidates), dtype float64
            The compatibility of every image with every candidate class.
        """
        check_is_fitted(self)
        _, vectors = candidate_table(self, class_attributes)
        X = validate_X(self, X, reset=False, min_rows=0).astype(np.float64)
        return ((X - self.mean_) / self.scale_) @ self.V_ @ vectors.T.astype(np.float64)

