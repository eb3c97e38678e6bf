"""hardneg: learn image search and categorization from the hard examples.

Public entry points live in subpackages: :mod:`hardneg.store` (the on-disk
FeatureStore), :mod:`hardneg.datasets`, :mod:`hardneg.eval` (metrics) and the
method packages. :func:`hardneg.load` reads any model or index file the
library writes; :mod:`hardneg.exceptions` holds every exception it raises
(all subclasses of ``HardnegError``).

Importing ``hardneg`` does no work: ``load`` and the exception classes are
imported on first use (a module-level ``__getattr__``, from
:func:`hardneg._lazy_exports.attach` like the subpackages').
"""

__version__ = "0.1.0"

# name -> module that defines it, imported on first access
_LAZY = {
    "load": "._load",
    "TopK": "._topk",
    **dict.fromkeys((
        "HardnegError", "ModelFileError", "StoreError", "StoreDamagedError", "StoreLockedError",
        "TrainingDivergedError", "ImageReadError", "DatasetNotFoundError", "DatasetDownloadError",
    ), ".exceptions"),
}

__all__ = [
    "__version__",
    "load",
    "TopK",
    "exceptions",
    "HardnegError",
    "ModelFileError",
    "StoreError",
    "StoreDamagedError",
    "StoreLockedError",
    "TrainingDivergedError",
    "ImageReadError",
    "DatasetNotFoundError",
    "DatasetDownloadError",
]


def __getattr__(name):
    # attach is imported here, so that ``import hardneg`` imports this file only; each name it
    # resolves is stored in the module, so this runs once per name
    from ._lazy_exports import attach

    return attach(__name__, _LAZY, submodules=("exceptions",))[0](name)


def __dir__():
    from ._lazy_exports import attach

    return attach(__name__, _LAZY, submodules=("exceptions",))[1]()
