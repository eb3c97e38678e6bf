"""hardneg: learn image search and categorization from the hard examples.

Public entry points live in subpackages: :mod:`hardneg.store` (the on-disk
FeatureStore), :mod:`hardneg.datasets`, :mod:`hardneg.eval` (metrics) and the
method packages. Importing ``hardneg`` does no work.
"""

__version__ = "0.1.0"
