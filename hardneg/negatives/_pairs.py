"""The pair-sampler registry: names accepted by ``ZeroShotClassifier(sampler=...)``.

The short names (``"random"``, ``"uncertainty"``, ``"correlation"``) are what a
zero-shot model file records; they never change, so files written before the
samplers moved here load unchanged.
"""

from __future__ import annotations

from ._pairs_base import BasePairSampler
from ._pairs_correlation import CorrelationPairSampler
from ._pairs_random import RandomPairSampler
from ._pairs_uncertainty import UncertaintyPairSampler

__all__ = ["PAIR_SAMPLERS", "make_pair_sampler"]

PAIR_SAMPLERS = {cls.name: cls for cls in (RandomPairSampler, UncertaintyPairSampler, CorrelationPairSampler)}


def make_pair_sampler(sampler: str | BasePairSampler) -> BasePairSampler:
    """A fresh sampler from a name or a copy of an instance's class.

    Parameters
    ----------
    sampler : str or BasePairSampler
        A name in ``PAIR_SAMPLERS`` (``"random"``, ``"uncertainty"``, ``"correlation"``) or a sampler.

    Returns
    -------
    BasePairSampler
        A new, unused sampler.

    Raises
    ------
    ValueError
        For an unknown name.
    """
    if isinstance(sampler, BasePairSampler):
        return type(sampler)()
    if sampler not in PAIR_SAMPLERS:
        raise ValueError(f"sampler: expected one of {sorted(PAIR_SAMPLERS)} or a BasePairSampler, got {sampler!r}")
    return PAIR_SAMPLERS[sampler]()
