"""The test run keeps its temporary files to itself (tests/conftest.py)."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def test_tempfile_folders_land_in_the_runs_own_folder(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    made = Path(tempfile.mkdtemp())
    assert made.is_relative_to(base)
    assert Path(os.environ["TMPDIR"]).is_relative_to(base)


def test_a_subprocess_inherits_the_runs_folder(tmp_path_factory):
    out = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out).is_relative_to(tmp_path_factory.getbasetemp())
