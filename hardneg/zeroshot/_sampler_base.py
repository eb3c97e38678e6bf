"""Old module path of the pair-sampler base; the code lives in :mod:`hardneg.negatives._pairs_base`."""

from hardneg.negatives._pairs_base import _CHUNK, BasePairSampler

NegativeSampler = BasePairSampler

__all__ = ["NegativeSampler", "_CHUNK"]
