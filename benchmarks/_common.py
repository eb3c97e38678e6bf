"""Helpers every benchmark shares: machine info and writing results."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def _git_commit() -> dict:
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)benchmarks/results"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": head or None, "dirty": bool(dirty)}


def _versions() -> dict:
    """Versions of the libraries whose speed or numbers a result depends on (those installed)."""
    out = {"python": platform.python_version()}
    for name in ("numpy", "scipy", "sklearn", "numba", "faiss", "torch", "onnxruntime", "zarr", "pyarrow", "hardneg"):
        try:
            out[name] = importlib.metadata.version({"sklearn": "scikit-learn", "faiss": "faiss-cpu"}.get(name, name))
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def machine_info() -> dict:
    """Where and when a result was measured: recorded in every result file."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_1_5_15_min": load,
        "versions": _versions(),
    }


def write_results(name: str, payload: dict) -> Path:
    """Write ``benchmarks/results/<name>.json`` with the command line, commit and machine.

    Every benchmark writes through here, so each figure quoted in the README
    or the docs can be traced to the command that produced it.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    record = {"command": ["python", *sys.argv], **_git_commit(), "machine": machine_info(), **payload}
    tmp.write_text(json.dumps(record, indent=2, default=_jsonable))
    os.replace(tmp, path)
    return path


#: top-level keys that describe how a run was made; a kept study keeps its own run's
RUN_CONTEXT = ("dirty", "machine", "args", "loadavg_start", "loadavg_end")


def earlier_run(old: dict, studies: dict) -> dict:
    """An ``earlier_runs`` entry: ``studies`` under the command, commit and :data:`RUN_CONTEXT` of the run ``old``
    (a result file's content) that measured them."""
    return {"command": old.get("command"), "commit": old.get("commit"),
            **{k: old[k] for k in RUN_CONTEXT if k in old}, "studies": studies}


def keep_earlier_studies(previous: Path, studies: tuple[str, ...], result: dict) -> dict:
    """A partial run rewrites only the studies it ran. The other ``studies`` that the ``previous`` result file holds
    (at its top level, or kept there from runs before it) go under ``result["earlier_runs"]``, each with the command,
    commit and :data:`RUN_CONTEXT` of the run that measured it, so that this run's command and commit never cover
    figures it did not measure. Returns the previous file's content ({} when there is none)."""
    if not previous.is_file():
        return {}
    old = json.loads(previous.read_text())
    runs = [earlier_run(old, {k: old[k] for k in studies if k in old}), *old.get("earlier_runs", [])]
    kept = []
    for run in runs:
        left = {k: v for k, v in run["studies"].items() if k not in result}
        if left:
            kept.append({**run, "studies": left})
    if kept:
        result["earlier_runs"] = kept
    return old


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [f"{row[c]:.4g}" if isinstance(row[c], float) else str(row[c]) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
