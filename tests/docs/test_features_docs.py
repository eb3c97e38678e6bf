"""The runnable examples in hardneg.features docstrings stay true."""

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

pytest.importorskip("cv2")
pytest.importorskip("torch")
pytest.importorskip("efficientnet_lite_pytorch")
pytest.importorskip("skimage")

# every module of hardneg.features with an example in its source
MODULES = sorted(
    info.name
    for info in pkgutil.iter_modules(importlib.import_module("hardneg.features").__path__)
    if ">>> " in (Path(importlib.import_module("hardneg.features").__path__[0]) / f"{info.name}.py").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"hardneg.features.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
