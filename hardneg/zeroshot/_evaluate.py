"""Zero-shot (ZSC) and generalized zero-shot (GZSC) scores of a fitted estimator.

[Bucher16] evaluates ZSC only; the GZSC scores are an extra of this package
(not in the paper), reported beside it because a deployed model rarely knows
that a test image comes from an unseen class.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hardneg._typing import ArrayLike
from hardneg._validation import check_labels
from hardneg.eval import generalized_zsl_scores, mean_per_class_accuracy

from ._attributes import as_attribute_table, check_disjoint

__all__ = ["zero_shot_scores"]


def zero_shot_scores(model: Any, X: ArrayLike, y: ArrayLike, class_attributes: Any, unseen_classes: ArrayLike,
                     seen_classes: ArrayLike | None = None) -> dict:
    """ZSC accuracy on the unseen classes ([Bucher16]), and GZSC seen / unseen / harmonic mean (an extra, not in [Bucher16]).

    ZSC, the protocol of [Bucher16]: test images of unseen classes, predicted
    among the unseen classes only; mean per-class accuracy. GZSC (not in
    [Bucher16], an extra; when ``X`` also holds test images of seen
    classes): every test image predicted among seen and unseen classes together;
    :func:`hardneg.eval.generalized_zsl_scores`.

    Parameters
    ----------
    model : fitted ZeroShotClassifier, ESZSL or DAP
    X, y : test images and their classes
    class_attributes : dict, 2-D array or (labels, matrix)
        Attribute vectors of (at least) every unseen class; seen classes missing
        from it use the model's own prototypes.
    unseen_classes : array-like
        Must not overlap the model's seen classes (``model.classes_``).
    seen_classes : array-like, optional
        Default ``model.classes_``.

    Returns
    -------
    dict with ``zsl`` and, when seen test images exist, ``seen``, ``unseen``, ``harmonic``
    """
    seen = np.asarray(model.classes_ if seen_classes is None else seen_classes)
    unseen = np.unique(np.asarray(unseen_classes))
    if unseen.size == 0:
        raise ValueError("unseen_classes: is empty")
    check_disjoint(model.classes_, unseen)
    y = check_labels(y, np.asarray(X).shape[0])
    labels, vectors = as_attribute_table(class_attributes, n_attributes=model.prototypes_.shape[1])
    missing = np.setdiff1d(unseen, labels)
    if missing.size:
        raise ValueError(f"class_attributes: unseen class(es) {missing[:10].tolist()} have no attribute vector")
    keep = np.isin(labels, unseen)
    unseen_table = (labels[keep], vectors[keep])
    X = np.asarray(X)
    u_rows = np.isin(y, unseen)
    if not u_rows.any():
        raise ValueError("y: no test image of an unseen class")
    out = {"zsl": mean_per_class_accuracy(y[u_rows], model.predict(X[u_rows], class_attributes=unseen_table))}
    s_rows = np.isin(y, seen)
    if s_rows.any():
        all_labels = np.concatenate([np.asarray(model.classes_), unseen_table[0]])
        all_vectors = np.vstack([model.prototypes_, unseen_table[1]])
        rows = u_rows | s_rows
        pred = model.predict(X[rows], class_attributes=(all_labels, all_vectors))
        out.update(generalized_zsl_scores(y[rows], pred, seen, unseen))
    return out
