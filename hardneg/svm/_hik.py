"""Histogram-intersection-kernel (HIK) SVM, the meta classifier of Negative Bootstrap.

Li et al., "Bootstrapping Visual Categorization with Relevant Negatives"
(IEEE TMM 2013), [Li13] Eq. (1)-(4): the kernel is K(x, x') = sum_i min(x(i), x'(i))
and each meta classifier is a hinge-loss SVM with C = 1,
g(x) = b + sum_j alpha_j y_j K(x, x_j).

The Gram matrix is computed by a compiled kernel (``hik_gram``); the SVM
itself is libsvm through ``sklearn.svm.SVC(kernel="precomputed")``, which on a
200 x 200 Gram matrix takes about a millisecond, so a whole bootstrap of 50
meta classifiers costs well under a second.
"""

from __future__ import annotations

from numbers import Real

import numba
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.svm import SVC

from hardneg._typing import ArrayLike
from hardneg._validation import (
    Interval,
    StrOptions,
    check_binary_target,
    check_matrix,
    check_non_negative,
    validate_params,
    validate_X,
)

__all__ = ["HIKSVC", "fit_hik_svm_gram", "hik_gram"]


def _gram_py(X, Y, out):  # pragma: no cover, no mutate block - compiled
    n, d = X.shape
    m = Y.shape[0]
    for i in numba.prange(n):
        for j in range(m):
            s = np.float32(0.0)
            # min over float32 lanes vectorizes (AVX); float32 sums of
            # histogram bins are accurate to ~1e-6 relative.
            for k in range(d):
                a = X[i, k]
                b = Y[j, k]
                s += a if a < b else b
            out[i, j] = s


def _gram_sym_py(X, out):  # pragma: no cover, no mutate block - compiled
    n, d = X.shape
    for i in numba.prange(n):
        for j in range(i + 1):
            s = np.float32(0.0)
            for k in range(d):
                a = X[i, k]
                b = X[j, k]
                s += a if a < b else b
            out[i, j] = s
            out[j, i] = s


# Each kernel is compiled twice: threaded for big blocks, single-threaded for
# the small blocks of a bootstrap iteration, where waking threads costs more
# than the work (and stalls badly on a busy machine).
_gram_par = numba.njit(parallel=True, fastmath=True, cache=True)(_gram_py)
_gram_ser = numba.njit(fastmath=True, cache=True)(_gram_py)
_gram_sym_par = numba.njit(parallel=True, fastmath=True, cache=True)(_gram_sym_py)
_gram_sym_ser = numba.njit(fastmath=True, cache=True)(_gram_sym_py)
_PARALLEL_MIN_OPS = 1 << 24


def hik_gram(X: ArrayLike, Y: ArrayLike | None = None, *, check: bool = True) -> np.ndarray:
    """Histogram-intersection Gram matrix, [Li13] Eq. (1): ``K[a, b] = sum_i min(X[a, i], Y[b, i])``.

    Parameters
    ----------
    X : array-like of shape (n, d), non-negative
    Y : array-like of shape (m, d), non-negative, optional
        Defaults to ``X`` (a symmetric Gram matrix, computed half-way).
    check : bool
        Validate the inputs (non-negative, finite, same width). Internal
        callers that already checked pass ``False``.

    Returns
    -------
    K : ndarray of shape (n, m), float32

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.svm import hik_gram
    >>> hik_gram(np.array([[1.0, 2.0], [3.0, 0.0]])).tolist()
    [[3.0, 1.0], [1.0, 3.0]]
    """
    if check:
        X = check_matrix(X, "X", non_negative=True, min_rows=0)
        if Y is not None:
            Y = check_matrix(Y, "Y", non_negative=True, min_rows=0, n_features=X.shape[1])
    if Y is None:
        out = np.empty((X.shape[0], X.shape[0]), dtype=np.float32)
        if X.shape[0]:
            big = X.shape[0] ** 2 * X.shape[1] // 2 >= _PARALLEL_MIN_OPS
            (_gram_sym_par if big else _gram_sym_ser)(X, out)
        return out
    out = np.empty((X.shape[0], Y.shape[0]), dtype=np.float32)
    if X.shape[0] and Y.shape[0]:
        big = X.shape[0] * Y.shape[0] * X.shape[1] >= _PARALLEL_MIN_OPS
        (_gram_par if big else _gram_ser)(X, Y, out)
    return out


def fit_hik_svm_gram(
    K: ArrayLike, y: ArrayLike, *, C: float = 1.0, class_weight: dict | str | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Fit a binary SVM on a precomputed HIK Gram matrix, [Li13] Eq. (2)-(4).

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Gram matrix of the training rows.
    y : ndarray of shape (n,)
        ``1`` for positives, ``0`` (or ``-1``) for negatives.
    C : float
        Hinge-loss cost (the paper uses ``C = 1``).
    class_weight : dict or "balanced", optional
        Class-weighted costs (used by the pooled-negatives baseline).

    Returns
    -------
    support : ndarray of int
        Indices of the support vectors among the rows.
    dual_coef : ndarray of float64
        ``alpha_j * y_j`` per support vector, signed so that a positive
        decision value means "positive".
    intercept : float
    """
    y = np.where(np.asarray(y) > 0, 1, 0)
    if np.unique(y).size != 2:
        raise ValueError("y: an SVM needs both positive and negative training rows")
    svc = SVC(kernel="precomputed", C=float(C), class_weight=class_weight)
    svc.fit(np.asarray(K, dtype=np.float64), y)
    # SVC orders classes as [0, 1]; its decision function is positive for class 1.
    return svc.support_.astype(np.int64), svc.dual_coef_[0].astype(np.float64), float(svc.intercept_[0])


class HIKSVC(ClassifierMixin, BaseEstimator):
    """Binary SVM with the histogram intersection kernel, [Li13] Eq. (1)-(4).

    Parameters
    ----------
    C : float, default 1.0
        Hinge-loss cost; the paper fixes ``C = 1``.
    class_weight : dict or "balanced", optional
        Per-class cost multipliers.

    Attributes
    ----------
    support_vectors_ : ndarray (n_sv, d) float32
    dual_coef_ : ndarray (n_sv,) float64
        ``alpha_j * y_j``, positive for support vectors of ``classes_[1]``.
    intercept_ : float
    support_ : ndarray of int
        Row indices of the support vectors in the training data.
    classes_ : ndarray of shape (2,)
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.svm import HIKSVC
    >>> X = np.array([[0.0, 1.0], [0.1, 0.9], [1.0, 0.0], [0.9, 0.2]])
    >>> clf = HIKSVC().fit(X, [1, 1, 0, 0])
    >>> clf.predict([[0.05, 0.95], [0.95, 0.05]]).tolist()
    [1, 0]
    """

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(self, C: float = 1.0, *, class_weight: dict | str | None = None):
        self.C = C
        self.class_weight = class_weight

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True  # the kernel is defined on histograms
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X: ArrayLike, y: ArrayLike) -> HIKSVC:
        """Fit on non-negative ``X`` of shape (n_samples, n_features) and binary labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Non-negative training rows (histograms), at least 2.
        y : array-like of shape (n_samples,)
            Binary labels; ``classes_[1]`` (the larger) is the positive class.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        validate_params(self)
        X = validate_X(self, X, reset=True, min_rows=2)
        y, classes = check_binary_target(self, y, X.shape[0])
        check_non_negative(X, "X")  # after the labels: a multi-class y is the first thing to report
        y01 = (y == classes[1]).astype(np.int64)
        cw = self.class_weight
        if isinstance(cw, dict):
            cw = {int(classes[1] == k): v for k, v in cw.items()}
        support, coef, b = fit_hik_svm_gram(hik_gram(X, check=False), y01, C=self.C, class_weight=cw)
        self.classes_ = classes
        self.support_ = support
        self.support_vectors_ = X[support].copy()
        self.dual_coef_ = coef
        self.intercept_ = b
        return self

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Exact kernel expansion ``b + sum_j alpha_j y_j K(x, x_j)``, [Li13] Eq. (4).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Non-negative rows to score.

        Returns
        -------
        ndarray of shape (n_samples,), dtype float64
            Scores; positive means ``classes_[1]``.
        """
        X = validate_X(self, X, reset=False, non_negative=True, min_rows=0)
        return hik_gram(X, self.support_vectors_, check=False).astype(np.float64) @ self.dual_coef_ + self.intercept_

    def predict(self, X: ArrayLike) -> np.ndarray:
        """The class of every row: ``classes_[1]`` where :meth:`decision_function` is positive.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Non-negative rows to classify.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predicted labels, from ``classes_``.
        """
        scores = self.decision_function(X)  # first: it raises NotFittedError on an unfitted model
        return self.classes_[(scores > 0).astype(np.int64)]
