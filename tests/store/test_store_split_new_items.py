"""New items get a split without touching the old one; errors naming a split say how to get past
them (issue 37 item 5)."""

import numpy as np

from _helpers import assert_one_line_error, run_cli
from hardneg.store import FeatureStore


def _store(path, n, start=0, tags=None):
    X = np.random.default_rng(start).random((n, 4)).astype(np.float32)
    ids = [f"i{k}" for k in range(start, start + n)]
    if (path / "meta.json").exists():
        with FeatureStore.open(path, mode="a") as s:
            s.append(X, ids=ids, tags=tags)
    else:
        with FeatureStore.create(path, dim=4) as s:
            s.append(X, ids=ids, tags=tags)


def test_split_assigns_only_the_unsplit_items_with_the_store_s_fraction(tmp_path, capsys):
    path = tmp_path / "s"
    _store(path, 100)
    assert run_cli(capsys, "store", "split", path, "--test-fraction", "0.3", "--no-stratify")[0] == 0
    before = dict(zip(FeatureStore.open(path).ids().tolist(), FeatureStore.open(path).items.column("split").to_pylist()))
    _store(path, 50, start=100)  # re-running extraction adds items without a split
    code, out, err = run_cli(capsys, "store", "split", path, "--no-stratify")
    assert code == 0, err
    assert "50" in out and "without a split" in out
    store = FeatureStore.open(path)
    after = dict(zip(store.ids().tolist(), store.items.column("split").to_pylist()))
    assert all(after[i] == s for i, s in before.items())  # the old split untouched
    new = [after[f"i{k}"] for k in range(100, 150)]
    assert None not in new and new.count("test") == 15  # the store's fraction, 0.3
    assert_one_line_error(run_cli(capsys, "store", "split", path), "--overwrite")  # nothing left to assign


def test_concept_train_names_the_flag_that_gets_past_a_split(tmp_path, capsys):
    path = tmp_path / "s"
    _store(path, 40, tags=[["cat"] if k % 2 else [] for k in range(40)])
    assert run_cli(capsys, "store", "split", path)[0] == 0
    _store(path, 10, start=40, tags=[["boating"]] * 10)
    line = assert_one_line_error(run_cli(capsys, "concept", "train", path, "-c", "boating", "-o", tmp_path / "m.npz"),
                                 "'train'")
    assert "--split ''" in line and "store split" in line, line
