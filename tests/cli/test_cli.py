"""The ``hardneg`` command: help, datasets, store info, one-line errors, demo."""

import json

import numpy as np
import pytest

from _helpers import run_cli as run
from hardneg.store import FeatureStore


def test_help_lists_commands(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name in ("datasets", "store", "demo"):
        assert name in out


def test_datasets_list_and_import(capsys, tmp_path):
    code, out, _ = run(capsys, "datasets")
    assert code == 0 and "digits" in out and "fashion-mnist" in out
    code, out, _ = run(capsys, "datasets", "import", "digits", str(tmp_path / "d.store"))
    assert code == 0
    store = FeatureStore.open(tmp_path / "d.store")
    assert len(store) == 1797 and store.dim == 64
    assert store.select(split="test").size + store.select(split="train").size == 1797
    assert store.select(tags="3").tolist() == np.flatnonzero(store.labels() == 3).tolist()
    code, out, _ = run(capsys, "store", "info", str(tmp_path / "d.store"))
    assert code == 0 and "1,797" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["datasets", "import", "no-such-set", "x"], "unknown dataset"),
        (["store", "info", "/no/such/store"], "no such store"),
    ],
)
def test_user_errors_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2  # one message (rich may wrap once)


def test_existing_store_is_not_overwritten(capsys, tmp_path):
    assert run(capsys, "datasets", "import", "digits", str(tmp_path / "d"))[0] == 0
    code, _, err = run(capsys, "datasets", "import", "digits", str(tmp_path / "d"))
    assert code == 2 and "already exists" in err
    assert len(FeatureStore.open(tmp_path / "d")) == 1797


def test_demo_writes_summary(capsys, tmp_path):
    code, out, _ = run(capsys, "demo", "--out", str(tmp_path / "demo"))
    assert code == 0
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    knn = summary["euclidean_knn"]
    assert knn["n_queries"] == 599 and 0.5 < knn["mAP"] < 0.9  # raw-pixel kNN on digits: a modest baseline
    # the hashing result is shown beside the kNN baseline it is measured against
    assert summary["hashing"]["n_bits"] == 32 and 0.5 < summary["hashing"]["mAP@100"] <= 1.0
    flat = " ".join(out.split())  # rich wraps long lines
    assert "TSVM hashing (Hamming ranking) against its baseline, exact Euclidean kNN" in flat and "32-bit codes" in flat
    concept = summary["concept_search"]
    assert concept["mAP"]["negative bootstrap"] > concept["mAP"]["random sampling"]
    assert (tmp_path / "demo" / "concept_report.html").read_text().count("<img") >= 20
