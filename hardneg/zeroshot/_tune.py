"""Hyper-parameters by grid search on held-out training classes (Section 3 of the paper)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import ParameterGrid

from hardneg._typing import ArrayLike, RandomState
from hardneg._validation import check_labels, check_random_state
from hardneg.eval import mean_per_class_accuracy
from hardneg.exceptions import TrainingDivergedError  # not from ._classifier, which calls this module back

from ._attributes import as_attribute_table, check_sample_attributes, class_means, lookup

__all__ = ["class_holdout_search", "class_holdout_split"]

logger = logging.getLogger(__name__)


def class_holdout_split(classes: ArrayLike, holdout: float = 0.2, random_state: RandomState = None) -> tuple[np.ndarray, np.ndarray]:
    """``(train_classes, validation_classes)``: ``holdout`` of the classes set aside (at least 2:
    zero-shot prediction among a single class is always right, so it cannot rank parameters),
    at least 2 kept for training.

    Parameters
    ----------
    classes : array-like
        Class labels (repeats are ignored).
    holdout : float in (0, 1)
        Fraction of the classes set aside.
    random_state : None, int or Generator
        Seed of the draw.

    Returns
    -------
    train_classes, validation_classes : ndarray
        Sorted, disjoint.

    Raises
    ------
    ValueError
        If ``holdout`` is not in (0, 1) or fewer than 4 classes are given.
    """
    classes = np.unique(np.asarray(classes))
    if not 0.0 < holdout < 1.0:
        raise ValueError(f"holdout: expected a fraction in (0, 1), got {holdout}")
    n_val = max(2, int(round(holdout * classes.size)))
    if classes.size - n_val < 2:
        raise ValueError(f"holding out {n_val} of {classes.size} classes leaves fewer than 2 to train on; need at least 4 classes")
    perm = check_random_state(random_state).permutation(classes.size)
    return np.sort(classes[perm[n_val:]]), np.sort(classes[perm[:n_val]])


def class_holdout_search(estimator: BaseEstimator, param_grid: dict | list[dict], X: ArrayLike, y: ArrayLike,
                         class_attributes: Any = None, *, sample_attributes: ArrayLike | None = None,
                         holdout: float = 0.2, random_state: RandomState = None) -> tuple[dict, list[dict]]:
    """Score every point of ``param_grid`` by zero-shot accuracy on held-out training classes.

    The estimator (ZeroShotClassifier, ESZSL or DAP) is fitted on the images of
    80% of the training classes and scored by mean per-class accuracy on the
    images of the other 20%, predicting among those classes only.

    A candidate whose training diverges (e.g. too large an ``lr`` for the
    features' scale) is recorded with accuracy NaN and ``"diverged": True``
    and cannot be chosen; if every candidate diverges, the search raises.

    Parameters
    ----------
    estimator : ZeroShotClassifier, ESZSL or DAP
        Cloned for every candidate.
    param_grid : dict or list of dict
        As for scikit-learn's ``ParameterGrid``.
    X : array-like of shape (n_samples, n_features)
        Training images' features.
    y : array-like of shape (n_samples,)
        Their classes.
    class_attributes : dict, 2-D array-like or (labels, matrix), optional
        One vector per class (:func:`as_attribute_table`); or give ``sample_attributes``.
    sample_attributes : array-like of shape (n_samples, n_attributes), optional
        One vector per image instead.
    holdout : float in (0, 1)
        Fraction of the classes held out for validation.
    random_state : None, int or Generator
        Seed of the class split.

    Returns
    -------
    best_params : dict
    results : list of dict ``{"params": ..., "accuracy": ...}``, in grid order

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.zeroshot import ESZSL, class_holdout_search
    >>> rng = np.random.default_rng(0)
    >>> attrs = rng.random((10, 6)); y = np.repeat(np.arange(10), 20)
    >>> X = attrs[y] @ rng.normal(size=(6, 15)) + 0.1 * rng.normal(size=(200, 15))
    >>> best, results = class_holdout_search(ESZSL(), {"gamma": [0.1, 10.0]}, X, y, attrs, random_state=0)
    >>> len(results), sorted(best)
    (2, ['gamma'])
    """
    X = np.asarray(X)
    y = check_labels(y, X.shape[0])
    train_c, val_c = class_holdout_split(np.unique(y), holdout, random_state)
    tr, va = np.isin(y, train_c), np.isin(y, val_c)
    if sample_attributes is not None:
        A = check_sample_attributes(sample_attributes, X.shape[0])
        fit_kw = {"sample_attributes": A[tr]}
        val_table = class_means(y[va], A[va])
        fit_args: tuple = ()
    else:
        labels, vectors = as_attribute_table(class_attributes)
        lookup(labels, vectors, y)  # every training class needs a vector
        fit_kw = {}
        fit_args = ((labels, vectors),)
        keep = np.isin(labels, val_c)
        val_table = (labels[keep], vectors[keep])
    results = []
    for params in ParameterGrid(param_grid):
        model = clone(estimator).set_params(**params)
        try:
            model.fit(X[tr], y[tr], *fit_args, **fit_kw)
        except TrainingDivergedError as exc:
            logger.info("%s: %s", params, exc)
            results.append({"params": params, "accuracy": float("nan"), "diverged": True})
            continue
        acc = mean_per_class_accuracy(y[va], model.predict(X[va], class_attributes=val_table))
        logger.debug("%s: %.4f", params, acc)
        results.append({"params": params, "accuracy": acc})
    finite = [r for r in results if not r.get("diverged")]
    if not finite:
        raise TrainingDivergedError(f"training diverged for all {len(results)} candidates of the grid; lower lr")
    best = max(finite, key=lambda r: r["accuracy"])
    return dict(best["params"]), results
