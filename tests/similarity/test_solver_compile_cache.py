"""Fitting a SOLIS solver in a fresh process writes no cache entry for the per-solver loops.

The loops are closures over the solver's compiled rules; Numba cannot key those stably
across processes, so with ``cache=True`` every process missed and wrote one more entry
(806 files, 39 MB in ``hardneg/similarity/__pycache__`` after a few hundred runs here).
They are compiled per process and not cached; the module-level kernels still are.
"""

import subprocess
import sys
from pathlib import Path

import hardneg.similarity

FIT = """
import numpy as np, scipy.sparse as sp
from hardneg.similarity import SolisADA
X = sp.csr_matrix(np.eye(4, dtype=np.float32))
SolisADA(lam=0.01, clock="triplets").fit(X, triplets=np.array([[0, 0, 1], [2, 2, 3]]))
"""


def _loop_entries() -> list[Path]:
    return sorted((Path(hardneg.similarity.__file__).parent / "__pycache__").glob("_lazy._make_kernels*"))


def test_a_fit_in_a_fresh_process_caches_no_closure():
    before = _loop_entries()
    subprocess.run([sys.executable, "-c", FIT], check=True, timeout=300)
    assert _loop_entries() == before  # entries an older hardneg wrote may be there: none is added
