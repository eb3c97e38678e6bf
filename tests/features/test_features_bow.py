"""Dense SIFT and visual-word codebooks, checked against slow references."""

import numpy as np
import pytest
import scipy.sparse as sp

cv2 = pytest.importorskip("cv2")
faiss = pytest.importorskip("faiss")

from hardneg._persist import ModelFileError  # noqa: E402
from hardneg.features import BagOfWords, Codebook, DenseSift  # noqa: E402


def _image(seed=0, shape=(48, 56)):
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, shape, dtype=np.uint8)
    return cv2.GaussianBlur(img, (5, 5), 1.0)  # some structure, not pure noise


def test_grid_matches_hand_count():
    ds = DenseSift(step=8, bin_sizes=(4, 6))
    g = ds.grid(48, 56)
    # bin 4: window 16, x in 8..48 step 8 -> 6, y in 8..40 -> 5; bin 6: window 24, x in 12..44 -> 5, y in 12..36 -> 4
    assert g.shape == (6 * 5 + 5 * 4, 3)
    sizes = g[:, 2]
    np.testing.assert_allclose(np.unique(sizes), [4 / 1.5, 6 / 1.5])
    half = 1.5 * sizes * 2  # half the 4-bin window
    assert np.all(g[:, 0] - half >= 0) and np.all(g[:, 0] + half <= 56)
    assert np.all(g[:, 1] - half >= 0) and np.all(g[:, 1] + half <= 48)
    assert DenseSift(bin_sizes=(20,)).grid(30, 30).shape == (0, 3)


def test_descriptors_equal_opencv_on_the_same_keypoints():
    img = _image()
    ds = DenseSift(step=8, bin_sizes=(4, 6), drop_flat=False, max_side=None)
    d = ds.describe_one(img)
    g = ds.grid(*img.shape)
    kps = [cv2.KeyPoint(float(x), float(y), float(s), 0.0) for x, y, s in g]
    _, ref = cv2.SIFT_create().compute(img, kps)
    assert d.shape == (len(g), 128) and d.dtype == np.float32
    np.testing.assert_array_equal(d, ref)
    np.testing.assert_array_equal(ds.describe_one(img), d)  # deterministic


def test_reused_keypoints_follow_the_image_size_and_the_settings():
    # keypoints are kept per image size and grid settings: each call must equal OpenCV on that image's own grid
    ds = DenseSift(step=8, bin_sizes=(4, 6), drop_flat=False, max_side=None)

    def reference(img):
        kps = [cv2.KeyPoint(float(x), float(y), float(s), 0.0) for x, y, s in ds.grid(*img.shape)]
        return cv2.SIFT_create().compute(img, kps)[1]

    for shape in [(48, 56), (40, 40), (48, 56), (56, 48)]:
        img = _image(seed=shape[0] + shape[1], shape=shape)
        np.testing.assert_array_equal(ds.describe_one(img), reference(img))
    img = _image()
    ds.step, ds.bin_sizes = 4, (6,)  # settings changed after use: a new grid
    np.testing.assert_array_equal(ds.describe_one(img), reference(img))
    assert ds.describe_one(img).shape[0] == ds.grid(*img.shape).shape[0]


def test_flat_patches_dropped_and_rootsift():
    img = np.zeros((96, 96), np.uint8)
    img[44:52, 44:52] = 255
    kept = DenseSift(step=4, bin_sizes=(4,)).describe_one(img)
    every = DenseSift(step=4, bin_sizes=(4,), drop_flat=False).describe_one(img)
    assert 0 < kept.shape[0] < every.shape[0]
    assert np.all(kept.sum(axis=1) > 0)
    root = DenseSift(step=4, bin_sizes=(4,), root_sift=True).describe_one(img)
    np.testing.assert_allclose((root**2).sum(axis=1), 1.0, rtol=1e-5)
    assert DenseSift().describe_one(np.zeros((40, 40), np.uint8)).shape == (0, 128)


def test_resize_options():
    small = _image(1, (28, 28))
    d = DenseSift(step=4, bin_sizes=(4,), resize_to=64, drop_flat=False)
    assert d.describe_one(small).shape[0] == d.grid(64, 64).shape[0]
    big = _image(2, (400, 200))
    d2 = DenseSift(step=16, bin_sizes=(4,), max_side=100, drop_flat=False)
    assert d2.describe_one(big).shape[0] == d2.grid(100, 50).shape[0]


def test_resize_too_small_for_any_descriptor_is_refused():
    DenseSift(bin_sizes=(4, 8), resize_to=16).check_params()  # one 16-pixel window fits
    with pytest.raises(ValueError, match="resize_to=15 .* at least 16"):
        DenseSift(bin_sizes=(4, 8), resize_to=15).check_params()


def _blobs(seed=0, n=400, d=16, k=8):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 10, (k, d))
    return (centres[rng.integers(0, k, n)] + rng.normal(0, 1, (n, d))).astype(np.float32)


def test_assignment_equals_brute_force_argmin():
    X = _blobs()
    cb = Codebook(n_words=8, random_state=0).fit(X)
    Q = _blobs(seed=1)
    d2 = ((Q[:, None, :].astype(np.float64) - cb.centroids_[None].astype(np.float64)) ** 2).sum(-1)
    np.testing.assert_array_equal(cb.predict(Q), d2.argmin(1))


def test_histograms_l1_counts_and_tfidf_against_reference():
    X = _blobs()
    cb = Codebook(n_words=8, random_state=0).fit([X[:100], X[100:250], X[250:]])
    sets = [X[:30], X[30:31], np.empty((0, 16), np.float32), X[31:200]]
    words = [cb.predict(s) for s in sets]
    counts = np.array([np.bincount(w, minlength=8) for w in words], np.float64)
    np.testing.assert_array_equal(cb.counts(sets).toarray(), counts)

    H = cb.histograms(sets)
    assert isinstance(H, np.ndarray) and H.dtype == np.float32 and H.shape == (4, 8)
    np.testing.assert_allclose(H.sum(axis=1), [1, 1, 0, 1], rtol=1e-6)  # the empty image stays zero
    np.testing.assert_allclose(H[[0, 1, 3]], counts[[0, 1, 3]] / counts[[0, 1, 3]].sum(1, keepdims=True), rtol=1e-6)

    # idf from document frequencies over the 3 fitting "images" (smoothed form).
    df = np.zeros(8)
    for s in (X[:100], X[100:250], X[250:]):
        df[np.unique(cb.predict(s))] += 1
    idf = np.log(4.0 / (1.0 + df)) + 1.0
    np.testing.assert_allclose(cb.idf_, idf, rtol=1e-6)
    T = cb.histograms(sets, weighting="tfidf", normalize="l2", sparse=True)
    assert sp.issparse(T) and T.format == "csr"
    ref = counts * idf
    norms = np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(T.toarray(), np.divide(ref, norms, out=np.zeros_like(ref), where=norms > 0), rtol=1e-5)
    np.testing.assert_allclose(cb.histograms(sets, sparse=True).toarray(), H)


def test_codebook_save_load_roundtrip(tmp_path):
    X = _blobs()
    cb = Codebook(n_words=8, random_state=0).fit(X)
    cb.save(tmp_path / "cb.npz")
    cb2 = Codebook.load(tmp_path / "cb.npz")
    np.testing.assert_array_equal(cb2.centroids_, cb.centroids_)
    np.testing.assert_array_equal(cb2.predict(X), cb.predict(X))
    (tmp_path / "bad.npz").write_bytes(b"garbage")
    with pytest.raises(ModelFileError):
        Codebook.load(tmp_path / "bad.npz")


def test_codebook_is_seeded_and_validates():
    X = _blobs()
    a = Codebook(n_words=8, random_state=3).fit(X).centroids_
    b = Codebook(n_words=8, random_state=3).fit(X).centroids_
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="at least"):
        Codebook(n_words=500).fit(X)
    with pytest.raises(ValueError, match="not fitted"):
        Codebook().predict(X)
    with pytest.raises(ValueError, match="assign"):
        Codebook(n_words=8, assign="magic").fit(X)
    cb = Codebook(n_words=8, random_state=0).fit(X)
    with pytest.raises(ValueError):
        cb.predict(X[:, :5])
    with pytest.raises(ValueError, match="weighting"):
        cb.histograms([X], weighting="bm25")


def test_hnsw_assignment_agrees_with_exact():
    X = _blobs(n=3000, k=40)
    exact = Codebook(n_words=64, random_state=0).fit(X)
    approx = Codebook(n_words=64, assign="hnsw", random_state=0).fit(X)
    np.testing.assert_array_equal(approx.centroids_, exact.centroids_)
    assert np.mean(approx.predict(X) == exact.predict(X)) > 0.98


def test_bag_of_words_extractor_histograms_are_l1():
    imgs = [_image(s) for s in range(4)]
    bow = BagOfWords(DenseSift(step=8, bin_sizes=(4, 6)), n_words=16, random_state=0).fit_images(imgs)
    H = bow.transform(imgs)
    assert H.shape == (4, 16) and not bow.sparse
    np.testing.assert_allclose(H.sum(axis=1), 1.0, rtol=1e-6)
    assert np.all(H >= 0)
    np.testing.assert_array_equal(bow.transform(imgs), H)
    sparse = BagOfWords(DenseSift(step=8, bin_sizes=(4, 6)), n_words=16, sparse=True, codebook=bow.codebook)
    S = sparse.transform(imgs)
    assert sp.issparse(S)
    np.testing.assert_allclose(S.toarray(), H)
    assert BagOfWords(DenseSift(), n_words=10_000).sparse  # large vocabularies default to CSR
    with pytest.raises(ValueError, match="codebook"):
        BagOfWords(DenseSift(), n_words=16).transform(imgs)
