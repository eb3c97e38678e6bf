"""Old module path of the random pool sampler; the code lives in :mod:`hardneg.negatives._pool_random`."""

from ._pool_random import RandomPoolSampler

RandomNegativeSampler = RandomPoolSampler

__all__ = ["RandomNegativeSampler"]
