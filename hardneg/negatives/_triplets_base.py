"""The shared part of the triplet samplers: label and row checks, and the base class."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike, RandomState

__all__ = ["BaseTripletSampler"]


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


class BaseTripletSampler:
    """Base class: ``sample(y, rows=None, random_state=None)`` returns ``(n, 3)`` int64 rows
    ``(anchor, positive, negative)`` into the labelled collection, in random order.

    Triplets are indices into ``X``, not copies of vectors (metric-learn's
    "preprocessor" shape), so ``X`` may live in an on-disk store.
    """

    def sample(self, y: ArrayLike, *, rows: ArrayLike | None = None, random_state: RandomState = None) -> np.ndarray:
        """Draw triplets of rows (subclasses implement it).

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
            Row triplets ``(anchor, positive, negative)``, in random order.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"
