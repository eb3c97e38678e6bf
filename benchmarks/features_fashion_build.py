"""One-off build of the cached Fashion-MNIST feature stores, timed.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/features_fashion_build.py [--features cnn|dsift] [--quick]

Builds (or resumes) ``fashion-mnist-cnn`` / ``fashion-mnist-dsift1024`` under
``~/.cache/hardneg/stores`` (or ``$HARDNEG_CACHE/stores``) and writes the
wall time and throughput to ``benchmarks/results/features_fashion_build_<features>.json``.
A resumed build reports only the images it added. ``--quick`` builds 500
images per split into a temporary folder instead.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import write_results  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--features", choices=["cnn", "dsift"], default="cnn")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import torch

    from hardneg.features import build_fashion_mnist_store, fashion_mnist_store_path

    path = Path(tempfile.mkdtemp()) / "fm" if args.quick else fashion_mnist_store_path(args.features)
    t0 = time.perf_counter()
    summary = build_fashion_mnist_store(
        args.features, path=path, limit=500 if args.quick else None, num_threads=args.threads, batch_size=256
    )
    seconds = time.perf_counter() - t0
    result = {
        "study": "features_fashion_build",
        "features": args.features,
        "quick": args.quick,
        "store": str(path),
        "n_inputs": summary.n_inputs,
        "n_added": summary.n_added,
        "n_already": summary.n_already,
        "n_failed": summary.n_failed,
        "seconds": round(seconds, 1),
        "images_per_s": round(summary.n_added / seconds, 1) if summary.n_added else None,
        "machine": {
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "torch_threads": args.threads,
            "numpy": np.__version__,
            "torch": torch.__version__,
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
        },
    }
    write_results(f"features_fashion_build_{args.features}{'_quick' if args.quick else ''}", result)
    print("| store | images added | seconds | images/s |\n|---|---|---|---|")
    print(f"| {path.name} | {summary.n_added} | {result['seconds']} | {result['images_per_s']} |")


if __name__ == "__main__":
    main()
