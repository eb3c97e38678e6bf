"""FeatureStore hardening: overwrite locking, integrity checks and checksums,
malformed metadata, temp-file leftovers, row and label validation."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from _helpers import run_cli
from hardneg.store import FeatureStore, StoreError, StoreLockedError
from hardneg.store import _writer as writer_mod

ENV = {**os.environ, "PYTHONPATH": os.getcwd()}


def make_dense(path, n=10, dim=4, chunk_rows=4):
    X = np.arange(n * dim, dtype=np.float32).reshape(n, dim) + 1
    with FeatureStore.create(path, dim=dim, chunk_rows=chunk_rows) as store:
        store.append(X[: n // 2], tags=[["a"]] * (n // 2), labels=list(range(n // 2)))
        store.append(X[n // 2 :])
    return X


def make_sparse(path):
    A = sp.random(30, 12, density=0.3, format="csr", random_state=0, dtype=np.float32)
    with FeatureStore.create(path, dim=12, sparse=True) as store:
        store.append(A[:10])
        store.append(A[10:])
    return A


def edit_meta(path, fn):
    meta = json.loads((path / "meta.json").read_text())
    meta = fn(meta)
    (path / "meta.json").write_text(json.dumps(meta))


def chunk(path, c, name="X"):
    return path / "vectors" / name / "c" / str(c) / ("0" if name == "X" else "")


# ---------------------------------------------------------------------------- overwrite and create

HOLDER = textwrap.dedent(
    """
    import sys, numpy as np
    from hardneg.store import FeatureStore
    store = FeatureStore.open(sys.argv[1], mode="a")
    print("ready", flush=True)
    sys.stdin.read()  # hold the store open until the test closes our stdin
    store.append(np.ones((1, store.dim)))
    store.close()
    """
)


def test_overwrite_is_refused_while_another_process_appends(tmp_path):
    path = tmp_path / "held"
    make_dense(path)
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert proc.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError, match="another process is writing"):
            FeatureStore.create(path, dim=4, overwrite=True)
        assert len(FeatureStore.open(path)) == 10  # untouched
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    store = FeatureStore.open(path)
    assert len(store) == 11 and store.verify().ok  # the writer's append landed in a readable store
    FeatureStore.create(path, dim=4, overwrite=True).close()  # free again: now it may go
    assert len(FeatureStore.open(path)) == 0


def test_overwrite_is_refused_while_this_process_appends(tmp_path):
    make_dense(tmp_path / "s")
    writer = FeatureStore.open(tmp_path / "s", mode="a")
    with pytest.raises(StoreLockedError):
        FeatureStore.create(tmp_path / "s", dim=4, overwrite=True)
    writer.close()
    with FeatureStore.create(tmp_path / "s", dim=3, overwrite=True) as store:
        assert (len(store), store.dim) == (0, 3)


def test_overwrite_keeps_the_old_store_when_building_fails(tmp_path, monkeypatch):
    make_dense(tmp_path / "s")

    def boom(*a, **k):
        raise OSError("disk full")

    import zarr  # the store imports Zarr where it writes, not at module level

    monkeypatch.setattr(zarr, "open_group", boom)
    with pytest.raises(OSError):
        FeatureStore.create(tmp_path / "s", dim=4, overwrite=True)
    monkeypatch.undo()
    assert len(FeatureStore.open(tmp_path / "s")) == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]  # no temporary folders left


def test_existing_store_message_reads_right_for_python_and_cli(tmp_path, capsys):
    make_dense(tmp_path / "s")
    with pytest.raises(StoreError, match=r"already exists \(overwrite=True / --overwrite replaces it\)"):
        FeatureStore.create(tmp_path / "s", dim=4)


def test_cli_import_overwrite_refused_while_store_is_open(tmp_path, capsys):
    make_dense(tmp_path / "s")
    with FeatureStore.open(tmp_path / "s", mode="a"):
        code, _, err = run_cli(capsys, "datasets", "import", "digits", str(tmp_path / "s"), "--overwrite")
    assert code == 2 and "another process is writing" in err and "Traceback" not in err
    assert len(FeatureStore.open(tmp_path / "s")) == 10


def test_create_with_missing_parent_builds_beside_the_target(tmp_path, monkeypatch):
    seen = []
    real = writer_mod.tempfile.mkdtemp

    def spy(*args, **kwargs):
        seen.append(kwargs.get("dir"))
        return real(*args, **kwargs)

    monkeypatch.setattr(writer_mod.tempfile, "mkdtemp", spy)
    target = tmp_path / "new" / "deeper" / "s"
    FeatureStore.create(target, dim=2).close()
    assert seen and all(d is not None and os.path.samefile(d, target.parent) for d in seen)
    assert len(FeatureStore.open(target)) == 0
    assert sorted(p.name for p in target.parent.iterdir()) == ["s"]


# ---------------------------------------------------------------------------- integrity on open


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: {**m, "n_rows": m["n_rows"] + 5}, "rows"),
        (lambda m: {**m, "dim": 5}, "dim"),
        (lambda m: {**m, "chunk_rows": 3}, "chunk"),
    ],
)
def test_meta_inconsistent_with_arrays_is_refused(tmp_path, change, message):
    make_dense(tmp_path / "s")
    edit_meta(tmp_path / "s", change)
    for mode in ("r", "a"):
        with pytest.raises(StoreError, match=message):
            FeatureStore.open(tmp_path / "s", mode=mode)


def test_sparse_meta_inconsistent_with_arrays_is_refused(tmp_path):
    make_sparse(tmp_path / "s")
    edit_meta(tmp_path / "s", lambda m: {**m, "nnz": m["nnz"] - 1})
    with pytest.raises(StoreError, match="nnz"):
        FeatureStore.open(tmp_path / "s")


@pytest.mark.parametrize("name", ["../evil.parquet", "/etc/passwd", "sub/part.parquet", "..", "", "a\\b.parquet"])
def test_part_paths_outside_the_store_are_refused(tmp_path, name):
    make_dense(tmp_path / "s")
    edit_meta(tmp_path / "s", lambda m: {**m, "parts": [name, m["parts"][1]]})
    with pytest.raises(StoreError, match="part"):
        FeatureStore.open(tmp_path / "s")


@pytest.mark.parametrize(
    "change",
    [
        lambda m: [m],
        lambda m: "store",
        lambda m: {k: v for k, v in m.items() if k != "dim"},
        lambda m: {k: v for k, v in m.items() if k != "parts"},
        lambda m: {k: v for k, v in m.items() if k != "n_rows"},
        lambda m: {**m, "n_rows": "10"},
        lambda m: {**m, "n_rows": -1},
        lambda m: {**m, "dim": True},
        lambda m: {**m, "dim": 4.0},
        lambda m: {**m, "sparse": "no"},
        lambda m: {**m, "parts": "part-00000000.parquet"},
        lambda m: {**m, "parts": [1, 2]},
        lambda m: {**m, "parts": [m["parts"][0], m["parts"][0]]},
        lambda m: {**m, "attrs": []},
        lambda m: {**m, "checksums": []},
        lambda m: {**m, "checksums": {**m["checksums"], "chunks": {"X": [1]}}},
        lambda m: {**m, "checksums": {**m["checksums"], "parts": {}}},
        lambda m: {**m, "checksums": {**m["checksums"], "algorithm": "md5"}},
    ],
)
def test_malformed_meta_is_a_store_error(tmp_path, change):
    make_dense(tmp_path / "s")
    edit_meta(tmp_path / "s", change)
    for mode in ("r", "a"):
        with pytest.raises(StoreError) as info:
            FeatureStore.open(tmp_path / "s", mode=mode)
        assert "\n" not in str(info.value)
    FeatureStore.create(tmp_path / "s", dim=4, overwrite=True).close()  # a lock left behind would refuse this


def test_malformed_zarr_metadata_is_a_store_error(tmp_path):
    make_dense(tmp_path / "s")
    (tmp_path / "s" / "vectors" / "X" / "zarr.json").write_text("[1, 2]")
    with pytest.raises(StoreError, match="zarr.json"):
        FeatureStore.open(tmp_path / "s")


# ---------------------------------------------------------------------------- damaged chunks


def test_missing_chunk_is_a_clear_error_naming_it(tmp_path):
    X = make_dense(tmp_path / "s")
    chunk(tmp_path / "s", 1).unlink()
    store = FeatureStore.open(tmp_path / "s")
    np.testing.assert_array_equal(store.take([0, 9]), X[[0, 9]])  # other chunks still read
    for read in (store.to_numpy, lambda: list(store.iter_chunks(3)), lambda: store.take([5]), store.to_dask):
        with pytest.raises(StoreError, match=r"vectors/X/c/1/0.*missing"):
            read()
    report = store.verify()
    assert not report.ok and any("vectors/X/c/1/0" in p and "missing" in p for p in report.problems)


def test_truncated_chunk_is_a_clear_error_naming_it(tmp_path):
    make_dense(tmp_path / "s")
    f = chunk(tmp_path / "s", 2)
    f.write_bytes(f.read_bytes()[:10])
    store = FeatureStore.open(tmp_path / "s")
    with pytest.raises(StoreError, match=r"vectors/X/c/2/0.*10 bytes"):
        store.to_numpy()
    assert any("vectors/X/c/2/0" in p for p in store.verify().problems)


@pytest.mark.parametrize("garbage", [b"\xff", b"\x7f\x80\x00\x00"[::-1]])  # NaN bytes, +inf as little-endian float32
def test_garbage_chunk_never_reads_as_nan(tmp_path, garbage):
    make_dense(tmp_path / "s")
    f = chunk(tmp_path / "s", 0)
    f.write_bytes(garbage * (f.stat().st_size // len(garbage)))
    store = FeatureStore.open(tmp_path / "s")
    with pytest.raises(StoreError, match=r"vectors/X/c/0/0"):
        store.to_numpy()
    with pytest.raises(StoreError, match=r"vectors/X/c/0/0"):
        store.take([1])
    assert any("vectors/X/c/0/0" in p for p in store.verify().problems)


def test_random_garbage_in_a_large_chunk_is_caught_on_read(tmp_path):
    rng = np.random.default_rng(0)
    with FeatureStore.create(tmp_path / "s", dim=64, chunk_rows=256) as store:
        store.append(rng.random((300, 64), dtype=np.float32))
    f = chunk(tmp_path / "s", 0)
    f.write_bytes(rng.bytes(f.stat().st_size))
    with pytest.raises(StoreError, match="vectors/X/c/0/0"):
        list(FeatureStore.open(tmp_path / "s").iter_chunks())


def test_finite_tampering_is_found_by_verify(tmp_path, capsys):
    X = make_dense(tmp_path / "s")
    code, out, _ = run_cli(capsys, "store", "verify", str(tmp_path / "s"))
    assert code == 0 and out.startswith("OK")
    f = chunk(tmp_path / "s", 1)
    raw = bytearray(f.read_bytes())
    raw[0] ^= 1  # lowest mantissa bit of row 4, column 0: still a finite number
    f.write_bytes(bytes(raw))
    store = FeatureStore.open(tmp_path / "s")
    assert store.to_numpy()[4, 0] != X[4, 0]  # reads do not hash (see the module docstring) ...
    report = store.verify()  # ... verify does
    assert not report.ok and len(report.problems) == 1 and "vectors/X/c/1/0" in report.problems[0] and "checksum" in report.problems[0]
    code, out, err = run_cli(capsys, "store", "verify", str(tmp_path / "s"))
    assert code == 2 and "vectors/X/c/1/0" in out and "Traceback" not in err


def test_damaged_last_chunk_is_not_extended(tmp_path):
    make_dense(tmp_path / "s")  # 10 rows in chunks of 4: chunk 2 holds 2 committed rows
    f = chunk(tmp_path / "s", 2)
    raw = bytearray(f.read_bytes())
    raw[0] ^= 1
    f.write_bytes(bytes(raw))
    with FeatureStore.open(tmp_path / "s", mode="a") as store:
        with pytest.raises(StoreError, match="vectors/X/c/2/0"):
            store.append(np.ones((1, 4)))
    assert len(FeatureStore.open(tmp_path / "s")) == 10


def test_sparse_damage_is_caught(tmp_path):
    A = make_sparse(tmp_path / "s")
    store = FeatureStore.open(tmp_path / "s")
    assert store.verify().ok
    f = tmp_path / "s" / "vectors" / "indices" / "c" / "0"
    good = f.read_bytes()
    f.write_bytes(b"\xff" * len(good))  # column indices -1: must not reach scipy or a kernel
    store = FeatureStore.open(tmp_path / "s")
    for read in (store.to_numpy, lambda: store.take([3]), lambda: list(store.iter_chunks(7))):
        with pytest.raises(StoreError, match="vectors/indices"):
            read()
    assert any("vectors/indices/c/0" in p for p in store.verify().problems)
    f.unlink()
    with pytest.raises(StoreError, match=r"vectors/indices/c/0.*missing"):
        FeatureStore.open(tmp_path / "s").to_numpy()
    f.write_bytes(good)
    assert abs(FeatureStore.open(tmp_path / "s").to_numpy() - A).max() == 0


# ---------------------------------------------------------------------------- item parts


def test_tampered_part_is_a_store_error(tmp_path):
    make_dense(tmp_path / "s")
    part = tmp_path / "s" / "items" / "part-00000001.parquet"
    raw = bytearray(part.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    part.write_bytes(bytes(raw))
    store = FeatureStore.open(tmp_path / "s")
    with pytest.raises(StoreError, match="part-00000001.parquet"):
        store.items
    assert any("part-00000001.parquet" in p for p in store.verify().problems)


@pytest.mark.parametrize("damage", ["footer", "truncate", "delete", "schema"])
def test_unreadable_part_is_a_store_error_without_checksums(tmp_path, damage):
    make_dense(tmp_path / "s")
    edit_meta(tmp_path / "s", lambda m: {k: v for k, v in m.items() if k != "checksums"})  # an older store
    part = tmp_path / "s" / "items" / "part-00000000.parquet"
    raw = part.read_bytes()
    if damage == "footer":
        part.write_bytes(raw[:-12] + bytes(8) + raw[-4:])
    elif damage == "truncate":
        part.write_bytes(raw[: len(raw) // 3])
    elif damage == "delete":
        part.unlink()
    else:
        import pyarrow as pa

        pq.write_table(pa.table({"x": [1, 2, 3, 4, 5]}), part)
    store = FeatureStore.open(tmp_path / "s")
    with pytest.raises(StoreError, match="part-00000000.parquet") as info:
        store.labels()
    assert "\n" not in str(info.value)
    assert not store.verify().ok


# ---------------------------------------------------------------------------- checksums over time


def test_checksums_track_appends_and_ignore_uncommitted_leftovers(tmp_path):
    import zarr

    X = make_dense(tmp_path / "s")
    # What a writer killed before its commit leaves: rows past n_rows in the last chunk.
    arr = zarr.open_array(str(tmp_path / "s" / "vectors" / "X"), mode="r+")
    arr.resize((12, 4))
    arr[10:12] = 99.0
    store = FeatureStore.open(tmp_path / "s")
    assert len(store) == 10 and store.verify().ok
    np.testing.assert_array_equal(store.to_numpy(), X)
    with FeatureStore.open(tmp_path / "s", mode="a") as store:
        store.append(np.zeros((7, 4)))  # all-zero chunks are written too: a missing chunk is damage
        store.append(np.full((1, 4), 5.0))
    store = FeatureStore.open(tmp_path / "s")
    report = store.verify()
    assert report.ok and report.checksums, report.problems
    np.testing.assert_array_equal(store.to_numpy(), np.vstack([X, np.zeros((7, 4)), np.full((1, 4), 5.0)]))
    assert chunk(tmp_path / "s", 3).is_file()


def test_sparse_checksums_track_appends(tmp_path):
    with FeatureStore.create(tmp_path / "s", dim=5, sparse=True) as store:
        assert store.verify().ok
        store.append(sp.csr_matrix((3, 5), dtype=np.float32))  # empty rows only
        store.append(np.eye(5)[:2])
    store = FeatureStore.open(tmp_path / "s")
    assert store.verify().ok
    np.testing.assert_array_equal(store.to_numpy().toarray(), np.vstack([np.zeros((3, 5)), np.eye(5)[:2]]))


def test_store_without_checksums_still_opens_and_verifies(tmp_path, capsys):
    X = make_dense(tmp_path / "s")
    edit_meta(tmp_path / "s", lambda m: {k: v for k, v in m.items() if k != "checksums"})
    store = FeatureStore.open(tmp_path / "s")
    np.testing.assert_array_equal(store.to_numpy(), X)
    report = store.verify()
    assert report.ok and not report.checksums and "no checksums recorded" in str(report)
    with FeatureStore.open(tmp_path / "s", mode="a") as store:
        store.append(np.ones((3, 4)))
    assert FeatureStore.open(tmp_path / "s").verify().ok
    code, out, _ = run_cli(capsys, "store", "verify", str(tmp_path / "s"))
    assert code == 0 and "no checksums recorded" in out


def test_cli_verify_of_a_store_that_cannot_open_exits_2(tmp_path, capsys):
    make_dense(tmp_path / "s")
    edit_meta(tmp_path / "s", lambda m: [m])
    code, _, err = run_cli(capsys, "store", "verify", str(tmp_path / "s"))
    assert code == 2 and "meta.json" in err and "Traceback" not in err


# ---------------------------------------------------------------------------- leftovers of a killed writer


def test_writer_removes_temporary_files_left_by_a_kill(tmp_path):
    X = make_dense(tmp_path / "s")
    leftovers = [
        chunk(tmp_path / "s", 2).with_name("0.0123456789abcdef0123456789abcdef.partial"),
        tmp_path / "s" / "vectors" / "X" / "zarr.0123456789abcdef0123456789abcdef.partial",
        tmp_path / "s" / "meta.json.k2j3h4.tmp",
        tmp_path / "s" / "items" / "part-00000002.parquet.abc.tmp",
    ]
    for f in leftovers:
        f.write_bytes(b"junk")
    FeatureStore.open(tmp_path / "s").close()  # readers change nothing
    assert all(f.exists() for f in leftovers)
    with FeatureStore.open(tmp_path / "s", mode="a") as store:
        store.append(np.ones((1, 4)))
    assert not any(f.exists() for f in leftovers)
    store = FeatureStore.open(tmp_path / "s")
    assert store.verify().ok
    np.testing.assert_array_equal(store.to_numpy()[:10], X)


# ---------------------------------------------------------------------------- row arguments


def test_iter_chunks_validates_rows(tmp_path):
    X = make_dense(tmp_path / "s")
    store = FeatureStore.open(tmp_path / "s")
    with pytest.raises(IndexError, match="start"):
        list(store.iter_chunks(start=-5))
    with pytest.raises(IndexError, match="stop"):
        list(store.iter_chunks(stop=11))
    with pytest.raises(IndexError, match="stop"):
        list(store.iter_chunks(stop=-1))
    with pytest.raises(ValueError, match="start"):
        list(store.iter_chunks(start=6, stop=3))
    for bad in (1.5, True, "2"):
        with pytest.raises(TypeError, match="start"):
            list(store.iter_chunks(start=bad))
    assert list(store.iter_chunks(start=10)) == []
    np.testing.assert_array_equal(np.vstack([b for _, b in store.iter_chunks(3, start=np.int64(2), stop=10)]), X[2:])


def test_sample_validates_exclude_rows(tmp_path):
    make_dense(tmp_path / "s")
    store = FeatureStore.open(tmp_path / "s")
    for bad in ([-1], [10], [[0, 1], [2, 12]]):
        with pytest.raises(IndexError, match="exclude_rows"):
            store.sample(3, 0, exclude_rows=bad)
    for bad in ([0.5], np.ones(10, bool), ["1"]):
        with pytest.raises(TypeError, match="exclude_rows"):
            store.sample(3, 0, exclude_rows=bad)
    assert set(store.sample(8, 0, exclude_rows=[0, 9]).tolist()) == set(range(1, 9))
    assert store.sample(10, 0, exclude_rows=[]).size == 10


# ---------------------------------------------------------------------------- labels and tags


@pytest.mark.parametrize(
    "labels, error",
    [
        ([1.7, 0, 0], ValueError),
        ([np.float32(2.5), 0, 0], ValueError),
        ([float("nan"), 0, 0], ValueError),
        ([True, 0, 0], TypeError),
        (["3", 0, 0], TypeError),
        ([-5, 0, 0], ValueError),
        ([[1, 2.5], [], [0]], ValueError),
        ([[1, True], [], [0]], TypeError),
        ([[-1, 2], [], [0]], ValueError),
        ("abc", TypeError),
        (3, TypeError),
    ],
)
def test_non_integral_labels_are_refused(tmp_path, labels, error):
    with FeatureStore.create(tmp_path / "s", dim=2) as store:
        with pytest.raises(error, match="labels"):
            store.append(np.ones((3, 2)), labels=labels)
        assert len(store) == 0


def test_integral_labels_are_kept(tmp_path):
    with FeatureStore.create(tmp_path / "s", dim=2) as store:
        store.append(np.ones((4, 2)), labels=np.array([1.0, 2.0, -1.0, 0.0]))
        store.append(np.ones((2, 2)), labels=[np.int32(3), None])
        store.append(np.ones((2, 2)), labels=[[4.0, 5], None])
    assert FeatureStore.open(tmp_path / "s").labels().tolist() == [1, 2, -1, 0, 3, -1, 4, -1]


@pytest.mark.parametrize("arg", ["tags", "ids", "paths"])
def test_a_string_where_one_entry_per_row_is_expected_is_refused(tmp_path, arg):
    with FeatureStore.create(tmp_path / "s", dim=2) as store:
        with pytest.raises(TypeError, match=arg):
            store.append(np.ones((3, 2)), **{arg: "abc"})
        assert len(store) == 0


def test_tag_values(tmp_path):
    with FeatureStore.create(tmp_path / "s", dim=2) as store:
        store.append(np.ones((3, 2)), tags=["abc", ["x", "y"], None])  # a string is one tag for its row
        for bad in ([[b"x"], [], []], [[["x"]], [], []], [[1.5], [], []]):
            with pytest.raises(TypeError, match="tags"):
                store.append(np.ones((3, 2)), tags=bad)
    assert FeatureStore.open(tmp_path / "s").items.column("tags").to_pylist() == [["abc"], ["x", "y"], []]


def test_remove_refuses_a_damaged_store_instead_of_laundering_it(tmp_path, capsys):
    """Issue 39 item 1: a flipped bit in a chunk must not get a fresh checksum from `store remove`."""
    make_dense(tmp_path / "s")
    f = chunk(tmp_path / "s", 1)
    raw = bytearray(f.read_bytes())
    raw[0] ^= 1
    f.write_bytes(bytes(raw))
    before = FeatureStore.open(tmp_path / "s").ids().tolist()
    code, out, err = run_cli(capsys, "store", "remove", str(tmp_path / "s"), "--id", before[0])
    assert code == 2 and "vectors/X/c/1/0" in err and "store verify" in err and "Traceback" not in err
    store = FeatureStore.open(tmp_path / "s")
    assert store.ids().tolist() == before and not store.verify().ok  # nothing removed, the damage still reported
