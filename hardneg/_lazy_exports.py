"""Package exports imported on first use (PEP 562), so that importing one submodule is cheap.

``import hardneg.features._images`` runs ``hardneg/features/__init__.py``
first; when that file imports every submodule, a CLI command that needs one
helper pays for scikit-learn and SciPy (seconds on a loaded machine) before it
prints anything. A package lists ``name -> submodule`` instead and calls
:func:`attach`.
"""

from __future__ import annotations

import importlib


def attach(package: str, exports: dict[str, str], submodules: tuple[str, ...] = ()):
    """``(__getattr__, __dir__)`` for ``package`` resolving each name of ``exports`` from its submodule.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : dict of str to str
        Public name -> relative module defining it (e.g. ``"._codebook"``).
    submodules : tuple of str, default=()
        Names exported as the package's submodule of that name itself, not as
        an attribute of a module (``hardneg.exceptions``).

    Returns
    -------
    tuple of callables
        The module-level ``__getattr__`` and ``__dir__`` to assign in the package.

    Examples
    --------
    >>> getattr_, dir_ = attach("hardneg.features", {"to_rgb": "._images"})
    >>> getattr_("to_rgb").__name__
    'to_rgb'
    >>> getattr_, dir_ = attach("hardneg", {}, submodules=("exceptions",))
    >>> getattr_("exceptions").__name__
    'hardneg.exceptions'
    """
    def __getattr__(name: str):
        if name in submodules:
            value = importlib.import_module(f".{name}", package)
        elif name in exports:
            value = getattr(importlib.import_module(exports[name], package), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        importlib.import_module(package).__dict__[name] = value  # later lookups skip this function
        return value

    def __dir__():
        return sorted(set(importlib.import_module(package).__dict__) | set(exports) | set(submodules))

    return __getattr__, __dir__
