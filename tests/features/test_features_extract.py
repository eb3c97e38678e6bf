"""The extraction pipeline: resumable, idempotent, bad files skipped and listed."""

import json

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")
pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from hardneg.features import BagOfWords, Codebook, DenseSift, extract_to_store  # noqa: E402
from hardneg.store import FeatureStore  # noqa: E402


def _photo(seed, shape=(40, 48)):
    rng = np.random.default_rng(seed)
    return cv2.GaussianBlur(rng.integers(0, 256, shape + (3,), dtype=np.uint8), (5, 5), 1.0)


def _bow(n_words=8, **kw):
    return BagOfWords(DenseSift(step=8, bin_sizes=(4,)), n_words=n_words, random_state=0, **kw)


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "imgs"
    (root / "cats").mkdir(parents=True)
    (root / "dogs").mkdir()
    for k in range(3):
        Image.fromarray(_photo(k)).save(root / "cats" / f"c{k}.png")
        Image.fromarray(_photo(10 + k)).save(root / "dogs" / f"d{k}.jpg", quality=95)
    Image.fromarray(_photo(20)[:, :, 0]).save(root / "dogs" / "grey.png")
    rgba = np.concatenate([_photo(21), np.full((40, 48, 1), 200, np.uint8)], axis=2)
    Image.fromarray(rgba).save(root / "cats" / "alpha.png")
    (root / "cats" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    (root / "dogs" / "notes.jpg").write_text("a text file with an image extension")
    return root


def test_folder_to_store_skips_bad_files_and_reruns_are_idempotent(folder, tmp_path):
    out = tmp_path / "s"
    calls = []
    s1 = extract_to_store(folder, out, _bow(), labels="folders", batch_size=3, progress=calls.append)
    assert s1.n_inputs == 10 and s1.n_added == 8 and s1.n_already == 0
    assert sorted(i for i, _ in s1.failed) == ["cats/broken.png", "dogs/notes.jpg"]
    assert all("cannot decode" in reason for _, reason in s1.failed)
    assert "skipped cats/broken.png" in str(s1)
    assert sum(calls) == 10

    store = FeatureStore.open(out)
    assert len(store) == 8 and store.dim == 8 and not store.is_sparse
    ids = store.ids().tolist()
    assert ids == ["cats/alpha.png", "cats/c0.png", "cats/c1.png", "cats/c2.png", "dogs/d0.jpg", "dogs/d1.jpg", "dogs/d2.jpg", "dogs/grey.png"]
    assert store.labels().tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert store.attrs["class_names"] == ["cats", "dogs"]
    assert store.items.column("path").to_pylist()[0].endswith("cats/alpha.png")
    X1 = store.to_numpy()
    np.testing.assert_allclose(X1.sum(axis=1), 1.0, rtol=1e-6)  # l1 histograms
    assert (out / "codebook.npz").is_file()

    s2 = extract_to_store(folder, out, _bow(), labels="folders", batch_size=3)
    assert s2.n_added == 0 and s2.n_already == 8 and s2.n_failed == 2
    again = FeatureStore.open(out)
    assert len(again) == 8
    np.testing.assert_array_equal(again.to_numpy(), X1)

    # A new file is the only thing a rerun extracts, with the store's own codebook.
    Image.fromarray(_photo(30)).save(folder / "dogs" / "new.png")
    s3 = extract_to_store(folder, out, _bow(n_words=8, max_descriptors=100), labels="folders")
    assert s3.n_added == 1 and s3.n_already == 8
    final = FeatureStore.open(out)
    cb = Codebook.load(out / "codebook.npz")
    ref = cb.histograms(DenseSift(step=8, bin_sizes=(4,)).describe([_photo(30)]))
    np.testing.assert_allclose(final.take([8]), ref, rtol=1e-6)


def test_interrupted_run_resumes_to_the_same_store(tmp_path):
    imgs = np.stack([_photo(k) for k in range(7)])
    cb = _bow().fit_images(list(imgs)).codebook
    full = tmp_path / "full"
    extract_to_store(imgs, full, _bow(codebook=cb), batch_size=2)
    part = tmp_path / "part"
    ids = [str(k) for k in range(7)]
    extract_to_store(imgs[:3], part, _bow(codebook=cb), ids=ids[:3], batch_size=2)  # "killed" after 3
    s = extract_to_store(imgs, part, _bow(), ids=ids, batch_size=2)
    assert s.n_added == 4 and s.n_already == 3
    np.testing.assert_array_equal(FeatureStore.open(part).to_numpy(), FeatureStore.open(full).to_numpy())
    assert FeatureStore.open(part).ids().tolist() == ids


def test_resume_refuses_other_settings_and_overwrite_rebuilds(tmp_path):
    imgs = np.stack([_photo(k) for k in range(4)])
    out = tmp_path / "s"
    extract_to_store(imgs, out, _bow())
    with pytest.raises(ValueError, match="other extractor settings"):
        extract_to_store(imgs, out, _bow(n_words=4))
    s = extract_to_store(imgs, out, _bow(n_words=4), overwrite=True)
    assert s.n_added == 4 and FeatureStore.open(out).dim == 4
    attrs = FeatureStore.open(out).attrs["extractor"]
    assert attrs["n_words"] == 4 and attrs["descriptor"]["descriptor"] == "dense-sift"
    json.dumps(attrs)


def test_sparse_tfidf_store_with_labels_and_split(tmp_path):
    imgs = np.stack([_photo(k) for k in range(5)])
    out = tmp_path / "sparse"
    s = extract_to_store(imgs, out, _bow(n_words=8, sparse=True, weighting="tfidf"), labels=[0, 1, 0, 1, -1], split="train")
    assert s.n_added == 5
    store = FeatureStore.open(out)
    assert store.is_sparse
    X = store.to_numpy()
    np.testing.assert_allclose(np.asarray(X.sum(axis=1)).ravel(), 1.0, rtol=1e-6)
    assert store.labels().tolist() == [0, 1, 0, 1, -1]
    assert store.select(split="train").tolist() == [0, 1, 2, 3, 4]


def test_codebook_relearned_if_killed_before_it_was_saved(tmp_path):
    imgs = np.stack([_photo(k) for k in range(4)])
    out = tmp_path / "s"
    extract_to_store(imgs, out, _bow())
    (out / "codebook.npz").unlink()
    with pytest.raises(ValueError):  # rows exist without their codebook: refuse, do not guess
        extract_to_store(imgs, out, _bow())
    FeatureStore.create(tmp_path / "empty", 8, attrs={"extractor": _bow().config()}).close()
    s = extract_to_store(imgs, tmp_path / "empty", _bow())
    assert s.n_added == 4 and (tmp_path / "empty" / "codebook.npz").is_file()


def test_input_errors(tmp_path):
    with pytest.raises(ValueError, match="no images"):
        extract_to_store(str(tmp_path), tmp_path / "s", _bow())
    imgs = np.stack([_photo(k) for k in range(3)])
    with pytest.raises(ValueError, match="labels"):
        extract_to_store(imgs, tmp_path / "s", _bow(), labels=[1, 2])
    with pytest.raises(ValueError, match="labels"):
        extract_to_store(imgs, tmp_path / "s", _bow(), labels="subfolders")


def test_large_vocabulary_defaults_to_a_sparse_csr_store(tmp_path):
    imgs = np.stack([_photo(k, (64, 64)) for k in range(10)])
    bow = BagOfWords(DenseSift(step=2, bin_sizes=(4,), drop_flat=False), n_words=5000, n_iter=2, random_state=0)
    assert bow.sparse  # above 4,096 words
    extract_to_store(imgs, tmp_path / "big", bow)
    store = FeatureStore.open(tmp_path / "big")
    assert store.is_sparse and store.dim == 5000
    X = store.to_numpy()
    assert X.format == "csr" and X.nnz <= 10 * 625  # at most one word per descriptor (625 per image)
    np.testing.assert_allclose(np.asarray(X.sum(axis=1)).ravel(), 1.0, rtol=1e-5)
