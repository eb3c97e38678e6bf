"""VLAD (Jégou et al. 2010; normalizations of Arandjelović & Zisserman 2013): by hand, against a loop, as an extractor."""

import numpy as np
import pytest

pytest.importorskip("faiss")

from hardneg.features import Codebook, vlad  # noqa: E402


def _two_word_codebook():
    # two tight clusters: centroids (0, 0.5) and (10, 0.5)
    return Codebook(2, random_state=0).fit([np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]] * 20)])


def _reference(sets, C, power, intra):
    """One image at a time, one descriptor at a time."""
    K, d = C.shape
    out = []
    for s in sets:
        v = np.zeros((K, d))
        for x in s:
            k = int(np.argmin(((C - x) ** 2).sum(axis=1)))
            v[k] += x - C[k]
        v = np.sign(v) * np.abs(v) ** power
        if intra:
            n = np.linalg.norm(v, axis=1, keepdims=True)
            v = np.divide(v, n, out=np.zeros_like(v), where=n > 0)
        v = v.ravel()
        n = np.linalg.norm(v)
        out.append(v / n if n > 0 else v)
    return np.array(out)


def test_residual_sums_and_normalizations_by_hand():
    cb = _two_word_codebook()
    np.testing.assert_allclose(np.sort(cb.centroids_[:, 0]), [0.0, 10.0], atol=1e-5)
    first = int(np.argmin(cb.centroids_[:, 0]))  # the word at x = 0
    x = np.array([[1.0, 0.0], [9.0, 0.0], [11.0, 1.0]])
    # word "0": residual (1, -0.5); word "10": (-1, -0.5) + (1, 0.5) = (0, 0)
    raw = vlad([x], cb, power=1.0, intra=False)[0].reshape(2, 2)
    np.testing.assert_allclose(raw[first], np.array([1.0, -0.5]) / np.sqrt(1.25), rtol=1e-5)
    np.testing.assert_allclose(raw[1 - first], [0.0, 0.0], atol=1e-6)
    # signed square root, then the block of word "0" normalized on its own: (1, -sqrt(0.5)) / sqrt(1.5)
    full = vlad([x], cb)[0].reshape(2, 2)
    np.testing.assert_allclose(full[first], np.array([1.0, -np.sqrt(0.5)]) / np.sqrt(1.5), rtol=1e-5)


@pytest.mark.parametrize("power, intra", [(0.5, True), (1.0, False), (0.3, False), (1.0, True)])
def test_matches_a_descriptor_by_descriptor_loop(power, intra):
    rng = np.random.default_rng(1)
    train = [rng.normal(size=(200, 6)).astype(np.float32)]
    cb = Codebook(5, random_state=0).fit(train)
    sets = [rng.normal(size=(m, 6)).astype(np.float32) for m in (1, 7, 30, 0, 12)]
    got = vlad(sets, cb, power=power, intra=intra)
    np.testing.assert_allclose(got, _reference(sets, cb.centroids_.astype(np.float64), power, intra), rtol=1e-4, atol=1e-5)
    assert got.dtype == np.float32 and got.shape == (5, 30)
    assert not got[3].any()  # the image without descriptors stays zero
    np.testing.assert_allclose(np.linalg.norm(got[[0, 1, 2, 4]], axis=1), 1.0, rtol=1e-5)


def test_bad_input_is_one_clear_error():
    cb = _two_word_codebook()
    with pytest.raises(ValueError, match=r"descriptor set 1: expected \(m, 2\)"):
        vlad([np.ones((3, 2)), np.ones((3, 5))], cb)
    with pytest.raises(ValueError, match="power"):
        vlad([np.ones((3, 2))], cb, power=0.0)
    assert vlad([], cb).shape == (0, 4)


def test_extractor_builds_resumes_and_rebuilds_from_its_store(tmp_path):
    pytest.importorskip("cv2")
    from hardneg.features import VLAD, DenseSift, extract_to_store
    from hardneg.features._extract import extractor_from_store
    from hardneg.store import FeatureStore

    rng = np.random.default_rng(2)
    imgs = rng.integers(0, 255, (6, 48, 48), dtype=np.uint8)
    ext = VLAD(DenseSift(step=8, bin_sizes=(4,)), n_words=4, random_state=0)
    summary = extract_to_store(imgs[:4], tmp_path / "s", ext, n_fit_images=4)
    assert summary.n_added == 4
    store = FeatureStore.open(tmp_path / "s")
    assert store.dim == 4 * 128
    again = extract_to_store(imgs, tmp_path / "s", VLAD(DenseSift(step=8, bin_sizes=(4,)), n_words=4, random_state=0))
    assert (again.n_added, again.n_already) == (2, 4)
    rebuilt = extractor_from_store(FeatureStore.open(tmp_path / "s"))
    assert isinstance(rebuilt, VLAD)
    np.testing.assert_allclose(rebuilt.transform(list(imgs[:4])), FeatureStore.open(tmp_path / "s").take(np.arange(4)), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="power"):
        VLAD(DenseSift(), power=2)
    with pytest.raises(ValueError, match="other extractor settings"):
        extract_to_store(imgs, tmp_path / "s", VLAD(DenseSift(step=8, bin_sizes=(4,)), n_words=8, random_state=0))


def test_cli_extract_dataset_vlad(tmp_path, capsys):
    pytest.importorskip("cv2")
    from hardneg.cli.main import main
    from hardneg.store import FeatureStore

    out = tmp_path / "digits-vlad"
    assert main(["extract", "dataset", "digits", "--features", "vlad", "--n-words", "4", "--sift-size", "16", "--out", str(out),
                 "--fit-images", "50"]) == 0
    store = FeatureStore.open(out)
    assert len(store) == 1797 and store.dim == 4 * 128
    assert store.attrs["extractor"]["extractor"] == "vlad" and store.attrs["extractor"]["n_words"] == 4


@pytest.mark.parametrize("flag", [["--tfidf"], ["--tree-branching", "4"]])
def test_cli_refuses_bag_of_words_options_for_vlad(tmp_path, capsys, flag):
    from hardneg.cli.main import main

    assert main(["extract", "dataset", "digits", "--features", "vlad", "--out", str(tmp_path / "v"), *flag]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and flag[0] in err and "not to vlad" in err
    assert not (tmp_path / "v").exists()
