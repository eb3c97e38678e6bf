"""The runnable examples in the docstrings stay true."""

import doctest
import importlib
import pkgutil

import pytest

import hardneg

PACKAGES = ["hardneg.store", "hardneg.eval", "hardneg.datasets"]


def _modules():
    for pkg_name in PACKAGES:
        pkg = importlib.import_module(pkg_name)
        yield pkg_name
        for info in pkgutil.iter_modules(pkg.__path__):
            yield f"{pkg_name}.{info.name}"


@pytest.mark.parametrize("name", sorted(set(_modules())))
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_version():
    assert hardneg.__version__
