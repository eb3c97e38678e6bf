"""Helpers every benchmark shares: machine info and writing results."""

from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def machine_info() -> dict:
    return {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def write_results(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"machine": machine_info(), **payload}, indent=2))
    os.replace(tmp, path)
    return path


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [f"{row[c]:.4g}" if isinstance(row[c], float) else str(row[c]) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
