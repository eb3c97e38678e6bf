"""Vocabulary tree (Nistér & Stewénius 2006) vs flat k-means codebooks: learning time, quantization
time and quantization error, on dense SIFT of MNIST 5k (and its reuse for the SOLIS benchmarks).

Descriptors: OpenCV dense SIFT (step 4, bins 4 and 6 px, images resized to 64 px, flat patches
dropped) of the 5,000 MNIST-5k images, ~290 per image (cached as uint8: OpenCV's SIFT values are
integers in 0..255). Learning sample where both run: 20 descriptors per word (flat k-means costs
O(sample x words) per iteration; the 2-core machine is shared), the same for both; beyond, the tree
learns from all 1.15M training descriptors. Error: mean squared distance of 100,000 held-out descriptors (images 4,000-4,999,
never in the sample) to their word. Flat k-means beyond 10K words is not run (hours on one core).
One core, one thread; times are wall seconds and ratios against flat k-means in the same run.

Usage: taskset -c 0 .venv/bin/python benchmarks/similarity_vocab_tree.py [--words 1000 10000 100000 1000000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if __name__ == "__main__":  # one thread per process for the timings; not when a test imports this module
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import markdown_table, write_results  # noqa: E402
from hardneg.datasets import load_mnist_5k  # noqa: E402
from hardneg.features import Codebook, DenseSift  # noqa: E402

CACHE = Path(os.environ.get("HARDNEG_CACHE", Path.home() / ".cache" / "hardneg")) / "solis-bench"
N_TRAIN_IMAGES = 4000


def mnist_descriptors():
    """(descriptors uint8 (n, 128), per-image lengths, seconds) of MNIST 5k dense SIFT (cached)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / "mnist5k-dsift-descriptors.npz"
    if path.is_file():
        z = np.load(path)
        return z["desc"], z["lengths"], float(z["seconds"])
    t0 = time.perf_counter()
    sets = DenseSift(step=4, bin_sizes=(4, 6), resize_to=64, drop_flat=True).describe(list(load_mnist_5k().images))
    seconds = time.perf_counter() - t0
    desc = np.vstack(sets)
    assert np.array_equal(desc, np.round(desc)) and desc.max() <= 255  # lossless as uint8
    lengths = np.array([s.shape[0] for s in sets], np.int64)
    np.savez(path, desc=desc.astype(np.uint8), lengths=lengths, seconds=seconds)
    return desc.astype(np.uint8), lengths, seconds


def sq_error(X, centroids, words):
    return float(np.mean(np.sum((X - centroids[words]) ** 2, axis=1)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, nargs="+", default=[1000, 10000, 100000, 1000000])
    ap.add_argument("--flat-max", type=int, default=10000)
    args = ap.parse_args(argv)
    desc, lengths, sift_s = mnist_descriptors()
    split_at = int(lengths[:N_TRAIN_IMAGES].sum())
    train, held = desc[:split_at], desc[split_at:]
    rng = np.random.default_rng(0)
    held = held[np.sort(rng.choice(held.shape[0], min(100_000, held.shape[0]), replace=False))].astype(np.float32)
    print(f"# {desc.shape[0]:,} descriptors ({desc.shape[0] / lengths.size:.0f} per image), dense SIFT {sift_s:.0f} s; "
          f"{train.shape[0]:,} from the first {N_TRAIN_IMAGES} images to learn from", flush=True)
    rows = []
    for n_words in args.words:
        n_sample = min(train.shape[0], 20 * n_words if n_words <= args.flat_max else train.shape[0])
        sample = train[np.sort(rng.choice(train.shape[0], n_sample, replace=False))].astype(np.float32)
        out = {}
        for method in ("flat", "tree"):
            if method == "flat" and n_words > args.flat_max:
                continue
            cb = Codebook(n_words, n_iter=10, max_descriptors=n_sample, tree_branching=10 if method == "tree" else None, random_state=0)
            t0 = time.perf_counter()
            cb.fit(sample)
            fit_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            words = cb.predict(held)
            q_s = time.perf_counter() - t0
            used = np.unique(cb.predict(sample[:200_000])).size
            out[method] = {"fit_s": fit_s, "quantize_us": 1e6 * q_s / held.shape[0], "error": sq_error(held, cb.centroids_, words), "used": used}
            print(f"{n_words} {method}: fit {fit_s:.1f} s, quantize {out[method]['quantize_us']:.2f} us/descriptor, "
                  f"error {out[method]['error']:.0f}, {used} words used", flush=True)
        for method, r in out.items():
            rows.append({
                "words": n_words, "method": "flat k-means (FAISS)" if method == "flat" else "tree b=10 (FAISS k-means per node)",
                "sample": n_sample, "learn s": f"{r['fit_s']:.1f}", "quantize µs/descr.": f"{r['quantize_us']:.2f}",
                "error (mean sq. dist.)": f"{r['error']:.0f}",
                "error / flat": f"{r['error'] / out['flat']['error']:.3f}" if "flat" in out else "-",
                "learn time / flat": f"{r['fit_s'] / out['flat']['fit_s']:.3f}" if "flat" in out else "-",
                "words used (of 200k sample)": r["used"],
                "raw": r,
            })
    cols = ["words", "method", "sample", "learn s", "learn time / flat", "quantize µs/descr.", "error (mean sq. dist.)", "error / flat",
            "words used (of 200k sample)"]
    table = markdown_table(rows, cols)
    write_results("similarity_vocab_tree", {
        "data": f"MNIST 5k dense SIFT, {desc.shape[0]} descriptors; learned on images 0-3999, error on 100,000 descriptors of images 4000-4999",
        "dense_sift_seconds": sift_s, "rows": rows, "table": table,
    })
    print(table)


if __name__ == "__main__":
    main()
