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


def test_file_compositing_is_exact_on_every_pixel_pair(tmp_path):
    """Files are composited by Pillow (a paste through the alpha band): round((c a + 255 (255 - a)) / 255) exactly."""
    rgba = every_rgba()
    Image.fromarray(rgba, "RGBA").save(tmp_path / "pairs.png")
    c, a = rgba[:, :, :3].astype(np.int64), rgba[:, :, 3:4].astype(np.int64)
    exact = (2 * (c * a + 255 * (255 - a)) + 255) // 510  # round half up; no ties exist
    np.testing.assert_array_equal(read_image(tmp_path / "pairs.png"), exact)
    np.testing.assert_array_equal(to_rgb(rgba), exact)


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


def _line_art(h, w, seed=0) -> np.ndarray:
    """Clip-art-like RGBA: transparent background, opaque strokes of a few pixels, antialiased edges."""
    rng = np.random.default_rng(seed)
    rgba = np.zeros((h, w, 4), np.uint8)
    for _ in range(12):
        y, x = rng.integers(0, h - 8), rng.integers(0, w - 8)
        dy, dx = rng.integers(4, max(5, h // 3)), rng.integers(4, max(5, w // 3))
        rgba[y : y + dy, x : x + 6] = [*rng.integers(0, 200, 3), 255]
        rgba[y : y + 6, x : x + dx] = [*rng.integers(0, 200, 3), 255]
        rgba[y : y + dy, x + 6] = [0, 0, 0, 128]  # a half-transparent edge
    return rgba


@pytest.mark.parametrize("resize", ["stretch", "crop"])
def test_reduced_square_read_stays_at_three_times_the_side(tmp_path, resize, monkeypatch):
    """``target_size`` decodes reduced and box-reduces inside the resize, never below 3x the side:
    a file under 3x reads exactly as the full path; a larger one within a small pixel error
    (against the full decode and the plain bicubic resize, the slow reference)."""
    from hardneg import _imaging
    from hardneg.features._images import RESIZE_REDUCING_GAP

    decoded = []
    open_image = _imaging.open_image

    def spy(*args, **kw):
        im = open_image(*args, **kw)
        decoded.append(im.size)
        return im

    monkeypatch.setattr(_imaging, "open_image", spy)

    size = 32
    small = _line_art(int(RESIZE_REDUCING_GAP * size) - 1, 150, seed=1)  # 95 x 150: no shortcut on the short side
    Image.fromarray(small, "RGBA").save(tmp_path / "small.png")
    want = np.asarray(fit_square(Image.fromarray(read_image(tmp_path / "small.png")), size, resize))
    if resize == "crop":  # the crop resize scales 95 -> 32 and 150 -> 51: neither side reaches 3x its output
        np.testing.assert_array_equal(read_image_square(tmp_path / "small.png", size, resize, target_size=size), want)
    big = _line_art(700, 460, seed=2)  # 460 >= 4 x 3 x 32: decoded reduced by 4, to 175 x 115
    Image.fromarray(big, "RGBA").save(tmp_path / "big.png")
    want = np.asarray(fit_square(Image.fromarray(read_image(tmp_path / "big.png")), size, resize)).astype(int)
    decoded.clear()
    got = read_image_square(tmp_path / "big.png", size, resize, target_size=size).astype(int)
    assert decoded == [(115, 175)] and min(decoded[0]) >= RESIZE_REDUCING_GAP * size  # (at 2x: reduced by 7, to 65 x 100)
    assert got.shape == (size, size, 3)
    assert np.abs(got - want).mean() < 1.5 and np.abs(got - want).max() <= 40
    assert not np.array_equal(got, want)  # the shortcut did run


def _count_appends(monkeypatch, fail_at=None):
    """Wrap FeatureStore.append: record the thread of each call, raise on call ``fail_at``."""
    import threading

    from hardneg.store import FeatureStore

    calls = []
    original = FeatureStore.append

    def append(self, X, **kw):
        calls.append(threading.current_thread().name)
        if fail_at is not None and len(calls) == fail_at:
            raise OSError("disk full (test)")
        return original(self, X, **kw)

    monkeypatch.setattr(FeatureStore, "append", append)
    return calls


def test_background_append_keeps_order_progress_and_errors(files, tmp_path_factory, monkeypatch):
    """Batches are appended in a writer thread, in input order, each reported to ``progress`` once
    committed; an append that fails stops the run with its error and keeps the batches before it."""
    from hardneg.features import EfficientNetLite0, extract_to_store
    from hardneg.store import FeatureStore

    pytest.importorskip("efficientnet_lite_pytorch")
    folder, _ = files
    out = tmp_path_factory.mktemp("stores")
    ext = EfficientNetLite0(input_size=32, resize="stretch", num_threads=1)
    calls = _count_appends(monkeypatch)
    seen = []

    def progress(n):
        seen.append((n, len(FeatureStore.open(out / "bg"))))  # what is committed when the batch is reported

    s = extract_to_store(folder, out / "bg", ext, batch_size=2, decode_threads=2, progress=progress)
    assert s.n_added == 5 and len(calls) == 3 and all(name.startswith("hardneg-append") for name in calls)
    assert [n for n, _ in seen] == [2, 2, 1]
    assert [committed for _, committed in seen] == [2, 4, 5]
    ref = extract_to_store(folder, out / "serial", ext, batch_size=2, decode_threads=0)
    assert ref.n_added == 5 and not any(name.startswith("hardneg-append") for name in calls[3:])
    a, b = FeatureStore.open(out / "bg"), FeatureStore.open(out / "serial")
    assert a.items.column("id").to_pylist() == b.items.column("id").to_pylist()

    monkeypatch.undo()
    calls = _count_appends(monkeypatch, fail_at=2)
    with pytest.raises(OSError, match="disk full"):
        extract_to_store(folder, out / "fails", ext, batch_size=2, decode_threads=2)
    kept = FeatureStore.open(out / "fails")
    assert kept.items.column("id").to_pylist() == b.items.column("id").to_pylist()[:2]  # the first batch, committed
    monkeypatch.undo()
    resumed = extract_to_store(folder, out / "fails", ext, batch_size=2, decode_threads=2)
    assert (resumed.n_already, resumed.n_added) == (2, 3)
