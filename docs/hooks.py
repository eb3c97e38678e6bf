"""MkDocs hook: build every results table and figure from benchmarks/results/*.json before each build.

Runs ``benchmarks/report.py`` into ``docs/generated/`` (not committed), so the
site's results cannot drift from the result files, and adds one navigation
entry per benchmark script under "Benchmarks".
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("mkdocs.hooks.hardneg")


def _report():
    spec = importlib.util.spec_from_file_location("hardneg_docs_report", ROOT / "benchmarks" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_config(config, **kwargs):
    info = _report().build(ROOT / "docs" / "generated")
    pages = [{f"{title}.py" if not title.startswith("other") else title: rel} for title, rel in info["benchmarks"]]
    for entry in config["nav"] or []:
        if isinstance(entry, dict) and "Benchmarks" in entry:
            entry["Benchmarks"] = [p for p in entry["Benchmarks"] if isinstance(p, str)] + pages
    log.info("benchmarks/report.py: %d benchmark pages", len(pages))
    return config
