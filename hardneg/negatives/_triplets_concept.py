"""Concept triplets: [Gao17] Section 5.3's per-concept protocol.

Returns an ``(n, 3)`` int64 array of row indices ``(anchor, positive,
negative)`` in random order, ready for ``fit`` / ``partial_fit``;
:func:`concept_protocol` (one model per concept) also returns the training
rows to leave out of that concept's retrieval database.
"""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike, RandomState
from .._validation import check_positive_int, check_random_state
from ._triplets_base import BaseTripletSampler, _labels_and_rows

__all__ = ["ConceptTripletSampler", "concept_protocol", "concept_triplets"]


def concept_triplets(y: ArrayLike, *, n_positives: int = 7, n_negatives: int = 500, rows: ArrayLike | None = None,
                     classes: ArrayLike | None = None, random_state: RandomState = None) -> np.ndarray:
    """Section 5.3's protocol: per class, ``n_positives`` random members and
    ``n_negatives`` random non-members; every ordered pair of distinct
    positives with every negative, ``7 * 6 * 500 = 21,000`` triplets per class.

    Parameters
    ----------
    y : array-like of int (n_samples,)
        Class labels (``-1``: unlabeled, never drawn).
    n_positives : int
        Members drawn per class (at least 2).
    n_negatives : int
        Non-members drawn per class.
    rows : array-like of int, optional
        Rows to draw from (e.g. leave the queries out); default all.
    classes : array-like, optional
        Concepts to draw for; default every label among ``rows``.
    random_state : None, int or Generator
        Seed of the draws and of the final shuffle.

    Returns
    -------
    ndarray of int64, shape (n_classes * n_positives * (n_positives - 1) * n_negatives, 3)
        Row triplets ``(anchor, positive, negative)``, in random order.

    Raises
    ------
    ValueError
        If no row is labeled, or a class has too few members or non-members.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.negatives import concept_triplets
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


def concept_protocol(y: ArrayLike, concept: int, *, n_positives: int = 7, n_negatives: int = 500, rows: ArrayLike | None = None,
                     random_state: RandomState = None) -> tuple[np.ndarray, np.ndarray]:
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
    n_positives : int
        Members drawn (at least 2).
    n_negatives : int
        Non-members drawn.
    rows : array-like of int, optional
        Rows to draw from; default all.
    random_state : None, int or Generator
        Seed of the draws and of the shuffle.

    Returns
    -------
    triplets : ndarray of int64 (n_positives * (n_positives - 1) * n_negatives, 3)
        In random order.
    train_rows : ndarray of int64
        The sorted positive and negative rows: remove them from the database.

    Raises
    ------
    ValueError
        If the concept has too few members or non-members.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.negatives import concept_protocol
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


class ConceptTripletSampler(BaseTripletSampler):
    """[Gao17] Section 5.3 as a sampler object: :func:`concept_triplets` with its parameters stored.

    Parameters
    ----------
    n_positives, n_negatives : int
        As for :func:`concept_triplets`.
    classes : array-like, optional
        Concepts to draw for; default every label.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.negatives import ConceptTripletSampler, concept_triplets
    >>> y = np.repeat([0, 1, 2], 20)
    >>> t = ConceptTripletSampler(n_positives=3, n_negatives=4).sample(y, random_state=0)
    >>> bool(np.array_equal(t, concept_triplets(y, n_positives=3, n_negatives=4, random_state=0)))
    True
    """

    def __init__(self, n_positives: int = 7, *, n_negatives: int = 500, classes: ArrayLike | None = None):
        self.n_positives = n_positives
        self.n_negatives = n_negatives
        self.classes = classes

    def sample(self, y: ArrayLike, *, rows: ArrayLike | None = None, random_state: RandomState = None) -> np.ndarray:
        """:func:`concept_triplets` with this sampler's parameters.

        Parameters
        ----------
        y : array-like of int, shape (n_samples,)
            Class labels (``-1``: unlabeled, never drawn).
        rows : array-like of int, or None, default=None
            Rows to draw from; None draws from all.
        random_state : int, numpy.random.Generator or None, default=None
            Seed of the draws and of the final shuffle.

        Returns
        -------
        ndarray of int64, shape (n_classes * n_positives * (n_positives - 1) * n_negatives, 3)
            Row triplets ``(anchor, positive, negative)``, in random order.
        """
        return concept_triplets(y, n_positives=self.n_positives, n_negatives=self.n_negatives, rows=rows,
                                classes=self.classes, random_state=random_state)
