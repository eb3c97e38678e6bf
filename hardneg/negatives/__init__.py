"""Negative samplers: a base sampler and one file per strategy.

Examples
--------
>>> import numpy as np
>>> from hardneg.negatives import NegativePool, RandomNegativeSampler, BootstrapNegativeSampler
>>> pool = NegativePool(np.random.default_rng(0).random((50, 4)), tags=[["a"]] * 10 + [["b"]] * 40, exclude_tags=["a"])
>>> rows = RandomNegativeSampler().sample(pool, 5, random_state=0).rows
>>> bool((rows >= 10).all())
True
"""

from hardneg.negatives._base import BaseNegativeSampler, NegativeSample
from hardneg.negatives._bootstrap import BootstrapNegativeSampler
from hardneg.negatives._pool import NegativePool
from hardneg.negatives._random import RandomNegativeSampler

__all__ = ["BaseNegativeSampler", "BootstrapNegativeSampler", "NegativePool", "NegativeSample", "RandomNegativeSampler"]
