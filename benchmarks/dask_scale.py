"""Store-wide jobs on Dask: throughput in process vs a 2-worker LocalCluster vs dask.array.

The store holds synthetic rows (uniform [0, 1) float32, 2,000,000 x 256 by
default, ~2 GB, default ~16 MiB chunks): throughput does not depend on the
values, and real features of that count are not on these machines. Jobs:

- concept scan: a compressed HIK concept model (Negative Bootstrap, 100 bins
  per dimension) scoring every row, top 100 merged as a tree
  (:func:`hardneg.concept.search`);
- linear scan: the same scan with a linear scorer ``X @ w``, beside Dask's own
  ``da.topk(da.from_zarr(...) @ w, 100)`` on the same cluster and Zarr store;
- hash encoding: PCA-ITQ 64-bit codes into a Hamming index
  (:meth:`hardneg.index.HammingIndex.from_store`), beside ``dask.array``'s
  ``(X - mean) @ R > 0`` packed by ``map_blocks`` on the same cluster;
- no-op: the same partitions with a task that opens the store and returns an
  empty top-k, through the same tree merge: what the cluster costs without
  the work (scheduling, transfer, merge), per partition and as a fraction of
  the concept scan on the cluster (goal: <= 10%).

Every process is single-threaded (OMP / BLAS / Numba threads = 1, set before
the imports and inherited by the workers), so "in process" is one worker's
throughput. Rounds interleave the modes and medians are reported; the store is
read once first so every mode reads from the page cache.

Run: ``python benchmarks/dask_scale.py`` (2M rows) or ``--quick`` (200K rows).
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # one thread per process; not when a test imports this module
    for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[_v] = "1"

import argparse  # noqa: E402
import functools  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import markdown_table, write_results  # noqa: E402
from hardneg._parallel._partition import open_store, store_url  # noqa: E402
from hardneg._topk import TopK, merge_topk  # noqa: E402
from hardneg.concept import search  # noqa: E402
from hardneg.distributed import DaskRunner, Runner, partitions  # noqa: E402
from hardneg.index import HammingIndex  # noqa: E402
from hardneg.store import FeatureStore  # noqa: E402

K = 100


class LinearScorer:
    """``X @ w``: the scorer dask.array can run too (shipped by value to the workers)."""

    def __init__(self, w):
        self.w = np.asarray(w, np.float32)
        self.n_features_in_ = self.w.size

    def decision_function(self, X):
        return X @ self.w


def noop_partition(part, *, store: str, k: int) -> TopK:
    open_store(store)
    return TopK.empty(1, k)


def build(path: Path, n: int, dim: int, batch: int = 65536) -> FeatureStore:
    if path.exists():
        try:
            st = FeatureStore.open(path)
            if st.shape == (n, dim):
                return st
        except Exception:
            pass
    rng = np.random.default_rng(0)
    with FeatureStore.create(path, dim=dim, overwrite=True) as st:
        for lo in range(0, n, batch):
            st.append(rng.random((min(batch, n - lo), dim), dtype=np.float32), ids=np.arange(lo, min(lo + batch, n)).astype(str))
    return FeatureStore.open(path)


def models(st: FeatureStore, folder: Path):
    from hardneg.concept import NegativeBootstrap
    from hardneg.hashing import PCAITQHasher

    rng = np.random.default_rng(1)
    sample = st.take(np.sort(rng.choice(len(st), 20000, replace=False)))
    pos = sample[:100] * 0.5
    pos[:, :8] += 0.5  # a "concept": high on a few dimensions
    concept = NegativeBootstrap(n_iter=2, random_state=0).fit(pos, sample[100:5100]).compress(n_bins=100)
    concept.save(folder / "concept.npz")
    hasher = PCAITQHasher(n_bits=64, random_state=0).fit(sample)
    hasher.save(folder / "itq.npz")
    return concept, hasher


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def dask_linear(st, w, client):
    import dask.array as da

    X = st.to_dask()
    scores = X @ w
    top = da.topk(scores, K)
    return client.compute(top).result()


def dask_hash(st, hasher, client):
    import dask.array as da
    import faiss

    # PCA-ITQ as one affine map: (x - mean) @ A.T, where A is FAISS's PCA-then-rotation matrix; sign bits packed per row.
    itq = faiss.downcast_VectorTransform(hasher.index_.chain.at(0))
    lt = itq.pca_then_itq
    A = faiss.vector_to_array(lt.A).reshape(lt.d_out, lt.d_in)
    mean = faiss.vector_to_array(itq.mean)
    M = np.ascontiguousarray(A.T, dtype=np.float32)
    c = (-mean @ A.T).astype(np.float32)
    X = st.to_dask()
    codes = da.map_blocks(lambda x: np.packbits((x @ M + c) > 0, axis=1), X, dtype=np.uint8, chunks=(X.chunks[0], (M.shape[1] + 7) // 8))
    return client.compute(codes).result()


def task_compute_seconds(records, prefix: str) -> float:
    total = 0.0
    for r in records:
        if str(r.get("key", "")).startswith(prefix) or prefix in str(r.get("key", "")):
            for ss in r.get("startstops", []):
                if ss.get("action") == "compute":
                    total += ss["stop"] - ss["start"]
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--folder", default="/tmp/hardneg_dask_scale")
    ap.add_argument("--quick", action="store_true", help="200,000 rows, 2 rounds")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.rounds = 200_000, 2
    import distributed

    print(f"load average before: {os.getloadavg()}", flush=True)
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    t_build, st = timed(lambda: build(folder / f"synthetic_{args.rows}x{args.dim}.store", args.rows, args.dim))
    print(f"store: {st} (built or checked in {t_build:.1f} s)", flush=True)
    concept, hasher = models(st, folder)
    w = np.random.default_rng(2).normal(size=args.dim).astype(np.float32)
    parts = partitions(st)
    print(f"{len(parts)} partitions of {parts[0].size:,} rows ({st.chunk_rows:,}-row chunks)", flush=True)
    for _ in st.iter_chunks():  # page cache
        pass

    cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    client = distributed.Client(cluster)
    cluster_runner, local = DaskRunner(client), Runner()
    url = store_url(st.path)
    noop = functools.partial(noop_partition, store=url, k=K)
    lin = LinearScorer(w)

    jobs = {
        ("concept scan", "in process"): lambda: search(concept, st, K, runner=local).rows,
        ("concept scan", "cluster"): lambda: search(folder / "concept.npz", st, K, runner=cluster_runner).rows,
        ("linear scan", "in process"): lambda: search(lin, st, K, runner=local).rows,
        ("linear scan", "cluster"): lambda: search(lin, st, K, runner=cluster_runner).rows,
        ("linear scan", "dask.array"): lambda: np.asarray(dask_linear(st, w, client)),
        ("hash encoding", "in process"): lambda: HammingIndex.from_store(st, hasher, runner=local).codes(),
        ("hash encoding", "cluster"): lambda: HammingIndex.from_store(st, folder / "itq.npz", runner=cluster_runner).codes(),
        ("hash encoding", "dask.array"): lambda: dask_hash(st, hasher, client),
        ("no-op", "cluster"): lambda: cluster_runner.map_reduce(noop, parts, merge_topk),
        ("no-op", "in process"): lambda: local.map_reduce(noop, parts, merge_topk),
    }
    # warm-up: imports, Numba compilation and model loading on the workers
    for key, fn in jobs.items():
        fn()
    times: dict = {key: [] for key in jobs}
    compute: dict = {key: [] for key in jobs}
    outputs: dict = {}
    for r in range(args.rounds):
        for key, fn in jobs.items():
            if key[1] == "in process":
                dt, out = timed(fn)
            else:
                with distributed.get_task_stream(client) as ts:
                    dt, out = timed(fn)
                prefix = {"concept scan": "score_partition", "linear scan": "score_partition", "hash encoding": "encode_partition",
                          "no-op": "noop_partition"}[key[0]]
                if key[1] == "cluster":
                    compute[key].append(task_compute_seconds(ts.data, prefix))
            times[key].append(dt)
            outputs[key] = out
            print(f"round {r}: {key[0]:14s} {key[1]:11s} {dt:7.2f} s", flush=True)

    n = len(st)
    med = {key: statistics.median(v) for key, v in times.items()}
    rows = []
    for job in ("concept scan", "linear scan", "hash encoding"):
        base = med[(job, "in process")]
        for mode in ("in process", "cluster", "dask.array"):
            if (job, mode) not in med:
                continue
            row = {"job": job, "mode": mode, "seconds": med[(job, mode)], "rows_per_s": n / med[(job, mode)],
                   "throughput_vs_in_process": base / med[(job, mode)]}
            if mode == "cluster":
                busy = statistics.median(compute[(job, mode)])
                row["worker_busy_fraction"] = busy / (med[(job, mode)] * args.workers)
                # rows per second of task compute on a worker: a worker's own speed, apart from waiting for a core
                row["rows_per_busy_worker_s"] = n / busy
                row["busy_worker_speed_vs_in_process"] = (n / busy) / (n / base)
            rows.append(row)
    same = {
        "concept scan cluster == in process": bool(np.array_equal(outputs[("concept scan", "cluster")], outputs[("concept scan", "in process")])),
        "linear scan cluster == in process": bool(np.array_equal(outputs[("linear scan", "cluster")], outputs[("linear scan", "in process")])),
        "linear scan dask.array same top-k scores": bool(np.allclose(
            np.sort(outputs[("linear scan", "dask.array")]),
            np.sort(lin.decision_function(st.take(np.sort(outputs[("linear scan", "in process")])))), rtol=1e-5)),
        "hash codes cluster == in process": bool(np.array_equal(outputs[("hash encoding", "cluster")], outputs[("hash encoding", "in process")])),
        # float32 matmul in another summation order: a value at the sign's edge may flip one bit
        "hash bits dask.array agreeing with in process": float(np.mean(
            np.unpackbits(outputs[("hash encoding", "dask.array")]) == np.unpackbits(outputs[("hash encoding", "in process")]))),
    }
    noop_s = med[("no-op", "cluster")]
    overhead = {
        "partitions": len(parts),
        "partition_rows": parts[0].size,
        "noop_job_seconds": noop_s,
        "noop_job_seconds_in_process": med[("no-op", "in process")],
        "scheduling_overhead_per_partition_ms": 1000 * noop_s / len(parts),
        "overhead_fraction_of_concept_scan": noop_s / med[("concept scan", "cluster")],
        "overhead_fraction_of_hash_encoding": noop_s / med[("hash encoding", "cluster")],
        "goal_overhead_fraction": 0.10,
    }
    overhead["goal_met"] = overhead["overhead_fraction_of_concept_scan"] <= 0.10
    per_worker = {job: n / med[(job, "in process")] for job in ("concept scan", "linear scan", "hash encoding")}
    payload = {
        "rows": n, "dim": st.dim, "chunk_rows": st.chunk_rows, "workers": args.workers, "rounds": args.rounds, "k": K,
        "data": "synthetic uniform [0,1) float32 rows (throughput only)",
        "threads_per_process": 1,
        "results": rows, "overhead": overhead, "same_results": same,
        "per_worker_rows_per_s": per_worker,
        "raw_seconds": {f"{a} / {b}": v for (a, b), v in times.items()},
        "load_average_after": os.getloadavg(),
    }
    client.close()
    cluster.close()
    path = write_results("dask_scale" + ("_quick" if args.quick else ""), payload)
    print(markdown_table([{"worker_busy_fraction": "", "busy_worker_speed_vs_in_process": "", **r} for r in rows],
                         ["job", "mode", "seconds", "rows_per_s", "throughput_vs_in_process", "worker_busy_fraction", "busy_worker_speed_vs_in_process"]))
    print()
    print(markdown_table([overhead], ["partitions", "partition_rows", "noop_job_seconds", "scheduling_overhead_per_partition_ms",
                                      "overhead_fraction_of_concept_scan", "goal_met"]))
    print(same)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
