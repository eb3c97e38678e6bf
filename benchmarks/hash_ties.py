"""Tied Hamming distances by code length: why the README suggests --bits 64 (issue 26).

A user ran ``hash train --bits 16`` (the README's suggestion then) and every query's results
came back at distance 0, in id order. Here: sklearn digits (1,797 x 64), a seeded 80/20
split, TSVMHashing (library defaults, random_state=0) trained on the train split for each
code length, every item encoded; each test image queries the whole collection minus itself
(k = 10, ties broken by row order, as HammingIndex does). Reported per code length: distinct
codes, the share of queries whose 10 results are all at one distance (what ``hash search``
now warns about), and precision@10 (same digit).

Usage: .venv/bin/python benchmarks/hash_ties.py [--bits 16 32 64]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import markdown_table, write_results  # noqa: E402
from hardneg.eval import hamming_distances  # noqa: E402
from hardneg.hashing import TSVMHashing  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args(argv)
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    rng = np.random.default_rng(0)
    test = np.zeros(len(X), dtype=bool)
    test[rng.permutation(len(X))[: len(X) // 5]] = True
    rows = []
    for bits in args.bits:
        t0 = time.perf_counter()
        hasher = TSVMHashing(n_bits=bits, random_state=0).fit(X[~test], y[~test])
        codes = hasher.transform(X)
        seconds = time.perf_counter() - t0
        q = np.flatnonzero(test)
        d = hamming_distances(codes[q], codes).astype(np.int64)
        d[np.arange(q.size), q] = 10**6  # a query is not its own result
        top = np.argsort(d, axis=1, kind="stable")[:, : args.k]  # ties in row order, as the index
        dist = np.take_along_axis(d, top, axis=1)
        tied = (dist == dist[:, :1]).all(axis=1)
        rows.append({"bits": bits, "distinct_codes": int(len(np.unique(codes, axis=0))), "all_tied_queries": float(tied.mean()),
                     "median_distance_spread": float(np.median(dist[:, -1] - dist[:, 0])),
                     "precision_at_k": float((y[top] == y[q][:, None]).mean()), "train_encode_s": round(seconds, 2)})
        print(rows[-1], flush=True)
    cols = ["bits", "distinct_codes", "all_tied_queries", "median_distance_spread", "precision_at_k", "train_encode_s"]
    print(markdown_table(rows, cols))
    path = write_results("hash_ties", {"data": "sklearn digits, 80/20 split seed 0", "k": args.k, "n_queries": int(test.sum()), "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
