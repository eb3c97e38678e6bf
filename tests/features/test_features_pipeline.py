"""The threaded extraction loader: integer/Pillow compositing against the float formula it replaced,
threaded CNN-ready decoding against the serial reference path, and the extraction loop wired to it."""

from __future__ import annotations

import numpy as np
import pytest

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from hardneg.features._images import fit_square, read_image, read_image_square, to_rgb  # noqa: E402
from hardneg.features._pipeline import input_geometry, load_batch  # noqa: E402


def float_composite(rgba) -> np.ndarray:
    """The float32 formula extraction used before (the slow, obvious reference)."""
    alpha = rgba[:, :, 3:4].astype(np.float32) / 255.0
    rgb = rgba[:, :, :3].astype(np.float32) * alpha + 255.0 * (1.0 - alpha)
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)


def every_rgba() -> np.ndarray:
    """Every (colour, alpha) pair once: 256 x 256 pixels, colour c along rows, alpha along columns."""
    c, a = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    return np.stack([c, 255 - c, (c * 7) % 256, a], axis=2).astype(np.uint8)


def test_integer_compositing_matches_the_float_formula_on_every_pixel_pair():
    rgba = every_rgba()
    got, ref = to_rgb(rgba), float_composite(rgba)
    assert got.dtype == np.uint8 and got.shape == (256, 256, 3)
    assert np.abs(got.astype(int) - ref.astype(int)).max() <= 1
    assert (got[:, 255] == rgba[:, 255, :3]).all() and (got[:, 0] == 255).all()  # opaque kept, transparent white


@pytest.fixture
def files(tmp_path):
    """RGBA, LA, P with a transparent index, I;16 and RGB files, odd sizes."""
    rng = np.random.default_rng(0)
    rgba = rng.integers(0, 256, (37, 53, 4), dtype=np.uint8)
    out = {}
    Image.fromarray(rgba, "RGBA").save(tmp_path / "rgba.png")
    out["rgba"] = float_composite(rgba)
    la = rng.integers(0, 256, (41, 29, 2), dtype=np.uint8)
    Image.fromarray(la, "LA").save(tmp_path / "la.png")
    out["la"] = float_composite(np.concatenate([np.repeat(la[:, :, :1], 3, axis=2), la[:, :, 1:]], axis=2))
    p = Image.fromarray(rng.integers(0, 8, (30, 45), dtype=np.uint8), "P")
    p.putpalette(list(rng.integers(0, 256, 8 * 3)) + [0] * (256 - 8) * 3)
    p.info["transparency"] = 3
    p.save(tmp_path / "p.png", transparency=3)
    out["p"] = float_composite(np.asarray(Image.open(tmp_path / "p.png").convert("RGBA")))
    i16 = rng.integers(0, 65536, (33, 31), dtype=np.uint16)
    Image.fromarray(i16).save(tmp_path / "i16.png")
    out["i16"] = np.repeat(np.clip(np.rint(i16 * (255.0 / 65535.0)), 0, 255).astype(np.uint8)[:, :, None], 3, axis=2)
    rgb = rng.integers(0, 256, (300, 200, 3), dtype=np.uint8)
    Image.fromarray(rgb).save(tmp_path / "rgb.jpg", quality=95)
    out["rgb.jpg"] = None
    return tmp_path, out


def test_read_image_matches_the_float_formula(files):
    folder, ref = files
    for name in ("rgba", "la", "p", "i16"):
        got = read_image(folder / f"{name}.png")
        assert got.shape == ref[name].shape, name
        assert np.abs(got.astype(int) - ref[name].astype(int)).max() <= 1, name


@pytest.mark.parametrize("resize", ["stretch", "crop"])
def test_square_read_is_the_extractor_preprocessing(files, resize):
    folder, _ = files
    for name in ("rgba.png", "la.png", "p.png", "i16.png", "rgb.jpg"):
        want = np.asarray(fit_square(Image.fromarray(read_image(folder / name)), 32, resize))
        got = read_image_square(folder / name, 32, resize)
        assert got.shape == (32, 32, 3)
        np.testing.assert_array_equal(got, want, err_msg=name)


class _Net:
    """Just what input_geometry looks at."""

    input_size, resize = 32, "crop"

    def preprocess(self, images):  # pragma: no cover - never called
        raise AssertionError


def test_threaded_loader_keeps_order_and_failures_as_the_serial_path(files, caplog):
    from types import SimpleNamespace

    from hardneg.features._images import resolve_images

    folder, _ = files
    (folder / "bad.png").write_bytes(b"not an image")
    items = resolve_images(folder)
    assert input_geometry(_Net()) == (32, "crop") and input_geometry(object()) is None
    serial, threaded = SimpleNamespace(failed=[]), SimpleNamespace(failed=[])
    good0, imgs0 = load_batch(items, serial, n_threads=0)
    good1, imgs1 = load_batch(items, threaded, n_threads=3, geometry=input_geometry(_Net()))
    assert [it.id for it in good0] == [it.id for it in good1] == [it.id for it in items if it.id != "bad.png"]
    assert [i for i, _ in serial.failed] == [i for i, _ in threaded.failed] == ["bad.png"]
    assert serial.failed[0][1] == threaded.failed[0][1]
    for it, img0, img1 in zip(good0, imgs0, imgs1):
        assert img1.shape == (32, 32, 3)
        want = np.asarray(fit_square(Image.fromarray(img0), 32, "crop"))
        if it.id.endswith(".jpg"):  # 300 x 200 >= 2 x 32: decoded in JPEG draft mode (1/2 scale here), then resized
            assert np.abs(img1.astype(int) - want.astype(int)).mean() < 4
        else:
            np.testing.assert_array_equal(img1, want, err_msg=it.id)


def test_extraction_threaded_equals_serial_reference(files, tmp_path_factory):
    """The wired loop (threads, prefetch, CNN-ready decoding) stores what the serial full-size path stores."""
    from hardneg.features import EfficientNetLite0, extract_to_store
    from hardneg.store import FeatureStore

    pytest.importorskip("efficientnet_lite_pytorch")
    folder, _ = files
    (folder / "bad.png").write_bytes(b"not an image")
    out = tmp_path_factory.mktemp("stores")
    ext = EfficientNetLite0(input_size=32, resize="stretch", num_threads=1)
    s0 = extract_to_store(folder, out / "serial", ext, batch_size=2, decode_threads=0)
    s1 = extract_to_store(folder, out / "threaded", ext, batch_size=2, decode_threads=2)
    assert (s0.n_added, s0.failed) == (s1.n_added, s1.failed) == (5, s0.failed)
    assert [i for i, _ in s1.failed] == ["bad.png"]
    a, b = FeatureStore.open(out / "serial"), FeatureStore.open(out / "threaded")
    assert list(a.items.column("id").to_pylist()) == list(b.items.column("id").to_pylist())
    Xa, Xb = np.asarray(a.to_numpy()), np.asarray(b.to_numpy())
    png = [k for k, i in enumerate(a.items.column("id").to_pylist()) if i.endswith(".png")]
    np.testing.assert_allclose(Xa[png], Xb[png], rtol=1e-5, atol=1e-6)  # same pixels, same features
    cos = (Xa * Xb).sum(1) / (np.linalg.norm(Xa, axis=1) * np.linalg.norm(Xb, axis=1))
    assert cos.min() > 0.99  # the JPEG: draft decode


def test_check_extractor_available_uses_the_active_runtime(monkeypatch):
    from hardneg.features import EfficientNetLite0
    from hardneg.features import _cnn
    from hardneg.features._extract import check_extractor_available

    pytest.importorskip("onnxruntime")
    pytest.importorskip("efficientnet_lite_pytorch")
    ext = EfficientNetLite0(input_size=32, runtime="onnx")
    monkeypatch.setattr(type(ext), "_load_model", lambda self: (_ for _ in ()).throw(AssertionError("torch model loaded")))
    check_extractor_available(ext)  # opens the ONNX session only
    assert ext.active_runtime == "onnx" and ext._net is None
    torch_ext = EfficientNetLite0(input_size=32, runtime="torch")
    monkeypatch.setattr(_cnn.EfficientNetLite0, "_load_model", lambda self: "net")
    check_extractor_available(torch_ext)
    assert torch_ext._net == "net"
