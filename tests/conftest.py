"""Shared by the test folders (tests/<subpackage>/).

Its presence puts ``tests/`` on ``sys.path`` (pytest's default "prepend" import mode),
so a test module can import the shared table of estimators (``from test_common import
ESTIMATORS``) and the helpers in ``tests/_helpers.py`` from any subfolder.
"""

import os
import shutil
import tempfile

import pytest


@pytest.fixture(scope="session", autouse=True)
def _temporary_files_stay_in_the_run(tmp_path_factory):
    """Every ``tempfile`` folder a test or a docstring example makes (``tempfile.mkdtemp()``
    in the examples, stores the service stages, CLI subprocesses through ``TMPDIR``) lands in
    one folder of this run, removed at its end. Left in the system's /tmp, a full run leaked
    about 5 GB, and the CI machine's disk filled up after a few runs."""
    folder = tmp_path_factory.mktemp("tempfile")
    saved = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = str(folder)
    os.environ["TMPDIR"] = str(folder)
    yield folder
    tempfile.tempdir = saved[0]
    if saved[1] is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved[1]
    shutil.rmtree(folder, ignore_errors=True)
