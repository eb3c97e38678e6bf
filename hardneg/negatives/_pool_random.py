"""Random pool negatives: the de-facto standard [Li13] improves on."""

from __future__ import annotations

import numpy as np

from ._pool_base import BasePoolSampler, NegativeSample

__all__ = ["RandomPoolSampler"]


class RandomPoolSampler(BasePoolSampler):
    """``n`` distinct allowed rows drawn uniformly at random.

    Formerly ``RandomNegativeSampler`` (still importable, the same class).

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.negatives import NegativePool, RandomPoolSampler
    >>> pool = NegativePool(np.ones((10, 2)))
    >>> RandomPoolSampler().sample(pool, 3, random_state=0).rows.shape
    (3,)
    """

    def select(self, pool, n, rng: np.random.Generator, scorer) -> NegativeSample:
        return NegativeSample(rows=rng.choice(pool.allowed, size=n, replace=False).astype(np.int64))
