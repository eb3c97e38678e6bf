"""Sanity study: exact Euclidean kNN retrieval mAP on Fashion-MNIST, pixels vs CNN vs dense-SIFT BoW.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/features_fashion_retrieval.py [--quick] [--queries 1000]

Queries: a class-stratified, seeded subset of the 10,000 test images
(1,000 by default: 100 per class; --quick: 200 queries against 10,000
training images). Database: the 60,000 training images. Relevant = same
class. Full ranking by exact squared Euclidean distance (BLAS, no index);
mAP over the whole ranking and mAP@100 (hardneg.eval). Needs the cached
stores (``hardneg extract fashion-mnist --features cnn|dsift``). Timings are
ratios to the raw-pixel search in the same run.
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


def ranked_labels(Q, D, db_labels, chunk=100):
    """Database labels in order of exact squared Euclidean distance (BLAS + stable argsort)."""
    D = np.ascontiguousarray(D, np.float32)
    d_sq = (D.astype(np.float64) ** 2).sum(1)
    out = []
    for lo in range(0, Q.shape[0], chunk):
        q = np.ascontiguousarray(Q[lo : lo + chunk], np.float32)
        dist = d_sq[None, :] - 2.0 * (q @ D.T).astype(np.float64)  # |q|^2 is constant per row
        out.append(db_labels[np.argsort(dist, axis=1, kind="stable")])
    return np.concatenate(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--queries", type=int, default=1000)
    args = ap.parse_args()

    from hardneg.datasets import load_fashion_mnist
    from hardneg.eval import mean_average_precision_at_k
    from hardneg.features import load_fashion_mnist_features

    ds = load_fashion_mnist()
    n_q = 200 if args.quick else args.queries
    rng = np.random.default_rng(0)
    test = np.flatnonzero(ds.split == "test")
    train = np.flatnonzero(ds.split == "train")
    if args.quick:
        train = np.sort(rng.choice(train, 10_000, replace=False))
    per_class = n_q // 10
    queries = np.sort(np.concatenate([rng.choice(test[ds.y[test] == c], per_class, replace=False) for c in range(10)]))

    def from_store(name, l2=False):
        X = load_fashion_mnist_features(name)
        if l2:
            X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
        return X

    feats = {
        "raw pixels (784-d, /255)": ds.X / 255.0,
        "CNN EfficientNet-Lite0 @96 (1280-d)": from_store("cnn"),
        "CNN, l2-normalized": from_store("cnn", l2=True),
        "dense-SIFT BoW-1024, l1 histograms": from_store("dsift"),
        "dense-SIFT BoW-1024, sqrt (Hellinger)": np.sqrt(from_store("dsift")),
    }
    rows, base = [], None
    for name, X in feats.items():
        t = time.perf_counter()
        ranked = ranked_labels(X[queries], X[train], ds.y[train])
        secs = time.perf_counter() - t
        base = base or secs
        rel = ranked == ds.y[queries][:, None]
        m_all = mean_average_precision_at_k(rel)
        m100 = mean_average_precision_at_k(rel, 100)
        p10 = float(rel[:, :10].mean())
        rows.append({"features": name, "dim": int(X.shape[1]), "mAP": round(float(m_all), 4), "mAP@100": round(float(m100), 4),
                     "P@10": round(p10, 4), "search_s": round(secs, 2), "time_vs_pixels": round(secs / base, 2)})
    result = {
        "study": "features_fashion_retrieval",
        "quick": args.quick,
        "protocol": f"{len(queries)} stratified test queries (seed 0) vs {len(train)} training images, exact L2, relevant = same class",
        "rows": rows,
        "machine": {"processor": platform.processor(), "cpu_count": os.cpu_count(), "numpy": np.__version__,
                    "load_avg": os.getloadavg(), "date": datetime.datetime.now().isoformat(timespec="seconds")},
    }
    write_results("features_fashion_retrieval_quick" if args.quick else "features_fashion_retrieval", result)
    print(result["protocol"])
    print("| features | dim | mAP | mAP@100 | P@10 | search time vs pixels |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['features']} | {r['dim']} | {r['mAP']} | {r['mAP@100']} | {r['P@10']} | {r['time_vs_pixels']}x |")


if __name__ == "__main__":
    main()
