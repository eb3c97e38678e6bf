"""Old module path; the code lives in :mod:`hardneg.negatives._pairs_uncertainty`."""

from hardneg.negatives._pairs_uncertainty import UncertaintyPairSampler

UncertaintySampler = UncertaintyPairSampler

__all__ = ["UncertaintySampler"]
