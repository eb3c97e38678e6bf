"""The shared supervised linear SVM.

One solver serves every method that needs a plain linear SVM: the class
hierarchy measures convex-hull distances with it (2 / ||w|| of a nearly
hard-margin SVM, Cevikalp et al. 2017, Section 2.2), the robust TSVM starts
from it (Algorithm 1, initialization), and exemplar SVMs are solved with it.
It wraps liblinear's dual coordinate descent (``sklearn.svm.LinearSVC``)
behind one function, so those callers share defaults, input checks and the
sign convention (labels are mapped to -1 / +1). ``penalize_intercept=False``
switches to libsvm's SMO with a linear kernel (``sklearn.svm.SVC``), whose
bias is not regularized: the exact SVM, needed where the margin itself is the
answer (convex-hull distances); it costs O(n^2) kernel entries, so it is for
the few hundred samples per class pair the hierarchy uses.
"""

from __future__ import annotations

import logging
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC, LinearSVC

from hardneg._typing import ArrayLike
from hardneg._validation import (
    RANDOM_STATE,
    Interval,
    StrOptions,
    check_binary_target,
    check_labels,
    check_matrix,
    check_random_state,
    validate_params,
    validate_X,
)

__all__ = ["LinearSVM", "fit_linear_svm"]

logger = logging.getLogger(__name__)

_LOSSES = ("hinge", "squared_hinge")


def _signed_labels(y, n: int) -> np.ndarray:
    y = check_labels(y, n)
    values = np.unique(y)
    if values.size != 2:
        raise ValueError(f"y: a binary linear SVM needs exactly 2 classes, got {values.size} ({values[:5].tolist()})")
    if set(values.tolist()) == {-1, 1}:
        return y.astype(np.float64)
    # the larger label is the positive class, as in scikit-learn
    return np.where(y == values[1], 1.0, -1.0)


def _check_sample_weight(sample_weight, n_samples: int):
    """None, or float64 weights of shape (n_samples,), finite, non-negative, not all zero."""
    if sample_weight is None:
        return None
    sample_weight = np.asarray(sample_weight, dtype=np.float64)
    if sample_weight.ndim != 1 or sample_weight.shape[0] != n_samples:
        raise ValueError(f"sample_weight: expected shape ({n_samples},), got {sample_weight.shape}")
    if not np.isfinite(sample_weight).all() or (sample_weight < 0).any():
        raise ValueError("sample_weight: must be finite and non-negative")
    if not sample_weight.any():
        raise ValueError("sample_weight: all weights are zero; at least one sample of each class needs weight")
    return sample_weight


def fit_linear_svm(
    X: ArrayLike,
    y: ArrayLike,
    *,
    C: float = 1.0,
    loss: str = "hinge",
    sample_weight: ArrayLike | None = None,
    intercept_scaling: float = 1.0,
    tol: float = 1e-4,
    max_iter: int = 2000,
    random_state: int | np.random.Generator | None = None,
    penalize_intercept: bool = True,
) -> tuple[np.ndarray, float]:
    """Solve a binary linear SVM; return ``(w, b)`` with f(x) = w.x + b.

    Minimizes ``1/2 ||w||^2 + C sum_i l(y_i f(x_i))`` by liblinear's dual
    coordinate descent (the bias is a regularized extra feature of value
    ``intercept_scaling``, as in liblinear, so the solution depends on where
    the origin lies). With ``penalize_intercept=False`` the bias is free
    (libsvm's SMO, linear kernel, hinge loss only): with a large ``C`` (e.g.
    1e6) this is the hard-margin SVM, whose margin ``2 / ||w||`` is the
    distance between the two classes' convex hulls when they are separable
    ([Cevikalp17] Eq. (9)) wherever the data lie.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Two distinct labels; -1/+1, or any pair (the larger one is +1).
    C : float
        Misclassification cost.
    loss : {"hinge", "squared_hinge"}
    sample_weight : array-like of shape (n_samples,), optional
        Per-sample multipliers of ``C``.
    intercept_scaling, tol, max_iter, random_state
        Passed to liblinear (``tol`` and ``max_iter`` to libsvm when the
        intercept is not penalized; ``intercept_scaling`` is then unused).
    penalize_intercept : bool
        ``False``: the exact SVM with an unregularized bias (libsvm).

    Returns
    -------
    w : ndarray of float64, shape (n_features,)
    b : float

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.svm import fit_linear_svm
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [2.0, 0.0], [2.0, 1.0]])
    >>> w, b = fit_linear_svm(X, [-1, -1, 1, 1], C=1e3)
    >>> round(2 / float(np.linalg.norm(w)), 2)  # the gap between the two hulls
    2.0
    >>> w, b = fit_linear_svm(X + 50, [-1, -1, 1, 1], C=1e6, penalize_intercept=False)
    >>> round(2 / float(np.linalg.norm(w)), 4)  # far from the origin: only a free bias stays exact
    2.0
    """
    X = check_matrix(X, "X", min_rows=2)
    ys = _signed_labels(y, X.shape[0])
    if not np.isfinite(C) or C <= 0:
        raise ValueError(f"C: must be a positive finite number, got {C!r}")
    if loss not in _LOSSES:
        raise ValueError(f"loss: expected one of {_LOSSES}, got {loss!r}")
    sample_weight = _check_sample_weight(sample_weight, X.shape[0])
    if not penalize_intercept:
        if loss != "hinge":
            raise ValueError(f"loss: penalize_intercept=False supports only 'hinge', got {loss!r}")
        return _libsvm_linear(X, ys, C, sample_weight, tol, max_iter)
    w, b, _ = _liblinear(X, ys, C, loss, sample_weight, intercept_scaling, tol, max_iter, random_state)
    return w, b


def _libsvm_linear(X, ys, C, sample_weight, tol, max_iter):
    """libsvm's SMO with a linear kernel: the bias is not regularized."""
    svc = SVC(kernel="linear", C=float(C), tol=tol, max_iter=max_iter, cache_size=200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        svc.fit(X.astype(np.float64), ys, sample_weight=sample_weight)
    if any(issubclass(w.category, ConvergenceWarning) for w in caught):
        logger.debug("libsvm did not fully converge in %d iterations (C=%g, n=%d)", max_iter, C, X.shape[0])
    # SVC orders classes as (-1, +1), so coef_ already points to the +1 side
    return svc.coef_[0].astype(np.float64), float(svc.intercept_[0])


def _liblinear(X, ys, C, loss, sample_weight, intercept_scaling, tol, max_iter, random_state):
    """liblinear on checked float32 ``X`` and -1/+1 ``ys``: ``(w, b, n_iter)``."""
    rng = check_random_state(random_state)
    svc = LinearSVC(
        C=float(C),
        loss=loss,
        dual=True,
        tol=tol,
        max_iter=max_iter,
        intercept_scaling=intercept_scaling,
        random_state=int(rng.integers(0, 2**31 - 1)),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        svc.fit(X, ys, sample_weight=sample_weight)
    if any(issubclass(w.category, ConvergenceWarning) for w in caught):
        logger.debug("linear SVM did not fully converge in %d iterations (C=%g, n=%d)", max_iter, C, X.shape[0])
    return svc.coef_[0].astype(np.float64), float(svc.intercept_[0]), int(svc.n_iter_)


class LinearDecisionMixin:
    """``f(x) = w·x + b`` and its sign, for every fitted linear SVM here."""

    def decision_function(self, X):
        X = validate_X(self, X, reset=False, min_rows=0)
        return X @ self.coef_ + self.intercept_

    def predict(self, X):
        scores = self.decision_function(X)  # first: it raises NotFittedError on an unfitted model
        return self.classes_[(scores > 0).astype(int)]


class LinearSVM(LinearDecisionMixin, ClassifierMixin, BaseEstimator):
    """Binary linear SVM estimator around :func:`fit_linear_svm`.

    Parameters
    ----------
    C : float
        Misclassification cost.
    loss : {"hinge", "squared_hinge"}
    tol : float
        liblinear's stopping tolerance.
    max_iter : int
        Maximum liblinear iterations.
    random_state : None, int or Generator

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class.
    n_iter_ : int
        Iterations liblinear ran.
    n_features_in_ : int
    margin_ : float
        ``2 / ||w||``, the margin width (the convex-hull distance for a
        hard-margin fit of separable data).

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.svm import LinearSVM
    >>> X = np.array([[0.0], [1.0], [3.0], [4.0]])
    >>> LinearSVM(C=100.0).fit(X, [0, 0, 1, 1]).predict([[0.5], [3.5]]).tolist()
    [0, 1]
    """

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "loss": [StrOptions(set(_LOSSES))],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, C: float = 1.0, *, loss: str = "hinge", tol: float = 1e-4, max_iter: int = 2000,
                 random_state: int | np.random.Generator | None = None):
        self.C = C
        self.loss = loss
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> LinearSVM:
        """Fit the hyperplane with liblinear on ``X`` and binary labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows, at least 2.
        y : array-like of shape (n_samples,)
            Binary labels; ``classes_[1]`` (the larger) is the positive class.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative per-sample multipliers of ``C``; not all zero.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        validate_params(self)
        X = validate_X(self, X, reset=True, min_rows=2)
        y, classes = check_binary_target(self, y, X.shape[0])
        sample_weight = _check_sample_weight(sample_weight, X.shape[0])
        ys = np.where(y == classes[1], 1.0, -1.0)
        w, b, n_iter = _liblinear(
            X, ys, float(self.C), self.loss, sample_weight, 1.0, self.tol, self.max_iter, self.random_state
        )
        self.classes_ = classes
        self.coef_, self.intercept_ = w, b
        self.n_iter_ = n_iter
        norm = float(np.linalg.norm(w))
        self.margin_ = 2.0 / norm if norm > 0 else np.inf
        return self
