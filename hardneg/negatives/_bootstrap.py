"""Old module path of the bootstrap pool sampler; the code lives in :mod:`hardneg.negatives._pool_bootstrap`."""

from ._pool_bootstrap import BootstrapPoolSampler, check_skip_top

BootstrapNegativeSampler = BootstrapPoolSampler

__all__ = ["BootstrapNegativeSampler", "check_skip_top"]
