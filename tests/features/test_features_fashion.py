"""The one-command Fashion-MNIST stores, on a tiny IDX dataset written here."""

import numpy as np
import pytest

pytest.importorskip("cv2")
pytest.importorskip("PIL")

from hardneg.datasets import write_idx  # noqa: E402
from hardneg.features import (  # noqa: E402
    build_fashion_mnist_store,
    fashion_mnist_ids,
    fashion_mnist_store_path,
    load_fashion_mnist_features,
    stores_dir,
)
from hardneg.store import FeatureStore  # noqa: E402


@pytest.fixture
def tiny_fashion(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "fm"
    folder.mkdir()
    for prefix, n in (("train", 12), ("t10k", 4)):
        imgs = np.zeros((n, 28, 28), np.uint8)
        for k in range(n):  # a bright blob of random size: gradients for SIFT
            r = rng.integers(4, 12)
            imgs[k, 14 - r : 14 + r, 14 - r // 2 : 14 + r // 2] = rng.integers(100, 256)
        write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", imgs)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", (np.arange(n) % 10).astype(np.uint8))
    return folder


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.setenv("HARDNEG_CACHE", str(tmp_path))
    assert stores_dir() == tmp_path / "stores"
    assert fashion_mnist_store_path("cnn") == tmp_path / "stores" / "fashion-mnist-cnn"
    assert fashion_mnist_store_path("dsift").name == "fashion-mnist-dsift1024"
    monkeypatch.delenv("HARDNEG_CACHE")
    assert str(stores_dir()).endswith(".cache/hardneg/stores")
    with pytest.raises(ValueError, match="features"):
        fashion_mnist_store_path("hog")


def test_dsift_store_has_labels_split_and_l1_histograms(tiny_fashion, tmp_path):
    out = tmp_path / "fm-dsift"
    s = build_fashion_mnist_store("dsift", path=out, data_path=tiny_fashion)
    assert s.n_added == 16 and s.n_failed == 0
    store = FeatureStore.open(out)
    assert store.dim == 1024 and not store.is_sparse
    np.testing.assert_allclose(store.to_numpy().sum(axis=1), 1.0, rtol=1e-5)
    assert store.ids().tolist()[:2] == ["train-00000", "train-00001"] and store.ids().tolist()[-1] == "test-00003"
    assert store.select(split="test").tolist() == [12, 13, 14, 15]
    assert store.labels().tolist() == [k % 10 for k in range(12)] + [0, 1, 2, 3]
    assert store.attrs["dataset"] == "fashion-mnist"
    again = build_fashion_mnist_store("dsift", path=out, data_path=tiny_fashion)
    assert again.n_added == 0 and again.n_already == 16


def test_features_come_back_in_dataset_order(tiny_fashion, tmp_path):
    assert fashion_mnist_ids(["train", "test", "train"]) == ["train-00000", "test-00000", "train-00001"]
    out = tmp_path / "fm-dsift"
    build_fashion_mnist_store("dsift", path=out, data_path=tiny_fashion)
    X, ids = FeatureStore.open(out).to_numpy(), FeatureStore.open(out).ids()
    order = np.random.default_rng(1).permutation(16)
    shuffled, partial = tmp_path / "shuffled", tmp_path / "partial"
    with FeatureStore.create(shuffled, dim=X.shape[1]) as store:
        store.append(X[order], ids=ids[order])
    with FeatureStore.create(partial, dim=X.shape[1]) as store:
        store.append(X[:4], ids=ids[:4])
    with pytest.raises(ValueError, match="12 images are not in the store"):
        load_fashion_mnist_features(path=partial, data_path=tiny_fashion)
    np.testing.assert_array_equal(load_fashion_mnist_features(path=shuffled, data_path=tiny_fashion), X)


def test_cnn_store_resumes_from_a_partial_build(tiny_fashion, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("efficientnet_lite_pytorch")
    out = tmp_path / "fm-cnn"
    first = build_fashion_mnist_store("cnn", path=out, data_path=tiny_fashion, limit=2, num_threads=1)
    assert first.n_added == 4
    rest = build_fashion_mnist_store("cnn", path=out, data_path=tiny_fashion, num_threads=1)
    assert rest.n_added == 12 and rest.n_already == 4
    store = FeatureStore.open(out)
    assert store.shape == (16, 1280)
    assert store.attrs["extractor"]["input_size"] == 96
    assert sorted(store.ids().tolist()) == sorted([f"train-{k:05d}" for k in range(12)] + [f"test-{k:05d}" for k in range(4)])
