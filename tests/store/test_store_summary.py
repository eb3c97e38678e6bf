"""The item summary in ``meta.json`` (issue 29): counts per split, label and tag, kept in the commit.

Every write (create, append, edit, remove, a store written before summaries
existed) must leave a summary equal to the counts of the committed item table;
a summary that counts another table (an older hardneg wrote after it) is
ignored and recounted; a malformed one is one StoreError line; a forged one
is found by ``verify``.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from hardneg.store import FeatureStore, StoreError, remove_items
from hardneg.store import _summary
from hardneg.store._feature_store import ITEM_SCHEMA
from hardneg.store._item_table import summarize_items
from hardneg.store._meta import check_meta
from hardneg.store._summary import SUMMARY, current_summary, merge_summaries


def _slow_summary(table: pa.Table) -> dict:
    """The counts, the obvious way: Python loops over the rows."""
    splits: dict = {}
    labels: dict = {}
    tags: dict = {}
    for row in table.to_pylist():
        splits[row["split"]] = splits.get(row["split"], 0) + 1
        if row["label"] is not None and row["label"] >= 0:
            labels[row["label"]] = labels.get(row["label"], 0) + 1
        for t in row["tags"] or []:
            tags[t] = tags.get(t, 0) + 1
    return {"rows": table.num_rows, "splits": [[k, c] for k, c in splits.items()],
            "labels": sorted([k, c] for k, c in labels.items()), "tags": sorted([k, c] for k, c in tags.items())}


def _meta(path) -> dict:
    return json.loads((path / "meta.json").read_text())


def _write_meta(path, meta) -> None:
    (path / "meta.json").write_text(json.dumps(meta, indent=1))


def _assert_current(path) -> dict:
    """The store's recorded summary is current and equals the slow count of its table."""
    store = FeatureStore.open(path)
    summary = current_summary(store._meta)
    assert summary is not None
    assert summary["parts"] == store._meta["parts"]
    slow = _slow_summary(store.items)
    assert {k: summary[k] for k in slow} == slow
    assert store.verify().ok
    return summary


def _random_batch(rng, n, start):
    tag_pool = ["cat", "dog", "boat", "red", "x y", "ünï", 'say "hi"']
    tags = [list(rng.choice(tag_pool, size=rng.integers(0, 3))) for _ in range(n)]
    labels = [int(v) if v >= 0 else None for v in rng.integers(-1, 4, size=n)]
    split = [[None, "train", "test", "val"][k] for k in rng.integers(0, 4, size=n)]
    return dict(ids=[f"i{start + i}" for i in range(n)], tags=tags, labels=labels, split=split)


def test_hand_worked_summary():
    table = pa.table({"id": ["a", "b", "c", "d"], "path": [None] * 4, "tags": [["x", "y"], [], None, ["y", "y"]],
                      "label": [1, None, -1, 3], "labels": [None] * 4, "split": ["test", None, "test", "train"]}, schema=ITEM_SCHEMA)
    assert summarize_items(table, ["p"]) == {"parts": ["p"], "rows": 4, "splits": [["test", 2], [None, 1], ["train", 1]],
                                             "labels": [[1, 1], [3, 1]], "tags": [["x", 1], ["y", 3]]}
    assert summarize_items(ITEM_SCHEMA.empty_table(), []) == {"parts": [], "rows": 0, "splits": [], "labels": [], "tags": []}


@pytest.mark.parametrize("seed", range(5))
def test_merge_equals_the_count_of_both_tables(seed, tmp_path):
    rng = np.random.default_rng(seed)
    with FeatureStore.create(tmp_path / "s", 2) as store:
        for k in range(3):
            n = int(rng.integers(1, 30))
            store.append(rng.random((n, 2)), **_random_batch(rng, n, len(store)))
    items = FeatureStore.open(tmp_path / "s").items
    cut = int(rng.integers(0, items.num_rows + 1))
    a, b = items.slice(0, cut), items.slice(cut)
    merged = merge_summaries(summarize_items(a, []), summarize_items(b, []), ["p"])
    assert merged == summarize_items(items, ["p"])
    assert {k: merged[k] for k in ("rows", "splits", "labels", "tags")} == _slow_summary(items)


def test_every_write_keeps_the_summary_current(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "s"
    with FeatureStore.create(path, 3, chunk_rows=4) as store:
        assert _meta(path)[SUMMARY] == {"parts": [], "rows": 0, "splits": [], "labels": [], "tags": []}
        store.append(rng.random((5, 3)), **_random_batch(rng, 5, 0))
        store.append(rng.random((7, 3)), ids=[f"m{i}" for i in range(7)], labels=[[0, 2], [], None, [1], [3, 0], -1, 2])
    _assert_current(path)
    with FeatureStore.open(path, mode="a") as store:  # a new writer session merges into the recorded counts
        store.append(rng.random((4, 3)), **_random_batch(rng, 4, 100))
        store.edit_items(add_tags={"i0": ["new"], "m1": ["new", "cat"]}, remove_tags={"i1": ["cat", "dog"]})
        store.edit_items(split={"i0": None, "m0": "holdout"}, labels={"m3": None, "i2": 7})
        store.append(rng.random((2, 3)), **_random_batch(rng, 2, 200))
    summary = _assert_current(path)
    assert ["holdout", 1] in summary["splits"] and [7, 1] in summary["labels"]
    remove_items(path, ["i0", "m1", "i100"])
    _assert_current(path)
    # meta.json is indented, with the summary compact on its own line, and reads back as written
    text = (path / "meta.json").read_text()
    assert text.startswith('{\n "format": ') and text.splitlines()[-2].startswith(' "item_summary": {"parts":[')
    assert json.loads(text) == FeatureStore.open(path)._meta


def test_an_older_store_gets_a_summary_on_its_next_append(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "s"
    with FeatureStore.create(path, 2) as store:
        store.append(rng.random((6, 2)), **_random_batch(rng, 6, 0))
    meta = _meta(path)
    del meta[SUMMARY]  # as written before summaries existed
    _write_meta(path, meta)
    store = FeatureStore.open(path)
    assert current_summary(store._meta) is None and store.verify().ok
    with FeatureStore.open(path, mode="a") as store:
        store.append(rng.random((3, 2)), **_random_batch(rng, 3, 6))
    assert _assert_current(path)["rows"] == 9


def test_a_stale_summary_is_ignored_then_recounted(tmp_path):
    """An older hardneg keeps the key it does not know and commits a new part: the summary no
    longer lists the parts, so readers ignore it (its counts describe the old table)."""
    rng = np.random.default_rng(2)
    path = tmp_path / "s"
    with FeatureStore.create(path, 2) as store:
        store.append(rng.random((4, 2)), **_random_batch(rng, 4, 0))
        old = dict(store._meta[SUMMARY])
        store.append(rng.random((3, 2)), **_random_batch(rng, 3, 4))
    meta = _meta(path)
    meta[SUMMARY] = old  # what an older writer's second append would have left: 4 rows, one part
    _write_meta(path, meta)
    store = FeatureStore.open(path)  # not an error: stale, not damaged
    assert current_summary(store._meta) is None
    assert store.verify().ok
    with FeatureStore.open(path, mode="a") as store:
        store.edit_items(add_tags={"i0": ["z"]})
    assert _assert_current(path)["rows"] == 7


def test_a_field_with_too_many_values_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(_summary, "MAX_VALUES", 3)
    path = tmp_path / "s"
    with FeatureStore.create(path, 2) as store:
        store.append(np.ones((2, 2)), tags=[["a"], ["b"]], split="train")
        assert current_summary(store._meta) is not None
        store.append(np.ones((2, 2)), tags=[["c"], ["d"]], split="train")  # 4 distinct tags
    meta = _meta(path)
    assert meta[SUMMARY]["tags"] is None and meta[SUMMARY]["splits"] == [["train", 4]]
    store = FeatureStore.open(path)
    assert current_summary(store._meta) is None and store.verify().ok
    with FeatureStore.open(path, mode="a") as store:
        store.edit_items(remove_tags={"2": ["c"], "3": ["d"]})  # an edit counts the whole table again
    assert _assert_current(path)["tags"] == [["a", 1], ["b", 1]]


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda s: s.pop("tags"), "keys"),
        (lambda s: s.update(rows=-1), "rows"),
        (lambda s: s.update(rows=True), "rows"),
        (lambda s: s.update(parts="part-00000000.parquet"), "parts"),
        (lambda s: s.update(splits={"train": 3}), "splits"),
        (lambda s: s["splits"].append(["train", 0]), "count >= 1"),
        (lambda s: s["labels"].append([-2, 1]), "labels holds"),
        (lambda s: s["labels"].append([True, 1]), "labels holds"),
        (lambda s: s["tags"].append([5, 1]), "tags holds"),
        (lambda s: s["tags"].append(["a", 1.5]), "tags holds"),
        (lambda s: s["tags"].append(["a", 1, 2]), "tags holds"),
        (lambda s: s["tags"].extend([["q", 1], ["q", 2]]), "twice"),
        (lambda s: s.update(rows=5), "counts 5 rows"),
        (lambda s: s["splits"].__setitem__(0, ["train", 9]), "split counts add up"),
        (lambda s: s["labels"].append([9, 9]), "label counts add up"),
    ],
)
def test_a_malformed_summary_is_one_store_error(tmp_path, damage, message):
    path = tmp_path / "s"
    with FeatureStore.create(path, 2) as store:
        store.append(np.ones((3, 2)), labels=[0, 1, None], tags=[["a"], [], ["b"]], split="train")
    meta = _meta(path)
    damage(meta[SUMMARY])
    _write_meta(path, meta)
    with pytest.raises(StoreError, match="corrupt meta.json: item_summary") as info:
        FeatureStore.open(path)
    assert message in str(info.value) and len(str(info.value).splitlines()) == 1


def test_verify_finds_a_forged_summary(tmp_path):
    path = tmp_path / "s"
    with FeatureStore.create(path, 2) as store:
        store.append(np.ones((3, 2)), labels=[0, 1, None], tags=[["a"], [], ["b"]], split="train")
    assert FeatureStore.open(path).verify().ok
    meta = _meta(path)
    meta[SUMMARY]["tags"] = [["a", 1], ["c", 1]]  # well formed and consistent, but not the table's
    meta[SUMMARY]["labels"] = [[0, 2]]
    _write_meta(path, meta)
    report = FeatureStore.open(path).verify()
    assert not report.ok
    assert report.problems == ["meta.json item_summary does not match the item table (labels, tags differ)"]


def test_meta_reader_accepts_unknown_keys(tmp_path):
    """Readers ignore keys they do not know (how an older hardneg reads a store with a summary)."""
    path = tmp_path / "s"
    with FeatureStore.create(path, 2) as store:
        store.append(np.ones((1, 2)))
    meta = _meta(path)
    meta["a_key_from_the_future"] = {"x": 1}
    assert check_meta(meta, path) is meta


def test_a_numpy_spelling_of_the_array_type_is_accepted(tmp_path):
    path = tmp_path / "s"
    with FeatureStore.create(path, 2) as store:
        store.append(np.arange(4, dtype=np.float32).reshape(2, 2))
    zarr_json = path / "vectors" / "X" / "zarr.json"
    layout = json.loads(zarr_json.read_text())
    assert layout["data_type"] == "float32"
    layout["data_type"] = "<f4"
    zarr_json.write_text(json.dumps(layout))
    assert FeatureStore.open(path).to_numpy().tolist() == [[0, 1], [2, 3]]
    layout["data_type"] = "int32"
    zarr_json.write_text(json.dumps(layout))
    with pytest.raises(StoreError, match="does not describe the layout"):
        FeatureStore.open(path)
