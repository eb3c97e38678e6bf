"""Old module path of the pair-sampler registry; it lives in :mod:`hardneg.negatives._pairs`."""

from hardneg.negatives._pairs import PAIR_SAMPLERS, make_pair_sampler

SAMPLERS = PAIR_SAMPLERS
make_sampler = make_pair_sampler

__all__ = ["SAMPLERS", "make_sampler"]
