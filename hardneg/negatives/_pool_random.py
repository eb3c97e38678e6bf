"""Random pool negatives: the de-facto standard [Li13] improves on."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._pool import NegativePool
from ._pool_base import BasePoolSampler, NegativeSample

__all__ = ["RandomPoolSampler"]


class RandomPoolSampler(BasePoolSampler):
    """``n`` distinct allowed rows drawn uniformly at random.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.negatives import NegativePool, RandomPoolSampler
    >>> pool = NegativePool(np.ones((10, 2)))
    >>> RandomPoolSampler().sample(pool, 3, random_state=0).rows.shape
    (3,)
    """

    def select(self, pool: NegativePool, n: int, rng: np.random.Generator,
               scorer: Callable[[np.ndarray], np.ndarray] | None,
               reference_scores: np.ndarray | None = None) -> NegativeSample:
        """``n`` distinct allowed rows drawn uniformly, without replacement.

        Parameters
        ----------
        pool : NegativePool
            The pool; only its allowed rows (``pool.allowed``) may be chosen.
        n : int
            Negatives to choose, at most ``pool.n_allowed`` (checked by :meth:`sample`).
        rng : numpy.random.Generator
            Source of the random draws.
        scorer : callable or None
            Maps a ``(rows, d)`` float block of pool rows to their ``(rows,)`` scores
            under the current ensemble; unused here.
        reference_scores : ndarray of float, optional
            Held-out positives' scores (see :meth:`sample`); unused here.

        Returns
        -------
        NegativeSample
            The drawn rows (int64, shape ``(n,)``), without scores.
        """
        return NegativeSample(rows=rng.choice(pool.allowed, size=n, replace=False).astype(np.int64))
