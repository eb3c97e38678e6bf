"""FeatureStore: round trips, selection, sampling, crash safety, locking."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import scipy.sparse as sp

from hardneg.store import FeatureStore, StoreError, StoreLockedError
from hardneg.store import _writer as writer_mod


@pytest.fixture
def dense_store(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((50, 6), dtype=np.float32)
    with FeatureStore.create(tmp_path / "d", dim=6, chunk_rows=8) as store:
        store.append(X[:20], labels=np.arange(20) % 3, tags=[["cat"] if i % 3 == 0 else ["dog", "pet"] for i in range(20)], split="train")
        store.append(X[20:], labels=np.arange(20, 50) % 3, tags=[["cat"] if i % 3 == 0 else [] for i in range(20, 50)], split="test")
    return FeatureStore.open(tmp_path / "d"), X


def test_dense_round_trip_and_chunks(dense_store):
    store, X = dense_store
    assert (len(store), store.dim, store.is_sparse) == (50, 6, False)
    np.testing.assert_array_equal(store.to_numpy(), X)
    starts, blocks = zip(*store.iter_chunks(16))
    assert starts == (0, 16, 32, 48)
    np.testing.assert_array_equal(np.vstack(blocks), X)
    np.testing.assert_array_equal(np.vstack([b for _, b in store.iter_chunks(7, start=5, stop=30)]), X[5:30])


def test_take_any_order_with_repeats(dense_store):
    store, X = dense_store
    idx = np.array([49, 0, 7, 7, 23])
    np.testing.assert_array_equal(store.take(idx), X[idx])
    assert store.take(np.array([], dtype=int)).shape == (0, 6)
    with pytest.raises(IndexError):
        store.take([50])
    with pytest.raises(TypeError):
        store.take([0.5])


def test_select_by_tags_labels_split(dense_store):
    store, _ = dense_store
    assert store.select(tags="cat").tolist() == list(range(0, 50, 3))
    assert store.select(tags=["pet"]).tolist() == [i for i in range(20) if i % 3]
    assert store.select(labels=[1], split="test").tolist() == [i for i in range(20, 50) if i % 3 == 1]
    assert store.select(split=["train", "test"]).size == 50


def test_sample_excludes_and_is_seeded(dense_store):
    store, _ = dense_store
    a = store.sample(10, 3, exclude_tags=["cat"], exclude_ids=["1", "2"])
    b = store.sample(10, 3, exclude_tags=["cat"], exclude_ids=["1", "2"])
    np.testing.assert_array_equal(a, b)
    assert len(set(a.tolist())) == 10
    assert not set(a.tolist()) & (set(range(0, 50, 3)) | {1, 2})
    with pytest.raises(ValueError, match="larger than"):
        store.sample(40, 0, exclude_tags="cat")


def test_multilabel_and_unlabelled(tmp_path):
    with FeatureStore.create(tmp_path / "m", dim=2) as store:
        store.append(np.ones((3, 2)), labels=[[1, 4], [], [2]])
        store.append(np.ones((1, 2)))
    store = FeatureStore.open(tmp_path / "m")
    assert store.labels().tolist() == [1, -1, 2, -1]
    assert store.select(labels=4).tolist() == [0]
    assert store.items.column("labels").to_pylist()[0] == [1, 4]


def test_sparse_round_trip(tmp_path):
    A = sp.random(40, 30, density=0.2, format="csr", random_state=1, dtype=np.float32)
    with FeatureStore.create(tmp_path / "s", dim=30, sparse=True) as store:
        store.append(A[:13])
        store.append(A[13:])
    store = FeatureStore.open(tmp_path / "s")
    assert store.is_sparse and len(store) == 40
    assert abs(store.to_numpy() - A).max() == 0
    idx = np.array([39, 2, 2, 17])
    assert abs(store.take(idx) - A[idx]).max() == 0
    assert abs(sp.vstack([b for _, b in store.iter_chunks(9)]) - A).max() == 0
    with FeatureStore.open(tmp_path / "s", mode="a") as store:  # dense rows go in as CSR
        store.append(np.eye(30)[:2])
    assert abs(FeatureStore.open(tmp_path / "s").take([40, 41]) - sp.eye(30).tocsr()[:2]).max() == 0


def test_dask_view(dense_store, tmp_path):
    pytest.importorskip("dask")
    store, X = dense_store
    np.testing.assert_array_equal(store.to_dask(chunk_rows=16).compute(), X)
    np.testing.assert_allclose(store.to_dask().sum(axis=0).compute(), X.sum(axis=0), rtol=1e-5)


def test_bad_input_is_refused_and_loses_nothing(tmp_path):
    with FeatureStore.create(tmp_path / "b", dim=3) as store:
        store.append(np.ones((2, 3)), ids=["a", "b"])
        with pytest.raises(ValueError, match="NaN"):
            store.append(np.array([[1, np.nan, 0]]))
        with pytest.raises(ValueError, match="3"):
            store.append(np.ones((2, 4)))
        with pytest.raises(ValueError, match="already exist"):
            store.append(np.ones((1, 3)), ids=["a"])
        with pytest.raises(ValueError, match="labels"):
            store.append(np.ones((2, 3)), labels=[1])
    store = FeatureStore.open(tmp_path / "b")
    assert len(store) == 2 and store.ids().tolist() == ["a", "b"]


def test_read_only_and_errors(tmp_path, dense_store):
    store, _ = dense_store
    with pytest.raises(StoreError, match="read-only"):
        store.append(np.ones((1, 6)))
    with pytest.raises(StoreError, match="not a FeatureStore"):
        FeatureStore.open(tmp_path)
    with pytest.raises(StoreError, match="already exists"):
        FeatureStore.create(store.path, dim=6)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "keep.txt").write_text("x")
    with pytest.raises(StoreError, match="non-empty"):
        FeatureStore.create(tmp_path / "junk", dim=2, overwrite=True)
    meta = json.loads((store.path / "meta.json").read_text())
    meta["format_version"] = 99
    (store.path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(StoreError, match="version 99"):
        FeatureStore.open(store.path)
    (store.path / "meta.json").write_text("{not json")
    with pytest.raises(StoreError, match="corrupt"):
        FeatureStore.open(store.path)


def test_second_writer_is_refused(tmp_path):
    writer = FeatureStore.create(tmp_path / "w", dim=2)
    with pytest.raises(StoreLockedError):
        FeatureStore.open(tmp_path / "w", mode="a")
    code = f"from hardneg.store import FeatureStore\nFeatureStore.open({str(tmp_path / 'w')!r}, mode='a')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode != 0 and "another process is writing" in proc.stderr
    writer.close()
    FeatureStore.open(tmp_path / "w", mode="a").close()  # free again once closed


@pytest.mark.parametrize("fail_at", ["parquet", "rename", "commit"])
def test_failure_inside_append_keeps_committed_batches(tmp_path, monkeypatch, fail_at):
    with FeatureStore.create(tmp_path / "f", dim=4, chunk_rows=3) as store:
        store.append(np.full((5, 4), 1.0))

        def boom(*a, **k):
            raise OSError("disk gone")

        target = {"parquet": (writer_mod.pq, "write_table"), "rename": (writer_mod.os, "replace"), "commit": (writer_mod, "atomic_write_text")}[fail_at]
        monkeypatch.setattr(*target, boom)
        with pytest.raises(OSError):
            store.append(np.full((4, 4), 2.0))
        monkeypatch.undo()
    store = FeatureStore.open(tmp_path / "f")
    assert len(store) == 5
    np.testing.assert_array_equal(store.to_numpy(), np.full((5, 4), 1.0))
    with FeatureStore.open(tmp_path / "f", mode="a") as store:  # the next writer trims the leftovers
        store.append(np.full((2, 4), 3.0))
    store = FeatureStore.open(tmp_path / "f")
    np.testing.assert_array_equal(store.to_numpy()[5:], np.full((2, 4), 3.0))
    assert sorted(p.name for p in (store.path / "items").iterdir()) == ["part-00000000.parquet", "part-00000001.parquet"]


WRITER = textwrap.dedent(
    """
    import sys, numpy as np
    from hardneg.store import FeatureStore
    path, sparse = sys.argv[1], sys.argv[2] == "1"
    store = FeatureStore.open(path, mode="a")
    import scipy.sparse as sp
    while True:
        n = len(store)
        rows = np.arange(n, n + 7, dtype=np.float32)[:, None] * np.ones((1, 5), np.float32) + 1
        store.append(sp.csr_matrix(rows) if sparse else rows, ids=[str(i) for i in range(n, n + 7)], tags=[["t%d" % i] for i in range(n, n + 7)])
        print(len(store), flush=True)
    """
)


@pytest.mark.parametrize("sparse", [False, True])
def test_killed_writer_leaves_every_completed_batch(tmp_path, sparse):
    path = tmp_path / "k"
    FeatureStore.create(path, dim=5, sparse=sparse, chunk_rows=16).close()
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    rng = np.random.default_rng(0)
    for round_ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "1" if sparse else "0"], stdout=subprocess.PIPE, text=True, env=env)
        seen = 0
        target = 2 + round_ * 3
        while seen < target:  # let a few batches commit, then kill at a random moment
            line = proc.stdout.readline()
            assert line, "writer died on its own"
            seen += 1
        time.sleep(float(rng.uniform(0, 0.05)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        last_reported = int(line)
        store = FeatureStore.open(path)
        n = len(store)
        assert n >= last_reported and n % 7 == 0
        X = store.to_numpy()
        X = X.toarray() if sparse else X
        np.testing.assert_array_equal(X, (np.arange(n, dtype=np.float32)[:, None] + 1) * np.ones((1, 5)))
        assert store.ids().tolist() == [str(i) for i in range(n)]
        assert store.select(tags=f"t{n - 1}").tolist() == [n - 1]
