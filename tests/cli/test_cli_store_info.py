"""``hardneg store info`` from ``meta.json`` alone (issue 29), and its fallback to the item table.

A store whose ``meta.json`` holds a current item summary is shown without
opening the store (no NumPy, no Arrow); an older store, or one whose summary
an older hardneg left stale, is read the old way. Both print the same table.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from _helpers import assert_one_line_error
from _helpers import run_cli as run
from hardneg.store import FeatureStore
from hardneg.store._summary import SUMMARY


def _without_summary(path) -> None:
    """Make ``path`` look like a store written before summaries existed."""
    meta = json.loads((path / "meta.json").read_text())
    del meta[SUMMARY]
    (path / "meta.json").write_text(json.dumps(meta, indent=1))


def _info(capsys, path, *, fast: bool, monkeypatch) -> str:
    """``store info`` output; ``fast``: fails if the store is opened (the item table read)."""
    with monkeypatch.context() as m:
        if fast:
            def no_open(*args, **kwargs):
                raise AssertionError("store info opened the store: the fast path did not run")

            m.setattr(FeatureStore, "open", no_open)
        code, out, err = run(capsys, "store", "info", path)
    assert code == 0, err
    return out


def _edited_store(path, sparse=False):
    rng = np.random.default_rng(0)
    n = 30
    X = rng.random((n, 5)).astype(np.float32)
    with FeatureStore.create(path, 5, sparse=sparse, attrs={"class_names": ["cat", "dog", "eel"], "model": "m" * 100}) as store:
        import scipy.sparse as sp

        for lo, k in ((0, 12), (12, 8), (20, 10)):  # three parts
            block = X[lo : lo + k]
            store.append(sp.csr_matrix(block) if sparse else block, ids=[f"f{lo // 10}/{lo + i}" for i in range(k)],
                         labels=[(lo + i) % 4 - 1 for i in range(k)],
                         tags=[[f"t{(lo + i) % 15}"] + (["common"] if i % 3 == 0 else []) for i in range(k)],
                         split=None if lo == 12 else ["train", "test"][lo % 2])
    assert run_quiet("store", "tag", path, "--add", "extra", "--id", "f0/1", "--id", "f2/25") == 0
    assert run_quiet("store", "tag", path, "--remove", "common", "--folder", "f1") == 0
    assert run_quiet("store", "split", path, "--from-csv", _csv(path.parent / "splits.csv", {"f0/0": "val", "f1/13": "test"})) == 0


def run_quiet(*argv) -> int:
    from hardneg.cli.main import main

    return main([str(a) for a in argv])


def _csv(path, rows) -> str:
    path.write_text("id,split\n" + "".join(f"{k},{v}\n" for k, v in rows.items()))
    return str(path)


@pytest.mark.parametrize("sparse", [False, True])
def test_fast_and_slow_paths_print_the_same_table(capsys, tmp_path, monkeypatch, sparse):
    path = tmp_path / "s"
    _edited_store(path, sparse=sparse)
    capsys.readouterr()
    fast = _info(capsys, path, fast=True, monkeypatch=monkeypatch)
    _without_summary(path)
    slow = _info(capsys, path, fast=False, monkeypatch=monkeypatch)
    assert fast == slow
    assert "(17 tags)" in fast and "val: 1, train: 21, None: 7, test: 1" in fast
    assert ("sparse CSR" if sparse else "dense float32") in fast
    # the fallback for an older store writes nothing: the next writer adds the summary
    assert SUMMARY not in json.loads((path / "meta.json").read_text())


def test_hand_worked_table(capsys, tmp_path, monkeypatch):
    path = tmp_path / "s"
    with FeatureStore.create(path, 4) as store:
        store.append(np.eye(4), labels=[0, 1, -1, 1], tags=[["a"], ["b"], [], ["a", "c"]], split=["train", "test", None, "train"])
    out = _info(capsys, path, fast=True, monkeypatch=monkeypatch)
    lines = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in out.splitlines() if line.count("│") == 3}
    assert lines == {"rows": "4", "dim": "4", "layout": "dense float32", "splits": "train: 2, test: 1, None: 1",
                     "labelled rows": "3 (2 classes)", "tags": "a (2), b (1), c (1)"}


def test_stale_summary_falls_back_to_the_item_table(capsys, tmp_path, monkeypatch):
    """An older hardneg appended after the summary was written: info must not show the old counts."""
    path = tmp_path / "s"
    with FeatureStore.create(path, 2) as store:
        store.append(np.ones((2, 2)), tags=[["a"], ["a"]])
        old = dict(store._meta[SUMMARY])
        store.append(np.ones((1, 2)), tags=[["b"]])
    meta = json.loads((path / "meta.json").read_text())
    meta[SUMMARY] = old
    (path / "meta.json").write_text(json.dumps(meta))
    out = _info(capsys, path, fast=False, monkeypatch=monkeypatch)
    assert "a (2), b (1)" in out and "3 " in out


def test_damaged_store_gives_the_same_one_line_error_on_both_paths(capsys, tmp_path):
    path = tmp_path / "s"
    with FeatureStore.create(path, 2) as store:
        store.append(np.ones((2, 2)))
    (path / "vectors" / "X" / "zarr.json").unlink()
    fast = assert_one_line_error(run(capsys, "store", "info", path), "vectors/X/zarr.json is missing")
    _without_summary(path)
    slow = assert_one_line_error(run(capsys, "store", "info", path), "vectors/X/zarr.json is missing")
    assert fast == slow


def test_malformed_summary_is_one_line(capsys, tmp_path):
    path = tmp_path / "s"
    with FeatureStore.create(path, 2) as store:
        store.append(np.ones((2, 2)), split="train")
    meta = json.loads((path / "meta.json").read_text())
    meta[SUMMARY]["splits"] = [["train", 5]]
    (path / "meta.json").write_text(json.dumps(meta))
    assert_one_line_error(run(capsys, "store", "info", path), "corrupt meta.json: item_summary: split counts add up to 5")


_WRAPPER = """
import contextlib, io, json, sys
from hardneg.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def _subprocess_info(path) -> dict:
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, "store", "info", str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    return result


def test_only_the_fallback_imports_the_store_libraries(tmp_path):
    path = tmp_path / "s"
    with FeatureStore.create(path, 3) as store:
        store.append(np.ones((4, 3)), labels=[0, 1, 1, -1], tags=[["x"], [], ["y"], ["x"]])
    fast = _subprocess_info(path)
    assert not {"numpy", "pyarrow", "pydantic", "zarr"} & set(fast["modules"])
    _without_summary(path)
    slow = _subprocess_info(path)
    assert {"numpy", "pyarrow"} <= set(slow["modules"])  # the item table was read
    assert not {"pandas", "scipy", "pydantic", "zarr"} & set(slow["modules"])
    assert fast["out"] == slow["out"] and "x (2), y (1)" in fast["out"]


def test_info_says_where_its_counts_come_from(capsys, tmp_path, monkeypatch):
    """The counts are the summary recorded at the last commit, not a check (issue 39 item 15)."""
    path = tmp_path / "s"
    _edited_store(path, sparse=False)
    capsys.readouterr()
    fast = " ".join(_info(capsys, path, fast=True, monkeypatch=monkeypatch).split())
    assert "from the store's item summary" in fast and "'hardneg store verify' checks" in fast
