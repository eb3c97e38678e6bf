"""`--overwrite` deletes only what is a hardneg store, outputs never equal inputs,
no NaN read from a store reaches a ranking, appends refuse damaged item parts.

Each test reproduces an audit finding of issue 24 that the code before the fix
got wrong (a folder with a stray ``meta.json`` was deleted whole, ``esvm
encode S -o S --overwrite`` emptied S, a single NaN passed a sampled check).
"""

import json

import numpy as np
import pytest

from _helpers import run_cli
from hardneg.concept import search
from hardneg._topk import topk_of
from hardneg.store import FeatureStore, StoreDamagedError, StoreError, check_output_not_input


def make_store(path, n=20, dim=4, **kw):
    X = np.arange(n * dim, dtype=np.float32).reshape(n, dim) + 1
    with FeatureStore.create(path, dim=dim, **kw) as store:
        store.append(X, ids=[f"i{k}" for k in range(n)], labels=np.arange(n) % 2)
    return X


# ---------------------------------------------------------------------------- overwrite


def fake_store_folder(path):
    path.mkdir()
    (path / "meta.json").write_text(json.dumps({"name": "x"}))
    (path / "important.txt").write_text("keep")


def test_overwrite_refuses_a_folder_that_merely_has_a_meta_json(tmp_path):
    fake_store_folder(tmp_path / "p")
    with pytest.raises(StoreError, match="not a FeatureStore"):
        FeatureStore.create(tmp_path / "p", dim=3, overwrite=True)
    assert (tmp_path / "p" / "important.txt").read_text() == "keep"


@pytest.mark.parametrize("command", [("datasets", "import", "digits"), ("extract", "dataset", "digits")])
def test_cli_overwrite_keeps_a_users_folder(tmp_path, capsys, command):
    fake_store_folder(tmp_path / "p")
    argv = [*command, tmp_path / "p", "--overwrite"] if command[0] == "datasets" else [*command, "-o", tmp_path / "p", "--overwrite"]
    code, out, err = run_cli(capsys, *argv)
    assert code != 0
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert (tmp_path / "p" / "important.txt").read_text() == "keep"


def test_overwrite_refuses_a_store_holding_the_users_files(tmp_path):
    make_store(tmp_path / "s")
    (tmp_path / "s" / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match=r"not a FeatureStore.s \(notes.txt\)"):
        FeatureStore.create(tmp_path / "s", dim=3, overwrite=True)
    assert (tmp_path / "s" / "notes.txt").read_text() == "mine"
    assert len(FeatureStore.open(tmp_path / "s")) == 20  # the store is untouched too


@pytest.mark.parametrize("inside", ["items/notes.txt", "vectors/X/mine.csv", "items/sub/deep.txt", "vectors/X/c/0/extra"])
def test_overwrite_refuses_a_store_with_a_foreign_file_deep_inside(tmp_path, capsys, inside):
    """The foreign-file check covers the whole tree, not only the top level (issue 39 item 10)."""
    make_store(tmp_path / "s")
    foreign = tmp_path / "s" / inside
    foreign.parent.mkdir(parents=True, exist_ok=True)
    foreign.write_text("mine")
    with pytest.raises(StoreError, match="not a FeatureStore.s"):
        FeatureStore.create(tmp_path / "s", dim=3, overwrite=True)
    np.save(tmp_path / "e.npy", np.ones((3, 2), np.float32))
    code, _, err = run_cli(capsys, "store", "import", tmp_path / "e.npy", "-o", tmp_path / "s", "--overwrite")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert inside.startswith(err.rsplit("(", 1)[1].split(")")[0]), err  # names the file, or the foreign folder holding it
    assert foreign.read_text() == "mine"
    assert len(FeatureStore.open(tmp_path / "s")) == 20


def test_store_remove_keeps_a_foreign_file_inside_the_store(tmp_path, capsys):
    make_store(tmp_path / "s")
    (tmp_path / "s" / "items" / "notes.txt").write_text("mine")
    code, _, err = run_cli(capsys, "store", "remove", tmp_path / "s", "--id", "i3")
    assert code == 2 and "items/notes.txt" in err and len(err.strip().splitlines()) == 1, err
    assert (tmp_path / "s" / "items" / "notes.txt").read_text() == "mine"
    assert len(FeatureStore.open(tmp_path / "s")) == 20
    FeatureStore.open(tmp_path / "s", mode="a").close()  # a writer trims what a killed writer left, not this
    assert (tmp_path / "s" / "items" / "notes.txt").read_text() == "mine"


def test_overwrite_accepts_a_store_with_its_own_leftovers(tmp_path):
    make_store(tmp_path / "s")
    (tmp_path / "s" / "items" / "part-00000009.parquet.abc123.tmp").write_bytes(b"x")  # a killed part write
    (tmp_path / "s" / "vectors" / "X" / "c" / "5").mkdir(parents=True)
    (tmp_path / "s" / "vectors" / "X" / "c" / "5" / ("0." + "a" * 32 + ".partial")).write_bytes(b"x")  # a killed chunk write
    FeatureStore.create(tmp_path / "s", dim=3, overwrite=True).close()
    assert len(FeatureStore.open(tmp_path / "s")) == 0


def test_overwrite_refuses_a_file_and_a_link(tmp_path):
    (tmp_path / "f").write_text("data")
    with pytest.raises(StoreError, match="is a file"):
        FeatureStore.create(tmp_path / "f", dim=3, overwrite=True)
    assert (tmp_path / "f").read_text() == "data"
    make_store(tmp_path / "real")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(StoreError, match="symbolic link"):
        FeatureStore.create(tmp_path / "link", dim=3, overwrite=True)
    assert len(FeatureStore.open(tmp_path / "real")) == 20


def test_overwrite_replaces_a_real_store_and_touches_nothing_beside_it(tmp_path):
    make_store(tmp_path / "s")
    (tmp_path / "neighbour.txt").write_text("n")
    with FeatureStore.create(tmp_path / "s", dim=3, overwrite=True) as store:
        assert (len(store), store.dim) == (0, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["neighbour.txt", "s"]
    FeatureStore.create(tmp_path / "empty", dim=2).close()
    (tmp_path / "emptydir").mkdir()
    FeatureStore.create(tmp_path / "emptydir", dim=2, overwrite=True).close()  # an empty folder may be used


# ---------------------------------------------------------------------------- output == input


def test_check_output_not_input(tmp_path):
    make_store(tmp_path / "s")
    src = FeatureStore.open(tmp_path / "s")
    with pytest.raises(StoreError, match="also an input"):
        check_output_not_input(tmp_path / "s", src)
    with pytest.raises(StoreError, match="also an input"):
        check_output_not_input(str(tmp_path / "x" / ".." / "s"), str(tmp_path / "s"))
    check_output_not_input(tmp_path / "t", src, None)


def test_esvm_encode_onto_its_own_input_is_refused_and_loses_nothing(tmp_path, capsys):
    rng = np.random.default_rng(0)
    with FeatureStore.create(tmp_path / "S.store", dim=8) as store:
        store.append(rng.normal(size=(300, 8)).astype(np.float32), ids=[f"x{i}" for i in range(300)])
    code, _, err = run_cli(capsys, "esvm", "train", tmp_path / "S.store", "-o", tmp_path / "enc.npz", "--min-negatives", "100", "--n-negatives", "200")
    assert code == 0, err
    code, _, err = run_cli(capsys, "esvm", "encode", tmp_path / "enc.npz", tmp_path / "S.store", "-o", tmp_path / "S.store", "--overwrite")
    assert code != 0 and "also an input" in err and "Traceback" not in err
    assert len(FeatureStore.open(tmp_path / "S.store")) == 300

    from hardneg.encoding import encode_store, load_esvm_encoder

    with pytest.raises(StoreError, match="also an input"):
        encode_store(load_esvm_encoder(tmp_path / "enc.npz"), FeatureStore.open(tmp_path / "S.store"), tmp_path / "S.store", overwrite=True)
    assert len(FeatureStore.open(tmp_path / "S.store")) == 300


def test_cli_model_output_onto_an_input_is_refused(tmp_path, capsys):
    make_store(tmp_path / "s", n=40)
    code, _, err = run_cli(capsys, "hash", "train", tmp_path / "s", "-o", tmp_path / "s")
    assert code != 0 and "Traceback" not in err
    assert len(FeatureStore.open(tmp_path / "s")) == 40


# ---------------------------------------------------------------------------- non-finite values


def test_a_single_nan_in_a_large_chunk_is_always_caught(tmp_path):
    """The sampled check let one NaN in a 65,536-row chunk through in 18 of 20 trials."""
    rng = np.random.default_rng(1)
    n, dim = 65_536, 8
    with FeatureStore.create(tmp_path / "s", dim=dim, chunk_rows=n) as store:
        store.append(rng.random((n, dim), dtype=np.float32))
    f = tmp_path / "s" / "vectors" / "X" / "c" / "0" / "0"
    pristine = f.read_bytes()
    for trial in range(20):
        raw = bytearray(pristine)
        row, col = int(rng.integers(n)), int(rng.integers(dim))
        raw[(row * dim + col) * 4 : (row * dim + col + 1) * 4] = np.float32(np.nan if trial % 2 else np.inf).tobytes()
        f.write_bytes(bytes(raw))
        store = FeatureStore.open(tmp_path / "s")
        with pytest.raises(StoreDamagedError, match="NaN or infinity"):
            store.to_numpy()
        with pytest.raises(StoreDamagedError):
            list(FeatureStore.open(tmp_path / "s").iter_chunks(4096))
        with pytest.raises(StoreDamagedError):
            FeatureStore.open(tmp_path / "s").take([row])
        with pytest.raises(StoreDamagedError):
            FeatureStore.open(tmp_path / "s").to_dask().compute()
    f.write_bytes(pristine)
    assert FeatureStore.open(tmp_path / "s").to_numpy().shape == (n, dim)


def test_rankings_refuse_non_finite_scores():
    with pytest.raises(ValueError, match="NaN or infinite"):
        topk_of(np.arange(4), np.array([0.1, np.nan, 0.3, 0.2]), 2)

    class Broken:
        def decision_function(self, X):
            return np.where(X[:, 0] > 2, -np.inf, X[:, 0])

    with pytest.raises(ValueError, match="NaN or infinite"):
        search(Broken(), np.arange(12, dtype=np.float32).reshape(6, 2), k=2)


def test_knn_never_prints_scores_of_a_damaged_store(tmp_path, capsys):
    make_store(tmp_path / "s", n=40)
    f = tmp_path / "s" / "vectors" / "X" / "c" / "0" / "0"
    raw = bytearray(f.read_bytes())
    raw[4 * 9 : 4 * 10] = np.float32(np.nan).tobytes()
    f.write_bytes(bytes(raw))
    code, out, err = run_cli(capsys, "knn", tmp_path / "s", "--query-id", "i0", "-k", "3")
    assert code != 0 and "NaN" in err and "e+38" not in out and "Traceback" not in err


# ---------------------------------------------------------------------------- damaged item parts


def test_append_refuses_a_store_whose_item_part_is_damaged(tmp_path):
    make_store(tmp_path / "s")
    part = next((tmp_path / "s" / "items").iterdir())
    raw = bytearray(part.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    part.write_bytes(bytes(raw))
    with FeatureStore.open(tmp_path / "s", mode="a") as store:
        with pytest.raises(StoreDamagedError, match="items/"):
            store.append(np.ones((1, 4), np.float32), ids=["new"])
    assert json.loads((tmp_path / "s" / "meta.json").read_text())["n_rows"] == 20


def test_all_finite_kernel_matches_numpy():
    from hardneg.store._finite import all_finite

    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        for n in (0, 1, 7, 1000, 4099):
            x = (rng.standard_normal(n) * 1e30).astype(dtype)
            assert all_finite(x) is True or all_finite(x) == bool(np.isfinite(x).all())
            for bad in (np.nan, np.inf, -np.inf):
                if n:
                    y = x.copy()
                    y[rng.integers(n)] = bad
                    assert not all_finite(y) and not np.isfinite(y).all()
    big = np.full((3, 4), np.finfo(np.float32).max, np.float32)  # finite values whose plain sum overflows
    assert all_finite(big)
