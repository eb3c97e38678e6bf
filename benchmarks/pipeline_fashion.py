"""The whole user pipeline, from the CLI, timed step by step (issue 41 goal 2).

Usage: PYTHONPATH=. .venv/bin/python benchmarks/pipeline_fashion.py [--limit N] [--threads T]

Runs, each step a fresh ``hardneg`` process as a user would, in a temporary folder:

1. ``extract fashion-mnist``: the 70,000 Fashion-MNIST images into a CNN store (96 px, 1280-d);
2. ``store tag --from-labels``: the class names as tags;
3. ``concept train -c Sandal -p 50``: a concept from 50 tagged positives (Negative Bootstrap, T = 20);
4. ``concept search``: the top 100 of the whole store;
5. ``hash train``: 64-bit TSVM hashing on the train split;
6. ``hash index``: every item encoded into a Hamming index;
7. ``hash search --query-image``: query by an image file (a test image written as PNG).

Writes each step's wall time, its share of the total, the total and the slowest step to
``benchmarks/results/pipeline_fashion.json`` (``--limit``: ``pipeline_fashion_limit<N>.json``;
``--max-labeled N``, passed to ``hash train``: ``pipeline_fashion_maxlabeled<N>.json``).
Nothing else should run on the machine meanwhile.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import write_results  # noqa: E402

HARDNEG = [str(Path(sys.executable).with_name("hardneg"))]  # the console script, as a user runs it
CONCEPT = "Sandal"


def run(step: str, args: list[str], cwd: Path, env: dict) -> dict:
    t = time.perf_counter()
    proc = subprocess.run(HARDNEG + args, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{step}: hardneg {' '.join(args)} failed (rc {proc.returncode}):\n{proc.stderr[-2000:]}")
    print(f"{step}: {seconds:.1f} s", flush=True)
    return {"step": step, "command": "hardneg " + " ".join(args), "seconds": round(seconds, 2), "stdout": proc.stdout[-400:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=None, help="images per split (a trial run)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-labeled", type=int, default=None, help="hash train --max-labeled (default: the command's own default)")
    args = ap.parse_args()

    from PIL import Image

    from hardneg.datasets import load_fashion_mnist

    work = Path(tempfile.mkdtemp(prefix="pipeline-"))
    try:
        env = {**os.environ, "COLUMNS": "100"}
        store = "fm.store"
        ds = load_fashion_mnist()
        query = np.flatnonzero(ds.split == "test")[0]
        Image.fromarray(ds.images[query]).save(work / "query.png")
        limit = ["--limit", str(args.limit)] if args.limit else []
        name = ("pipeline_fashion" + (f"_limit{args.limit}" if args.limit else "")
                + (f"_maxlabeled{args.max_labeled}" if args.max_labeled is not None else ""))
        cap = ["--max-labeled", str(args.max_labeled)] if args.max_labeled is not None else []
        protocol = ("the CLI, one fresh process per step, Fashion-MNIST "
                    + (f"(first {args.limit:,} images of each split)" if args.limit else "(all 70,000 images)")
                    + f"; concept {CONCEPT!r} from 50 positives; 64-bit TSVM hashing"
                    + (f" on at most {args.max_labeled:,} labeled rows" if args.max_labeled is not None else " (the command's defaults)")
                    + "; 1 query image")
        steps: list[dict] = []
        # the file is rewritten after every step: a run cut short still says how far it got
        pending = [
            lambda: run("extract 70,000 images (CNN)" if not args.limit else f"extract {2 * args.limit:,} images (CNN)",
                ["extract", "fashion-mnist", "-o", store, "--threads", str(args.threads), *limit], work, env),
            lambda: run("tag from labels", ["store", "tag", store, "--from-labels"], work, env),
            lambda: run("concept from 50 positives", ["concept", "train", store, "-c", CONCEPT, "-p", "50", "-o", "c.npz"], work, env),
            lambda: run("concept search (top 100)", ["concept", "search", "c.npz", store, "-k", "100", "--json"], work, env),
            lambda: run("hash train (64 bits)", ["hash", "train", store, "-o", "h.npz", "--bits", "64", *cap], work, env),
            lambda: run("hash index", ["hash", "index", "h.npz", store, "-o", "fm.index"], work, env),
            lambda: run("query by image", ["hash", "search", "h.npz", "fm.index", "--store", store, "--query-image", "query.png",
                                   "-k", "10", "--json"], work, env),
        ]
        for step in pending:
            steps.append(step())
            write_results(name, {"study": "pipeline_fashion", "protocol": protocol, "threads": args.threads, "partial": True,
                                 "steps": [{k: v for k, v in s.items() if k != "stdout"} for s in steps]})
        total = sum(s["seconds"] for s in steps)
        for s in steps:
            s["share"] = round(s["seconds"] / total, 3)
        slowest = max(steps, key=lambda s: s["seconds"])
        result = {
            "study": "pipeline_fashion",
            "protocol": protocol,
            "partial": False,
            "threads": args.threads,
            "steps": [{k: v for k, v in s.items() if k != "stdout"} for s in steps],
            "total_seconds": round(total, 1),
            "slowest_step": slowest["step"],
            "slowest_share": slowest["share"],
            "goal_seconds": 300,
        }
        write_results(name, result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"total {total:.1f} s; slowest: {slowest['step']} ({100 * slowest['share']:.0f} %)")


if __name__ == "__main__":
    main()
