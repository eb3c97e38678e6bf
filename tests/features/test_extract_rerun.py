"""Issue 26: re-running ``extract images`` with more folders, folder tags at every level,
and no empty store left behind by a failed first extraction."""

import numpy as np
import pytest

pytest.importorskip("cv2")
pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from _helpers import run_cli as run  # noqa: E402
from hardneg.cli.main import main  # noqa: E402
from hardneg.store import FeatureStore  # noqa: E402

DSIFT = ["--features", "dsift", "--n-words", "4", "--step", "8"]


def _png(path, seed):
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 256, (32, 32), dtype=np.uint8)).save(path)


@pytest.fixture
def tree(tmp_path):
    for k in range(2):
        _png(tmp_path / "photos" / "cats" / f"{k}.png", k)
        _png(tmp_path / "photos" / "dogs" / f"{k}.png", 10 + k)
    _png(tmp_path / "extra" / "cats" / "added-cat.png", 20)
    return tmp_path


def _rows(path):
    s = FeatureStore.open(path)
    items = s.items
    tags = [sorted(t or []) for t in items.column("tags").to_pylist()]
    return s.ids().tolist(), s.labels().tolist(), tags, s.attrs.get("class_names")


PHOTO_IDS = ["cats/0.png", "cats/1.png", "dogs/0.png", "dogs/1.png"]


def test_rerun_with_another_folder_adds_only_the_new_images(tree, capsys):
    out = tree / "plus.store"
    flags = [*DSIFT, "--tags-from-folders", "--labels-from-folders"]
    assert run(capsys, "extract", "images", tree / "photos", "-o", out, *flags)[0] == 0
    before = FeatureStore.open(out).to_numpy()
    code, text, err = run(capsys, "extract", "images", tree / "photos", tree / "extra", "-o", out, *flags)
    assert code == 0, err
    assert "1 added, 4 already there" in text
    ids, labels, tags, names = _rows(out)
    assert ids == PHOTO_IDS + ["cats/added-cat.png"]
    assert labels == [0, 0, 1, 1, 0] and names == ["cats", "dogs"]
    assert tags == [["cats"], ["cats"], ["dogs"], ["dogs"], ["cats"]]
    np.testing.assert_array_equal(FeatureStore.open(out).to_numpy()[:4], before)

    # a new class is numbered after the recorded ones, never re-numbered (birds sorts first)
    _png(tree / "more" / "birds" / "b.png", 30)
    code, _, err = run(capsys, "extract", "images", tree / "more", tree / "photos", "-o", out, *flags)
    assert code == 0, err
    ids, labels, _, names = _rows(out)
    assert ids[-1] == "birds/b.png" and labels == [0, 0, 1, 1, 0, 2] and names == ["cats", "dogs", "birds"]


def test_same_id_from_two_folders_is_refused_before_writing(tree, capsys):
    _png(tree / "dup" / "cats" / "0.png", 40)
    out = tree / "s.store"
    code, _, err = run(capsys, "extract", "images", tree / "photos", tree / "dup", "-o", out, *DSIFT)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "cats/0.png" in err and "dup" in err and "photos" in err
    assert not out.exists()


def test_another_id_root_or_another_file_under_a_stored_id_is_refused(tree, capsys):
    out = tree / "s.store"
    assert run(capsys, "extract", "images", tree / "photos", "-o", out, *DSIFT)[0] == 0
    meta = (out / "meta.json").read_text()
    # photos/cats as the folder: the same files would come back as 0.png, 1.png
    code, _, err = run(capsys, "extract", "images", tree / "photos" / "cats", "-o", out, *DSIFT)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cats/0.png" in err and "'0.png'" in err
    # another folder whose cats/0.png is another image than the stored cats/0.png
    _png(tree / "other" / "cats" / "0.png", 50)
    code, _, err = run(capsys, "extract", "images", tree / "other", "-o", out, *DSIFT)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cats/0.png" in err and "other" in err
    assert (out / "meta.json").read_text() == meta  # nothing written


def test_store_with_folder_prefixed_ids_is_not_duplicated(tree, capsys):
    """A store made by the old multi-folder code (ids photos/cats/0.png): a rerun refuses instead of adding all again."""
    from hardneg.features import BagOfWords, DenseSift, extract_to_store, list_image_files

    files = list_image_files(tree / "photos")
    out = tree / "old.store"
    extract_to_store([str(f) for f in files], out, BagOfWords(DenseSift(step=8), n_words=4, random_state=0),
                     ids=["photos/" + f.relative_to(tree / "photos").as_posix() for f in files])
    code, _, err = run(capsys, "extract", "images", tree / "photos", tree / "extra", "-o", out, *DSIFT)
    assert code == 2 and "photos/cats/0.png" in err and len(err.strip().splitlines()) == 1
    assert len(FeatureStore.open(out)) == 4


def test_library_labels_by_name_extend_the_recorded_classes(tree):
    from hardneg.features import BagOfWords, DenseSift, extract_to_store

    def bow():
        return BagOfWords(DenseSift(step=8), n_words=4, random_state=0)

    out = tree / "lib.store"
    extract_to_store(tree / "photos", out, bow(), labels="folders")
    assert FeatureStore.open(out).attrs["class_names"] == ["cats", "dogs"]
    paths = [str(tree / "extra" / "cats" / "added-cat.png"), str(tree / "photos" / "dogs" / "0.png")]
    s = extract_to_store(paths, out, bow(), ids=["cats/added-cat.png", "dogs/0.png"], labels=["zebras", "dogs"])
    assert (s.n_added, s.n_already) == (1, 1)
    st = FeatureStore.open(out)
    assert st.attrs["class_names"] == ["cats", "dogs", "zebras"] and st.labels().tolist() == [0, 0, 1, 1, 2]
    _png(tree / "new" / "x.png", 60)
    with pytest.raises(ValueError, match="class_names"):  # numbers by another class list: refused, not re-numbered
        extract_to_store([str(tree / "new" / "x.png")], out, bow(), ids=["x.png"], labels=[1], attrs={"class_names": ["dogs", "cats"]})
    assert len(FeatureStore.open(out)) == 5


def test_a_list_of_paths_uses_the_same_ids_and_labels_as_a_folder(tree):
    from hardneg.distributed import Runner
    from hardneg.features import BagOfWords, DenseSift, extract_to_store
    from hardneg.features._extract import images_from_folders

    def bow():
        return BagOfWords(DenseSift(step=8), n_words=4, random_state=0)

    out = tree / "d.store"
    extract_to_store(tree / "photos", out, bow(), labels="folders")
    paths, ids = images_from_folders([tree / "photos", tree / "extra"])
    s = extract_to_store(paths, out, bow(), ids=ids, labels=[i.split("/")[0] for i in ids], batch_size=2, runner=Runner())
    assert (s.n_added, s.n_already) == (1, 4)
    st = FeatureStore.open(out)
    assert st.ids().tolist() == PHOTO_IDS + ["cats/added-cat.png"] and st.labels().tolist() == [0, 0, 1, 1, 0]
    _png(tree / "dup" / "cats" / "0.png", 40)
    with pytest.raises(ValueError, match="cats/0.png"):
        extract_to_store([str(tree / "dup" / "cats" / "0.png")], out, bow(), ids=["cats/0.png"])


def test_tags_from_nested_folders_every_level(tmp_path, capsys):
    _png(tmp_path / "clip" / "animals" / "mammals" / "x.png", 1)
    _png(tmp_path / "clip" / "animals" / "y.png", 2)
    _png(tmp_path / "clip" / "top.png", 3)
    out = tmp_path / "n.store"
    code, _, err = run(capsys, "extract", "images", tmp_path / "clip", "-o", out, *DSIFT, "--tags-from-folders", "--labels-from-folders")
    assert code == 0, err
    ids, labels, tags, names = _rows(out)
    assert ids == ["animals/mammals/x.png", "animals/y.png", "top.png"]
    assert tags == [["animals", "mammals"], ["animals"], []]
    assert labels == [0, 0, -1] and names == ["animals"]
    out1 = tmp_path / "n1.store"
    code, _, err = run(capsys, "extract", "images", tmp_path / "clip", "-o", out1, *DSIFT, "--tags-from-folders", "--folder-tag-levels", "1")
    assert code == 0, err
    assert _rows(out1)[2] == [["animals"], ["animals"], []]


def test_help_documents_folder_tags_and_ids(capsys):
    assert main(["extract", "images", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "every folder level" in text and "relative to" in text


# ---------------------------------------------------------------------------- no empty store after a failed first run


def test_missing_opencv_leaves_no_store(tree, capsys, monkeypatch):
    from hardneg.features import _dsift

    def no_cv2():
        raise ImportError("dense SIFT needs OpenCV: pip install 'hardneg[bow]' (opencv-python-headless)")

    monkeypatch.setattr(_dsift, "_require_cv2", no_cv2)
    out = tree / "s.store"
    code, _, err = run(capsys, "extract", "images", tree / "photos", "-o", out, *DSIFT)
    assert code == 2 and "OpenCV" in err
    assert not out.exists()

    # a codebook learned beforehand: no fitting to fail first; the check still runs before the store exists
    from hardneg.features import BagOfWords, DenseSift, extract_to_store

    bow = BagOfWords(DenseSift(step=8), n_words=4, random_state=0)
    monkeypatch.undo()
    bow.fit_images([np.random.default_rng(0).integers(0, 256, (32, 32), dtype=np.uint8)] * 2, random_state=0)
    monkeypatch.setattr(_dsift, "_require_cv2", no_cv2)
    bow.descriptor._sift = None
    with pytest.raises(ImportError, match="OpenCV"):
        extract_to_store(tree / "photos", out, bow)
    assert not out.exists()


def test_missing_torch_leaves_no_store(tree, capsys, monkeypatch):
    from hardneg.features import _cnn

    def no_torch():
        raise ImportError("CNN features need torch: pip install 'hardneg[cnn]' (torch==2.13.0, CPU build)")

    def no_onnxruntime():
        raise ImportError("runtime='onnx' needs onnxruntime")

    monkeypatch.setattr(_cnn, "_require_torch", no_torch)
    # with ONNX Runtime and a cached graph the run needs no torch; without it, PyTorch is the engine
    monkeypatch.setattr(_cnn, "_import_onnxruntime", no_onnxruntime)
    out = tree / "s.store"
    code, _, err = run(capsys, "extract", "images", tree / "photos", "-o", out, "--features", "cnn", "--input-size", "32")
    assert code == 2 and "torch" in err
    assert not out.exists()


def test_no_readable_image_leaves_no_store_and_keeps_the_old_one(tmp_path, capsys):
    from hardneg.features import BagOfWords, DenseSift, extract_to_store

    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.png").write_text("not an image")
    (tmp_path / "bad" / "b.png").write_text("nor this")
    bow = BagOfWords(DenseSift(step=8), n_words=4, random_state=0)
    bow.fit_images([np.random.default_rng(0).integers(0, 256, (32, 32), dtype=np.uint8)] * 2, random_state=0)
    out = tmp_path / "s.store"
    with pytest.raises(ValueError, match="a.png"):
        extract_to_store(tmp_path / "bad", out, bow)
    assert not out.exists()
    # --overwrite of a good store with unreadable inputs: the good store stays
    _png(tmp_path / "good" / "g.png", 1)
    extract_to_store(tmp_path / "good", out, bow)
    with pytest.raises(ValueError, match="none of the 2"):
        extract_to_store(tmp_path / "bad", out, bow, overwrite=True)
    assert FeatureStore.open(out).ids().tolist() == ["g.png"]
