"""Old module path; the code lives in :mod:`hardneg.negatives._pairs_random`."""

from hardneg.negatives._pairs_random import RandomPairSampler

RandomSampler = RandomPairSampler

__all__ = ["RandomSampler"]
