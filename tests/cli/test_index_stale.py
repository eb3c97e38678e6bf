"""Issue 37 item 3: an index built before the store was edited is refused, never returning removed items."""

import json

import numpy as np

from _helpers import run_cli
from hardneg.store import FeatureStore


def make_store(path, n=60):
    rng = np.random.default_rng(0)
    with FeatureStore.create(path, dim=8) as store:
        store.append(rng.random((n, 8)).astype(np.float32), ids=[f"img{i:03d}" for i in range(n)])


def test_hamming_index_of_an_edited_store_is_refused_naming_the_rebuild(tmp_path, capsys):
    s, model, index = tmp_path / "s", tmp_path / "h.npz", tmp_path / "h.index"
    make_store(s)
    np.save(tmp_path / "q.npy", np.random.default_rng(1).random((1, 8)).astype(np.float32))
    assert run_cli(capsys, "hash", "train", s, "-o", model, "--method", "lsh", "--bits", "16")[0] == 0
    assert run_cli(capsys, "hash", "index", model, s, "-o", index)[0] == 0
    code, out, _ = run_cli(capsys, "hash", "search", model, index, "--query-npy", tmp_path / "q.npy", "-k", "60", "--json")
    assert code == 0 and {r["id"] for r in json.loads(out)} >= {"img007"}

    assert run_cli(capsys, "store", "remove", s, "--id", "img007")[0] == 0
    code, out, err = run_cli(capsys, "hash", "search", model, index, "--query-npy", tmp_path / "q.npy", "--json")
    assert code == 2 and "earlier state" in err and "1 of its items were removed" in err
    assert "hardneg hash index" in err and "Traceback" not in err and out == ""

    assert run_cli(capsys, "hash", "index", model, s, "-o", index)[0] == 0  # the rebuild the message names
    code, out, _ = run_cli(capsys, "hash", "search", model, index, "--query-npy", tmp_path / "q.npy", "-k", "59", "--json")
    assert code == 0 and "img007" not in {r["id"] for r in json.loads(out)}


def test_items_added_since_are_named_too(tmp_path, capsys):
    s, model, index = tmp_path / "s", tmp_path / "h.npz", tmp_path / "h.index"
    make_store(s)
    np.save(tmp_path / "q.npy", np.zeros((1, 8), np.float32))
    run_cli(capsys, "hash", "train", s, "-o", model, "--method", "lsh", "--bits", "16")
    run_cli(capsys, "hash", "index", model, s, "-o", index)
    with FeatureStore.open(s, mode="a") as store:
        store.append(np.ones((2, 8), np.float32), ids=["new1", "new2"])
    code, _, err = run_cli(capsys, "hash", "search", model, index, "--query-npy", tmp_path / "q.npy")
    assert code == 2 and "0 of its items were removed from the store and 2 added" in err


def test_service_refuses_an_index_missing_the_store_s_new_items(tmp_path):
    """The service maps an index's ids to store rows when it opens a search mode: a removed item or an added
    one means the index is from an earlier state of the store, and the mode is refused with the reason."""
    import pytest

    pytest.importorskip("fastapi")
    from hardneg.serve._modes import _id_rows

    make_store(tmp_path / "s", n=5)
    store = FeatureStore.open(tmp_path / "s")
    assert _id_rows(store, [f"img{i:03d}" for i in range(5)]).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="2 items the index lacks"):
        _id_rows(store, ["img000", "img001", "img002"])
    with pytest.raises(ValueError, match="'gone'.*removed since"):
        _id_rows(store, ["gone"])
