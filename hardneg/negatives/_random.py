"""Random negatives: the de-facto standard the paper improves on."""

from __future__ import annotations

import numpy as np

from ._base import BaseNegativeSampler, NegativeSample

__all__ = ["RandomNegativeSampler"]


class RandomNegativeSampler(BaseNegativeSampler):
    """``n`` distinct allowed rows drawn uniformly at random.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.negatives import NegativePool, RandomNegativeSampler
    >>> pool = NegativePool(np.ones((10, 2)))
    >>> RandomNegativeSampler().sample(pool, 3, random_state=0).rows.shape
    (3,)
    """

    def select(self, pool, n, rng: np.random.Generator, scorer) -> NegativeSample:
        return NegativeSample(rows=rng.choice(pool.allowed, size=n, replace=False).astype(np.int64))
