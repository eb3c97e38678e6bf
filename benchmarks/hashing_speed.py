"""Speed of TSVM hashing's parts against the plain baselines, measured in one process.

  1. One RTSVM node (labeled + unlabeled): the dual coordinate descent solver TSVMHashing uses
     (RampTSVM(solver="dcd")), the SGD solver (Algorithm 2's stopping rule with its cap) and the
     former fixed SGD budget of 3 epochs x 5 CCCP rounds, vs scikit-learn's LinearSVC on the same
     labeled data (10,000 x 1,024 dense by default); wall and CPU time (the machine is shared).
  2. Encoding 1,000 images: TSVMHashing.transform vs the plain matrix product X @ W.T.
  3. Hamming search, k = 10 and 500 over 1,000,000 64- and 256-bit codes: HammingIndex.search
     (ids included) vs FAISS IndexBinaryFlat used directly with its defaults.
Timings are medians of repeats; ratios are against the baseline in the same run.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/hashing_speed.py [--quick] [--only node|encoding|search ...]
(a partial run keeps the other parts of the previous results file)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import faiss
import numpy as np

from sklearn.svm import LinearSVC

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import write_results  # noqa: E402
from hardneg.hashing import TSVMHashing  # noqa: E402
from hardneg.index import HammingIndex  # noqa: E402
from hardneg.svm import RampTSVM  # noqa: E402
from hardneg.svm._ramp_tsvm import tsvm_objective  # noqa: E402


def best_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def interleaved(fns, repeats):
    """Median wall and CPU seconds of each function, the functions taking turns in every repeat."""
    wall = {k: [] for k in fns}
    cpu = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t, c = time.perf_counter(), time.process_time()
            fn()
            wall[k].append(time.perf_counter() - t)
            cpu[k].append(time.process_time() - c)
    return ({k: float(np.median(v)) for k, v in wall.items()}, {k: float(np.median(v)) for k, v in cpu.items()})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", nargs="+", choices=("node", "encoding", "search"), default=["node", "encoding", "search"])
    args = ap.parse_args()
    name = "hashing_speed_quick.json" if args.quick else "hashing_speed.json"
    previous = os.path.join(os.path.dirname(__file__), "results", name)
    rng = np.random.default_rng(0)
    n, d = (2000, 256) if args.quick else (10000, 1024)
    n_codes = 100_000 if args.quick else 1_000_000
    out = {"machine": {"processor": platform.processor(), "cpu_count": os.cpu_count(), "numpy": np.__version__,
                       "faiss": faiss.__version__, "date": datetime.datetime.now().isoformat(timespec="seconds")}}

    # 1. one node: overlapping Gaussian classes along a random direction, unit-scale rows
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    def sample(m):
        y = np.where(rng.random(m) < 0.5, 1, -1)
        X = rng.normal(size=(m, d)) / np.sqrt(d) + 0.15 * y[:, None] * direction
        return X.astype(np.float32), y
    XL, yL = sample(n)
    XU, yU = sample(n)
    if set(args.only) != {"node", "encoding", "search"} and os.path.exists(previous):
        with open(previous) as fh:
            out = {**{k: v for k, v in json.load(fh).items() if k != "machine"}, "machine": out["machine"]}
    if "node" in args.only:
        for solver in ("sgd", "dcd"):  # JIT compile outside the timing
            RampTSVM(n_epochs=1, max_iter=1, solver=solver).fit(XL[:50], yL[:50], X_unlabeled=XU[:50])
        holder = {}
        fns = {
            "linearsvc": lambda: holder.__setitem__("svc", LinearSVC(dual=True, loss="hinge", C=1.0, random_state=0).fit(XL, yL)),
            "dcd": lambda: holder.__setitem__("d", RampTSVM(C=1.0, balance=False, random_state=0, solver="dcd").fit(
                XL, yL, X_unlabeled=XU)),
            "sgd": lambda: holder.__setitem__("m", RampTSVM(C=1.0, balance=False, random_state=0).fit(XL, yL, X_unlabeled=XU)),
            "sgd_fixed_3x5": lambda: holder.__setitem__("f", RampTSVM(
                C=1.0, n_epochs=3, max_iter=5, sgd_tol=0.0, balance=False, random_state=0).fit(XL, yL, X_unlabeled=XU)),
        }
        wall, cpu = interleaved(fns, 5 if args.quick else 3)
        t_svc = wall["linearsvc"]
        svc = holder["svc"]
        yf = yL.astype(float)
        objective = {k: tsvm_objective(XL.astype(float), yf, XU.astype(float), holder[h].coef_, holder[h].intercept_,
                                       1.0, holder[h].C_star_, holder[h].s) for k, h in (("dcd", "d"), ("sgd", "m"),
                                                                                         ("sgd_fixed_3x5", "f"))}
        out["node"] = {"shape": [n, d], "n_unlabeled": n, "repeats": 5 if args.quick else 3,
                       "solver": "dcd (RampTSVM(solver='dcd'), what TSVMHashing uses)",
                       "linearsvc_s": t_svc, "rtsvm_s": wall["dcd"], "ratio": wall["dcd"] / t_svc,
                       "ratio_cpu": cpu["dcd"] / cpu["linearsvc"], "cpu_s": cpu,
                       "rtsvm_sgd_s": wall["sgd"], "ratio_sgd": wall["sgd"] / t_svc,
                       "ratio_sgd_cpu": cpu["sgd"] / cpu["linearsvc"],
                       "rtsvm_fixed_3x5_s": wall["sgd_fixed_3x5"], "ratio_fixed_3x5": wall["sgd_fixed_3x5"] / t_svc,
                       "objective_eq4": objective,
                       "acc_unlabeled_rtsvm": float((holder["d"].predict(XU) == yU).mean()),
                       "acc_unlabeled_rtsvm_sgd": float((holder["m"].predict(XU) == yU).mean()),
                       "acc_unlabeled_rtsvm_fixed_3x5": float((holder["f"].predict(XU) == yU).mean()),
                       "acc_unlabeled_linearsvc": float((svc.predict(XU) == yU).mean()),
                       "rtsvm_cccp_iterations": int(holder["d"].n_iter_), "rtsvm_epochs": int(holder["d"].n_epochs_),
                       "rtsvm_sgd_cccp_iterations": int(holder["m"].n_iter_),
                       "rtsvm_sgd_epochs": int(holder["m"].n_epochs_), "loadavg": os.getloadavg()}
        print("node", out["node"], flush=True)

    if "encoding" in args.only:
        # 2. encoding: 1,000 MNIST-sized rows through a 256-bit model
        h = TSVMHashing(n_bits=256, random_state=0)
        h.coef_ = rng.normal(size=(256, 784)).astype(np.float32)
        h.intercept_ = rng.normal(size=256).astype(np.float32)
        h.n_features_in_, h.n_bits_ = 784, 256
        X = rng.random((1000, 784), dtype=np.float32)
        W = h.coef_
        t_mat = best_time(lambda: X @ W.T, 30)
        t_enc = best_time(lambda: h.transform(X), 30)
        out["encoding"] = {"rows": 1000, "bits": 256, "matmul_s": t_mat, "transform_s": t_enc, "ratio": t_enc / t_mat}
        print("encoding", out["encoding"], flush=True)

    if "search" in args.only:
        # 3. Hamming search: rounds alternate the two, each ratio is taken within a round
        out["search"] = []
        n_q = 200 if args.quick else 1000
        for n_bits in (64, 256):
            codes = rng.integers(0, 256, (n_codes, n_bits // 8), dtype=np.uint8)
            queries = rng.integers(0, 256, (n_q, n_bits // 8), dtype=np.uint8)
            raw = faiss.IndexBinaryFlat(n_bits)
            raw.add(codes)
            ours = HammingIndex(n_bits)
            ours.add(codes, ids=np.arange(n_codes).astype(str))
            for k in (10, 500):
                ours.search(queries[:2], k)
                raw.search(queries[:2], k)
                t_raw, t_ours = [], []
                for _ in range(5):
                    t_raw.append(best_time(lambda: raw.search(queries, k), 1))
                    t_ours.append(best_time(lambda: ours.search(queries, k), 1))
                ratios = np.array(t_raw) / np.array(t_ours)
                row = {"codes": n_codes, "bits": n_bits, "queries": n_q, "k": k, "faiss_qps": n_q / float(np.median(t_raw)),
                       "hammingindex_qps": n_q / float(np.median(t_ours)), "ratio_qps": float(np.median(ratios))}
                out["search"].append(row)
                print("search", row, flush=True)

    write_results(name.removesuffix(".json"), out)
    print("\n| measure | ours | baseline | ratio |\n|---|---|---|---|")
    if "node" in out:
        nd = out["node"]
        print(f"| RTSVM node (dual CD) vs LinearSVC ({n}x{d} + {n} unlabeled) | {nd['rtsvm_s']:.2f} s "
              f"| {nd['linearsvc_s']:.2f} s | {nd['ratio']:.2f}x time ({nd.get('ratio_cpu', float('nan')):.2f}x CPU) |")
        if "rtsvm_sgd_s" in nd:
            print(f"| the same, SGD (Algorithm 2 to its stopping rule) | {nd['rtsvm_sgd_s']:.2f} s | {nd['linearsvc_s']:.2f} s "
                  f"| {nd['ratio_sgd']:.2f}x time ({nd['ratio_sgd_cpu']:.2f}x CPU) |")
        if "rtsvm_fixed_3x5_s" in nd:
            print(f"| the same, SGD with the former fixed 3 epochs x 5 CCCP | {nd['rtsvm_fixed_3x5_s']:.2f} s | {nd['linearsvc_s']:.2f} s "
                  f"| {nd['ratio_fixed_3x5']:.2f}x time |")
    if "encoding" in out:
        e = out["encoding"]
        print(f"| encode 1,000 rows, 256 bits vs X @ W.T | {1e3 * e['transform_s']:.2f} ms | {1e3 * e['matmul_s']:.2f} ms "
              f"| {e['ratio']:.2f}x time |")
    for r in out.get("search", []):
        print(f"| Hamming top-{r['k']} over {n_codes:,} {r['bits']}-bit codes vs FAISS IndexBinaryFlat "
              f"| {r['hammingindex_qps']:.0f} q/s | {r['faiss_qps']:.0f} q/s | {r['ratio_qps']:.2f}x qps |")


if __name__ == "__main__":
    main()
