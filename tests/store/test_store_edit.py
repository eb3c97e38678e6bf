"""Editing a store's item table (tags, labels, splits): results and crash safety."""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hardneg.store import FeatureStore, StoreError
from hardneg.store import _edit

ENV = {**os.environ, "PYTHONPATH": os.getcwd()}


def make(path, n=6):
    with FeatureStore.create(path, dim=3, chunk_rows=4) as store:
        store.append(np.ones((n // 2, 3)), ids=[f"i{k}" for k in range(n // 2)], tags=[["a"]] * (n // 2))
        store.append(np.ones((n - n // 2, 3)), ids=[f"i{k}" for k in range(n // 2, n)], labels=[1] * (n - n // 2))
    return path


def table(path):
    return FeatureStore.open(path).items.to_pylist()


def test_edit_tags_labels_split(tmp_path):
    p = make(tmp_path / "s")
    with FeatureStore.open(p, mode="a") as store:
        n = store.edit_items(add_tags={"i0": ["b", "a"], "i4": "c"}, remove_tags={"i1": ["a"]},
                             labels={"i3": None, "i0": 2}, split={"i0": "train", "i5": "test"})
        assert n == 5
        assert store.edit_items(add_tags={"i0": ["b"]}) == 0  # nothing changed: nothing written
    rows = table(p)
    assert rows[0]["tags"] == ["a", "b"] and rows[0]["label"] == 2 and rows[0]["split"] == "train"
    assert rows[1]["tags"] == [] and rows[3]["label"] is None and rows[4]["tags"] == ["c"]
    assert rows[5]["split"] == "test" and rows[2] == {"id": "i2", "path": None, "tags": ["a"], "label": None, "labels": None, "split": None}
    store = FeatureStore.open(p)
    assert store.verify().ok
    assert len(store._meta["parts"]) == 1
    assert sorted(f.name for f in (p / "items").iterdir()) == store._meta["parts"]  # old parts removed
    # appends after an edit use fresh part names and still read back in order
    with FeatureStore.open(p, mode="a") as store:
        store.append(np.zeros((1, 3)), ids=["new"], tags=[["z"]])
    store = FeatureStore.open(p)
    assert store.ids().tolist()[-1] == "new" and store.select(tags="z").tolist() == [6]
    assert store.verify().ok


def test_edit_refuses(tmp_path):
    p = make(tmp_path / "s")
    with pytest.raises(StoreError, match="read-only"):
        FeatureStore.open(p).edit_items(split={"i0": "train"})
    with FeatureStore.open(p, mode="a") as store:
        with pytest.raises(ValueError, match="'nope'"):
            store.edit_items(split={"nope": "train"})
        with pytest.raises(TypeError, match="split names are strings"):
            store.edit_items(split={"i0": 3})
        with pytest.raises(ValueError, match="class id"):
            store.edit_items(labels={"i0": 1.5})
    assert table(p) == table(make(tmp_path / "t"))  # refused edits changed nothing


def test_next_part_name_never_reuses():
    assert _edit.next_part_name([]) == "part-00000000.parquet"
    assert _edit.next_part_name(["part-00000000.parquet", "part-00000001.parquet"]) == "part-00000002.parquet"
    assert _edit.next_part_name(["part-00000007.parquet"]) == "part-00000008.parquet"


def test_failure_before_commit_keeps_old_table(tmp_path, monkeypatch):
    p = make(tmp_path / "s")
    before = table(p)
    with FeatureStore.open(p, mode="a") as store:
        def boom(meta, items=None):
            raise OSError("disk gone")
        monkeypatch.setattr(store._writer, "commit", boom)
        with pytest.raises(OSError):
            store.edit_items(add_tags={i: ["x"] for i in store.ids()})
    monkeypatch.undo()
    assert table(p) == before
    # the uncommitted new part is a leftover that the next writer trims
    with FeatureStore.open(p, mode="a") as store:
        assert sorted(f.name for f in (p / "items").iterdir()) == store._meta["parts"]
    assert FeatureStore.open(p).verify().ok


def test_reader_of_old_meta_sees_new_table(tmp_path):
    p = make(tmp_path / "s")
    reader = FeatureStore.open(p)  # meta read, item parts not yet
    with FeatureStore.open(p, mode="a") as store:
        store.edit_items(add_tags={"i5": ["late"]})
        store.append(np.zeros((2, 3)), ids=["n1", "n2"])
    rows = reader.items.to_pylist()  # its parts are gone: it reads the new table, cut to its rows
    assert len(rows) == 6 and rows[5]["tags"] == ["late"]


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from hardneg.store import FeatureStore
    from hardneg.store import _edit
    where = sys.argv[2]
    store = FeatureStore.open(sys.argv[1], mode="a")
    real_commit = store._writer.commit
    def commit(meta, items=None):
        if where == "before-commit":
            os.kill(os.getpid(), signal.SIGKILL)
        real_commit(meta, items)
        if where == "after-commit":
            os.kill(os.getpid(), signal.SIGKILL)
    store._writer.commit = commit
    store.edit_items(add_tags={i: ["killed"] for i in store.ids()}, split={i: "train" for i in store.ids()})
    """
)


@pytest.mark.parametrize("where", ["before-commit", "after-commit"])
def test_killed_mid_edit_reads_old_or_new(tmp_path, where):
    p = make(tmp_path / "s")
    before = table(p)
    proc = subprocess.run([sys.executable, "-c", KILLER, str(p), where], env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    after = table(p)
    if where == "before-commit":
        assert after == before
    else:
        assert all(r["tags"][-1] == "killed" and r["split"] == "train" for r in after)
        assert [r["id"] for r in after] == [r["id"] for r in before]
    # the next writer trims leftovers (the new part, or the old parts) and the store verifies
    with FeatureStore.open(p, mode="a") as store:
        assert sorted(f.name for f in (p / "items").iterdir()) == store._meta["parts"]
        store.append(np.zeros((1, 3)), ids=["more"])
    assert FeatureStore.open(p).verify().ok
