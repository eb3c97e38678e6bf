"""The runnable examples in hardneg.features docstrings stay true."""

import doctest
import importlib

import pytest

pytest.importorskip("cv2")
pytest.importorskip("torch")
pytest.importorskip("efficientnet_lite_pytorch")
pytest.importorskip("skimage")

MODULES = ["_images", "_cnn", "_dsift", "_codebook", "_extract", "_fashion", "_vocab_tree"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"hardneg.features.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
