"""What the zero-shot estimators share: the attribute inputs of ``fit`` and ``predict``."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from hardneg._validation import check_labels

from ._attributes import as_attribute_table, check_sample_attributes, class_means, lookup

__all__ = ["TrainingTargets", "training_targets", "candidate_table", "ZeroShotPredictMixin"]


class TrainingTargets:
    """The seen classes and their vectors, as every estimator's ``fit`` needs them.

    Attributes
    ----------
    classes : (C,) seen class labels, sorted
    prototypes : (C, a) one vector per seen class (the given one, or the class mean of per-image vectors)
    codes : (n,) class index of each image in ``classes``
    candidates : (K, a) vectors a pair can use (``prototypes``, or the per-image vectors)
    candidate_codes : (K,) class index of each candidate
    pos : (n,) each image's own candidate
    """

    def __init__(self, classes, prototypes, codes, candidates, candidate_codes, pos, per_image):
        self.classes, self.prototypes, self.codes = classes, prototypes, codes
        self.candidates, self.candidate_codes, self.pos, self.per_image = candidates, candidate_codes, pos, per_image


def _at_least_two(classes) -> None:
    if classes.size < 2:
        raise ValueError(f"y: zero-shot training needs at least 2 seen classes, got 1 class ({classes[0]!r})")


def training_targets(y, n_samples: int, class_attributes=None, sample_attributes=None, *, default=None) -> TrainingTargets:
    """Check ``y`` and the attribute inputs of a zero-shot ``fit``; one error line for anything wrong.

    Which attribute vectors are used, first found: ``class_attributes`` or
    ``sample_attributes`` given to ``fit``; ``default`` (the estimator's
    ``class_attributes`` parameter); else one-hot vectors, one attribute per
    seen class (``prototypes`` is the identity over the sorted classes), so the
    estimator is a plain classifier among the seen classes.
    """
    if y is None:
        raise ValueError("y: zero-shot training needs the class label of every training image, got None")
    y = check_labels(y, n_samples)
    if class_attributes is None and sample_attributes is None:
        class_attributes = default
    if class_attributes is None and sample_attributes is None:
        classes, codes = np.unique(y, return_inverse=True)
        _at_least_two(classes)
        codes = codes.reshape(-1)
        protos = np.eye(classes.size, dtype=np.float32)
        return TrainingTargets(classes, protos, codes, protos, np.arange(classes.size), codes, False)
    if class_attributes is not None and sample_attributes is not None:
        raise ValueError("give class_attributes or sample_attributes, not both")
    if sample_attributes is not None:
        A = check_sample_attributes(sample_attributes, n_samples)
        classes, codes = np.unique(y, return_inverse=True)
        _at_least_two(classes)
        _, protos = class_means(codes, A)
        return TrainingTargets(classes, protos, codes, A, codes, np.arange(n_samples), True)
    labels, vectors = as_attribute_table(class_attributes)
    idx = lookup(labels, vectors, y)
    seen = np.unique(idx)
    _at_least_two(labels[seen])
    codes = np.searchsorted(seen, idx)
    order = np.argsort(labels[seen], kind="stable")  # classes_ sorted, as in scikit-learn
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    codes = rank[codes]
    protos = vectors[seen][order]
    return TrainingTargets(labels[seen][order], protos, codes, protos, np.arange(seen.size), codes, False)


def candidate_table(estimator, class_attributes):
    """``(labels, vectors)`` of the classes to predict among: given, or the seen ones."""
    if class_attributes is None:
        return estimator.classes_, estimator.prototypes_
    return as_attribute_table(class_attributes, n_attributes=estimator.prototypes_.shape[1])


class ZeroShotPredictMixin:
    """``predict`` for the zero-shot estimators: the candidate class of best ``decision_function``.

    A subclass whose ``decision_function`` is a distance (smaller is closer) sets
    ``_smaller_is_closer = True``.
    """

    _smaller_is_closer = False

    def decision_function(self, X, class_attributes=None) -> np.ndarray:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def predict(self, X, class_attributes=None) -> np.ndarray:
        """The candidate class of best :meth:`decision_function` for every image.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Images' features.
        class_attributes : dict, 2-D array or (labels, matrix), optional
            The candidate classes' attribute vectors (e.g. the unseen ones);
            default the seen classes. Columns follow its order (its keys, or row numbers).

        Returns
        -------
        ndarray of shape (n_samples,)
            The predicted class label of each image.
        """
        check_is_fitted(self)
        labels, _ = candidate_table(self, class_attributes)
        S = np.asarray(self.decision_function(X, class_attributes))
        if not S.shape[0]:
            return labels[:0]
        return labels[np.argmin(S, axis=1) if self._smaller_is_closer else np.argmax(S, axis=1)]
