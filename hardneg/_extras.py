"""The install command that adds an optional extra, in the form that works where hardneg runs.

From a source checkout's virtual environment (``make demo`` / ``make test``
made ``<checkout>/.venv``), ``pip install 'hardneg[bow]'`` would fetch a
second copy from PyPI instead of adding the extra to the editable install;
there the hint is ``.venv/bin/pip install -e '.[bow]'`` (run in the checkout).
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["install_hint", "source_checkout"]


def source_checkout(package_dir: Path | None = None, prefix: str | None = None) -> Path | None:
    """The checkout folder when hardneg runs from a checkout's own ``.venv``, else None.

    A checkout: the folder above the package holds ``pyproject.toml``, and
    ``sys.prefix`` is that folder's ``.venv``.
    """
    package_dir = Path(__file__).resolve().parent if package_dir is None else Path(package_dir)
    root = package_dir.parent
    if not (root / "pyproject.toml").is_file():
        return None
    try:
        venv = Path(sys.prefix if prefix is None else prefix).resolve()
    except OSError:
        return None
    return root if venv == (root / ".venv").resolve() else None


def install_hint(extra: str, *, package_dir: Path | None = None, prefix: str | None = None) -> str:
    """The command that installs hardneg's optional ``extra`` (``"bow"``, ``"cnn"``, ...).

    Examples
    --------
    >>> install_hint("bow", package_dir=__import__("pathlib").Path("/nowhere/hardneg"))
    "pip install 'hardneg[bow]'"
    """
    if source_checkout(package_dir, prefix) is not None:
        return f".venv/bin/pip install -e '.[{extra}]'"
    return f"pip install 'hardneg[{extra}]'"
