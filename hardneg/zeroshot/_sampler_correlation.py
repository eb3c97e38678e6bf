"""Old module path; the code lives in :mod:`hardneg.negatives._pairs_correlation`."""

from hardneg.negatives._pairs_correlation import CorrelationPairSampler

CorrelationSampler = CorrelationPairSampler

__all__ = ["CorrelationSampler"]
