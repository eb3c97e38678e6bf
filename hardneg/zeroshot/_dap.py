"""DAP: direct attribute prediction (Lampert, Nickisch & Harmeling, CVPR 2009 / TPAMI 2014)."""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted

from hardneg._validation import Interval, validate_params, validate_X

from ._common import ZeroShotPredictMixin, candidate_table, training_targets

__all__ = ["DAP"]

_EPS = 1e-4


class DAP(ZeroShotPredictMixin, BaseEstimator):
    """One probabilistic classifier per attribute, combined by Bayes' rule (a baseline of Table 1).

    Attributes are binarized at a threshold per attribute (the mean over the
    seen classes' vectors, Lampert et al.'s choice for continuous attributes);
    an L2 logistic regression learns ``p(a_m = 1 | x)`` for each. A test image
    goes to ``argmax_z Σ_m log p(a_m = a_m^z | x) - log p(a_m = a_m^z)``, the
    prior ``p(a_m = 1)`` being the mean of the seen classes' binary vectors
    (Lampert et al. 2014, [Lampert14] Eq. (2)).

    Parameters
    ----------
    C : float
        Inverse regularization of the logistic regressions.
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
    >>> from hardneg.zeroshot import DAP
    >>> rng = np.random.default_rng(0)
    >>> attrs = (rng.random((6, 8)) > 0.5).astype(float); y = np.repeat(np.arange(6), 30)
    >>> X = attrs[y] @ rng.normal(size=(8, 20)) + 0.05 * rng.normal(size=(180, 20))
    >>> clf = DAP().fit(X[y < 4], y[y < 4], attrs[:4])
    >>> clf.predict(X[:2]).tolist()
    [0, 0]
    """

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "standardize": ["boolean"],
        "class_attributes": [None, dict, "array-like"],  # the table's contents: checked by fit, with the other attribute inputs
    }

    def __init__(self, C: float = 1.0, *, standardize: bool = True, class_attributes: Any = None):
        self.C = C
        self.standardize = standardize
        self.class_attributes = class_attributes

    def fit(self, X, y, class_attributes=None, *, sample_attributes=None):
        """Learn one logistic regression per binarized attribute from images of the seen classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training images' features.
        y : array-like of shape (n_samples,)
            Seen class of each image.
        class_attributes : dict, 2-D array or (labels, matrix), optional
            One attribute vector per class (a dict ``{class: vector}``, or a matrix whose
            row ``c`` is class ``c``); every class in ``y`` needs one. Default: the
            ``class_attributes`` parameter, else one-hot vectors per seen class.
        sample_attributes : array-like of shape (n_samples, n_attributes), optional
            Per-image attribute vectors instead (binarized per image; class
            prototypes are their class means).

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
        self.threshold_ = t.prototypes.mean(axis=0)
        targets = t.candidates[t.pos] > self.threshold_  # each image's own (binarized) vector
        self.prior_ = np.clip((t.prototypes > self.threshold_).mean(axis=0), _EPS, 1 - _EPS)
        self.coef_ = np.zeros((targets.shape[1], X.shape[1]))
        self.intercept_ = np.zeros(targets.shape[1])
        for m in range(targets.shape[1]):
            col = targets[:, m]
            if col.all() or not col.any():  # a constant attribute: its probability is that constant
                self.intercept_[m] = 20.0 if col.all() else -20.0
                continue
            lr = LogisticRegression(C=self.C, max_iter=500).fit(Xs, col)
            self.coef_[m], self.intercept_[m] = lr.coef_[0], lr.intercept_[0]
        self.classes_, self.prototypes_ = t.classes, t.prototypes
        return self

    def attribute_probabilities(self, X) -> np.ndarray:
        """``p(a_m = 1 | x)`` for every image and attribute.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Images' features.

        Returns
        -------
        ndarray of shape (n_samples, n_attributes), dtype float64
            Each attribute's probability, clipped to ``[1e-4, 1 - 1e-4]``.
        """
        check_is_fitted(self)
        X = validate_X(self, X, reset=False, min_rows=0).astype(np.float64)
        z = ((X - self.mean_) / self.scale_) @ self.coef_.T + self.intercept_
        return np.clip(expit(z), _EPS, 1 - _EPS)  # expit: no overflow warning for large |z|

    def decision_function(self, X, class_attributes=None) -> np.ndarray:
        """Log-posterior (up to a constant) of every candidate class (larger is better).

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
            ``Σ_m log p(a_m = a_m^z | x) - log p(a_m = a_m^z)`` ([Lampert14] Eq. (2))
            for every image and candidate class.
        """
        check_is_fitted(self)
        _, vectors = candidate_table(self, class_attributes)
        B = (vectors > self.threshold_).astype(np.float64)  # (k, a)
        p = self.attribute_probabilities(X)
        log_like = np.log(p) @ B.T + np.log1p(-p) @ (1 - B).T
        log_prior = np.log(self.prior_) @ B.T + np.log1p(-self.prior_) @ (1 - B).T
        return log_like - log_prior

