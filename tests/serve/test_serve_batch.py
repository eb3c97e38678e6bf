"""Micro-batching of Hamming queries and the approximate (IVF) index in the search service."""

from __future__ import annotations

import asyncio
import shutil
import threading

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from hardneg.index import HammingIndex  # noqa: E402
from hardneg.serve import create_app as _create_app  # noqa: E402
from hardneg.serve._batch import BatcherClosed, MicroBatcher  # noqa: E402
from hardneg.demos.service import build_demo_store  # noqa: E402


def create_app(*args, **kwargs):
    """The service, also answering TestClient's Host name ("testserver")."""
    return _create_app(*args, allowed_hosts=["testserver"], **kwargs)


FAST = dict(concept_iterations=3, concept_positives=40)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build_demo_store(tmp_path_factory.getbasetemp() / "serve-demo", n_bits=16, n_labeled=300)


@pytest.fixture(scope="module")
def ivf_models(demo, tmp_path_factory):
    """The demo's hasher with an approximate copy of its Hamming index (8 lists, 2 probed)."""
    _, models = demo
    folder = tmp_path_factory.mktemp("ivf-models")
    shutil.copyfile(models / "hasher.npz", folder / "hasher.npz")
    HammingIndex.load(models / "hamming.index").to_approximate(8, 2).save(folder / "hamming.index")
    return folder


# ---------------------------------------------------------------- the batcher alone
def _gather(batcher, items, key=lambda x: 0):
    async def main():
        try:
            return await asyncio.gather(*(batcher.submit(key(x), x) for x in items), return_exceptions=True)
        finally:
            batcher.close()
    return asyncio.run(main())


@pytest.mark.parametrize("workers", [1, 2])
def test_batcher_gathers_and_splits_results(workers):
    calls = []

    def run(key, xs):
        calls.append((key, list(xs)))
        return [key * 100 + x for x in xs]

    out = _gather(MicroBatcher(run, window_s=0.01, max_batch=8, workers=workers), list(range(20)), key=lambda x: x % 2)
    assert [r for r, _ in out] == [(x % 2) * 100 + x for x in range(20)]
    assert all(len(xs) <= 8 for _, xs in calls)
    assert all(all(x % 2 == key for x in xs) for key, xs in calls)  # keys never mixed
    assert len(calls) < 20  # gathered
    assert max(info["batch_size"] for _, info in out) > 1


def test_batcher_one_bad_query_fails_alone():
    def run(key, xs):
        if 13 in xs:
            raise ValueError("13 is bad")
        return [2 * x for x in xs]

    out = _gather(MicroBatcher(run, window_s=0.01), list(range(20)))
    assert isinstance(out[13], ValueError)
    assert [o[0] for i, o in enumerate(out) if i != 13] == [2 * x for x in range(20) if x != 13]


def test_batcher_wrong_result_count_is_an_error_not_a_hang():
    out = _gather(MicroBatcher(lambda key, xs: [], window_s=0.001), [1, 2, 3])
    assert all(isinstance(r, RuntimeError) for r in out)


def test_batcher_close_fails_waiting_queries_without_deadlock():
    started, release = threading.Event(), threading.Event()

    def run(key, xs):
        started.set()
        release.wait(5)  # a slow search that is still running when the service stops
        return list(xs)

    b = MicroBatcher(run, window_s=0.0)

    async def main():
        tasks = [asyncio.ensure_future(b.submit(0, i)) for i in range(5)]
        while not started.is_set():
            await asyncio.sleep(0.001)
        b.close()
        res = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
        with pytest.raises(BatcherClosed):
            await b.submit(0, 99)
        return res

    res = asyncio.run(main())
    release.set()
    assert all(isinstance(r, BatcherClosed) for r in res)
    b.close()  # twice is fine


def test_batcher_close_from_another_thread_and_bad_settings():
    b = MicroBatcher(lambda key, xs: list(xs))
    b.close()  # never started
    with pytest.raises(ValueError, match="window_s"):
        MicroBatcher(lambda k, x: x, window_s=-1)
    with pytest.raises(ValueError, match="max_batch"):
        MicroBatcher(lambda k, x: x, max_batch=0)
    with pytest.raises(ValueError, match="workers"):
        MicroBatcher(lambda k, x: x, workers=0)


# ---------------------------------------------------------------- through the service
def _concurrent(client, bodies):
    out = [None] * len(bodies)

    def ask(i):
        out[i] = client.post("/api/search/example", json=bodies[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


@pytest.mark.parametrize("use_ivf", [False, True])
def test_batched_answers_equal_one_by_one(demo, ivf_models, tmp_path, use_ivf):
    store, models = demo
    folder = ivf_models if use_ivf else models
    bodies = [{"id": f"digits-{i}", "mode": "hamming", "k": 10 + i % 3} for i in range(0, 240, 10)]
    bodies += [{"id": "digits-5", "mode": "hamming", "k": 10, "exact": True}, {"id": "missing", "mode": "hamming"}]
    with TestClient(create_app(store, models_dir=folder, max_batch=1, **FAST)) as c:
        alone = [c.post("/api/search/example", json=b) for b in bodies]
    with TestClient(create_app(store, models_dir=folder, batch_window_ms=20, max_batch=64, **FAST)) as c:
        batcher, calls = c.app.state.serve.batcher, []
        search = batcher.run

        def counted(key, payloads):
            calls.append(len(payloads))
            return search(key, payloads)

        batcher.run = counted
        together = _concurrent(c, bodies)
        assert len(calls) < len(bodies)  # some were searched together
    for a, b in zip(alone, together):
        assert a.status_code == b.status_code, (a.text, b.text)
        if a.status_code == 200:
            assert a.json()["results"] == b.json()["results"] and a.json()["search"] == b.json()["search"]
    assert together[-1].status_code == 404  # a bad query fails alone
    assert max(r.json()["timings"]["batch_size"] for r in together[:-1]) > 1


def test_ivf_index_served_and_exact_still_available(demo, ivf_models):
    store, models = demo
    ivf = HammingIndex.load(ivf_models / "hamming.index")
    with TestClient(create_app(store, models_dir=ivf_models, **FAST)) as c:
        assert "IVF 8 lists" in {m["name"]: m["title"] for m in c.get("/api/modes").json()}["hamming"]
        r = c.post("/api/search/example", json={"id": "digits-10", "mode": "hamming", "k": 10}).json()
        assert r["search"] == "ivf nprobe=2/8" and r["timings"]["nprobe"] == 2.0
        assert "digits-10" not in [it["id"] for it in r["results"]]  # the query item is left out
        e = c.post("/api/search/example", json={"id": "digits-10", "mode": "hamming", "k": 10, "exact": True}).json()
        assert e["search"] == "exact" and "nprobe" not in e["timings"]
        p = c.post("/api/search/example", json={"id": "digits-10", "mode": "hamming", "k": 10, "nprobe": 8}).json()
        assert p["search"] == "ivf nprobe=8/8"
        # every list probed: the same distances as the exhaustive scan
        assert [it["score"] for it in p["results"]] == [it["score"] for it in e["results"]]
        # the IVF answer is the index's own answer, mapped to store rows
        codes = c.app.state.serve.modes["hamming"].hasher.transform(c.app.state.serve.matrix[10:11])
        res = ivf.search(codes, 11, nprobe=2)
        ids, dist = res.ids, res.distances
        keep = [j for j, i in enumerate(ids[0]) if i != "digits-10"][:10]
        assert [it["id"] for it in r["results"]] == [ids[0][j] for j in keep]
        assert [-it["score"] for it in r["results"]] == [float(dist[0][j]) for j in keep]
        # cosine has no approximate index: nprobe is refused, exact is simply exact
        assert c.post("/api/search/example", json={"id": "digits-1", "mode": "cosine", "nprobe": 2}).status_code == 422
        assert c.post("/api/search/example", json={"id": "digits-1", "mode": "cosine", "exact": True}).json()["search"] == "exact"
        assert c.post("/api/search/example", json={"id": "digits-1", "mode": "hamming", "nprobe": 0}).status_code == 422
    with TestClient(create_app(store, models_dir=ivf_models, nprobe=5, **FAST)) as c:
        r = c.post("/api/search/example", json={"id": "digits-10", "mode": "hamming", "k": 10}).json()
        assert r["search"] == "ivf nprobe=5/8"


def test_exact_index_refuses_nprobe(demo):
    store, models = demo
    with TestClient(create_app(store, models_dir=models, **FAST)) as c:
        r = c.post("/api/search/example", json={"id": "digits-1", "mode": "hamming", "nprobe": 2})
        assert r.status_code == 422 and "approximate" in r.json()["detail"]
        assert c.post("/api/search/example", json={"id": "digits-1", "mode": "hamming"}).json()["search"] == "exact"


def test_bad_batch_settings(demo):
    store, models = demo
    for kw in ({"max_batch": 0}, {"batch_window_ms": -1}, {"batch_workers": 0}, {"nprobe": 0}, {"search_threads": 0}):
        with pytest.raises(ValueError):
            create_app(store, models_dir=models, **kw)


def test_shutdown_with_queries_in_flight_does_not_hang(demo, ivf_models):
    store, _ = demo
    app = create_app(store, models_dir=ivf_models, batch_window_ms=5, **FAST)
    with TestClient(app) as c:
        _concurrent(c, [{"id": f"digits-{i}", "mode": "hamming", "k": 5} for i in range(8)])
    # lifespan closed the batcher: a late query is refused, not left waiting
    async def late():
        return await app.state.serve.batcher.submit(("hamming", 5, False, None), app.state.serve.matrix[0])

    with pytest.raises(BatcherClosed):
        asyncio.run(late())
