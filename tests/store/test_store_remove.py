"""Removing items from a store (vectors and all) and relocating its images:
``hardneg store remove`` / ``store relocate`` and the library functions, crash-safe."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import scipy.sparse as sp

from _helpers import run_cli as run
from hardneg.store import FeatureStore, StoreLockedError
from hardneg.store._edit import rebuild_store, relocate_images, remove_items

ENV = {**os.environ, "PYTHONPATH": os.getcwd()}


def make_store(path, n=10, chunk_rows=4, sparse=False):
    X = np.repeat(np.arange(n, dtype=np.float32)[:, None] + 1, 3, axis=1)  # row i holds i + 1
    with FeatureStore.create(path, dim=3, chunk_rows=chunk_rows, sparse=sparse, attrs={"class_names": ["x", "y"]}) as store:
        store.append(sp.csr_matrix(X) if sparse else X, ids=[f"f{i % 2}/i{i}" for i in range(n)], tags=[[f"t{i}"] for i in range(n)],
                     labels=[i % 2 for i in range(n)], split=["train" if i % 3 else "test" for i in range(n)])
    return X


@pytest.mark.parametrize("sparse", [False, True])
def test_remove_items_keeps_every_other_column(tmp_path, sparse):
    path = tmp_path / "s.store"
    X = make_store(path, sparse=sparse)
    (path / "codebook.npz").write_bytes(b"codebook bytes")
    assert remove_items(path, ["f1/i1", "f0/i4", "f1/i9"]) == 3
    store = FeatureStore.open(path)
    kept = [0, 2, 3, 5, 6, 7, 8]
    assert store.ids().tolist() == [f"f{i % 2}/i{i}" for i in kept]
    dense = store.to_numpy().toarray() if sparse else store.to_numpy()
    np.testing.assert_array_equal(dense, X[kept])
    assert store.items.column("tags").to_pylist() == [[f"t{i}"] for i in kept]
    assert store.labels().tolist() == [i % 2 for i in kept]
    assert store.items.column("split").to_pylist() == ["train" if i % 3 else "test" for i in kept]
    assert store.attrs["class_names"] == ["x", "y"] and store.is_sparse == sparse
    assert (path / "codebook.npz").read_bytes() == b"codebook bytes"
    assert store.verify().ok
    assert sorted(os.listdir(tmp_path)) == ["s.store"]  # nothing left beside it


def test_remove_refuses_unknown_ids_and_a_held_store(tmp_path):
    path = tmp_path / "s.store"
    make_store(path)
    with pytest.raises(ValueError, match="'nope'"):
        remove_items(path, ["nope"])
    with FeatureStore.open(path, mode="a"):
        with pytest.raises(StoreLockedError):
            remove_items(path, ["f0/i0"])
    assert len(FeatureStore.open(path)) == 10


KILLED = textwrap.dedent(
    """
    import sys, numpy as np
    from hardneg.store import FeatureStore
    from hardneg.store._edit import rebuild_store
    store = FeatureStore.open(sys.argv[1])
    store.take(np.arange(2))  # warm up (first-touch checks compile once) so the kill lands in the rebuild
    n = len(store)
    print("ready", flush=True)
    rebuild_store(sys.argv[1], np.arange(n) % 3 != 0, block_rows=64, progress=lambda rows: print("block", flush=True))
    print("done", flush=True)
    """
)


def test_remove_killed_at_a_random_point_leaves_the_old_or_the_new_store(tmp_path):
    rng = np.random.default_rng(0)
    n = 900
    X = np.repeat(np.arange(n, dtype=np.float32)[:, None], 4, axis=1)
    ids = [f"i{k}" for k in range(n)]
    seen = set()
    for trial in range(5):
        path = tmp_path / f"k{trial}.store"
        with FeatureStore.create(path, dim=4, chunk_rows=64) as store:
            store.append(X, ids=ids)
        proc = subprocess.Popen([sys.executable, "-c", KILLED, str(path)], stdout=subprocess.PIPE, text=True, env=ENV)
        assert proc.stdout.readline().strip() == "ready"
        # a random point of the rebuild: after a random number of the 15 blocks (15: the swap), plus a little
        for _ in range(int(rng.integers(0, 16))):
            if proc.stdout.readline().strip() != "block":
                break
        time.sleep(rng.uniform(0.0, 0.03))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        store = FeatureStore.open(path)
        assert store.verify().ok
        rows = store.to_numpy()[:, 0].astype(int)
        assert store.ids().tolist() == [f"i{k}" for k in rows]  # every id still with its own vector
        if len(store) == n:
            assert rows.tolist() == list(range(n))
            seen.add("old")
        else:
            assert rows.tolist() == [k for k in range(n) if k % 3]
            seen.add("new")
        left = [p for p in os.listdir(tmp_path) if p.startswith(f".k{trial}.")]
        seen.add("half-built copy left beside" if left else "nothing beside")
        # the next rebuild clears what the killed one left beside the store
        assert rebuild_store(path, np.arange(len(store)) != 0) == 1
        assert [p for p in os.listdir(tmp_path) if p.startswith(f".k{trial}.")] == []
        assert len(FeatureStore.open(path)) == len(store) - 1
    assert "old" in seen  # kills before the swap (most of the rebuild) leave the old store


def test_relocate_repoints_moved_images(tmp_path):
    photos = tmp_path / "photos"
    (photos / "a").mkdir(parents=True)
    for k in range(3):
        (photos / "a" / f"{k}.png").write_bytes(b"x")
    path = tmp_path / "s.store"
    with FeatureStore.create(path, dim=2, attrs={"image_paths": "relative-to-store"}) as store:
        store.append(np.ones((4, 2)), ids=["a/0", "a/1", "a/2", "other"],
                     paths=[f"../photos/a/{k}.png" for k in range(3)] + ["/elsewhere/z.png"])
    shutil.move(photos, tmp_path / "moved")
    with FeatureStore.open(path, mode="a") as store:
        with pytest.raises(ValueError, match="no such folder"):
            relocate_images(store, tmp_path / "photos", tmp_path / "nowhere")
        with pytest.raises(ValueError, match="no image path"):
            relocate_images(store, tmp_path / "unrelated", tmp_path / "moved")
        assert relocate_images(store, tmp_path / "photos", tmp_path / "moved") == 3
    paths = FeatureStore.open(path).items.column("path").to_pylist()
    assert paths == [f"../moved/a/{k}.png" for k in range(3)] + ["/elsewhere/z.png"]  # still relative to the store
    assert all((path / p).resolve().is_file() for p in paths[:3])


def test_cli_remove_and_relocate(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    photos = tmp_path / "photos"
    for d in ("cats", "dogs"):
        (photos / d).mkdir(parents=True)
        for k in range(3):
            (photos / d / f"{k}.png").write_bytes(b"x")
    with FeatureStore.create("s.store", dim=2, attrs={"image_paths": "relative-to-store"}) as store:
        ids = [f"{d}/{k}.png" for d in ("cats", "dogs") for k in range(3)]
        store.append(np.arange(12, dtype=np.float32).reshape(6, 2), ids=ids, paths=[f"../photos/{i}" for i in ids])
    code, _, err = run(capsys, "store", "remove", "s.store")
    assert code == 2 and "nothing to remove" in err
    os.rename("photos", "photos2")
    code, out, _ = run(capsys, "store", "remove", "s.store", "--missing", "--dry-run")
    assert code == 0 and "would remove 6 of 6" in out and len(FeatureStore.open("s.store")) == 6
    code, out, _ = run(capsys, "store", "relocate", "s.store", "--from", "photos", "--to", "photos2")
    assert code == 0 and "6 image path(s)" in out
    os.remove("photos2/dogs/1.png")
    code, out, _ = run(capsys, "store", "remove", "s.store", "--missing")
    assert code == 0 and "1 item(s) removed" in out
    (tmp_path / "drop.csv").write_text("id\ncats/0.png\n")
    code, out, _ = run(capsys, "store", "remove", "s.store", "--from-csv", "drop.csv", "--id", "cats/2.png")
    assert code == 0 and "2 item(s) removed" in out
    code, out, _ = run(capsys, "store", "remove", "s.store", "--folder", "dogs")
    assert code == 0 and "2 item(s) removed" in out
    store = FeatureStore.open("s.store")
    assert store.ids().tolist() == ["cats/1.png"] and store.to_numpy().tolist() == [[2.0, 3.0]] and store.verify().ok
    code, _, err = run(capsys, "store", "remove", "s.store", "--id", "nope")
    assert code == 2 and "nope" in err


def test_vectors_digest_follows_the_rows_vectors_not_their_tags(tmp_path):
    X = np.arange(40, dtype=np.float32).reshape(10, 4)
    path = tmp_path / "s"
    with FeatureStore.create(path, dim=4, chunk_rows=3) as st:
        st.append(X[:6], ids=[f"i{j}" for j in range(6)])
    first = FeatureStore.open(path).vectors_digest()
    assert isinstance(first, str) and len(first) == 32
    with FeatureStore.open(path, mode="a") as st:
        st.edit_items(add_tags={"i1": ["t"]}, labels={"i2": 3})
    assert FeatureStore.open(path).vectors_digest() == first  # labels and tags are not the rows' vectors
    remove_items(path, ["i0"])
    with FeatureStore.open(path, mode="a") as st:
        st.append(X[6:7], ids=["new"])
    assert len(FeatureStore.open(path)) == 6 and FeatureStore.open(path).vectors_digest() != first
    # the same rows written again give the same digest (it depends on content, not on history)
    with FeatureStore.create(tmp_path / "again", dim=4, chunk_rows=3) as st:
        st.append(X[:6], ids=[f"x{j}" for j in range(6)])
    assert FeatureStore.open(tmp_path / "again").vectors_digest() == first


def test_rows_of_finds_ids_in_one_pass_and_marks_the_missing(tmp_path):
    with FeatureStore.create(tmp_path / "s", dim=2, chunk_rows=2) as st:
        st.append(np.zeros((3, 2), np.float32), ids=["a", "b", "c"])
        st.append(np.zeros((2, 2), np.float32), ids=["d", "e"])  # a second item-table part
    st = FeatureStore.open(tmp_path / "s")
    np.testing.assert_array_equal(st.rows_of(["e", "zz", "a", "e", "c"]), [4, -1, 0, 4, 2])
    assert st.rows_of([]).shape == (0,) and st.rows_of(["a"]).dtype == np.int64
    remove_items(tmp_path / "s", ["b"])
    np.testing.assert_array_equal(FeatureStore.open(tmp_path / "s").rows_of(["b", "c", "e"]), [-1, 1, 3])
