"""Old module path of the base pool sampler; the code lives in :mod:`hardneg.negatives._pool_base`."""

from ._pool_base import BasePoolSampler, NegativeSample

BaseNegativeSampler = BasePoolSampler

__all__ = ["BaseNegativeSampler", "NegativeSample"]
