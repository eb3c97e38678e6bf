"""What the CNN input size costs and buys on Fashion-MNIST (28x28 images upscaled).

Usage: PYTHONPATH=. .venv/bin/python benchmarks/features_fashion_input_size.py [--quick]

A reduced study: 5,000 training images (500 per class, seed 0) as the
database and 500 test queries (50 per class), EfficientNet-Lite0 features
(l2-normalized) at input sizes 64, 96, 128 and 224, exact Euclidean
ranking, mAP over the full ranking. Images/s are measured in the same
process; ratios are against 224, the network's native size. Writes
benchmarks/results/features_fashion_input_size.json.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import write_results  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import torch

    from hardneg.datasets import load_fashion_mnist
    from hardneg.eval import mean_average_precision_at_k
    from hardneg.features import EfficientNetLite0

    torch.set_num_threads(args.threads)
    ds = load_fashion_mnist()
    rng = np.random.default_rng(0)
    n_db, n_q = (50, 10) if args.quick else (500, 50)
    train, test = np.flatnonzero(ds.split == "train"), np.flatnonzero(ds.split == "test")
    db = np.concatenate([rng.choice(train[ds.y[train] == c], n_db, replace=False) for c in range(10)])
    qs = np.concatenate([rng.choice(test[ds.y[test] == c], n_q, replace=False) for c in range(10)])
    rows = []
    for size in (224, 128, 96, 64):
        ext = EfficientNetLite0(input_size=size, resize="stretch", l2_normalize=True, num_threads=args.threads)  # auto forward batch
        ext.transform(list(ds.images[:4]))  # warm-up
        t = time.perf_counter()
        D = ext.transform(list(ds.images[db]))
        secs = time.perf_counter() - t
        Q = ext.transform(list(ds.images[qs]))
        order = np.argsort(((Q[:, None, :] - D[None]) ** 2).sum(-1) if len(db) <= 1000 else -(Q @ D.T), axis=1, kind="stable")
        rel = ds.y[db][order] == ds.y[qs][:, None]
        rows.append({"input_size": size, "images_per_s": round(len(db) / secs, 1), "mAP": round(float(mean_average_precision_at_k(rel)), 4)})
    base = rows[0]["images_per_s"]
    for r in rows:
        r["speed_vs_224"] = round(r["images_per_s"] / base, 2)
        r["hours_for_70k"] = round(70000 / r["images_per_s"] / 3600, 2)
    result = {
        "study": "features_fashion_input_size",
        "quick": args.quick,
        "protocol": f"{len(qs)} test queries vs {len(db)} training images (stratified, seed 0), l2-normalized EfficientNet-Lite0 features, exact ranking",
        "rows": rows,
        "machine": {"processor": platform.processor(), "cpu_count": os.cpu_count(), "torch_threads": args.threads, "numpy": np.__version__,
                    "torch": torch.__version__, "load_avg": os.getloadavg(), "date": datetime.datetime.now().isoformat(timespec="seconds")},
    }
    write_results("features_fashion_input_size_quick" if args.quick else "features_fashion_input_size", result)
    print(result["protocol"])
    print("| input size | images/s | speed vs 224 | hours for 70k | mAP |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['input_size']} | {r['images_per_s']} | {r['speed_vs_224']}x | {r['hours_for_70k']} | {r['mAP']} |")


if __name__ == "__main__":
    main()
