"""Classification metrics for (generalized) zero-shot recognition."""

from __future__ import annotations

import logging

import numpy as np

from hardneg._typing import ArrayLike
from hardneg._validation import check_labels

__all__ = ["mean_per_class_accuracy", "generalized_zsl_scores"]

logger = logging.getLogger(__name__)


def _check_pair(y_true, y_pred):
    y_true = np.asarray(y_true)
    if y_true.ndim != 1:
        raise ValueError(f"y_true: expected a 1-D array of labels, got shape {y_true.shape}")
    if y_true.size == 0:
        raise ValueError("y_true: is empty")
    y_pred = check_labels(y_pred, y_true.shape[0], name="y_pred")
    return y_true, y_pred


def _per_class_recall(y_true: np.ndarray, y_pred: np.ndarray, classes: np.ndarray) -> np.ndarray:
    correct = y_true == y_pred
    return np.array([correct[y_true == c].mean() for c in classes], dtype=np.float64)


def mean_per_class_accuracy(y_true: ArrayLike, y_pred: ArrayLike, labels: ArrayLike | None = None) -> float:
    """Average over classes of the per-class recall (the zero-shot standard).

    ``acc = (1 / |C|) * sum_{c in C} #{i : y_i = c and yhat_i = c} / #{i : y_i = c}``
    (Xian et al., "Zero-shot learning — the good, the bad and the ugly",
    [Xian18] Eq. (1)). Unlike plain accuracy, every class weighs the same whatever its
    number of test samples.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
    labels : array-like, optional
        Classes ``C`` to average over; each must occur in ``y_true``.
        Default: the classes present in ``y_true``.

    Returns
    -------
    float

    Examples
    --------
    >>> from hardneg.eval import mean_per_class_accuracy
    >>> mean_per_class_accuracy([0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 0, 1])  # (3/4 + 1/2) / 2
    0.625
    """
    y_true, y_pred = _check_pair(y_true, y_pred)
    if labels is None:
        classes = np.unique(y_true)
    else:
        classes = np.unique(np.asarray(labels))
        if classes.size == 0:
            raise ValueError("labels: is empty")
        missing = np.setdiff1d(classes, y_true)
        if missing.size:
            raise ValueError(f"labels: classes {missing[:10].tolist()} have no sample in y_true; their recall is undefined")
    return float(_per_class_recall(y_true, y_pred, classes).mean())


def generalized_zsl_scores(y_true: ArrayLike, y_pred: ArrayLike, seen_classes: ArrayLike, unseen_classes: ArrayLike) -> dict:
    """Seen accuracy, unseen accuracy and their harmonic mean (GZSL).

    Predictions range over all classes (seen and unseen). ``S`` is the mean
    per-class accuracy over the test samples of seen classes, ``U`` the same
    over test samples of unseen classes, and
    ``H = 2 S U / (S + U)`` (0 when both are 0) — Xian et al. 2018, [Xian18] Eq. (2).
    Classes listed but absent from ``y_true`` are left out of the average.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
    seen_classes, unseen_classes : array-like
        Disjoint class sets whose union covers every label in ``y_true``.

    Returns
    -------
    dict with keys ``"seen"``, ``"unseen"``, ``"harmonic"`` (floats)

    Examples
    --------
    >>> from hardneg.eval import generalized_zsl_scores
    >>> s = generalized_zsl_scores([0, 0, 1, 2, 2], [0, 1, 1, 2, 0], seen_classes=[0, 1], unseen_classes=[2])
    >>> {k: round(v, 4) for k, v in s.items()}  # S = (1/2 + 1)/2, U = 1/2
    {'seen': 0.75, 'unseen': 0.5, 'harmonic': 0.6}
    """
    y_true, y_pred = _check_pair(y_true, y_pred)
    seen = np.unique(np.asarray(seen_classes))
    unseen = np.unique(np.asarray(unseen_classes))
    if seen.size == 0 or unseen.size == 0:
        raise ValueError(f"seen_classes / unseen_classes: both must be non-empty (got {seen.size} and {unseen.size})")
    overlap = np.intersect1d(seen, unseen)
    if overlap.size:
        raise ValueError(f"seen_classes and unseen_classes overlap: {overlap[:10].tolist()}")
    unknown = np.setdiff1d(np.unique(y_true), np.concatenate([seen, unseen]))
    if unknown.size:
        raise ValueError(f"y_true: labels {unknown[:10].tolist()} are in neither seen_classes nor unseen_classes")

    scores = {}
    for key, classes in (("seen", seen), ("unseen", unseen)):
        present = np.intersect1d(classes, y_true)
        if present.size == 0:
            raise ValueError(f"y_true: has no test sample of any {key} class; {key} accuracy is undefined")
        if present.size < classes.size:
            logger.debug("%d %s classes have no test sample and are left out", classes.size - present.size, key)
        scores[key] = float(_per_class_recall(y_true, y_pred, present).mean())
    s, u = scores["seen"], scores["unseen"]
    scores["harmonic"] = 0.0 if s + u == 0 else 2.0 * s * u / (s + u)
    return scores
