"""Concept-search speed: Model Compression vs exact HIK ensembles vs ``X @ w`` (Li et al. 2013, Section V-E).

Measures on synthetic 1,024-bin L1-normalized histograms (dense-SIFT-like):
1. training time of Negative Bootstrap, T = 50, |B+| = 100, m = 1,000, with
   compressed candidate scoring vs exact kernel scoring (the exact run uses
   T = 20 to stay short; both are timed at T = 20 for the ratio);
2. scoring throughput of the compressed model (q = 100), the exact tables
   (binary search), the exact ensemble (kernel expansion) and a linear model's
   ``X @ w`` on the same in-memory rows, as ratios to ``X @ w``;
3. compressed scoring time as T grows (must stay flat);
4. a scan of an on-disk FeatureStore (page-cached) with top-k search.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/concept_speed.py [--quick] [--store-rows N]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import write_results  # noqa: E402

from hardneg.concept import NegativeBootstrap, search  # noqa: E402
from hardneg.store import FeatureStore  # noqa: E402
from hardneg.svm import hik_gram  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "concept_speed.json"


def histograms(rng, n, d, concentration=0.3):
    """L1-normalized sparse-ish histograms: gamma draws with many near-zero bins."""
    X = rng.gamma(concentration, size=(n, d)).astype(np.float32)
    X /= X.sum(axis=1, keepdims=True)
    return X


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--store-rows", type=int, default=250_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    d = 1024
    n_pool = 20_000 if not args.quick else 5_000
    n_score = 100_000 if not args.quick else 20_000
    store_rows = args.store_rows if not args.quick else 50_000
    out = {"study": "concept_speed", "quick": args.quick,
           "machine": {"processor": platform.processor(), "cpu_count": os.cpu_count(), "numpy": np.__version__,
                       "date": datetime.datetime.now().isoformat(timespec="seconds")}}

    # ---------------------------------------------------------------- 1. training
    centre = histograms(rng, 1, d, 0.3)
    pos = (0.5 * histograms(rng, 100, d) + 0.5 * centre).astype(np.float32)
    pool = histograms(rng, n_pool, d)
    NegativeBootstrap(n_iter=3, n_candidates=100, skip_top=0.0, random_state=0).fit(pos[:10], pool[:500])  # compile
    NegativeBootstrap(n_iter=3, n_candidates=100, compressed_training=False, skip_top=0.0, random_state=0).fit(pos[:10], pool[:500])
    train = {}
    for T in (20, 50):
        nb = NegativeBootstrap(n_iter=T, n_candidates=1000, skip_top=0.0, random_state=0)
        train[f"compressed_T{T}_s"] = best_of(lambda nb=nb: nb.fit(pos, pool), 2)
    nb50 = nb
    exact_T = 20 if not args.quick else 10
    nbx = NegativeBootstrap(n_iter=exact_T, n_candidates=1000, compressed_training=False, skip_top=0.0, random_state=0)
    train[f"exact_T{exact_T}_s"] = best_of(lambda: nbx.fit(pos, pool), 1)
    train["exact_over_compressed_at_T20"] = train[f"exact_T{exact_T}_s"] / train["compressed_T20_s"] if exact_T == 20 else None
    train["n_support_T50"] = int(nb50.support_vectors_.shape[0])
    out["training"] = train

    # ---------------------------------------------------------------- 2. scoring throughput
    Xs = histograms(rng, n_score, d)
    w = rng.normal(size=d).astype(np.float32)
    comp = nb50.compress(100)
    exact_tab = nb50.compress(None)
    comp.decision_function(Xs[:10])
    exact_tab.decision_function(Xs[:10])
    t_xw = best_of(lambda: Xs @ w)
    t_comp = best_of(lambda: comp.table.decision_function(Xs, check=False))
    n_sub = 2000
    t_tab = best_of(lambda: exact_tab.table.decision_function(Xs[:n_sub], check=False), 1) * n_score / n_sub
    n_ker = 500
    used = np.flatnonzero(nb50.dual_coef_)
    t_kernel = best_of(lambda: hik_gram(Xs[:n_ker], nb50.support_vectors_[used], check=False) @ nb50.dual_coef_[used], 1) * n_score / n_ker
    # the paper's uncompressed ensemble: each of the T meta classifiers evaluated separately
    t_members = best_of(lambda: [hik_gram(Xs[:n_ker], nb50.support_vectors_[s], check=False) @ c
                                 for s, c in zip(nb50.member_support_, nb50.member_dual_coef_)], 1) * n_score / n_ker
    out["scoring"] = {
        "rows": n_score, "dim": d, "T": 50, "n_support_merged": int(used.size),
        "X@w_s": t_xw, "compressed_q100_s": t_comp, "exact_tables_s (extrapolated)": t_tab,
        "merged_kernel_s (extrapolated)": t_kernel, "per_member_kernel_s (extrapolated)": t_members,
        "compressed_over_X@w": t_comp / t_xw, "exact_tables_over_X@w": t_tab / t_xw,
        "merged_kernel_over_X@w": t_kernel / t_xw, "per_member_kernel_over_compressed": t_members / t_comp,
    }

    # ---------------------------------------------------------------- 3. flat in T
    flat = {}
    for T in (1, 10, 25, 50):
        m = nb50.compress(100, n_members=T)
        m.table.decision_function(Xs[:10], check=False)
        flat[str(T)] = best_of(lambda m=m: m.table.decision_function(Xs, check=False))
    out["scoring_vs_T_s"] = flat

    # ---------------------------------------------------------------- 4. store scan
    tmp = Path(tempfile.mkdtemp(prefix="concept_speed_"))
    try:
        with FeatureStore.create(tmp / "s", dim=d) as store:
            for lo in range(0, store_rows, 50_000):
                store.append(histograms(rng, min(50_000, store_rows - lo), d))
        store = FeatureStore.open(tmp / "s")
        search(comp, store, k=100)  # warm the page cache
        t_scan = best_of(lambda: search(comp, store, k=100, chunk_rows=32768), 2)

        def linear_scan():
            for _, block in store.iter_chunks(32768):
                block @ w

        t_lin = best_of(linear_scan, 2)
        out["store_scan"] = {"rows": store_rows, "dim": d, "search_top100_s": t_scan, "read_plus_X@w_s": t_lin,
                             "rows_per_s": store_rows / t_scan,
                             "extrapolated_1M_rows_s": t_scan * 1_000_000 / store_rows}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if args.quick:
        write_results("concept_speed_quick", out)
    else:
        write_results("concept_speed", out)
    s, tr, sc = out["scoring"], out["training"], out["store_scan"]
    print("| measurement | value |")
    print("|---|---|")
    print(f"| train NB, T=50, |B+|=100, m=1000, d=1024 (compressed scoring) | {tr['compressed_T50_s']:.2f} s |")
    print(f"| train NB, T=20, compressed / exact candidate scoring | {tr['compressed_T20_s']:.2f} s / {tr[f'exact_T{exact_T}_s']:.2f} s (T={exact_T}) |")
    print(f"| score {n_score:,} x {d}: X@w | {s['X@w_s'] * 1e3:.1f} ms (1.0x) |")
    print(f"| compressed q=100 (T=50) | {s['compressed_q100_s'] * 1e3:.1f} ms ({s['compressed_over_X@w']:.1f}x X@w) |")
    print(f"| exact tables, binary search | {s['exact_tables_over_X@w']:.1f}x X@w |")
    print(f"| exact merged kernel expansion ({s['n_support_merged']} SVs) | {s['merged_kernel_over_X@w']:.0f}x X@w |")
    print(f"| exact per-member ensemble (paper's uncompressed) | {s['per_member_kernel_over_compressed']:.0f}x compressed |")
    print("| compressed scoring vs T (1/10/25/50) | " + " / ".join(f"{v * 1e3:.0f}" for v in out["scoring_vs_T_s"].values()) + " ms |")
    print(f"| store scan {sc['rows']:,} x {d}, top-100 | {sc['search_top100_s']:.2f} s ({sc['rows_per_s']:,.0f} rows/s; read + X@w {sc['read_plus_X@w_s']:.2f} s); 1M rows ~ {sc['extrapolated_1M_rows_s']:.1f} s |")


if __name__ == "__main__":
    main()
