"""Query by example over 100 million 64-bit codes on one machine (issue 41, goal 1).

Codes (generated once with seed 0 into --data-dir, /tmp by default, not the repo):

1. *Real codes*, as benchmarks/hamming_ann.py makes them: a 64-bit TSVMHashing model (C = 10) trained
   on Fashion-MNIST pixels (300 labelled + 300 unlabelled images per class); the 60,000 training
   images plus 940,000 perturbed copies (a random training image plus Gaussian pixel noise, sigma
   0.1, clipped to [0, 1]), all encoded by that one model: 1,000,000 real-model codes.
2. *Measured perturbation*: for each perturbed copy, the bits where its code differs from its source
   image's code; the flip rate of each of the 64 bits (p_b) is recorded.
3. *Expansion to 100M*: copy 0 is the 1M real codes; copies 1..99 are the same 1M codes with each
   bit b flipped independently with probability p_b (the measured rate of the real perturbation).
   Encoding 99M more perturbed images would take hours on two cores; flipping bits at the measured
   per-bit rate keeps the real codes' cluster structure and the perturbation's size, though real
   noise flips correlated bits (those near the same hyperplanes), which independent flips do not.
   The check that this tells the same story: the IVF recall-vs-nprobe curve of the 1M real codes
   and of an expanded 1M set (10,000 real codes x 100 expanded copies, the 100M set's structure at
   1M), in the same run.

Queries: --queries Fashion-MNIST test images (never in the database), encoded by the model.

Measured in one run (one FAISS / Numba thread for searches: a service answers one query at a
time per worker; builds use both cores):
  * exhaustive baseline: FAISS IndexBinaryFlat over all codes (also the ground truth: recall@10
    tie-aware as in hamming_ann.py: the share of the 10 returned codes whose true distance is at
    most the exact 10th distance);
  * IndexBinaryIVF built by hardneg.index.build_ivf_index (streaming from the codes file,
    checkpointed; run in a child process to measure its peak RSS; the first build is killed
    (SIGKILL) after some chunks and rerun, which resumes), for each nlist, an nprobe grid:
    recall@10 and single-query p50/p95 latency; the cheapest setting with recall@10 >= 0.95;
  * IndexBinaryHNSW and IndexBinaryMultiHash on the first --subset rows (a 100M build of either does
    not fit the time or the memory here; extrapolation labelled as such);
  * the service's path: hardneg.serve's HammingMode.search in process (hasher transform of the
    image's features + index rank + row mapping), single queries, against the 100M IVF index.

Timings are from a shared 2-core machine: ratios against the exhaustive baseline measured in the
same run are the figures to compare.

Goal 3 (--sharded, after the main run): the IVF index picked above, cut into --workers shards that keep
its quantizer (hardneg.index.shard_index), searched on a Dask LocalCluster of worker processes with shard i
pinned to worker i (hardneg.index.ShardedSearch), one merged top-k; equality with the single-machine index
and single-query latency against it, in the same run -> hamming_100m_dask.json.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/hamming_100m.py [--n 10000000] [--sharded]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import markdown_table, write_results  # noqa: E402

K = 10
BASE = 1_000_000
GIB = 1 << 30


def rss_gib() -> float:
    """Current resident memory of this process (GiB)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / GIB
    return float("nan")


def peak_gib(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss * 1024 / GIB


# data ----------------------------------------------------------------------
def make_data(data_dir: Path, n: int, n_queries: int, noise: float) -> dict:
    """The real 1M codes, the measured flip rates, the expansion to n codes (memory-mapped file)."""
    from benchmarks.hamming_ann import fashion_hasher

    data_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    X, tr, te, hasher, fit_s = fashion_hasher(rng)  # the same real model as hamming_ann.py
    hasher.save(data_dir / "hasher.npz")
    train_codes = hasher.transform(X[tr])
    blocks, flips = [train_codes], np.zeros(64, np.int64)
    n_pert = 0
    t = time.perf_counter()
    while sum(b.shape[0] for b in blocks) < BASE:
        m = min(100_000, BASE - sum(b.shape[0] for b in blocks))
        src = rng.integers(0, tr.size, m)
        noisy = np.clip(X[tr[src]] + rng.normal(0, noise, (m, X.shape[1])).astype(np.float32), 0, 1)
        codes = hasher.transform(noisy)
        flips += np.unpackbits(codes ^ train_codes[src], axis=1).sum(axis=0, dtype=np.int64)
        n_pert += m
        blocks.append(codes)
    real = np.concatenate(blocks)
    encode_s = time.perf_counter() - t
    p_bit = flips / n_pert
    np.save(data_dir / "real.npy", real)
    qi = rng.permutation(te)[:n_queries]
    np.save(data_dir / "query_features.npy", X[qi])
    np.save(data_dir / "query_codes.npy", hasher.transform(X[qi]))
    t = time.perf_counter()
    out = np.lib.format.open_memmap(data_dir / "codes.tmp.npy", mode="w+", dtype=np.uint8, shape=(n, 8))
    copies = -(-n // BASE)
    for c in range(copies):
        lo, hi = c * BASE, min(n, (c + 1) * BASE)
        block = real[: hi - lo].copy()
        if c:
            crng = np.random.default_rng([0, c])
            block ^= np.packbits(crng.random((hi - lo, 64), dtype=np.float32) < p_bit.astype(np.float32), axis=1)
        out[lo:hi] = block
    out.flush()
    del out
    os.replace(data_dir / "codes.tmp.npy", data_dir / "codes.npy")
    expand_s = time.perf_counter() - t
    info = {"n": n, "n_queries": int(qi.size), "noise": noise, "hasher_fit_s": fit_s, "real_encode_s": encode_s,
            "expand_s": expand_s, "total_s": time.perf_counter() - t0, "p_bit_flip": p_bit.tolist(),
            "mean_bits_flipped_per_perturbed_code": float(p_bit.sum()), "n_perturbed_measured": n_pert,
            "real_distinct_codes": int(np.unique(real.view(np.uint64)).size)}
    (data_dir / "data.json").write_text(json.dumps(info, indent=1))
    print({k: v for k, v in info.items() if k != "p_bit_flip"}, flush=True)
    return info


def main_data(args) -> None:
    data_dir = Path(args.data_dir)
    info_path = data_dir / "data.json"
    if info_path.is_file() and json.loads(info_path.read_text()).get("n", 0) >= args.n and (data_dir / "codes.npy").is_file():
        print("data already there:", info_path)
        return
    make_data(data_dir, args.n, args.queries, args.noise)


def latencies(fn, queries, warmup=5) -> np.ndarray:
    """Seconds of each single-query call (after a few warm-up calls)."""
    for i in range(min(warmup, len(queries))):
        fn(queries[i : i + 1])
    out = np.empty(len(queries))
    for i in range(len(queries)):
        t = time.perf_counter()
        fn(queries[i : i + 1])
        out[i] = time.perf_counter() - t
    return out


def lat_stats(sec: np.ndarray) -> dict:
    return {"p50_ms": float(np.percentile(sec, 50) * 1e3), "p95_ms": float(np.percentile(sec, 95) * 1e3),
            "mean_ms": float(sec.mean() * 1e3), "n_queries_timed": int(sec.size)}


def index_bytes(index) -> int | None:
    """Serialized size of a FAISS binary index (about its memory; in-process RSS deltas after earlier frees are not)."""
    try:
        return int(faiss.serialize_index_binary(index).size)
    except RuntimeError:
        return None


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def recall_at_k(dist_approx, dist_exact):
    """Tie-aware recall@k (as hamming_ann.py): share of returned codes within the exact k-th distance."""
    kth = dist_exact[:, -1:]
    return float((dist_approx <= kth).sum(axis=1).mean() / dist_exact.shape[1])


# the IVF build, in a child process (its own peak RSS) ----------------------
def child_build(args) -> None:
    from hardneg.index import ArrayCodes, IVFBuilder

    faiss.omp_set_num_threads(2)
    codes = np.load(Path(args.data_dir) / "codes.npy", mmap_mode="r")[: args.n]
    builder = IVFBuilder(ArrayCodes(codes, chunk_rows=args.chunk_rows), args.child_out, nlist=args.child_nlist,
                         work_dir=args.child_out + ".build", meta={"codes": "hamming_100m benchmark"})
    out = {}
    for step in ("train", "assign", "finish"):
        t = time.perf_counter()
        getattr(builder, step)()
        out[f"{step}_s"] = time.perf_counter() - t
        print(json.dumps({"step": step, "s": out[f"{step}_s"], "chunks_redone": builder.chunks_redone}), flush=True)
    out.update(chunks_redone=builder.chunks_redone, n_chunks=len(builder.bounds), peak_rss_gib=peak_gib())
    print(json.dumps({"done": out}), flush=True)


def run_build(args, nlist: int, out: Path, kill_after: int | None) -> dict:
    """Build the IVF index in a child process; with ``kill_after``, SIGKILL the first child once that
    many chunk checkpoints exist, then rerun it (which resumes)."""
    import shutil

    shutil.rmtree(str(out) + ".build", ignore_errors=True)
    for p in (out, Path(str(out) + ".ids.npz")):
        p.unlink(missing_ok=True)
    cmd = [sys.executable, __file__, "--build-child", "--n", str(args.n), "--data-dir", args.data_dir,
           "--child-nlist", str(nlist), "--child-out", str(out), "--chunk-rows", str(args.chunk_rows)]
    runs = []
    t_all = time.perf_counter()
    if kill_after is not None:
        t = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        work = Path(str(out) + ".build")
        while child.poll() is None and len(list(work.glob("chunk-*.npz"))) < kill_after:
            time.sleep(0.2)
        os.kill(child.pid, signal.SIGKILL)
        lines = child.communicate()[0].splitlines()
        runs.append({"killed": True, "s": time.perf_counter() - t, "chunk_files_at_kill": len(list(work.glob("chunk-*.npz"))),
                     "steps": [json.loads(x) for x in lines if x.startswith("{")]})
        print("killed:", runs[-1], flush=True)
    t = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
    steps = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    final = steps[-1]["done"]
    runs.append({"killed": False, "s": time.perf_counter() - t, **final})
    print("built:", runs[-1], flush=True)
    return {"nlist": nlist, "runs": runs, "wall_s_all_runs": time.perf_counter() - t_all,
            "peak_rss_gib_child": max(r.get("peak_rss_gib", 0) for r in runs),
            "index_file_gib": out.stat().st_size / GIB, "resumed": kill_after is not None,
            "chunks_redone_after_kill": final["chunks_redone"], "n_chunks": final["n_chunks"]}


# the measurements ----------------------------------------------------------
def ivf_grid(index, q, d_exact, nprobes, t_flat_p95, lat_q) -> list[dict]:
    rows = []
    sizes = np.array([index._index.invlists.list_size(i) for i in range(index.nlist)])
    for p in nprobes:
        if p > max(1, index.nlist // 8):  # beyond an eighth of the lists the scan nears the exhaustive one
            continue
        _, d = index.rank(q, K, nprobe=p)
        lat = lat_stats(latencies(lambda x, p=p: index.rank(x, K, nprobe=p), lat_q))
        row = {"nlist": index.nlist, "nprobe": p, "recall_at_10": recall_at_k(d, d_exact), **lat,
               "p95_speedup_vs_exhaustive": t_flat_p95 / lat["p95_ms"],
               "largest_list_share": float(sizes.max() / sizes.sum()), "load_avg_1_5_15": load_avg()}
        rows.append(row)
        print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    return rows


def story_1m(real: np.ndarray, codes, q, rng, nprobes) -> dict:
    """IVF recall@10 vs nprobe on the 1M real codes and on 1M expanded ones (10,000 real codes x 100 copies)."""
    from hardneg.index import HammingIndex

    picks = np.sort(rng.choice(BASE, 10_000, replace=False))
    rows_exp = (np.arange(100)[:, None] * BASE + picks[None, :]).ravel()
    sets = {"real_1m": real, "expanded_1m": np.ascontiguousarray(codes[np.sort(rows_exp)])}
    out = {}
    for name, db in sets.items():
        flat = faiss.IndexBinaryFlat(64)
        flat.add(db)
        d_exact = flat.search(q, K)[0]
        ivf = HammingIndex(64, nlist=1024)
        ivf.train(db[np.sort(rng.choice(db.shape[0], 64 * 1024, replace=False))])
        ivf.add(db)
        out[name] = [{"nprobe": p, "recall_at_10": recall_at_k(ivf.rank(q, K, nprobe=p)[1], d_exact)} for p in nprobes]
        print(name, out[name], flush=True)
    return {"nlist": 1024, "curves": out, "expanded_base_codes": int(picks.size), "copies": 100}


def hnsw_and_multihash(codes, q, rng, subset: int, n_total: int) -> dict:
    rows = np.sort(rng.choice(codes.shape[0], subset, replace=False))
    db = np.ascontiguousarray(codes[rows])
    flat = faiss.IndexBinaryFlat(64)
    flat.add(db)
    d_exact = flat.search(q, K)[0]
    faiss.omp_set_num_threads(1)
    flat_lat = lat_stats(latencies(lambda x: flat.search(x, K), q[:50]))
    flat = None  # freed
    out: dict = {"n": subset, "exhaustive_flat": flat_lat}
    faiss.omp_set_num_threads(2)
    rss0 = rss_gib()
    hnsw = faiss.IndexBinaryHNSW(64, 16)
    t = time.perf_counter()
    hnsw.add(db)
    build_s = time.perf_counter() - t
    mem = rss_gib() - rss0
    faiss.omp_set_num_threads(1)
    grid = []
    for ef in (16, 32, 64, 128):
        hnsw.hnsw.efSearch = ef
        d = hnsw.search(q, K)[0]
        lat = lat_stats(latencies(lambda x: hnsw.search(x, K), q))
        grid.append({"efSearch": ef, "recall_at_10": recall_at_k(d, d_exact), **lat, "load_avg_1_5_15": load_avg(),
                     "p95_speedup_vs_exhaustive_subset": flat_lat["p95_ms"] / lat["p95_ms"]})
        print("hnsw", grid[-1], flush=True)
    size = index_bytes(hnsw)
    print("hnsw built", build_s, mem, size, flush=True)
    out["hnsw"] = {"M": 16, "efConstruction": int(hnsw.hnsw.efConstruction), "build_s": build_s, "rss_added_gib": mem,
                   "serialized_bytes": size, "bytes_per_code": None if size is None else size / subset,
                   "grid": grid,
                   "extrapolated_to_full": {"n": n_total, "build_s_linear": build_s * n_total / subset,
                                            "memory_gib_linear": (size or 0) * n_total / subset / GIB,
                                            "note": "EXTRAPOLATED, not measured: build time and memory scaled "
                                                    "linearly from the subset (HNSW insertion grows ~log n, so the "
                                                    "build time is a lower bound)"}}
    hnsw = None  # freed
    gc.collect()
    mh_grid = []
    for nhash, b in ((4, 16),):
        faiss.omp_set_num_threads(2)
        rss0 = rss_gib()
        mh = faiss.IndexBinaryMultiHash(64, nhash, b)
        t = time.perf_counter()
        mh.add(db)
        mbuild = time.perf_counter() - t
        mmem = rss_gib() - rss0
        faiss.omp_set_num_threads(1)
        msize = index_bytes(mh)
        for nflip in (0, 1):
            mh.nflip = nflip
            d = mh.search(q, K)[0]
            lat = lat_stats(latencies(lambda x: mh.search(x, K), q[:50]))
            mh_grid.append({"nhash": nhash, "b": b, "nflip": nflip, "build_s": mbuild, "rss_added_gib": mmem,
                            "serialized_bytes": msize, "load_avg_1_5_15": load_avg(),
                            "recall_at_10": recall_at_k(d, d_exact), **lat,
                            "p95_speedup_vs_exhaustive_subset": flat_lat["p95_ms"] / lat["p95_ms"]})
            print("multihash", mh_grid[-1], flush=True)
        mh = None  # freed
        gc.collect()
    out["multihash"] = {"grid": mh_grid, "note": "IndexBinaryMultiHash answers k-NN from the hash buckets it probes "
                                                "(codes sharing one of nhash b-bit substrings with the query, nflip bits "
                                                "flipped); farther neighbours are missed (distance above n_bits)"}
    return out


def main(args) -> None:
    from hardneg.hashing import load_hasher
    from hardneg.index import HammingIndex
    from hardneg.serve._modes import HammingMode

    data_dir = Path(args.data_dir)
    info = json.loads((data_dir / "data.json").read_text())
    if info["n"] < args.n:
        raise SystemExit(f"{data_dir}: holds {info['n']} codes, --n {args.n}")
    codes = np.load(data_dir / "codes.npy", mmap_mode="r")[: args.n]
    q_all = np.load(data_dir / "query_codes.npy")
    q = q_all[: args.gt_queries]
    feats = np.load(data_dir / "query_features.npy")[: args.gt_queries]
    rng = np.random.default_rng(1)
    result: dict = {"n": args.n, "k": K, "data": {k: v for k, v in info.items() if k != "n"},
                    "queries": int(q.shape[0]), "protocol": __doc__.split("Usage:")[0].strip()}

    # exhaustive baseline: FAISS IndexBinaryFlat over every code (and the ground truth)
    faiss.omp_set_num_threads(2)
    rss0 = rss_gib()
    flat = faiss.IndexBinaryFlat(64)
    t = time.perf_counter()
    for lo in range(0, args.n, 10_000_000):
        flat.add(np.ascontiguousarray(codes[lo : lo + 10_000_000]))
    flat_build = time.perf_counter() - t
    flat_mem = rss_gib() - rss0
    t = time.perf_counter()
    d_exact = flat.search(q, K)[0]
    gt_s = time.perf_counter() - t
    faiss.omp_set_num_threads(1)
    flat_lat = lat_stats(latencies(lambda x: flat.search(x, K), q[: args.flat_queries]))
    result["exhaustive"] = {"index": "IndexBinaryFlat", "build_s": flat_build, "rss_added_gib": flat_mem,
                            "ground_truth_s_2_threads": gt_s, **flat_lat, "load_avg_1_5_15": load_avg()}
    print("exhaustive", result["exhaustive"], flush=True)
    flat = None  # freed
    gc.collect()

    # IVF: streaming build (child process), then an nprobe grid
    lat_q = q
    builds, grid = [], []
    for i, nlist in enumerate(args.nlist):
        path = data_dir / f"ivf{nlist}_{args.n}.index"
        n_chunks = -(-args.n // args.chunk_rows)
        builds.append(run_build(args, nlist, path, max(1, n_chunks // 3) if i == 0 else None))
        t = time.perf_counter()
        rss0 = rss_gib()
        index = HammingIndex.load(path)
        builds[-1].update(load_s=time.perf_counter() - t, rss_loaded_gib=rss_gib() - rss0)
        grid += ivf_grid(index, q, d_exact, args.nprobe, flat_lat["p95_ms"], lat_q)
        del index
        gc.collect()
    result["ivf_builds"] = builds
    result["ivf_grid"] = grid
    good = [r for r in grid if r["recall_at_10"] >= 0.95]
    best = min(good, key=lambda r: r["p95_ms"]) if good else None
    result["ivf_best_at_recall_0.95"] = best
    print("best:", best, flush=True)

    # the service's path: HammingMode.search (hasher transform + rank + row mapping), one query at a time
    if best is not None:
        index = HammingIndex.load(data_dir / f"ivf{best['nlist']}_{args.n}.index")
        hasher = load_hasher(data_dir / "hasher.npz")
        mode = HammingMode(hasher, index, None)
        mode.set_nprobe(best["nprobe"])
        res = mode.search(feats, K)
        same = bool(np.array_equal(res.rows, index.rank(hasher.transform(feats), K, nprobe=best["nprobe"])[0]))
        lat = lat_stats(latencies(lambda x: mode.search(x, K), feats))
        lat["load_avg_1_5_15"] = load_avg()
        result["service"] = {"path": "hardneg.serve HammingMode.search in process (the handler's call: hasher "
                                     "transform of the image features + HammingIndex.rank + row mapping); "
                                     "no HTTP: a 100M-row FeatureStore to serve over HTTP is not built here",
                             "nlist": best["nlist"], "nprobe": best["nprobe"], "rows_equal_library": same, **lat,
                             "p95_speedup_vs_exhaustive": flat_lat["p95_ms"] / lat["p95_ms"]}
        print("service", result["service"], flush=True)
        del index, mode
        gc.collect()

    # do the 1M real codes tell the same story as the expanded ones?
    real = np.load(data_dir / "real.npy")
    faiss.omp_set_num_threads(2)
    if args.n >= 100 * BASE:
        result["real_vs_expanded_1m"] = story_1m(real, codes, q, rng, [p for p in args.nprobe if p <= 64])
    # FAISS's graph and multi-hash indexes on a subset
    faiss.omp_set_num_threads(2)
    result["subset_indexes"] = hnsw_and_multihash(codes, q, rng, min(args.subset, args.n), args.n)
    result["peak_rss_gib_benchmark_process"] = peak_gib()
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    path = write_results(args.name or ("hamming_100m" if args.n == 100 * BASE else f"hamming_100m_n{args.n // BASE}m"), result)
    print(markdown_table(grid, ["nlist", "nprobe", "recall_at_10", "p50_ms", "p95_ms", "p95_speedup_vs_exhaustive"]))
    print("->", path)


def main_sharded(args) -> None:
    """Goal 3: the 100M IVF index cut into --workers shards (same quantizer), searched on a Dask LocalCluster of
    worker processes (shard i pinned to worker i), one merged top-k; against the single-machine index in the same run."""
    from benchmarks._common import RESULTS
    from hardneg.distributed import get_runner
    from hardneg.index import HammingIndex, ShardedSearch, shard_index

    data_dir = Path(args.data_dir)
    main_result = json.loads((RESULTS / "hamming_100m.json").read_text()) if args.n == 100 * BASE else None
    best = main_result["ivf_best_at_recall_0.95"] if main_result else {"nlist": args.nlist[0], "nprobe": 1}
    nlist, nprobe = best["nlist"], best["nprobe"]
    q = np.load(data_dir / "query_codes.npy")[: args.gt_queries]
    faiss.omp_set_num_threads(1)
    # the cluster first: its worker processes must not start as copies of a process holding the index
    with get_runner(workers=args.workers, env=False) as runner:
        result: dict = {"n": args.n, "k": K, "nlist": nlist, "nprobe": nprobe, "shards": args.workers,
                        "worker_rss_gib_before": sorted(runner.client.run(rss_gib).values())}
        t = time.perf_counter()
        index = HammingIndex.load(data_dir / f"ivf{nlist}_{args.n}.index")
        result["load_s"] = time.perf_counter() - t
        t = time.perf_counter()
        paths = shard_index(index, args.workers, data_dir / f"shards{args.workers}_ivf{nlist}")
        result.update(shard_s=time.perf_counter() - t, queries=int(q.shape[0]))
        print(result, flush=True)
        single_rows, single_d = index.rank(q, K, nprobe=nprobe)
        search = ShardedSearch(paths, runner=runner)
        t = time.perf_counter()
        rows, dist = search.rank(q, K, nprobe=nprobe)  # first call: each worker opens its shard
        result["first_batch_s_workers_open_shards"] = time.perf_counter() - t
        result["distances_equal_single_machine"] = bool(np.array_equal(dist, single_d))
        result["rows_equal_single_machine"] = float((rows == single_rows).mean())
        result["rows_note"] = "rows may differ only among codes tied at the k-th distance (ties broken by row in the merge)"
        result["worker_rss_gib_holding_shards"] = sorted(runner.client.run(rss_gib).values())
        # single queries, as a service sends them: the cluster, the same shards in process, the single-machine index
        cluster_lat = latencies(lambda x: search.rank(x, K, nprobe=nprobe), q)
        local = ShardedSearch(paths)
        local_lat = latencies(lambda x: local.rank(x, K, nprobe=nprobe), q)
        single_lat = latencies(lambda x: index.rank(x, K, nprobe=nprobe), q)
        result["dask_cluster"] = lat_stats(cluster_lat)
        result["shards_in_process"] = lat_stats(local_lat)
        result["single_machine"] = lat_stats(single_lat)
        result["p95_vs_single_machine"] = result["dask_cluster"]["p95_ms"] / result["single_machine"]["p95_ms"]
        if main_result:
            result["p95_speedup_vs_exhaustive_of_hamming_100m_json"] = main_result["exhaustive"]["p95_ms"] / result["dask_cluster"]["p95_ms"]
        result["load_avg_1_5_15"] = load_avg()
    print(result, flush=True)
    path = write_results("hamming_100m_dask" if args.n == 100 * BASE else f"hamming_100m_dask_n{args.n // BASE}m", result)
    print("->", path)


def parse(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000_000)
    ap.add_argument("--data-dir", default="/tmp/hamming_100m")
    ap.add_argument("--queries", type=int, default=1000, help="test-image queries generated with the data")
    ap.add_argument("--gt-queries", type=int, default=200, help="queries of the recall and latency measurements")
    ap.add_argument("--flat-queries", type=int, default=30, help="single queries timed on the exhaustive index")
    ap.add_argument("--noise", type=float, default=0.1)
    ap.add_argument("--nlist", type=int, nargs="+", default=[4096, 1024, 256])
    ap.add_argument("--nprobe", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 128])
    ap.add_argument("--chunk-rows", type=int, default=1_000_000)
    ap.add_argument("--subset", type=int, default=2_000_000, help="rows of the HNSW / multi-hash comparison")
    ap.add_argument("--name", default=None, help="result file name (default from --n)")
    ap.add_argument("--data-only", action="store_true")
    ap.add_argument("--sharded", action="store_true", help="goal 3: the IVF index sharded over a Dask LocalCluster")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (and shards) of --sharded")
    ap.add_argument("--build-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-nlist", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


if __name__ == "__main__":
    a = parse()
    if a.build_child:
        child_build(a)
    elif a.data_only:
        main_data(a)
    elif a.sharded:
        main_sharded(a)
    else:
        main_data(a)
        main(a)
