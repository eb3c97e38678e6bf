"""`hardneg --help` and `hardneg store info` must not import the heavy libraries, nor
--help any command module (issue 29).

A module-set assertion, not a timing: each command runs in a fresh interpreter
and reports ``sys.modules``. What the start-up time is, is measured by
``benchmarks/cli_startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

# Imported by no command that only reads a store's table or prints help.
NEVER = ("torch", "onnxruntime", "sklearn", "fastapi", "uvicorn", "dask", "distributed", "numba", "faiss", "cv2", "PIL",
         "sentence_transformers", "zarr")
# --help also stays clear of the store layer's libraries.
NOT_FOR_HELP = (*NEVER, "numpy", "scipy", "pyarrow", "pandas", "pydantic")
# store info reads a store's meta.json only (it holds the split/label/tag counts), like --help
# nothing of the store layer's libraries (tests/cli/test_cli_store_info.py: the fallback for older stores).
NOT_FOR_STORE_INFO = NOT_FOR_HELP
# the modules of hardneg.cli that are not a command's (main.py imports these at start-up)
CLI_CORE = {"hardneg.cli", "hardneg.cli.main", "hardneg.cli._console", "hardneg.cli._inputs"}

_WRAPPER = """
import contextlib, io, json, sys
from hardneg.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code or 0, "modules": sorted({m.split(".")[0] for m in sys.modules}),
                  "cli": sorted(m for m in sys.modules if m.startswith("hardneg.cli"))}))
"""


def _run(*args) -> dict:
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["code"] == 0, proc.stderr[-2000:]
    return out


def _modules(*args) -> set[str]:
    return set(_run(*args)["modules"])


def test_help_imports_no_heavy_library():
    mods = _modules("--help")
    assert "hardneg" in mods
    assert not mods & set(NOT_FOR_HELP), sorted(mods & set(NOT_FOR_HELP))


def test_help_imports_no_command_module():
    """`hardneg --help` lists every command group from main.py's registry, importing none of them."""
    from hardneg.cli.main import LAZY_COMMANDS, LAZY_GROUPS

    assert set(_run("--help")["cli"]) == CLI_CORE
    # a group's own help imports that group's module only
    assert set(_run("store", "--help")["cli"]) == CLI_CORE | {"hardneg.cli.store"}
    assert {module for module, _, _ in [*LAZY_COMMANDS.values(), *LAZY_GROUPS.values()]} >= {"store", "concept", "knn"}


def test_store_info_imports_no_heavy_library(tmp_path):
    from hardneg.store import FeatureStore

    store = FeatureStore.create(tmp_path / "s", 8)
    store.append(np.random.default_rng(0).random((5, 8), dtype=np.float32), ids=[f"i{k}" for k in range(5)], labels=[0, 1, -1, 0, 1])
    store.close()
    out = _run("store", "info", tmp_path / "s")
    mods = set(out["modules"])
    assert "rich" in mods  # the table was printed: the wrapper did run the command
    assert not mods & set(NOT_FOR_STORE_INFO), sorted(mods & set(NOT_FOR_STORE_INFO))
    assert set(out["cli"]) == CLI_CORE | {"hardneg.cli.store"}  # no other command group


def test_the_check_can_fail():
    """The wrapper sees a module imported before the command runs (here scipy, on purpose)."""
    proc = subprocess.run([sys.executable, "-c", "import scipy\n" + _WRAPPER, "--help"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "scipy" in set(json.loads(proc.stdout.strip().splitlines()[-1])["modules"]) & set(NOT_FOR_HELP)
