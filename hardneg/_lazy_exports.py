"""Package exports imported on first use (PEP 562), so that importing one submodule is cheap.

``import hardneg.features._images`` runs ``hardneg/features/__init__.py``
first; when that file imports every submodule, a CLI command that needs one
helper pays for scikit-learn and SciPy (seconds on a loaded machine) before it
prints anything. A package lists ``name -> submodule`` instead and calls
:func:`attach`.
"""

from __future__ import annotations

import importlib


def attach(package: str, exports: dict[str, str]):
    """``(__getattr__, __dir__)`` for ``package`` resolving each name of ``exports`` from its submodule.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : dict of str to str
        Public name -> relative module defining it (e.g. ``"._codebook"``).

    Returns
    -------
    tuple of callables
        The module-level ``__getattr__`` and ``__dir__`` to assign in the package.

    Examples
    --------
    >>> getattr_, dir_ = attach("hardneg.features", {"to_rgb": "._images"})
    >>> getattr_("to_rgb").__name__
    'to_rgb'
    """
    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        importlib.import_module(package).__dict__[name] = value  # later lookups skip this function
        return value

    def __dir__():
        return sorted(set(importlib.import_module(package).__dict__) | set(exports))

    return __getattr__, __dir__
