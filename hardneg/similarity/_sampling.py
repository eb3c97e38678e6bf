"""Triplet samplers: the paper's per-concept protocol and its large-scale one.

Each returns an ``(n, 3)`` int64 array of row indices ``(anchor, positive,
negative)`` in random order, ready for ``fit`` / ``partial_fit``;
:func:`concept_protocol` (one model per concept, [Gao17] Section 5.3) also
returns the training rows to leave out of that concept's retrieval database.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_positive_int, check_random_state

__all__ = ["concept_protocol", "concept_triplets", "random_triplets"]


def _labels_and_rows(y, rows):
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y: expected 1-D class labels, got shape {y.shape}")
    if y.dtype.kind not in "iu":
        raise TypeError(f"y: expected integer class labels, got dtype {y.dtype}")
    rows = np.arange(y.shape[0]) if rows is None else np.asarray(rows, np.int64)
    if rows.ndim != 1 or (rows.size and (rows.min() < 0 or rows.max() >= y.shape[0])):
        raise ValueError(f"rows: expected 1-D row indices into y of length {y.shape[0]}")
    rows = rows[y[rows] >= 0]  # -1: unlabeled
    return y, rows


def concept_triplets(y, *, n_positives: int = 7, n_negatives: int = 500, rows=None, classes=None, random_state=None) -> np.ndarray:
    """Section 5.3's protocol: per class, ``n_positives`` random members and
    ``n_negatives`` random non-members; every ordered pair of distinct
    positives with every negative, ``7 * 6 * 500 = 21,000`` triplets per class.

    Parameters
    ----------
    y : array-like of int (n_samples,)
        Class labels (``-1``: unlabeled, never drawn).
    rows : array-like of int, optional
        Rows to draw from (e.g. leave the queries out); default all.
    classes : array-like, optional
        Concepts to draw for; default every label among ``rows``.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.similarity import concept_triplets
    >>> y = np.repeat([0, 1, 2], 20)
    >>> t = concept_triplets(y, n_positives=3, n_negatives=4, random_state=0)
    >>> t.shape, bool(np.all(y[t[:, 0]] == y[t[:, 1]])), bool(np.all(y[t[:, 0]] != y[t[:, 2]]))
    ((72, 3), True, True)
    """
    n_positives = check_positive_int(n_positives, "n_positives", minimum=2)
    n_negatives = check_positive_int(n_negatives, "n_negatives")
    rng = check_random_state(random_state)
    y, rows = _labels_and_rows(y, rows)
    classes = np.unique(y[rows]) if classes is None else np.atleast_1d(np.asarray(classes))
    if classes.size == 0:
        raise ValueError("y: no labeled rows to draw triplets from")
    pairs = np.array([(i, j) for i in range(n_positives) for j in range(n_positives) if i != j], np.int64)
    out = []
    for c in classes:
        members, others = rows[y[rows] == c], rows[y[rows] != c]
        if members.size < n_positives:
            raise ValueError(f"class {c}: has {members.size} rows, fewer than n_positives={n_positives}")
        if others.size < n_negatives:
            raise ValueError(f"class {c}: has {others.size} non-member rows, fewer than n_negatives={n_negatives}")
        pos = rng.choice(members, n_positives, replace=False)
        neg = rng.choice(others, n_negatives, replace=False)
        anchor_pos = pos[pairs]  # (42, 2)
        block = np.empty((pairs.shape[0], n_negatives, 3), np.int64)
        block[:, :, 0] = anchor_pos[:, :1]
        block[:, :, 1] = anchor_pos[:, 1:]
        block[:, :, 2] = neg[None, :]
        out.append(block.reshape(-1, 3))
    triplets = np.concatenate(out)
    return np.ascontiguousarray(triplets[rng.permutation(triplets.shape[0])])


def concept_protocol(y, concept, *, n_positives: int = 7, n_negatives: int = 500, rows=None, random_state=None):
    """[Gao17] Section 5.3 for ONE concept: the triplets that train its own model,
    and the training rows that its retrieval evaluation must leave out.

    ``n_positives`` random members of ``concept`` and ``n_negatives`` random
    non-members (drawn from ``rows``); every ordered pair of distinct
    positives with every negative: ``7 * 6 * 500 = 21,000`` triplets. The
    model is then evaluated on the images it did not see: the database is
    every row except ``train_rows`` (the positives and the negatives).

    Parameters
    ----------
    y : array-like of int (n_samples,)
        Class labels (``-1``: unlabeled, never drawn).
    concept : int
        The class whose model is trained.
    rows : array-like of int, optional
        Rows to draw from; default all.

    Returns
    -------
    triplets : ndarray of int64 (n_positives * (n_positives - 1) * n_negatives, 3)
        In random order.
    train_rows : ndarray of int64
        The sorted positive and negative rows: remove them from the database.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.similarity import concept_protocol
    >>> y = np.repeat([0, 1, 2], 20)
    >>> t, train = concept_protocol(y, 1, n_positives=3, n_negatives=4, random_state=0)
    >>> t.shape, train.size, bool(np.all(y[t[:, :2]] == 1)), bool(np.all(y[t[:, 2]] != 1))
    ((24, 3), 7, True, True)
    """
    n_positives = check_positive_int(n_positives, "n_positives", minimum=2)
    n_negatives = check_positive_int(n_negatives, "n_negatives")
    rng = check_random_state(random_state)
    y, rows = _labels_and_rows(y, rows)
    members, others = rows[y[rows] == concept], rows[y[rows] != concept]
    if members.size < n_positives:
        raise ValueError(f"concept {concept!r}: has {members.size} rows, fewer than n_positives={n_positives}")
    if others.size < n_negatives:
        raise ValueError(f"concept {concept!r}: has {others.size} non-member rows, fewer than n_negatives={n_negatives}")
    pos = rng.choice(members, n_positives, replace=False)
    neg = rng.choice(others, n_negatives, replace=False)
    pairs = np.array([(i, j) for i in range(n_positives) for j in range(n_positives) if i != j], np.int64)
    anchor_pos = pos[pairs]
    block = np.empty((pairs.shape[0], n_negatives, 3), np.int64)
    block[:, :, 0] = anchor_pos[:, :1]
    block[:, :, 1] = anchor_pos[:, 1:]
    block[:, :, 2] = neg[None, :]
    triplets = block.reshape(-1, 3)
    triplets = np.ascontiguousarray(triplets[rng.permutation(triplets.shape[0])])
    return triplets, np.sort(np.concatenate([pos, neg])).astype(np.int64)


def random_triplets(y, n_triplets: int, *, rows=None, random_state=None) -> np.ndarray:
    """Section 5.4's protocol: an anchor and a positive drawn at random from one
    class (two distinct rows), a negative from any other class.

    Anchors are uniform over labeled rows of classes with at least two rows;
    positives uniform over the anchor's class minus the anchor; negatives
    uniform over the rows of other classes.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.similarity import random_triplets
    >>> y = np.array([0, 0, 1, 1, 2])
    >>> t = random_triplets(y, 100, random_state=0)
    >>> bool(np.all(y[t[:, 0]] == y[t[:, 1]]) and np.all(t[:, 0] != t[:, 1]) and np.all(y[t[:, 2]] != y[t[:, 0]]))
    True
    """
    n_triplets = check_positive_int(n_triplets, "n_triplets")
    rng = check_random_state(random_state)
    y, rows = _labels_and_rows(y, rows)
    order = rows[np.argsort(y[rows], kind="stable")]
    labels = y[order]
    classes, start, size = np.unique(labels, return_index=True, return_counts=True)
    if classes.size < 2:
        raise ValueError(f"y: needs at least 2 classes to draw triplets, found {classes.size} class{'' if classes.size == 1 else 'es'}")
    eligible = np.flatnonzero(size[np.searchsorted(classes, labels)] >= 2)
    if eligible.size == 0:
        raise ValueError("y: no class has 2 rows, so no (anchor, positive) pair exists")
    a = eligible[rng.integers(0, eligible.size, n_triplets)]
    c = np.searchsorted(classes, labels[a])
    p = rng.integers(0, size[c] - 1) + start[c]
    p = p + (p >= a)  # skip the anchor itself
    n = rng.integers(0, order.size - size[c])
    n = n + np.where(n >= start[c], size[c], 0)  # skip the anchor's class block
    return np.ascontiguousarray(np.stack([order[a], order[p], order[n]], axis=1), dtype=np.int64)
