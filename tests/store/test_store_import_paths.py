"""``store import``: ids that read back as themselves, image paths kept inside their root
(issue 39 item 13), image paths given by a column, a side file or a root (issue 37 item 6)."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _helpers import assert_one_line_error, run_cli
from hardneg.store import FeatureStore
from hardneg.store._import import import_embeddings


@pytest.fixture
def emb(tmp_path):
    np.save(tmp_path / "e.npy", np.random.default_rng(0).random((3, 4)).astype(np.float32))
    return tmp_path / "e.npy"


@pytest.mark.parametrize("bad", ["a\x1b[31m", "tab\there", "new\u2028line", "../up", "/etc/passwd", "a/../../b", "back\\slash"])
def test_ids_that_are_not_plain_names_are_refused(tmp_path, emb, capsys, bad):
    (tmp_path / "ids.csv").write_text(f"x\n\"{bad}\"\nz\n")
    line = assert_one_line_error(run_cli(capsys, "store", "import", emb, "-o", tmp_path / "s", "--ids", tmp_path / "ids.csv"),
                                 "ids.csv", "line 2")
    assert "\x1b" not in line
    assert not (tmp_path / "s").exists()


def test_control_characters_in_ids_are_refused_on_every_append(tmp_path):
    with FeatureStore.create(tmp_path / "s", dim=2) as store:
        with pytest.raises(ValueError, match="control character"):
            store.append(np.ones((2, 2), np.float32), ids=["ok", "bell\x07"])
        store.append(np.ones((2, 2), np.float32), ids=["cats/a.jpg", "b"])  # folders in ids stay fine


def test_parquet_image_paths_stay_inside_their_folder(tmp_path, capsys):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("secret")
    data = tmp_path / "data"
    (data / "img").mkdir(parents=True)
    (data / "img" / "a.png").write_bytes(b"x")
    table = pa.table({"emb": [[1.0, 2.0], [3.0, 4.0]], "id": ["a", "b"],
                      "path": ["img/a.png", "../home/.ssh/id_rsa"]})
    pq.write_table(table, data / "e.parquet")
    line = assert_one_line_error(run_cli(capsys, "store", "import", data / "e.parquet", "-o", tmp_path / "s"),
                                 "row 1", "--allow-outside-root")
    assert "secret" not in line and not (tmp_path / "s").exists()
    pq.write_table(table.set_column(2, "path", pa.array(["img/a.png", str(home / ".ssh" / "id_rsa")])), data / "abs.parquet")
    assert_one_line_error(run_cli(capsys, "store", "import", data / "abs.parquet", "-o", tmp_path / "s"), "row 1")
    assert run_cli(capsys, "store", "import", data / "e.parquet", "-o", tmp_path / "s", "--allow-outside-root")[0] == 0
    assert FeatureStore.open(tmp_path / "s").items.column("path").to_pylist()[1] == str(home / ".ssh" / "id_rsa")


def test_image_root_gives_each_id_its_image(tmp_path, emb, capsys):
    root = tmp_path / "photos"
    (root / "cats").mkdir(parents=True)
    for name in ("cats/a.jpg", "b.jpg", "c.jpg"):
        (root / name).write_bytes(b"x")
    (tmp_path / "ids.csv").write_text("cats/a.jpg\nb.jpg\nc.jpg\n")
    assert run_cli(capsys, "store", "import", emb, "-o", tmp_path / "s", "--ids", tmp_path / "ids.csv",
                   "--image-root", root)[0] == 0
    paths = FeatureStore.open(tmp_path / "s").items.column("path").to_pylist()
    assert paths == [str(root / "cats" / "a.jpg"), str(root / "b.jpg"), str(root / "c.jpg")]
    assert_one_line_error(run_cli(capsys, "store", "import", emb, "-o", tmp_path / "t", "--image-root", tmp_path / "none"),
                          "--image-root", "no such folder")


def test_a_paths_side_file(tmp_path, emb, capsys):
    root = tmp_path / "photos"
    root.mkdir()
    (root / "x.jpg").write_bytes(b"x")
    (tmp_path / "paths.csv").write_text("id,path\n0,x.jpg\n2,x.jpg\n")
    assert run_cli(capsys, "store", "import", emb, "-o", tmp_path / "s", "--paths", tmp_path / "paths.csv",
                   "--image-root", root)[0] == 0
    assert FeatureStore.open(tmp_path / "s").items.column("path").to_pylist() == [str(root / "x.jpg"), None, str(root / "x.jpg")]
    (tmp_path / "bad.csv").write_text("1,../../etc/passwd\n")
    assert_one_line_error(run_cli(capsys, "store", "import", emb, "-o", tmp_path / "t", "--paths", tmp_path / "bad.csv",
                                  "--image-root", root), "bad.csv", "--allow-outside-root")
    store = import_embeddings(emb, tmp_path / "u", paths=tmp_path / "paths.csv")  # relative to the side file's folder
    assert store.items.column("path").to_pylist()[0] == str(tmp_path / "x.jpg")


def test_relocate_sets_the_image_paths_of_an_imported_store(tmp_path, emb, capsys):
    root = tmp_path / "photos"
    root.mkdir()
    for i in range(3):
        (root / f"{i}").write_bytes(b"x")
    assert run_cli(capsys, "store", "import", emb, "-o", tmp_path / "s")[0] == 0
    code, out, err = run_cli(capsys, "store", "relocate", tmp_path / "s", "--image-root", root)
    assert code == 0, err
    assert FeatureStore.open(tmp_path / "s").items.column("path").to_pylist() == [str(root / f"{i}") for i in range(3)]
    assert_one_line_error(run_cli(capsys, "store", "relocate", tmp_path / "s", "--image-root", tmp_path / "e.npy"), "--image-root")
