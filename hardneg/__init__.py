"""hardneg: learn image search and categorization from the hard examples.

Public entry points live in subpackages: :mod:`hardneg.store` (the on-disk
FeatureStore), :mod:`hardneg.datasets`, :mod:`hardneg.eval` (metrics) and the
method packages. :func:`hardneg.load` reads any model or index file the
library writes; :mod:`hardneg.exceptions` holds every exception it raises
(all subclasses of ``HardnegError``).

Importing ``hardneg`` does no work: ``load`` and the exception classes are
imported on first use (a module-level ``__getattr__``).
"""

__version__ = "0.1.0"

# name -> module that defines it, imported on first access
_LAZY = {
    "load": "hardneg._load",
    "TopK": "hardneg._topk",
    "exceptions": "hardneg.exceptions",
    "HardnegError": "hardneg.exceptions",
    "ModelFileError": "hardneg.exceptions",
    "StoreError": "hardneg.exceptions",
    "StoreDamagedError": "hardneg.exceptions",
    "StoreLockedError": "hardneg.exceptions",
    "TrainingDivergedError": "hardneg.exceptions",
    "ImageReadError": "hardneg.exceptions",
    "DatasetNotFoundError": "hardneg.exceptions",
    "DatasetDownloadError": "hardneg.exceptions",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hardneg' has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(module)
    value = mod if name == "exceptions" else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
