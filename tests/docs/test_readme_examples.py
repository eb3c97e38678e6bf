"""The runnable examples in the docstrings stay true."""

import doctest
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

import pytest

import hardneg

# hardneg.features needs OpenCV and torch for its examples: tests/docs/test_features_docs.py runs those.
SKIP_PACKAGES = ("hardneg.features",)


def _modules():
    """Every module of hardneg whose source holds an example (``>>>``), found by walking the package."""
    for info in pkgutil.walk_packages(hardneg.__path__, "hardneg."):
        if info.name.startswith(SKIP_PACKAGES):
            continue
        spec = importlib.util.find_spec(info.name)
        if spec.origin and Path(spec.origin).read_text(encoding="utf-8").count(">>> "):
            yield info.name


@pytest.mark.parametrize("name", sorted(set(_modules())))
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


# README sections whose Python blocks form one runnable program (one example per job).
RUNNABLE_SECTIONS = ("## Quickstart",)


def _readme_python_blocks() -> list[str]:
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    sections = re.split(r"\n(?=## )", text)
    chosen = [sec for sec in sections if sec.startswith(RUNNABLE_SECTIONS)]
    assert len(chosen) == len(RUNNABLE_SECTIONS), "README sections renamed: update RUNNABLE_SECTIONS"
    return [b for sec in chosen for b in re.findall(r"```python\n(.*?)```", sec, flags=re.S)]


def test_readme_python_examples_run(tmp_path, monkeypatch):
    # the README's Python blocks run in order, in one namespace, as a reader would paste them
    blocks = _readme_python_blocks()
    assert blocks, "the README has no Python examples"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block.replace("...", "pass"), "README.md", "exec"), namespace)


def test_version():
    assert hardneg.__version__
