"""Stores read from fsspec URLs (object stores): the same rows and checks as a local folder.

``memory://`` stands in for an object store in process; a loopback HTTP server
serves a store folder to the processes of a Dask LocalCluster, which open it by
URL themselves.
"""

from __future__ import annotations

import functools
import http.server
import threading

import numpy as np
import pytest
import scipy.sparse as sp

fsspec = pytest.importorskip("fsspec")

from hardneg.store import FeatureStore, StoreDamagedError, StoreError  # noqa: E402


def _upload(local, name: str) -> str:
    fs = fsspec.filesystem("memory")
    fs.put(str(local), f"/bucket/{name}", recursive=True)
    return f"memory://bucket/{name}"


@pytest.fixture()
def dense(tmp_path):
    X = np.random.default_rng(0).random((1000, 8)).astype(np.float32)
    with FeatureStore.create(tmp_path / "d.store", dim=8, chunk_rows=128) as st:
        st.append(X, labels=np.arange(1000) % 3, tags=[["a"] if i % 2 else [] for i in range(1000)], split=["train"] * 600 + ["test"] * 400)
    yield tmp_path / "d.store", X, _upload(tmp_path / "d.store", f"d-{tmp_path.name}.store")


def test_a_dense_store_reads_the_same_from_a_url(dense):
    local_path, X, url = dense
    local, remote = FeatureStore.open(local_path), FeatureStore.open(url)
    assert str(remote.path) == url and len(remote) == 1000 and remote.dim == 8
    assert np.array_equal(remote.to_numpy(), X)
    rows = np.array([999, 3, 500, 3, 128])
    assert np.array_equal(remote.take(rows), X[rows])
    assert remote.items.equals(local.items)
    assert np.array_equal(remote.select(tags=["a"], split="test"), local.select(tags=["a"], split="test"))
    blocks = [(start, block) for start, block in remote.iter_chunks(300, start=100, stop=950)]
    assert [s for s, _ in blocks] == [100, 400, 700] and np.array_equal(np.vstack([b for _, b in blocks]), X[100:950])
    assert np.array_equal(remote.to_dask(chunk_rows=250).compute(), X)
    assert remote.verify().ok


def test_a_sparse_store_reads_the_same_from_a_url(tmp_path):
    X = sp.random(500, 50, density=0.05, format="csr", dtype=np.float32, random_state=1)
    with FeatureStore.create(tmp_path / "s.store", dim=50, sparse=True, chunk_rows=64) as st:
        st.append(X)
    remote = FeatureStore.open(_upload(tmp_path / "s.store", f"s-{tmp_path.name}.store"))
    assert remote.is_sparse and remote.nnz == X.nnz
    got = remote.to_numpy()
    assert sp.issparse(got) and (got != X).nnz == 0
    assert (remote.take([7, 499, 0]) != X[[7, 499, 0]]).nnz == 0
    assert remote.verify().ok


def test_damage_on_the_object_store_is_named(dense):
    _, _, url = dense
    fs, root = fsspec.core.url_to_fs(url)
    fs.rm(f"{root}/vectors/X/c/3/0")
    fs.pipe_file(f"{root}/vectors/X/c/5/0", fs.cat_file(f"{root}/vectors/X/c/5/0")[:100])
    store = FeatureStore.open(url)
    assert np.asarray(store.take([0])).shape == (1, 8)  # undamaged chunks still read
    with pytest.raises(StoreDamagedError, match=r"vectors/X/c/3/0 is missing \(rows 384-511\)"):
        store.to_numpy()
    with pytest.raises(StoreDamagedError, match=r"vectors/X/c/5/0 is damaged: 100 bytes"):
        store.take([700])
    problems = store.verify().problems
    assert len(problems) == 2 and "c/3/0 is missing" in problems[0] and "c/5/0 is damaged" in problems[1]
    with pytest.raises(StoreError, match="is not a FeatureStore"):
        FeatureStore.open("memory://bucket/no-such.store")


def test_object_stores_are_read_only_and_need_their_backend(dense):
    _, _, url = dense
    with pytest.raises(StoreError, match="open read-only"):
        FeatureStore.open(url, mode="a")
    with pytest.raises(ValueError, match="written to a local or shared-filesystem folder"):
        FeatureStore.create("memory://bucket/new.store", dim=4)
    with pytest.raises(StoreError, match=r"cannot open nosuchproto:// URLs here"):
        FeatureStore.open("nosuchproto://bucket/x.store")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture()
def http_store(tmp_path):
    pytest.importorskip("aiohttp", reason="fsspec's HTTP filesystem needs aiohttp (in the test extra)")
    rng = np.random.default_rng(2)
    X = rng.random((3000, 16)).astype(np.float32)
    X[:100, 0] += 1.5
    with FeatureStore.create(tmp_path / "h.store", dim=16, chunk_rows=256) as st:
        st.append(X, tags=[["boat"] if i < 100 else [] for i in range(3000)])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield tmp_path / "h.store", X, f"http://127.0.0.1:{server.server_address[1]}/h.store"
    server.shutdown()
    server.server_close()


def test_cluster_workers_read_a_store_by_url_and_match_in_process(http_store):
    distributed = pytest.importorskip("distributed")
    from hardneg.concept import NegativeBootstrap
    from hardneg.concept import search
    from hardneg.distributed import DaskRunner

    local, X, url = http_store
    model = NegativeBootstrap(n_iter=2, random_state=0).fit(X[:50], X[200:1200]).compress(n_bins=20)
    here = search(model, local, k=40, partition_rows=512)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        there = search(model, url, k=40, partition_rows=512, runner=DaskRunner(client))
        opened = client.run(_stores_opened_here)
    assert np.array_equal(here.rows, there.rows) and np.array_equal(here.scores, there.scores) and here.ids == there.ids
    assert sum(opened.values()) >= 1  # the workers opened the store by its URL themselves


def _stores_opened_here() -> int:
    from hardneg._parallel._partition import _open_store

    return _open_store.cache_info().currsize


def test_cli_reads_a_store_by_url(http_store, tmp_path, capsys):
    import json

    from hardneg.cli.main import main
    from hardneg.concept import NegativeBootstrap

    local, X, url = http_store
    NegativeBootstrap(n_iter=2, random_state=0).fit(X[:50], X[200:1200]).compress(n_bins=20).save(tmp_path / "boat.npz")
    base = ["concept", "search", str(tmp_path / "boat.npz")]
    assert main(base + [str(local), "-k", "9", "--json"]) == 0
    here = json.loads(capsys.readouterr().out)
    assert main(base + [url, "-k", "9", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == here
    assert main(["store", "verify", url]) == 0
    assert main(["store", "tag", url, "--add", "x", "--id", "1"]) == 2  # read-only: refused with one line
    assert "read-only" in capsys.readouterr().err
