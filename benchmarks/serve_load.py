"""Load test of the search service on loopback, and concept-search timings.

Part 1 (query by example over 1,000,000 Hamming codes): a synthetic FeatureStore
of 1M clustered 32-d vectors with distinct ids (synthetic data: the Hamming scan
costs the same whatever the codes mean), a TSVM hasher (64 bits) trained on 2,000
of them, the Hamming index of all 1M rows, and ``hardneg serve``'s app under
uvicorn in a child process. An asyncio httpx client runs N concurrent clients
for S seconds (default 32 for 30 s), each posting ``/api/search/example`` with a
random stored id; it reports p50/p95/p99 latency, requests/s, errors and the
server's RSS (sampled each second), and the CPU seconds per request of server
and client (they share the machine). The served index is approximate (IVF,
``--nlist``/``--nprobe``); each of two servers, micro-batching on and off
(``--max-batch 1``), is loaded with exhaustive (``"exact": true``) and IVF
queries, and the recall@k of the IVF answers against the exhaustive ones is
measured through HTTP on the same queries. Baseline, timed in the same run: the
same work called in-process without HTTP (row, encode, rank), exact and IVF, and
the exact search as the service did it before issue 29 (one FAISS flat scan per
query; the service now scans the codes once per batch of exact queries).
A shorter run of the exact-cosine mode over the same 1M rows is reported beside it.
``--client raw`` uses a minimal HTTP/1.1 client instead of httpx (less client CPU).

Part 2 (concept search): the Fashion-MNIST raw-pixel store (70,000 x 784, via
hardneg.datasets), concept search through the API (Negative Bootstrap at the
service's defaults: T = ``hardneg.concept.DEFAULT_N_ITER``, 100 positives,
q = 100; train + compress + scan) and one round of relevance feedback (2 not
relevant, 1 relevant), against the CLI's path (``hardneg concept train`` +
``search`` in-process: the same T, q, positives and train-split pool) as
baseline.

Everything binds to 127.0.0.1 and stops by itself; the load averages at the
start, after each run and at the end are recorded (the machine is shared):

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/serve_load.py [--skip-concept]
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
from _common import keep_earlier_studies, markdown_table, write_results  # noqa: E402


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


def direct_baseline(store_path: Path, models: Path, n_queries: int, k: int, seed: int, batch: int = 32) -> dict:
    """The server's work per query, in-process, one query at a time: read the row, encode,
    rank 1M codes, exhaustively (the multi-query scan, and FAISS's flat scan as the service
    did before issue 29) and with the approximate (IVF) index; then the two exhaustive scans
    on batches of ``batch`` queries (ms per query)."""
    from hardneg.serve._modes import HammingMode
    from hardneg.store import FeatureStore

    import faiss

    faiss.omp_set_num_threads(1)  # as the service sets it
    store = FeatureStore.open(store_path)
    matrix = np.ascontiguousarray(store.to_numpy(), np.float32)  # the service holds the rows in memory too
    mode = HammingMode.open(store, models, matrix=matrix)
    mode.exact_index()  # built once, before timing
    mode.exact_planes()  # the multi-query exact scan's copy of the codes, built once too
    rows = np.random.default_rng(seed).integers(0, len(store), n_queries)
    flat = mode.exact_index()

    def faiss_exact(x, k):  # the service's exact search before issue 29: one FAISS flat scan per query
        return flat.rank(mode.hasher.transform(x), k)

    calls = {"exact": lambda x, k: mode.search(x, k, exact=True), "ivf": lambda x, k: mode.search(x, k),
             "exact_faiss": faiss_exact}
    out = {}
    for name, call in calls.items():
        call(matrix[rows[:2]], k)  # warm-up (first call: JIT load)
        lat = []
        for r in rows:
            t = time.perf_counter()
            x = matrix[r]
            call(x[None, :], k)
            lat.append(time.perf_counter() - t)
        lat = np.array(lat) * 1000
        out[name] = {"n_queries": n_queries, "p50_ms": float(np.percentile(lat, 50)),
                     "p95_ms": float(np.percentile(lat, 95)), "p99_ms": float(np.percentile(lat, 99)),
                     "queries_per_s": float(1000 / lat.mean())}
    # batches of `batch` queries in one call, the two exact scans alternating (the machine is shared)
    per_query = {"exact": [], "exact_faiss": []}
    for lo in range(0, n_queries - batch + 1, batch):
        X = matrix[rows[lo : lo + batch]]
        for name in per_query:
            t = time.perf_counter()
            calls[name](X, k)
            per_query[name].append((time.perf_counter() - t) / batch * 1000)
    out["batch_of"] = batch
    for name, v in per_query.items():
        out[f"{name}_batch"] = {"batches": len(v), "ms_per_query_median": float(np.median(v))}
    out["exact_batch_speedup_vs_faiss"] = (out["exact_faiss_batch"]["ms_per_query_median"]
                                           / out["exact_batch"]["ms_per_query_median"])
    out["search"] = mode.search_label()
    store.close()
    return out


def recall_at_k(dist_approx, dist_exact) -> float:
    """Tie-aware recall (as in hamming_ann.py): the share of the k returned items that are at most
    as far as the exhaustive search's k-th (64-bit codes over 1M items tie a lot, so two exact
    searches may return different ids at equal distances)."""
    kth = dist_exact[:, -1:]
    return float((dist_approx <= kth).sum(axis=1).mean() / dist_exact.shape[1])


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RawClient:
    """A minimal HTTP/1.1 keep-alive client (asyncio streams): far cheaper per request than httpx,
    so that the load generator takes less of the two cores the server runs on."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def post_json(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n%s" % (path.encode(), self.host.encode(), len(body), body))
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        return status, await self.reader.readexactly(length)

    async def close(self):
        if self.writer is not None:
            self.writer.close()


async def load(url: str, ids_n: int, mode: str, clients: int, seconds: float, k: int, pid: int, seed: int,
               exact: bool = False, client_kind: str = "httpx") -> dict:
    import json

    import httpx

    lat: list[float] = []
    errors: list[str] = []
    rss, batch_sizes, searches = [], [], set()
    deadline = time.perf_counter() + seconds
    host, port = url.rsplit("/", 1)[1].split(":")

    async def client(c, i: int):
        local = np.random.default_rng([seed, i])
        raw = RawClient(host, int(port)) if client_kind == "raw" else None
        try:
            while time.perf_counter() < deadline:
                body = {"id": f"syn-{int(local.integers(ids_n)):07d}", "mode": mode, "k": k}
                if exact:
                    body["exact"] = True
                t = time.perf_counter()
                try:
                    if raw is not None:
                        status, text = await raw.post_json("/api/search/example", json.dumps(body).encode())
                    else:
                        r = await c.post("/api/search/example", json=body)
                        status, text = r.status_code, r.content
                    dt = time.perf_counter() - t
                    out = json.loads(text) if status == 200 else None
                    if out is None or len(out["results"]) != k:
                        errors.append(f"{status}: {text[:100]!r}")
                        continue
                    batch_sizes.append(out["timings"].get("batch_size", 1.0))
                    searches.add(out.get("search"))
                except Exception as exc:  # noqa: BLE001 - every failure counts as an error
                    errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                lat.append(dt)
        finally:
            if raw is not None:
                await raw.close()

    async def sample_rss():
        while time.perf_counter() < deadline:
            rss.append(rss_mb(pid))
            await asyncio.sleep(1.0)

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30.0) as c:
        cpu_server, cpu_client = cpu_s(pid), time.process_time()
        t0 = time.perf_counter()
        await asyncio.gather(sample_rss(), *(client(c, i) for i in range(clients)))
        wall = time.perf_counter() - t0
        cpu_server, cpu_client = cpu_s(pid) - cpu_server, time.process_time() - cpu_client
    a = np.array(lat) * 1000
    return {"mode": mode, "exact": exact, "search": sorted(s for s in searches if s), "client": client_kind,
            "clients": clients, "seconds": round(wall, 2), "requests": int(a.size),
            "requests_per_s": float(a.size / wall), "p50_ms": float(np.percentile(a, 50)),
            "p95_ms": float(np.percentile(a, 95)), "p99_ms": float(np.percentile(a, 99)), "max_ms": float(a.max()),
            "errors": len(errors), "error_samples": errors[:5], "mean_batch_size": float(np.mean(batch_sizes)),
            "server_cpu_s_per_request": cpu_server / max(a.size, 1), "client_cpu_s_per_request": cpu_client / max(a.size, 1),
            "rss_mb_samples": [round(v, 1) for v in rss], "loadavg_after": os.getloadavg()}


def http_recall(url: str, n_ids: int, n_queries: int, k: int, seed: int) -> dict:
    """The same queries through the service, exhaustive and approximate: tie-aware recall@k of the
    IVF answers against the exhaustive ones, and the share of identical id lists."""
    import httpx

    ids = np.random.default_rng(seed).integers(0, n_ids, n_queries)
    d_exact, d_ivf, same, search = [], [], 0, None
    with httpx.Client(base_url=url, timeout=60) as c:
        for i in ids:
            body = {"id": f"syn-{int(i):07d}", "mode": "hamming", "k": k}
            e = c.post("/api/search/example", json={**body, "exact": True}).json()
            a = c.post("/api/search/example", json=body).json()
            search = a["search"]
            d_exact.append([-it["score"] for it in e["results"]])
            d_ivf.append([-it["score"] for it in a["results"]] + [np.inf] * (k - len(a["results"])))
            same += [it["id"] for it in e["results"]] == [it["id"] for it in a["results"]]
    return {"n_queries": n_queries, "k": k, "search": search,
            "recall_at_k": recall_at_k(np.array(d_ivf), np.array(d_exact)), "identical_lists": same / n_queries}


def start_server(store_path: Path, models: Path, **kw):
    import httpx

    port = free_port()
    code = ("import uvicorn; from hardneg.serve import create_app; "
            f"uvicorn.run(create_app({str(store_path)!r}, models_dir={str(models)!r}, **{kw!r}), "
            f"host='127.0.0.1', port={port}, log_level='warning')")
    proc = subprocess.Popen([sys.executable, "-c", code])
    url = f"http://127.0.0.1:{port}"
    t0 = time.perf_counter()
    while True:
        try:
            if httpx.get(url + "/api/info", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.perf_counter() - t0 > 300:
            proc.kill()
            raise RuntimeError("the server did not start")
        time.sleep(0.5)
    return proc, url, time.perf_counter() - t0


def run_load(args, folder: Path) -> dict:
    import shutil

    from hardneg.index import HammingIndex

    store_path, models, build = build_synthetic(folder, args.n, args.dim, args.bits)
    ivf_models = folder / "models-ivf"
    ivf_models.mkdir()
    shutil.copyfile(models / "hasher.npz", ivf_models / "hasher.npz")
    t0 = time.perf_counter()
    HammingIndex.load(models / "hamming.index").to_approximate(args.nlist, args.nprobe).save(ivf_models / "hamming.index")
    build["ivf_index_build_s"] = time.perf_counter() - t0
    base = direct_baseline(store_path, ivf_models, args.baseline_queries, args.k, 1, batch=args.clients)
    runs, recall, cos = [], None, None
    configs = [("batched", {"max_batch": args.max_batch, "batch_window_ms": args.window_ms}),
               ("one by one", {"max_batch": 1})]
    for label, kw in configs:
        proc, url, startup = start_server(store_path, ivf_models, **kw)
        try:
            asyncio.run(load(url, args.n, "hamming", 4, 3, args.k, proc.pid, 99, False, args.client))  # warm-up
            asyncio.run(load(url, args.n, "hamming", 4, 2, args.k, proc.pid, 98, True, args.client))
            if recall is None:
                recall = http_recall(url, args.n, args.recall_queries, args.k, 7)
            for exact in (True, False):
                rss_start = rss_mb(proc.pid)
                r = asyncio.run(load(url, args.n, "hamming", args.clients, args.seconds, args.k, proc.pid, 0, exact,
                                     args.client))
                r.update(batching=label, server_settings=kw, rss_mb_start=rss_start, rss_mb_end=rss_mb(proc.pid),
                         server_startup_s=startup)
                runs.append(r)
            if cos is None and args.cosine_seconds > 0:
                cos = asyncio.run(load(url, args.n, "cosine", args.clients, args.cosine_seconds, args.k, proc.pid, 1,
                                       False, args.client))
        finally:
            proc.terminate()
            proc.wait(30)
    for r in runs:
        b = base["exact" if r["exact"] else "ivf"]
        r["p50_ratio_vs_direct"] = r["p50_ms"] / b["p50_ms"]
        r["throughput_ratio_vs_direct"] = r["requests_per_s"] / b["queries_per_s"]
    return {"n_codes": args.n, "dim": args.dim, "bits": args.bits, "k": args.k, "nlist": args.nlist,
            "nprobe": args.nprobe, "build": build, "direct_baseline": base, "recall": recall, "runs": runs,
            "cosine": cos, "data": "synthetic: 1M clustered 32-d vectors with distinct ids (timing only)"}


def run_concept(args) -> dict:
    """The service's concept search against the CLI path, in a folder removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="serve-concept-") as tmp:
        return _run_concept_in(Path(tmp), args)


def _run_concept_in(folder: Path, args) -> dict:
    from fastapi.testclient import TestClient

    from hardneg.concept import NegativeBootstrap, search
    from hardneg.datasets import load as load_dataset
    from hardneg.serve import create_app
    from hardneg.store import FeatureStore

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

    with TestClient(create_app(path, models_dir=folder / "models", allowed_hosts=["testserver"])) as c:
        t = time.perf_counter()
        wait(c, c.post("/api/concept", json={"tag": names[0], "k": 24}).json())  # cold: JIT compilation, caches
        cold = time.perf_counter() - t
        settings = c.app.state.serve.settings
        store = c.app.state.serve.store
        train_rows = store.select(split=c.app.state.serve.concept_split) if c.app.state.serve.concept_split else None
        for tag in names[1 : 1 + args.concepts]:
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
            est = NegativeBootstrap(n_iter=settings.concept_iterations, n_bins=settings.concept_bins, random_state=0)
            est.fit(np.asarray(store.take(pos_rows)), store, exclude_tags=[tag], pool_rows=train_rows)
            search(est.compress(), store, k=24)
            cli = time.perf_counter() - t
            rows.append({"concept": tag, "first_grid_s": first, "rerank_s": rerank, "cli_train_search_s": cli,
                         "first_vs_cli": first / cli, "P@24": prec, "P@24_after_feedback": prec_fb,
                         "api_timings": {k: round(v, 4) for k, v in res["timings"].items()},
                         "feedback_timings": {k: round(v, 4) for k, v in fb["result"]["timings"].items()}})
    return {"store": f"Fashion-MNIST raw pixels, {n:,} x {data.X.shape[1]}", "store_build_s": build_s,
            "cold_first_concept_s": cold, "concepts": rows,
            "settings": f"T={settings.concept_iterations}, {settings.concept_positives} positives, "
                        f"q={settings.concept_bins} bins, k=24"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="Hamming codes in the index")
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--bits", type=int, default=64)
    ap.add_argument("--k", type=int, default=24)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--cosine-seconds", type=float, default=10.0, help="0: skip the exact-cosine run")
    ap.add_argument("--nlist", type=int, default=1024, help="IVF lists of the approximate index")
    ap.add_argument("--nprobe", type=int, default=4, help="IVF lists scanned per query")
    ap.add_argument("--max-batch", type=int, default=64, help="micro-batching: most queries per FAISS call")
    ap.add_argument("--window-ms", type=float, default=1.0, help="micro-batching window")
    ap.add_argument("--client", choices=["httpx", "raw"], default="httpx",
                    help="load generator: httpx, or a minimal asyncio HTTP/1.1 client (less client CPU)")
    ap.add_argument("--baseline-queries", type=int, default=1000, help="in-process queries per baseline")
    ap.add_argument("--recall-queries", type=int, default=500, help="queries asked exhaustively and via IVF over HTTP")
    ap.add_argument("--concepts", type=int, default=3, help="concepts timed on Fashion-MNIST")
    ap.add_argument("--fashion-limit", type=int, default=None, help="use only the first N Fashion-MNIST images")
    ap.add_argument("--skip-load", action="store_true")
    ap.add_argument("--skip-concept", action="store_true")
    ap.add_argument("--out", default="serve_load")
    args = ap.parse_args(argv)
    result = {"affinity": sorted(os.sched_getaffinity(0)), "args": vars(args), "loadavg_start": os.getloadavg(),
              "note": "2-core machine shared with other jobs: see loadavg_start / loadavg_end"}
    if not args.skip_load:
        with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:
            result["load"] = run_load(args, Path(tmp))
    if not args.skip_concept:
        result["concept"] = run_concept(args)
    skipped = tuple(study for study, skip in (("load", args.skip_load), ("concept", args.skip_concept)) if skip)
    if skipped:  # a skipped study's last figures stay, under the run that measured them
        keep_earlier_studies(Path(__file__).resolve().parent / "results" / f"{args.out}.json", skipped, result)
    result["loadavg_end"] = os.getloadavg()
    path = write_results(args.out, result)
    if "load" in result:
        L = result["load"]
        rows = [{"what": f"{m['search'][0] if m['search'] else '?'}, {m['batching']}, {m['clients']} clients",
                 "req/s": m["requests_per_s"], "p50 ms": m["p50_ms"], "p95 ms": m["p95_ms"], "p99 ms": m["p99_ms"],
                 "errors": m["errors"], "batch": m["mean_batch_size"], "req/s vs in-process": m["throughput_ratio_vs_direct"],
                 "server ms CPU/req": 1000 * m["server_cpu_s_per_request"],
                 "client ms CPU/req": 1000 * m["client_cpu_s_per_request"]} for m in L["runs"]]
        if L["cosine"]:
            m = L["cosine"]
            rows.append({"what": f"exact cosine, {m['clients']} clients", "req/s": m["requests_per_s"],
                         "p50 ms": m["p50_ms"], "p95 ms": m["p95_ms"], "p99 ms": m["p99_ms"], "errors": m["errors"]})
        for name in ("exact", "exact_faiss", "ivf"):
            b = L["direct_baseline"][name]
            rows.append({"what": f"in-process {name}, 1 query at a time (baseline)", "req/s": b["queries_per_s"],
                         "p50 ms": b["p50_ms"], "p95 ms": b["p95_ms"], "p99 ms": b["p99_ms"], "errors": 0})
        cols = ["what", "req/s", "p50 ms", "p95 ms", "p99 ms", "errors", "batch", "req/s vs in-process",
                "server ms CPU/req", "client ms CPU/req"]
        print(markdown_table([{c: r.get(c, "") for c in cols} for r in rows], cols))
        print("recall over HTTP:", L["recall"])
        B = L["direct_baseline"]
        print(f"in-process batches of {B['batch_of']}: multi-query scan {B['exact_batch']['ms_per_query_median']:.3f} "
              f"ms/query, FAISS flat {B['exact_faiss_batch']['ms_per_query_median']:.3f} ms/query "
              f"(x{B['exact_batch_speedup_vs_faiss']:.2f})")
        for m in L["runs"]:
            print(f"{m['search']} {m['batching']}: server RSS {m['rss_mb_start']:.0f} MB -> {m['rss_mb_end']:.0f} MB")
    if "concept" in result:
        print(markdown_table(result["concept"]["concepts"],
                             ["concept", "first_grid_s", "rerank_s", "cli_train_search_s", "first_vs_cli", "P@24",
                              "P@24_after_feedback"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
