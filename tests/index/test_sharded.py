"""Sharded Hamming search (hardneg.index.ShardedSearch) equals the single-machine search."""

import numpy as np
import pytest

from hardneg.eval import hamming_distances
from hardneg.index import HammingIndex, build_ivf_index
from hardneg.index._sharded import ShardedSearch, merge_topk, shard_index


def _clustered_codes(seed, n, n_bits=64, n_centers=20, flip=0.05):
    rng = np.random.default_rng(seed)
    centers = rng.random((n_centers, n_bits)) < 0.5
    bits = centers[rng.integers(0, n_centers, n)] ^ (rng.random((n, n_bits)) < flip)
    return np.packbits(bits, axis=1)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    db = _clustered_codes(0, 2000)
    db[1500:1510] = db[7]  # duplicates across shards: ties broken by row
    ivf = build_ivf_index(db, folder / "whole.index", nlist=16, nprobe=3, chunk_rows=500)
    exact = HammingIndex(64)
    exact.add(db)
    return {"db": db, "q": np.concatenate([_clustered_codes(1, 15), db[[7]]]), "ivf": ivf, "exact": exact,
            "ivf_paths": shard_index(HammingIndex.load(folder / "whole.index"), 3, folder / "ivf"), "exact_paths": shard_index(exact, 3, folder / "exact")}


def _check_same(got, ref, q, db):
    np.testing.assert_array_equal(got[1], ref[1])
    true = hamming_distances(q, db)
    np.testing.assert_array_equal(np.take_along_axis(true, got[0], axis=1), got[1])
    assert all(len(set(r)) == len(r) for r in got[0].tolist())


def test_sharded_equals_single_machine_in_process(shards):
    db, q = shards["db"], shards["q"]
    got = ShardedSearch(shards["exact_paths"]).rank(q, k=20)
    ref = shards["exact"].rank(q, k=20)
    np.testing.assert_array_equal(got[0], ref[0])  # ties by row, as FAISS's flat scan
    np.testing.assert_array_equal(got[1], ref[1])
    search = ShardedSearch(shards["ivf_paths"])
    for nprobe in (1, 3, 16):  # the same lists probed in every shard: the same top-k distances as the whole IVF
        _check_same(search.rank(q, k=20, nprobe=nprobe), shards["ivf"].rank(q, k=20, nprobe=nprobe), q, db)
    np.testing.assert_array_equal(search.rank(q, k=20, nprobe=16)[1], ref[1])  # every list: exact
    assert search.rank(q[-1:], k=11, nprobe=16)[0][0, :11].tolist() == [7, *range(1500, 1510)]


def test_sharded_equals_single_machine_on_a_local_cluster(shards):
    distributed = pytest.importorskip("distributed")
    from hardneg.distributed import DaskRunner

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    client = distributed.Client(cluster)
    try:
        client.wait_for_workers(2, timeout=120)
        runner = DaskRunner(client)
        q = shards["q"]
        got = ShardedSearch(shards["exact_paths"], runner=runner).rank(q, k=20)
        ref = shards["exact"].rank(q, k=20)
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[1], ref[1])
        search = ShardedSearch(shards["ivf_paths"], runner=runner)
        local = ShardedSearch(shards["ivf_paths"])
        for nprobe in (2, 16):
            a, b = search.rank(q, k=20, nprobe=nprobe), local.rank(q, k=20, nprobe=nprobe)
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])
        assert len(set(search._pinned())) == 2  # the three shards spread over both workers
    finally:
        client.close()
        cluster.close()


def test_merge_and_bad_input(shards, tmp_path):
    a = (np.array([[5, -1]]), np.array([[3, 65]], np.int32))
    b = (np.array([[2, 9]]), np.array([[3, 1]], np.int32))
    rows, dist = merge_topk(a, b, 3)
    assert rows.tolist() == [[9, 2, 5]] and dist.tolist() == [[1, 3, 3]]
    assert merge_topk(b, a, 3)[0].tolist() == rows.tolist()
    with pytest.raises(ValueError, match="n_shards"):
        shard_index(shards["exact"], 5000, tmp_path)
    with pytest.raises(ValueError, match="no shard files"):
        ShardedSearch([])
    with pytest.raises(ValueError, match="bytes per code"):
        ShardedSearch(shards["exact_paths"]).rank(np.zeros((1, 4), np.uint8), k=3)
    with pytest.raises(ValueError, match="k"):
        ShardedSearch(shards["exact_paths"]).rank(shards["q"], k=5000)
