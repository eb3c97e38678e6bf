"""Shared by the test folders (tests/<subpackage>/).

Its presence puts ``tests/`` on ``sys.path`` (pytest's default "prepend" import mode),
so a test module can import the shared table of estimators (``from test_common import
ESTIMATORS``) and the helpers in ``tests/_helpers.py`` from any subfolder.
"""
