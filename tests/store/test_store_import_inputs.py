"""``store import`` and the id CSVs: odd input gives one clear line, never a traceback (issue 39 items 11, 13, 14)."""

import numpy as np
import pytest

from _helpers import assert_one_line_error, run_cli
from hardneg.store import FeatureStore


@pytest.fixture
def emb(tmp_path):
    np.save(tmp_path / "e.npy", np.random.default_rng(0).random((3, 4)).astype(np.float32))
    return tmp_path / "e.npy"


# ---------------------------------------------------------------------------- item 11: tracebacks


def test_an_id_over_the_csv_field_limit_is_one_line_naming_file_and_line(tmp_path, emb, capsys):
    (tmp_path / "ids.csv").write_text("a\n" + "b" * 200_000 + "\nc\n")
    assert_one_line_error(run_cli(capsys, "store", "import", emb, "-o", tmp_path / "s", "--ids", tmp_path / "ids.csv"),
                          "ids.csv", "line 2")
    run_cli(capsys, "store", "import", emb, "-o", tmp_path / "s")
    (tmp_path / "tags.csv").write_text("0,x\n1," + "t" * 200_000 + "\n")
    for option in ("--from-csv",):
        assert_one_line_error(run_cli(capsys, "store", "tag", tmp_path / "s", option, tmp_path / "tags.csv"), "tags.csv", "line 2")
    assert_one_line_error(run_cli(capsys, "store", "remove", tmp_path / "s", "--from-csv", tmp_path / "tags.csv"), "tags.csv", "line 2")
    assert not (tmp_path / "s" / "x").exists() and len(FeatureStore.open(tmp_path / "s")) == 3


def test_an_empty_npy_file_is_one_line(tmp_path, capsys):
    (tmp_path / "e.npy").write_bytes(b"")
    assert_one_line_error(run_cli(capsys, "store", "import", tmp_path / "e.npy", "-o", tmp_path / "s"), "e.npy", "empty")
    (tmp_path / "t.npy").write_bytes(b"\x93NUMPY\x01\x00")  # a header cut short
    assert_one_line_error(run_cli(capsys, "store", "import", tmp_path / "t.npy", "-o", tmp_path / "s"), "t.npy")
    assert not (tmp_path / "s").exists()


# ---------------------------------------------------------------------------- item 14: CSV rules


def test_an_id_starting_with_hash_is_an_id_not_a_comment(tmp_path, emb, capsys):
    (tmp_path / "ids.csv").write_text("#1\n#2\nc\n")
    (tmp_path / "tags.csv").write_text("#2,red\n")
    assert run_cli(capsys, "store", "import", emb, "-o", tmp_path / "s", "--ids", tmp_path / "ids.csv",
                   "--tags", tmp_path / "tags.csv")[0] == 0
    store = FeatureStore.open(tmp_path / "s")
    assert store.ids().tolist() == ["#1", "#2", "c"]
    assert store.items.column("tags").to_pylist() == [[], ["red"], []]
    (tmp_path / "rm.csv").write_text("#1\n")
    assert run_cli(capsys, "store", "remove", tmp_path / "s", "--from-csv", tmp_path / "rm.csv")[0] == 0
    assert FeatureStore.open(tmp_path / "s").ids().tolist() == ["#2", "c"]


def test_an_ids_file_whose_first_id_is_id(tmp_path, emb, capsys):
    (tmp_path / "ids.csv").write_text("id\nb\nc\n")  # three ids for three rows: 'id' is an id
    assert run_cli(capsys, "store", "import", emb, "-o", tmp_path / "s", "--ids", tmp_path / "ids.csv")[0] == 0
    assert FeatureStore.open(tmp_path / "s").ids().tolist() == ["id", "b", "c"]
    (tmp_path / "ids2.csv").write_text("id\na\nb\nc\n")  # a header and three ids
    assert run_cli(capsys, "store", "import", emb, "-o", tmp_path / "s2", "--ids", tmp_path / "ids2.csv")[0] == 0
    assert FeatureStore.open(tmp_path / "s2").ids().tolist() == ["a", "b", "c"]
    (tmp_path / "ids3.csv").write_text("id\na\n")
    line = assert_one_line_error(run_cli(capsys, "store", "import", emb, "-o", tmp_path / "s3", "--ids", tmp_path / "ids3.csv"),
                                 "ids3.csv")
    assert "1 ids for 3" in line and "header" in line, line  # counts the ids without the header, and says it was taken as one


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0"])
def test_timeout_nan_and_inf_are_refused(value, capsys, tmp_path):
    assert_one_line_error(run_cli(capsys, "--timeout", value, "store", "info", tmp_path / "none"), "--timeout")


def test_error_lines_name_the_store_not_its_hidden_build_folder(tmp_path, emb, capsys, monkeypatch):
    import errno

    from hardneg.store import _feature_store

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(self.path / "vectors" / "X" / "c" / "0" / "0"))

    monkeypatch.setattr(_feature_store.FeatureStore, "append", full)
    line = assert_one_line_error(run_cli(capsys, "store", "import", emb, "-o", tmp_path / "s"), "No space left")
    assert ".swap" not in line and ".creating" not in line and str(tmp_path / "s" / "vectors") in line, line
    assert not (tmp_path / "s").exists() and [p.name for p in tmp_path.iterdir()] == ["e.npy"]


def test_public_text_maps_build_folders_to_their_store():
    from hardneg.store._errors import public_text

    hexa = "0123456789abcdef" * 2
    assert public_text(f"/d/.my.store.{hexa}.swap/meta.json: bad") == "/d/my.store/meta.json: bad"
    assert public_text(f"'/d/.s.{hexa}.swap.k2j_x9a1.creating/items'") == "'/d/s/items'"
    assert public_text("/d/s.abc12_z9.creating/x and /d/s.other") == "/d/s/x and /d/s.other"
    assert public_text(f"/d/s.{hexa}.deleting") == "/d/s"
