"""Load test of the search service on loopback, and concept-search timings.

Part 1 (query by example over 1,000,000 Hamming codes): a synthetic FeatureStore
of 1M clustered 32-d vectors with distinct ids (synthetic data: the Hamming scan
costs the same whatever the codes mean), a TSVM hasher (64 bits) trained on 2,000
of them, the Hamming index of all 1M rows, and ``hardneg serve``'s app under
uvicorn in a child process. An asyncio httpx client runs N concurrent clients
for S seconds (default 32 for 30 s), each posting ``/api/search/example`` with a
random stored id; it reports p50/p95/p99 latency, requests/s, errors and the
server's RSS (sampled each second). Baseline, timed in the same run: the same
work called in-process without HTTP (read the row, encode, rank). A shorter run
of the exact-cosine mode over the same 1M rows is reported beside it.

Part 2 (concept search): the Fashion-MNIST raw-pixel store (70,000 x 784, via
hardneg.datasets), concept search through the API (Negative Bootstrap T=10,
100 positives, q=100: train + compress + scan) and one round of relevance
feedback (2 not relevant, 1 relevant), against the CLI's path
(``hardneg concept train`` + ``search`` in-process) as baseline.

Everything binds to 127.0.0.1 and stops by itself. Run pinned to one core:

    taskset -c 1 env OMP_NUM_THREADS=1 ... .venv/bin/python benchmarks/serve_load.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table, write_results  # noqa: E402


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_synthetic(folder: Path, n: int, dim: int, n_bits: int, seed: int = 0) -> tuple[Path, Path, dict]:
    from hardneg.hashing import TSVMHashing
    from hardneg.index import HammingIndex
    from hardneg.serve._state import default_models_dir
    from hardneg.store import FeatureStore

    rng = np.random.default_rng(seed)
    centers = rng.random((16, dim), dtype=np.float32) * 4
    store_path = folder / "synthetic-1m.store"
    t0 = time.perf_counter()
    with FeatureStore.create(store_path, dim=dim, chunk_rows=4096, overwrite=True, attrs={"synthetic": True}) as s:
        for lo in range(0, n, 200_000):
            m = min(200_000, n - lo)
            y = rng.integers(0, 16, m)
            X = np.clip(centers[y] + rng.normal(0, 0.7, (m, dim)).astype(np.float32), 0, None)
            s.append(X, ids=[f"syn-{i:07d}" for i in range(lo, lo + m)], labels=y)
    t_store = time.perf_counter() - t0
    store = FeatureStore.open(store_path)
    lab = np.sort(rng.choice(n, 2000, replace=False))
    t0 = time.perf_counter()
    hasher = TSVMHashing(n_bits=n_bits, random_state=seed).fit(store.take(lab), store.labels()[lab])
    t_hash = time.perf_counter() - t0
    models = default_models_dir(store_path)
    models.mkdir(parents=True, exist_ok=True)
    hasher.save(models / "hasher.npz")
    t0 = time.perf_counter()
    HammingIndex.from_store(store, hasher, chunk_rows=65536).save(models / "hamming.index")
    t_index = time.perf_counter() - t0
    store.close()
    return store_path, models, {"store_build_s": t_store, "hasher_fit_s": t_hash, "index_build_s": t_index}


def direct_baseline(store_path: Path, models: Path, n_queries: int, k: int, seed: int) -> dict:
    """The server's work per query, in-process: read the row, encode, rank 1M codes."""
    from hardneg.serve._modes import HammingMode
    from hardneg.store import FeatureStore

    store = FeatureStore.open(store_path)
    mode = HammingMode.open(store, models)
    rows = np.random.default_rng(seed).integers(0, len(store), n_queries)
    lat = []
    for r in rows:
        t = time.perf_counter()
        x = np.asarray(store.take(np.array([r]))[0], np.float32)
        mode.rank(x, k)
        lat.append(time.perf_counter() - t)
    store.close()
    lat = np.array(lat) * 1000
    return {"n_queries": n_queries, "p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95)),
            "p99_ms": float(np.percentile(lat, 99))}


async def load(url: str, ids_n: int, mode: str, clients: int, seconds: float, k: int, pid: int, seed: int) -> dict:
    import httpx

    lat: list[float] = []
    errors: list[str] = []
    rss = []
    deadline = time.perf_counter() + seconds

    async def client(c: httpx.AsyncClient, i: int):
        local = np.random.default_rng([seed, i])
        while time.perf_counter() < deadline:
            body = {"id": f"syn-{int(local.integers(ids_n)):07d}", "mode": mode, "k": k}
            t = time.perf_counter()
            try:
                r = await c.post("/api/search/example", json=body)
                ok = r.status_code == 200 and len(r.json()["results"]) == k
                if not ok:
                    errors.append(f"{r.status_code}: {r.text[:100]}")
            except Exception as exc:  # noqa: BLE001 - every failure counts as an error
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            lat.append(time.perf_counter() - t)

    async def sample_rss():
        while time.perf_counter() < deadline:
            rss.append(rss_mb(pid))
            await asyncio.sleep(1.0)

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30.0) as c:
        t0 = time.perf_counter()
        await asyncio.gather(sample_rss(), *(client(c, i) for i in range(clients)))
        wall = time.perf_counter() - t0
    a = np.array(lat) * 1000
    return {"mode": mode, "clients": clients, "seconds": round(wall, 2), "requests": int(a.size),
            "requests_per_s": float(a.size / wall), "p50_ms": float(np.percentile(a, 50)),
            "p95_ms": float(np.percentile(a, 95)), "p99_ms": float(np.percentile(a, 99)), "max_ms": float(a.max()),
            "errors": len(errors), "error_samples": errors[:5], "rss_mb_samples": [round(v, 1) for v in rss]}


def run_load(args, folder: Path) -> dict:
    store_path, models, build = build_synthetic(folder, args.n, args.dim, args.bits)
    base = direct_baseline(store_path, models, 2000, args.k, 1)
    port = free_port()
    code = ("import uvicorn; from hardneg.serve import create_app; "
            f"uvicorn.run(create_app({str(store_path)!r}), host='127.0.0.1', port={port}, log_level='warning')")
    proc = subprocess.Popen([sys.executable, "-c", code])
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        t0 = time.perf_counter()
        while True:
            try:
                if httpx.get(url + "/api/info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.perf_counter() - t0 > 180:
                raise RuntimeError("the server did not start")
            time.sleep(0.5)
        startup = time.perf_counter() - t0
        asyncio.run(load(url, args.n, "hamming", 4, 3, args.k, proc.pid, 99))  # warm-up
        rss_start = rss_mb(proc.pid)
        ham = asyncio.run(load(url, args.n, "hamming", args.clients, args.seconds, args.k, proc.pid, 0))
        rss_end = rss_mb(proc.pid)
        cos = asyncio.run(load(url, args.n, "cosine", args.clients, args.cosine_seconds, args.k, proc.pid, 1))
    finally:
        proc.terminate()
        proc.wait(30)
    ham.update(rss_mb_start=rss_start, rss_mb_end=rss_end, server_startup_s=startup,
               p50_ratio_vs_direct=ham["p50_ms"] / base["p50_ms"])
    return {"n_codes": args.n, "dim": args.dim, "bits": args.bits, "k": args.k, "build": build,
            "direct_baseline": base, "hamming": ham, "cosine": cos,
            "data": "synthetic: 1M clustered 32-d vectors with distinct ids (timing only)"}


def run_concept(args) -> dict:
    from fastapi.testclient import TestClient

    from hardneg.concept import NegativeBootstrap, search
    from hardneg.datasets import load as load_dataset
    from hardneg.serve import create_app
    from hardneg.store import FeatureStore

    folder = Path(tempfile.mkdtemp(prefix="serve-concept-"))
    data = load_dataset("fashion-mnist")
    n = data.X.shape[0] if args.fashion_limit is None else args.fashion_limit
    names = list(data.class_names)
    path = folder / "fashion-mnist-pixels.store"
    t0 = time.perf_counter()
    with FeatureStore.create(path, dim=data.X.shape[1], overwrite=True,
                             attrs={"dataset": data.name, "class_names": names}) as s:
        for lo in range(0, n, 10_000):
            hi = min(lo + 10_000, n)
            s.append(data.X[lo:hi], ids=[f"fashion-mnist-{i}" for i in range(lo, hi)], labels=data.y[lo:hi],
                     split=[str(x) for x in data.split[lo:hi]], tags=[[names[c]] for c in data.y[lo:hi]])
    build_s = time.perf_counter() - t0
    rows = []

    def wait(c, job):
        while job["status"] in ("queued", "running"):
            time.sleep(0.02)
            job = c.get(f"/api/jobs/{job['id']}").json()
        if job["status"] != "done":
            raise RuntimeError(job["error"])
        return job

    with TestClient(create_app(path, models_dir=folder / "models")) as c:
        t = time.perf_counter()
        wait(c, c.post("/api/concept", json={"tag": names[0], "k": 24}).json())  # cold: JIT compilation, caches
        cold = time.perf_counter() - t
        for tag in names[1 : 1 + args.concepts]:
            store = c.app.state.serve.store
            t = time.perf_counter()
            job = wait(c, c.post("/api/concept", json={"tag": tag, "k": 24}).json())
            first = time.perf_counter() - t
            res = job["result"]
            prec = float(np.mean([it["label_name"] == tag for it in res["results"]]))
            wrong = [it["id"] for it in res["results"] if it["label_name"] != tag][:2]
            marked_neg = wrong + [it["id"] for it in res["results"][-2:]][: 2 - len(wrong)]
            marked_pos = [it["id"] for it in res["results"] if it["label_name"] == tag and it["id"] not in marked_neg][:1]
            t = time.perf_counter()
            fb = wait(c, c.post(f"/api/models/{res['model']}/feedback",
                                json={"relevant_ids": marked_pos, "not_relevant_ids": marked_neg, "k": 24}).json())
            rerank = time.perf_counter() - t
            prec_fb = float(np.mean([it["label_name"] == tag for it in fb["result"]["results"]]))
            # baseline: the CLI's path in-process (hardneg concept train + search), same positives and settings
            pos_rows = np.array([c.app.state.serve.row_of[i] for i in c.get(f"/api/models/{res['model']}").json()["positive_ids"]])
            pos_rows = np.setdiff1d(pos_rows, [c.app.state.serve.row_of[i] for i in marked_pos])
            t = time.perf_counter()
            est = NegativeBootstrap(n_iter=10, n_bins=100, random_state=0)
            est.fit(np.asarray(store.take(pos_rows)), store, exclude_tags=[tag])
            search(est.compress(100), store, k=24)
            cli = time.perf_counter() - t
            rows.append({"concept": tag, "first_grid_s": first, "rerank_s": rerank, "cli_train_search_s": cli,
                         "first_vs_cli": first / cli, "P@24": prec, "P@24_after_feedback": prec_fb,
                         "api_timings": {k: round(v, 4) for k, v in res["timings"].items()},
                         "feedback_timings": {k: round(v, 4) for k, v in fb["result"]["timings"].items()}})
    return {"store": f"Fashion-MNIST raw pixels, {n:,} x {data.X.shape[1]}", "store_build_s": build_s,
            "cold_first_concept_s": cold, "settings": "T=10, 100 positives, q=100 bins, k=24", "concepts": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="Hamming codes in the index")
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--bits", type=int, default=64)
    ap.add_argument("--k", type=int, default=24)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--cosine-seconds", type=float, default=10.0)
    ap.add_argument("--concepts", type=int, default=3, help="concepts timed on Fashion-MNIST")
    ap.add_argument("--fashion-limit", type=int, default=None, help="use only the first N Fashion-MNIST images")
    ap.add_argument("--skip-load", action="store_true")
    ap.add_argument("--skip-concept", action="store_true")
    ap.add_argument("--out", default="serve_load")
    args = ap.parse_args(argv)
    result = {"affinity": sorted(os.sched_getaffinity(0)), "args": vars(args), "loadavg_start": os.getloadavg(),
              "note": "2-core machine shared with other jobs: see loadavg_start / loadavg_end"}
    with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:
        if not args.skip_load:
            result["load"] = run_load(args, Path(tmp))
    if not args.skip_concept:
        result["concept"] = run_concept(args)
    result["loadavg_end"] = os.getloadavg()
    path = write_results(args.out, result)
    if "load" in result:
        L = result["load"]
        rows = [{"what": f"{m['mode']} over {args.n:,} via HTTP, {m['clients']} clients", "req/s": m["requests_per_s"],
                 "p50 ms": m["p50_ms"], "p95 ms": m["p95_ms"], "p99 ms": m["p99_ms"], "errors": m["errors"]}
                for m in (L["hamming"], L["cosine"])]
        b = L["direct_baseline"]
        rows.append({"what": "hamming in-process, 1 query at a time (baseline)", "req/s": 1000 / b["p50_ms"],
                     "p50 ms": b["p50_ms"], "p95 ms": b["p95_ms"], "p99 ms": b["p99_ms"], "errors": 0})
        print(markdown_table(rows, ["what", "req/s", "p50 ms", "p95 ms", "p99 ms", "errors"]))
        print(f"server RSS: {L['hamming']['rss_mb_start']:.0f} MB at start, {L['hamming']['rss_mb_end']:.0f} MB at end")
    if "concept" in result:
        print(markdown_table(result["concept"]["concepts"],
                             ["concept", "first_grid_s", "rerank_s", "cli_train_search_s", "first_vs_cli", "P@24",
                              "P@24_after_feedback"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
