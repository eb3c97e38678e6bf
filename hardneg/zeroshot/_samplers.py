"""The sampler registry: names accepted by ``ZeroShotClassifier(sampler=...)``."""

from __future__ import annotations

from ._sampler_base import NegativeSampler
from ._sampler_correlation import CorrelationSampler
from ._sampler_random import RandomSampler
from ._sampler_uncertainty import UncertaintySampler

__all__ = ["SAMPLERS", "make_sampler"]

SAMPLERS = {cls.name: cls for cls in (RandomSampler, UncertaintySampler, CorrelationSampler)}


def make_sampler(sampler) -> NegativeSampler:
    """A fresh sampler from a name or a copy of an instance's class."""
    if isinstance(sampler, NegativeSampler):
        return type(sampler)()
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler: expected one of {sorted(SAMPLERS)} or a NegativeSampler, got {sampler!r}")
    return SAMPLERS[sampler]()
