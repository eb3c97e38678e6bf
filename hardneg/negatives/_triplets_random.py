"""Random triplets: [Gao17] Section 5.4's large-scale protocol."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike, RandomState
from .._validation import check_positive_int, check_random_state
from ._triplets_base import BaseTripletSampler, _labels_and_rows

__all__ = ["RandomTripletSampler", "random_triplets"]


def random_triplets(y: ArrayLike, n_triplets: int, *, rows: ArrayLike | None = None, random_state: RandomState = None) -> np.ndarray:
    """Section 5.4's protocol: an anchor and a positive drawn at random from one
    class (two distinct rows), a negative from any other class.

    Anchors are uniform over labeled rows of classes with at least two rows;
    positives uniform over the anchor's class minus the anchor; negatives
    uniform over the rows of other classes.

    Parameters
    ----------
    y : array-like of int (n_samples,)
        Class labels (``-1``: unlabeled, never drawn).
    n_triplets : int
        Triplets to draw.
    rows : array-like of int, optional
        Rows to draw from; default all.
    random_state : None, int or Generator
        Seed of the draws.

    Returns
    -------
    ndarray of int64, shape (n_triplets, 3)
        Row triplets ``(anchor, positive, negative)``.

    Raises
    ------
    ValueError
        If no class has two rows, or there is only one class.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.negatives import random_triplets
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


class RandomTripletSampler(BaseTripletSampler):
    """[Gao17] Section 5.4 as a sampler object: :func:`random_triplets` with ``n_triplets`` stored.

    Parameters
    ----------
    n_triplets : int
        Triplets per call of ``sample``.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.negatives import RandomTripletSampler, random_triplets
    >>> y = np.array([0, 0, 1, 1, 2])
    >>> t = RandomTripletSampler(50).sample(y, random_state=0)
    >>> bool(np.array_equal(t, random_triplets(y, 50, random_state=0)))
    True
    """

    def __init__(self, n_triplets: int):
        self.n_triplets = n_triplets

    def sample(self, y: ArrayLike, *, rows: ArrayLike | None = None, random_state: RandomState = None) -> np.ndarray:
        """:func:`random_triplets` with this sampler's ``n_triplets``.

        Parameters
        ----------
        y : array-like of int, shape (n_samples,)
            Class labels (``-1``: unlabeled, never drawn).
        rows : array-like of int, or None, default=None
            Rows to draw from; None draws from all.
        random_state : int, numpy.random.Generator or None, default=None
            Seed of the draws.

        Returns
        -------
        ndarray of int64, shape (n_triplets, 3)
            Row triplets ``(anchor, positive, negative)``.
        """
        return random_triplets(y, self.n_triplets, rows=rows, random_state=random_state)
