"""Importing a benchmark module (as tests do, e.g. tests/similarity/test_solis_concept_protocol.py)
leaves the process's thread settings alone.

A benchmark pins one thread per process when it runs as a script. It once did so at import
too: the test process then had NUMBA_NUM_THREADS=1 from collection on, and Numba refused to
compile the SOLIS loops later ("Cannot set NUMBA_NUM_THREADS to a different value once the
threads have been launched") when the parallel HIK kernels had already started two threads.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def test_importing_a_benchmark_sets_no_thread_variable():
    modules = sorted(f"benchmarks.{p.stem}" for p in (ROOT / "benchmarks").glob("*.py")
                     if any(v in p.read_text(encoding="utf-8") for v in THREAD_VARS))
    assert "benchmarks.similarity_solis_concept" in modules
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    code = ("import importlib, os, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            f"print(sorted(v for v in {THREAD_VARS!r} if v in os.environ))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
