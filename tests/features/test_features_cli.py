"""``hardneg extract`` from the command line."""

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")
pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from hardneg.cli.main import main  # noqa: E402
from hardneg.store import FeatureStore  # noqa: E402


def _save(path, seed):
    rng = np.random.default_rng(seed)
    Image.fromarray(cv2.GaussianBlur(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8), (5, 5), 1.0)).save(path)


def test_extract_images_folder_and_list(tmp_path, capsys):
    (tmp_path / "imgs" / "a").mkdir(parents=True)
    for k in range(4):
        _save(tmp_path / "imgs" / "a" / f"{k}.png", k)
    (tmp_path / "imgs" / "a" / "bad.png").write_text("nope")
    out = tmp_path / "store"
    args = ["extract", "images", str(tmp_path / "imgs"), "--out", str(out), "--features", "dsift", "--n-words", "4", "--step", "8", "--labels-from-folders"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "4 added" in text and "a/bad.png" in text
    assert FeatureStore.open(out).ids().tolist() == ["a/0.png", "a/1.png", "a/2.png", "a/3.png"]
    assert main(args) == 0
    assert "0 added, 4 already there" in capsys.readouterr().out

    (tmp_path / "list.txt").write_text("imgs/a/0.png\n# a comment\nimgs/a/2.png\n")
    out2 = tmp_path / "store2"
    assert main(["extract", "images", "--list", str(tmp_path / "list.txt"), "--out", str(out2), "--features", "dsift", "--n-words", "4", "--step", "8"]) == 0
    assert FeatureStore.open(out2).ids().tolist() == ["imgs/a/0.png", "imgs/a/2.png"]


def test_extract_user_errors_exit_2(tmp_path, capsys):
    assert main(["extract", "images", str(tmp_path / "missing"), "--out", str(tmp_path / "s")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["extract", "images", "--out", str(tmp_path / "s")]) == 2


def test_extract_dataset_keeps_labels_and_split(tmp_path, capsys):
    pytest.importorskip("skimage")
    out = tmp_path / "faces"
    assert main(["extract", "dataset", "faces", "--out", str(out), "--features", "dsift", "--n-words", "8", "--step", "8"]) == 0
    store = FeatureStore.open(out)
    assert len(store) == 200 and store.dim == 8
    assert set(store.labels().tolist()) == {0, 1}
    assert store.attrs["dataset"] == "faces"
    sums = store.to_numpy().sum(axis=1)
    # l1 histograms; the one blank (all-black) face has no descriptor and stays all-zero.
    assert np.all((np.abs(sums - 1) < 1e-5) | (sums == 0)) and (sums > 0).sum() >= 195


def test_extract_dataset_tree_vocabulary_writes_sparse_rows_of_tree_words(tmp_path, capsys):
    """``--tree-branching``: the words are a vocabulary tree's leaves, saved with the store, and
    each row counts the leaves its descriptors reach by greedy descent (10,000 words: sparse CSR)."""
    import scipy.sparse as sp

    from hardneg.datasets import load
    from hardneg.features import Codebook, DenseSift

    out = tmp_path / "digits-tree"
    assert main(["extract", "dataset", "digits", "--out", str(out), "--features", "dsift", "--n-words", "10000",
                 "--tree-branching", "100", "--sift-size", "32", "--step", "4", "--fit-images", "500"]) == 0
    store = FeatureStore.open(out)
    assert store.is_sparse and store.dim == 10000 and len(store) == 1797
    cb = Codebook.load(out / "codebook.npz")
    assert cb.tree_branching == 100 and cb.tree_ is not None and cb.tree_.depth == 2
    images = load("digits").images[:20]
    images = np.clip(np.rint(images * (255.0 / 16.0)), 0, 255).astype(np.uint8)  # as the command scales digits
    sets = DenseSift(step=4, bin_sizes=(4, 6), resize_to=32).describe(list(images))
    rows = sp.csr_matrix(store.take(np.arange(20)))
    for r, desc in enumerate(sets):
        words, counts = np.unique(cb.tree_.predict(desc), return_counts=True)
        assert rows[r].indices.tolist() == words.tolist()
        np.testing.assert_allclose(rows[r].data, counts / counts.sum(), rtol=1e-6)  # l1 term frequencies
    # the branching is one of the store's settings: resuming with another is refused, naming it; the same resumes
    capsys.readouterr()
    assert main(["extract", "dataset", "digits", "--out", str(out), "--features", "dsift", "--n-words", "10000",
                 "--tree-branching", "10", "--sift-size", "32", "--step", "4", "--fit-images", "500"]) == 2
    assert "tree_branching" in capsys.readouterr().err
    assert main(["extract", "dataset", "digits", "--out", str(out), "--features", "dsift", "--n-words", "10000",
                 "--tree-branching", "100", "--sift-size", "32", "--step", "4", "--fit-images", "500"]) == 0
    assert "0 added, 1,797 already there" in capsys.readouterr().out
    from hardneg.features._extract import extractor_from_store

    assert extractor_from_store(store).tree_branching == 100


def test_extract_tree_branching_choice_and_errors(tmp_path, capsys):
    from hardneg.cli.extract import _tree_branching

    # automatic: a tree with branching 10 above 16,384 words when n_words is a power of 10; else flat k-means
    assert [_tree_branching(n, None) for n in (1024, 10_000, 100_000, 1_000_000, 50_000)] == [None, None, 10, 10, None]
    assert _tree_branching(100, 10) == 10 and _tree_branching(100_000, 0) is None
    code = main(["extract", "dataset", "digits", "--out", str(tmp_path / "s"), "-f", "dsift", "--n-words", "1000", "--tree-branching", "3"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--tree-branching 3" in err and "power" in err
    assert not (tmp_path / "s").exists()  # refused before any work
    assert main(["extract", "dataset", "digits", "--out", str(tmp_path / "s"), "-f", "dsift", "--tree-branching", "1"]) == 2
