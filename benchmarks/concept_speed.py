"""Concept-search speed: Model Compression vs exact HIK ensembles vs ``X @ w`` (Li et al. 2013, Section V-E).

Measures on synthetic 1,024-bin L1-normalized histograms (dense-SIFT-like):
1. training time of Negative Bootstrap, T = 50, |B+| = 100, m = 1,000, with
   compressed candidate scoring vs exact kernel scoring (the exact run uses
   T = 20 to stay short; both are timed at T = 20 for the ratio);
2. scoring throughput of the compressed model (q = 100), the exact tables
   (binary search), the exact ensemble (kernel expansion) and a linear model's
   ``X @ w`` on the same in-memory rows, as ratios to ``X @ w``;
3. compressed scoring time as T grows (must stay flat);
4. a scan of an on-disk FeatureStore (page-cached) with top-k search, and the
   same rows scanned from a binned (uint8) copy by look-up only
   (``hardneg store quantize``), against reading the float32 store + ``X @ w``;
5. accuracy of the binned scan: AP and max |score - exact| against the bound;
6. the same scoring rows on real dense-SIFT bags of words (Fashion-MNIST 5k, 1,000
   words, TF-IDF, from the cache of benchmarks/similarity_solis_concept.py; skipped
   when the cache is absent), tiled to the synthetic block's row count;
7. Model Compression itself ([Li13] Eq. (11)-(16), ``compress(q=100)``): the q-bin table
   tabulated directly (``HIKBinTable.from_support_vectors``, what ``compress`` runs) against
   the previous path, the exact table (a sort per dimension) sampled at the q + 1 nodes
   (``HIKExactTable.from_support_vectors(...).to_bins(q)``), on the T = 50 ensembles of
   sections 2 and 6, with the largest difference between their node values.

Section 2 also times the previous table kernel (two 4-byte reads per value, a scalar
quantization pass and two summation chains, kept as ``_score_bins_two_reads``; same
terms, sums within rounding) on the same rows in the same process, the current kernel
over row blocks in ``numba.prange`` (wall time only can drop; the library's kernel is
single-threaded), and a zero-skipping prototype (defined here, not in the library).

Timings: every figure is the min and the median over ``--repeats`` runs, of
wall time and of process CPU time (CPU time counts every thread's work and is
what a shared, loaded machine cannot inflate); ratios use the minima, with
``X @ w`` measured in the same run on the same rows (also single-threaded, as
the table kernels run on one thread). In section 2 the methods take turns, one
run each per round, so a burst of load from other processes hits all of them.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/concept_speed.py [--quick] [--store-rows N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sklearn.metrics import average_precision_score
from threadpoolctl import threadpool_limits

from benchmarks._common import write_results
from hardneg.concept import NegativeBootstrap, search
from hardneg.store import BinGrid, FeatureStore, quantize_store
from hardneg.svm import HIKBinTable, HIKExactTable, hik_gram
from hardneg.svm._hik_tables import _FAST as _HIK_FAST
from hardneg.svm._hik_tables import _score_bins

RESULTS = Path(__file__).resolve().parent / "results" / "concept_speed.json"
# the dense-SIFT bags of words of benchmarks/similarity_solis_concept.py (fashion_bag_of_words(1000, quick=False))
REAL_BOW = Path(os.environ.get("HARDNEG_CACHE", Path.home() / ".cache" / "hardneg")) / "solis-bench" / "fashion5k-dsift1000.npz"


@numba.njit(fastmath=_HIK_FAST, cache=True)
def _score_bins_two_reads(X, lo, inv, V, q, out):  # pragma: no cover, no mutate block - compiled
    """The previous library kernel (two reads, two chains), a reference for this benchmark and tests/svm.

    Reads ``V[i, k]`` and ``V[i, k + 1]`` per value; its quantization pass converts
    through int64 (scalar); it sums in two chains (even and odd dimensions). Its terms
    equal ``_score_bins``'s bit for bit; its sums differ from them by rounding only.
    """
    n, d = X.shape
    stride = np.int32(V.shape[1])
    flat = V.ravel()
    idx = np.empty(d, dtype=np.int32)
    frac = np.empty(d, dtype=np.float32)
    lowest = np.float32(-1.0)
    top = np.float32(q)
    one = np.float32(1.0)
    for r in range(n):
        for i in range(d):
            t = (X[r, i] - lo[i]) * inv[i]
            k = np.int32(min(max(t, lowest), top) + one)
            idx[i] = np.int32(i) * stride + k
            frac[i] = t - np.float32(k - np.int32(1))
        out[r] = _gather_interp(flat, idx, frac, d)


@numba.njit(fastmath=_HIK_FAST, cache=True, inline="always")
def _gather_interp(flat, idx, frac, d):  # pragma: no cover, no mutate block - compiled
    s0 = 0.0
    s1 = 0.0
    for j in range(d >> 1):  # two chains: even and odd dimensions
        b = idx[2 * j]
        a = flat[b]
        s0 += a + frac[2 * j] * (flat[b + 1] - a)
        b = idx[2 * j + 1]
        a = flat[b]
        s1 += a + frac[2 * j + 1] * (flat[b + 1] - a)
    if d & 1:
        b = idx[d - 1]
        a = flat[b]
        s0 += a + frac[d - 1] * (flat[b + 1] - a)
    return s0 + s1


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


def timed(fn, repeat):
    """Min and median over ``repeat`` runs of wall and process CPU time (seconds)."""
    wall, cpu = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"wall_min": min(wall), "wall_median": float(np.median(wall)), "cpu_min": min(cpu), "cpu_median": float(np.median(cpu))}


def timed_turns(fns, repeat, pause=0.25):
    """``timed`` for several methods, one run of each per round (min and median per method).

    A value may be ``(fn, context)``: ``fn`` then runs inside ``context()``, entered
    outside the timed region (``threadpool_limits`` costs milliseconds to enter).
    Each run starts after a pause: OpenBLAS's threads busy-wait ~0.1 s after a call, and
    that spinning counted in the process CPU time of whatever ran next (X@w 1-thread
    measured right after the threaded X@w took 2x its CPU time; a table kernel 2x).
    """
    runs = {k: {"wall": [], "cpu": []} for k in fns}
    for _ in range(repeat):
        for k, entry in fns.items():
            fn, context = entry if isinstance(entry, tuple) else (entry, contextlib.nullcontext)
            time.sleep(pause)
            with context():
                c0, t0 = time.process_time(), time.perf_counter()
                fn()
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            runs[k]["wall"].append(wall)
            runs[k]["cpu"].append(cpu)
    return {k: {"wall_min": min(v["wall"]), "wall_median": float(np.median(v["wall"])), "cpu_min": min(v["cpu"]),
                "cpu_median": float(np.median(v["cpu"]))} for k, v in runs.items()}


@numba.njit(parallel=True)
def _score_bins_prange(X, lo, inv, P, off, q, out, block):  # pragma: no cover - compiled
    """The library kernel over row blocks in parallel (idea 4 of issue 29: wall time only)."""
    n = X.shape[0]
    for b in numba.prange((n + block - 1) // block):
        r0 = b * block
        r1 = min(r0 + block, n)
        _score_bins(X[r0:r1], lo, inv, P, off, q, out[r0:r1])


@numba.njit(fastmath={"nnan", "ninf", "nsz", "arcp", "afn"})
def _score_bins_skip_zeros(X, lo, inv, P, off, q, out):  # pragma: no cover - compiled
    """Prototype of idea 3 of issue 29 (not in the library): per row, list the nonzero entries of
    each summation chain (dimension i in chain i % 4; branch-free), then quantize + look up only
    those, in the library kernel's order. Equal to it where every zero has the term 0.0
    (``lo = 0`` in every dimension, as for the real bags of words); not on the gamma rows."""
    n, d = X.shape
    flat = P.ravel()
    pos = np.empty((4, d), dtype=np.uint32)
    m = np.zeros(4, dtype=np.int64)
    s = np.zeros(4)
    lowest = np.float32(-1.0)
    top = np.float32(q)
    one = np.float32(1.0)
    for r in range(n):
        m[:] = 0
        for i in range(d):
            c = i & 3
            pos[c, m[c]] = i
            m[c] += X[r, i] != 0
        for c in range(4):
            acc = 0.0
            for j in range(m[c]):
                i = pos[c, j]
                t = (X[r, i] - lo[i]) * inv[i]
                k = np.int32(min(max(t, lowest), top) + one)
                p = flat[off[i] + np.uint32(k)]
                acc += p.real + (t - (np.float32(k) - one)) * p.imag
            s[c] = acc
        out[r] = (s[0] + s[1]) + (s[2] + s[3])


def table_kernels(table):
    """Callables scoring rows with the previous kernel, the prange one and the zero-skipping prototype (no intercept)."""
    lo, inv, V = table._pack()
    P, off = table._pack_pairs()
    q = table.n_bins

    def previous(X):
        out = np.empty(X.shape[0])
        _score_bins_two_reads(X, lo, inv, V, q, out)
        return out

    def parallel(X):
        out = np.empty(X.shape[0])
        _score_bins_prange(X, lo, inv, P, off, q, out, 1024)
        return out

    def skip_zeros(X):
        out = np.empty(X.shape[0])
        _score_bins_skip_zeros(X, lo, inv, P, off, q, out)
        return out

    return previous, parallel, skip_zeros


def ratios(t, base):
    return {"wall_min": t["wall_min"] / base["wall_min"], "cpu_min": t["cpu_min"] / base["cpu_min"],
            "wall_median": t["wall_median"] / base["wall_median"], "cpu_median": t["cpu_median"] / base["cpu_median"]}


def compression_study(nb: NegativeBootstrap, repeats: int, n_bins: int = 100) -> dict:
    """Section 7: the merged ensemble's q-bin table, tabulated directly and through the sorted exact table."""
    used = np.flatnonzero(nb.dual_coef_)
    sv, coef, b = nb.support_vectors_[used], nb.dual_coef_[used], nb.intercept_
    direct = HIKBinTable.from_support_vectors(sv, coef, b, n_bins)
    sorted_ = HIKExactTable.from_support_vectors(sv, coef, b).to_bins(n_bins)
    t = timed_turns({"direct": lambda: HIKBinTable.from_support_vectors(sv, coef, b, n_bins),
                     "sorted": lambda: HIKExactTable.from_support_vectors(sv, coef, b).to_bins(n_bins),
                     "compress": lambda: nb.compress(n_bins)}, repeats)
    return {"n_support": int(used.size), "dim": int(sv.shape[1]), "n_bins": n_bins, "repeats": repeats,
            "direct_q_bin_table": t["direct"], "sorted_exact_table_then_bins": t["sorted"],
            "NegativeBootstrap.compress": t["compress"],
            "sorted_over_direct": ratios(t["sorted"], t["direct"]),
            "max_abs_node_difference": float(np.abs(direct.values - sorted_.values).max()),
            "max_abs_node_value": float(np.abs(sorted_.values).max()),
            "error_bounds_equal": bool(np.isclose(direct.error_bound, sorted_.error_bound, rtol=1e-9, atol=0.0))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--store-rows", type=int, default=250_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=None, help="timing repeats (default 15 with --quick, 11 without)")
    ap.add_argument("--only-scoring", action="store_true", help="skip the training study (1.)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    d = 1024
    n_pool = 20_000 if not args.quick else 5_000
    # a block big enough to time: X @ w on 20,000 x 1,024 took ~2.5 ms and swung 6x-29x between runs
    n_score = 200_000 if not args.quick else 60_000
    store_rows = args.store_rows if not args.quick else 60_000
    repeats = args.repeats or (15 if args.quick else 11)
    out = {"study": "concept_speed", "quick": args.quick, "repeats": repeats}

    # ---------------------------------------------------------------- 1. training
    centre = histograms(rng, 1, d, 0.3)
    pos = (0.5 * histograms(rng, 100, d) + 0.5 * centre).astype(np.float32)
    pool = histograms(rng, n_pool, d)
    NegativeBootstrap(n_iter=3, n_candidates=100, skip_top=0.0, random_state=0).fit(pos[:10], pool[:500])  # compile
    train = {}
    if not args.only_scoring:
        NegativeBootstrap(n_iter=3, n_candidates=100, compressed_training=False, skip_top=0.0, random_state=0).fit(pos[:10], pool[:500])
        for T in (20, 50):
            nb = NegativeBootstrap(n_iter=T, n_candidates=1000, skip_top=0.0, random_state=0)
            train[f"compressed_T{T}_s"] = best_of(lambda nb=nb: nb.fit(pos, pool), 2)
        nb50 = nb
        exact_T = 20 if not args.quick else 10
        nbx = NegativeBootstrap(n_iter=exact_T, n_candidates=1000, compressed_training=False, skip_top=0.0, random_state=0)
        train[f"exact_T{exact_T}_s"] = best_of(lambda: nbx.fit(pos, pool), 1)
        train["exact_over_compressed_at_T20"] = train[f"exact_T{exact_T}_s"] / train["compressed_T20_s"] if exact_T == 20 else None
    else:
        nb50 = NegativeBootstrap(n_iter=50, n_candidates=1000, skip_top=0.0, random_state=0).fit(pos, pool)
    train["n_support_T50"] = int(nb50.support_vectors_.shape[0])
    out["training"] = train

    # ---------------------------------------------------------------- 2. scoring throughput
    Xs = histograms(rng, n_score, d)
    w = rng.normal(size=d).astype(np.float32)
    comp = nb50.compress(100)
    exact_tab = nb50.compress(None)
    comp.decision_function(Xs[:10])
    exact_tab.decision_function(Xs[:10])
    grid = BinGrid(np.zeros(d), Xs.max(axis=0), 100)  # the store's own grid, as `hardneg store quantize` makes it
    codes = grid.quantize(Xs)
    comp.decision_function_bins(codes[:10], grid)
    load_before = list(os.getloadavg())
    previous, parallel, skip_zeros = table_kernels(comp.table)
    # the library adds the intercept last: compare with the same addition, not by subtracting it
    s_new = comp.table.decision_function(Xs, check=False)
    diff_previous = float(np.abs(s_new - (previous(Xs) + comp.table.intercept)).max())
    same_as_parallel = bool(np.array_equal(s_new, parallel(Xs) + comp.table.intercept))

    turns = timed_turns({"X@w": lambda: Xs @ w, "X@w_1_thread": (lambda: Xs @ w, lambda: threadpool_limits(1)),
                         "compressed": lambda: comp.table.decision_function(Xs, check=False),
                         "previous": lambda: previous(Xs), "prange": lambda: parallel(Xs), "skip_zeros": lambda: skip_zeros(Xs),
                         "codes": lambda: comp.decision_function_bins(codes, grid)}, repeats)
    t_xw, t_xw1, t_comp, t_codes = turns["X@w"], turns["X@w_1_thread"], turns["compressed"], turns["codes"]
    t_prev, t_par, t_skip = turns["previous"], turns["prange"], turns["skip_zeros"]
    n_sub = 2000
    t_tab = best_of(lambda: exact_tab.table.decision_function(Xs[:n_sub], check=False), 1) * n_score / n_sub
    n_ker = 500
    used = np.flatnonzero(nb50.dual_coef_)
    t_kernel = best_of(lambda: hik_gram(Xs[:n_ker], nb50.support_vectors_[used], check=False) @ nb50.dual_coef_[used], 1) * n_score / n_ker
    # the paper's uncompressed ensemble: each of the T meta classifiers evaluated separately
    t_members = best_of(lambda: [hik_gram(Xs[:n_ker], nb50.support_vectors_[s], check=False) @ c
                                 for s, c in zip(nb50.member_support_, nb50.member_dual_coef_)], 1) * n_score / n_ker
    out["scoring"] = {
        "rows": n_score, "dim": d, "T": 50, "n_support_merged": int(used.size), "repeats": repeats,
        "load_average_1_5_15_min_before": load_before, "load_average_1_5_15_min_after": list(os.getloadavg()),
        "X@w": t_xw, "X@w_1_thread": t_xw1, "compressed_q100": t_comp, "compressed_q100_uint8_codes": t_codes,
        "compressed_over_X@w": ratios(t_comp, t_xw), "compressed_over_X@w_1_thread": ratios(t_comp, t_xw1),
        "compressed_q100_previous_kernel": t_prev, "previous_kernel_over_X@w_1_thread": ratios(t_prev, t_xw1),
        "previous_kernel_over_compressed": ratios(t_prev, t_comp), "previous_kernel_max_abs_diff": diff_previous,
        f"compressed_q100_prange_{numba.get_num_threads()}_threads": t_par,
        "prange_over_X@w": ratios(t_par, t_xw), "prange_scores_identical": same_as_parallel,
        "zero_fraction": float(np.mean(Xs == 0)), "skip_zeros_prototype": t_skip,
        "skip_zeros_prototype_over_compressed": ratios(t_skip, t_comp),
        "values_per_ns_cpu_min": {"X@w_1_thread": Xs.size / t_xw1["cpu_min"] / 1e9,
                                  "compressed": Xs.size / t_comp["cpu_min"] / 1e9,
                                  "previous_kernel": Xs.size / t_prev["cpu_min"] / 1e9},
        "uint8_codes_over_X@w": ratios(t_codes, t_xw), "uint8_codes_over_X@w_1_thread": ratios(t_codes, t_xw1),
        "exact_tables_s (extrapolated)": t_tab, "merged_kernel_s (extrapolated)": t_kernel,
        "per_member_kernel_s (extrapolated)": t_members,
        "exact_tables_over_X@w": t_tab / t_xw["wall_min"], "merged_kernel_over_X@w": t_kernel / t_xw["wall_min"],
        "per_member_kernel_over_compressed": t_members / t_comp["wall_min"],
    }

    # ---------------------------------------------------------------- 3. flat in T
    flat = {}
    for T in (1, 10, 25, 50):
        m = nb50.compress(100, n_members=T)
        m.table.decision_function(Xs[:10], check=False)
        flat[str(T)] = timed(lambda m=m: m.table.decision_function(Xs, check=False), max(3, repeats // 3))["cpu_min"]
    out["scoring_vs_T_cpu_s"] = flat

    # ---------------------------------------------------------------- 4. store scans
    tmp = Path(tempfile.mkdtemp(prefix="concept_speed_"))
    try:
        with FeatureStore.create(tmp / "s", dim=d) as store:
            for lo in range(0, store_rows, 50_000):
                store.append(histograms(rng, min(50_000, store_rows - lo), d))
        store = FeatureStore.open(tmp / "s")
        t0 = time.perf_counter()
        binned = quantize_store(store, tmp / "s.q100", n_bins=100)
        t_quantize = time.perf_counter() - t0
        search(comp, store, k=100)  # warm the page cache
        scan_repeats = max(3, repeats // 3)
        t_scan = timed(lambda: search(comp, store, k=100, chunk_rows=32768), scan_repeats)

        def scan(source, score):
            best = np.empty(0)
            for _, block in source.iter_chunks(32768):
                s = score(block)
                best = np.partition(np.concatenate([best, s]), -100)[-100:] if best.size + s.size > 100 else np.concatenate([best, s])
            return best

        t_lin = timed(lambda: scan(store, lambda b: b @ w), scan_repeats)
        t_float = timed(lambda: scan(store, comp.decision_function), scan_repeats)
        scan(binned, comp.decision_function)  # warm
        t_bin = timed(lambda: scan(binned, comp.decision_function), scan_repeats)
        out["store_scan"] = {
            "rows": store_rows, "dim": d, "repeats": scan_repeats, "quantize_store_s": t_quantize,
            "search_top100": t_scan, "read_plus_X@w": t_lin, "read_plus_compressed_float": t_float,
            "read_codes_plus_compressed_uint8": t_bin,
            "binned_scan_over_float_X@w_scan": ratios(t_bin, t_lin),
            "float_compressed_scan_over_float_X@w_scan": ratios(t_float, t_lin),
            "rows_per_s_binned_wall_min": store_rows / t_bin["wall_min"],
            "rows_per_s_search_wall_min": store_rows / t_scan["wall_min"],
            "extrapolated_1M_rows_binned_s": t_bin["wall_min"] * 1_000_000 / store_rows,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # ---------------------------------------------------------------- 5. binned accuracy
    held = (0.5 * histograms(rng, 200, d) + 0.5 * centre).astype(np.float32)
    neg = histograms(rng, 5000, d)
    Xe = np.vstack([held, neg])
    ye = np.r_[np.ones(len(held)), np.zeros(len(neg))]
    ge = BinGrid(np.zeros(d), Xe.max(axis=0), 100)
    s_exact = exact_tab.decision_function(Xe)
    s_table = comp.decision_function(Xe)
    s_codes = comp.decision_function_bins(ge.quantize(Xe), ge)
    out["binned_accuracy"] = {
        "rows": len(Xe), "positives": len(held), "n_bins_model": 100, "n_bins_store": 100,
        "AP_exact": float(average_precision_score(ye, s_exact)), "AP_table_q100": float(average_precision_score(ye, s_table)),
        "AP_uint8_codes": float(average_precision_score(ye, s_codes)),
        "max_abs_codes_minus_exact": float(np.abs(s_codes - s_exact).max()),
        "bound_table_plus_binning": comp.table.error_bound + comp.bins_error_bound(ge),
        "max_abs_table_minus_exact": float(np.abs(s_table - s_exact).max()), "bound_table": comp.table.error_bound,
    }

    # ---------------------------------------------------------------- 6. real dense-SIFT rows
    if REAL_BOW.is_file():
        z = np.load(REAL_BOW)
        R = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])).toarray().astype(np.float32)
        yr = z["y"]
        rr = np.random.default_rng(args.seed)
        pos_r = R[rr.choice(np.flatnonzero(yr == 0), 100, replace=False)]
        nb_r = NegativeBootstrap(n_iter=50, n_candidates=1000, skip_top=0.0, random_state=0).fit(pos_r, R[yr != 0])
        comp_r = nb_r.compress(100)
        XR = np.ascontiguousarray(np.tile(R, (max(1, n_score // R.shape[0]), 1)))
        wr = rr.normal(size=R.shape[1]).astype(np.float32)
        grid_r = BinGrid(np.zeros(R.shape[1]), XR.max(axis=0), 100)
        codes_r = grid_r.quantize(XR)
        prev_r, _, skip_r = table_kernels(comp_r.table)
        sr = comp_r.table.decision_function(XR, check=False)
        diff_r = float(np.abs(sr - (prev_r(XR) + comp_r.table.intercept)).max())
        same_skip_r = bool(np.array_equal(sr, skip_r(XR) + comp_r.table.intercept))
        comp_r.decision_function_bins(codes_r[:10], grid_r)

        load_before = list(os.getloadavg())
        tr_ = timed_turns({"X@w": lambda: XR @ wr, "X@w_1_thread": (lambda: XR @ wr, lambda: threadpool_limits(1)),
                           "compressed": lambda: comp_r.table.decision_function(XR, check=False),
                           "previous": lambda: prev_r(XR), "skip_zeros": lambda: skip_r(XR), "codes": lambda: comp_r.decision_function_bins(codes_r, grid_r)},
                          repeats)
        out["scoring_real"] = {
            "data": f"{REAL_BOW.name}: Fashion-MNIST 5k dense-SIFT BoW (1,000 words, TF-IDF, l2), tiled",
            "rows": int(XR.shape[0]), "dim": int(XR.shape[1]), "zero_fraction": float(np.mean(XR == 0)),
            "model": "NegativeBootstrap T=50, m=1000, 100 positives of class 0, pool = the other classes; q=100",
            "n_support_merged": int(np.count_nonzero(nb_r.dual_coef_)), "repeats": repeats,
            "load_average_1_5_15_min_before": load_before, "load_average_1_5_15_min_after": list(os.getloadavg()),
            "X@w": tr_["X@w"], "X@w_1_thread": tr_["X@w_1_thread"], "compressed_q100": tr_["compressed"],
            "compressed_q100_previous_kernel": tr_["previous"], "compressed_q100_uint8_codes": tr_["codes"],
            "compressed_over_X@w": ratios(tr_["compressed"], tr_["X@w"]),
            "compressed_over_X@w_1_thread": ratios(tr_["compressed"], tr_["X@w_1_thread"]),
            "previous_kernel_over_X@w_1_thread": ratios(tr_["previous"], tr_["X@w_1_thread"]),
            "uint8_codes_over_X@w_1_thread": ratios(tr_["codes"], tr_["X@w_1_thread"]),
            "previous_kernel_max_abs_diff": diff_r, "lo_zero_in_every_dim": bool(np.all(comp_r.table.lo == 0)),
            "skip_zeros_prototype": tr_["skip_zeros"], "skip_zeros_prototype_scores_identical": same_skip_r,
            "skip_zeros_prototype_over_compressed": ratios(tr_["skip_zeros"], tr_["compressed"]),
            "skip_zeros_prototype_over_X@w_1_thread": ratios(tr_["skip_zeros"], tr_["X@w_1_thread"]),
        }
    else:
        nb_r = None
        out["scoring_real"] = {"skipped": f"{REAL_BOW} not found (run benchmarks/similarity_solis_concept.py --data fashion first)"}

    # ---------------------------------------------------------------- 7. compression
    out["compression"] = {"synthetic": compression_study(nb50, repeats)}
    if nb_r is not None:
        out["compression"]["real"] = compression_study(nb_r, repeats)

    path = write_results("concept_speed_quick" if args.quick else "concept_speed", out)
    s, tr, sc, acc = out["scoring"], out["training"], out["store_scan"], out["binned_accuracy"]

    def ms(t):
        return f"{t['wall_min'] * 1e3:.1f} / {t['cpu_min'] * 1e3:.1f}"

    def x(r):
        return f"{r['wall_min']:.1f}x / {r['cpu_min']:.1f}x"

    print(f"results: {path}")
    print("| measurement | wall min / CPU min | ratio (wall / CPU) |")
    print("|---|---|---|")
    if "compressed_T50_s" in tr:
        print(f"| train NB, T=50, |B+|=100, m=1000, d=1024 (compressed scoring) | {tr['compressed_T50_s']:.2f} s | |")
    print(f"| score {n_score:,} x {d}: X@w (BLAS threads) | {ms(s['X@w'])} ms | 1.0x |")
    print(f"| X@w, 1 thread | {ms(s['X@w_1_thread'])} ms | |")
    print(f"| compressed q=100 (T=50), float32 rows | {ms(s['compressed_q100'])} ms | {x(s['compressed_over_X@w'])} X@w ({x(s['compressed_over_X@w_1_thread'])} 1-thread) |")
    print(f"| compressed q=100, previous kernel (two reads, scalar quantization) | {ms(s['compressed_q100_previous_kernel'])} ms | "
          f"{x(s['previous_kernel_over_X@w_1_thread'])} X@w 1-thread |")
    par = next(k for k in s if k.startswith("compressed_q100_prange_"))
    print(f"| compressed q=100, prange over row blocks ({par.rsplit('_', 2)[1]} threads) | {ms(s[par])} ms | {x(s['prange_over_X@w'])} X@w |")
    print(f"| compressed q=100, uint8 codes (look-up only) | {ms(s['compressed_q100_uint8_codes'])} ms | {x(s['uint8_codes_over_X@w'])} X@w ({x(s['uint8_codes_over_X@w_1_thread'])} 1-thread) |")
    print(f"| exact tables, binary search | | {s['exact_tables_over_X@w']:.0f}x X@w |")
    print(f"| exact merged kernel expansion ({s['n_support_merged']} SVs) | | {s['merged_kernel_over_X@w']:.0f}x X@w |")
    print("| compressed scoring CPU vs T (1/10/25/50) | " + " / ".join(f"{v * 1e3:.0f}" for v in out["scoring_vs_T_cpu_s"].values()) + " ms | |")
    print(f"| store scan {sc['rows']:,} x {d}: read float32 + X@w, top-100 | {ms(sc['read_plus_X@w'])} ms | 1.0x |")
    print(f"| read float32 + compressed | {ms(sc['read_plus_compressed_float'])} ms | {x(sc['float_compressed_scan_over_float_X@w_scan'])} |")
    print(f"| read uint8 codes + compressed look-up | {ms(sc['read_codes_plus_compressed_uint8'])} ms | {x(sc['binned_scan_over_float_X@w_scan'])} |")
    print(f"| concept.search top-100 (float store) | {ms(sc['search_top100'])} ms | |")
    print(f"| AP exact / table q=100 / uint8 codes q=100 | {acc['AP_exact']:.4f} / {acc['AP_table_q100']:.4f} / {acc['AP_uint8_codes']:.4f} | |")
    real = out["scoring_real"]
    if "skipped" not in real:
        print(f"| real BoW {real['rows']:,} x {real['dim']} ({real['zero_fraction']:.0%} zeros): X@w 1 thread | {ms(real['X@w_1_thread'])} ms | 1.0x |")
        print(f"| real BoW: compressed q=100 | {ms(real['compressed_q100'])} ms | {x(real['compressed_over_X@w_1_thread'])} |")
        print(f"| real BoW: zero-skipping prototype | {ms(real['skip_zeros_prototype'])} ms | {x(real['skip_zeros_prototype_over_X@w_1_thread'])} |")
        print(f"| real BoW: previous kernel | {ms(real['compressed_q100_previous_kernel'])} ms | {x(real['previous_kernel_over_X@w_1_thread'])} |")
    for key, c in out["compression"].items():
        print(f"| compress q=100, {key} ({c['n_support']:,} SVs x {c['dim']}): direct / sorted exact table + bins | "
              f"{ms(c['direct_q_bin_table'])} / {ms(c['sorted_exact_table_then_bins'])} ms | "
              f"sorted {x(c['sorted_over_direct'])} direct |")
    print(f"| max abs(codes - exact) vs bound | {acc['max_abs_codes_minus_exact']:.4f} <= {acc['bound_table_plus_binning']:.4f} | |")


if __name__ == "__main__":
    main()
