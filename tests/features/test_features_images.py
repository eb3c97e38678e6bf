"""Image reading: conversions, corrupt files, ids from paths."""

import numpy as np
import pytest

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from hardneg.features import ImageReadError, list_image_files, read_image, resolve_images, to_gray, to_rgb  # noqa: E402


def test_to_rgb_grey_repeats_channels():
    g = np.arange(12, dtype=np.uint8).reshape(3, 4)
    rgb = to_rgb(g)
    assert rgb.shape == (3, 4, 3) and rgb.dtype == np.uint8
    for c in range(3):
        np.testing.assert_array_equal(rgb[:, :, c], g)
    np.testing.assert_array_equal(to_rgb(g[:, :, None]), rgb)


def test_to_rgb_rgba_composites_on_white():
    a = np.zeros((1, 3, 4), np.uint8)
    a[0, 0] = [200, 100, 0, 255]  # opaque: unchanged
    a[0, 1] = [200, 100, 0, 0]  # transparent: white
    a[0, 2] = [0, 0, 0, 128]  # half-transparent black: mid grey
    out = to_rgb(a)
    np.testing.assert_array_equal(out[0, 0], [200, 100, 0])
    np.testing.assert_array_equal(out[0, 1], [255, 255, 255])
    np.testing.assert_array_equal(out[0, 2], [127, 127, 127])  # 255 * (1 - 128/255) = 127


def test_to_rgb_scales_float_and_16bit():
    np.testing.assert_array_equal(to_rgb(np.array([[0.0, 1.0]]))[0, :, 0], [0, 255])
    np.testing.assert_array_equal(to_rgb(np.array([[0.0, 200.0]]))[0, :, 0], [0, 200])
    np.testing.assert_array_equal(to_rgb(np.array([[0, 65535]], np.uint16))[0, :, 0], [0, 255])
    with pytest.raises(ValueError, match="NaN"):
        to_rgb(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="shape"):
        to_rgb(np.zeros((2, 2, 2)))


def test_to_gray_matches_pil_luma():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (5, 6, 3), dtype=np.uint8)
    ours = to_gray(rgb).astype(int)
    pil = np.asarray(Image.fromarray(rgb).convert("L")).astype(int)
    assert np.abs(ours - pil).max() <= 1  # PIL rounds its fixed-point luma slightly differently


def _write_png(path, arr):
    Image.fromarray(arr).save(path)


def test_read_image_formats_and_failures(tmp_path):
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (8, 9, 3), dtype=np.uint8)
    _write_png(tmp_path / "rgb.png", rgb)
    np.testing.assert_array_equal(read_image(tmp_path / "rgb.png"), rgb)
    grey = rgb[:, :, 0]
    _write_png(tmp_path / "grey.png", grey)
    np.testing.assert_array_equal(read_image(tmp_path / "grey.png"), to_rgb(grey))
    rgba = np.concatenate([rgb, np.full((8, 9, 1), 255, np.uint8)], axis=2)
    _write_png(tmp_path / "rgba.png", rgba)
    np.testing.assert_array_equal(read_image(tmp_path / "rgba.png"), rgb)

    (tmp_path / "text.jpg").write_text("not an image")
    with pytest.raises(ImageReadError, match="text.jpg"):
        read_image(tmp_path / "text.jpg")
    data = (tmp_path / "rgb.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    with pytest.raises(ImageReadError):
        read_image(tmp_path / "cut.png")
    with pytest.raises(ImageReadError, match="no such file"):
        read_image(tmp_path / "missing.png")


def test_resolve_folder_ids_are_sorted_relative_posix_paths(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "a").mkdir()
    for rel in ["b/2.png", "a/1.png", "top.PNG"]:
        _write_png(tmp_path / rel, np.zeros((4, 4), np.uint8))
    (tmp_path / "notes.txt").write_text("ignored: not an image extension")
    assert [p.name for p in list_image_files(tmp_path)] == ["1.png", "2.png", "top.PNG"]
    items = resolve_images(str(tmp_path))
    assert [it.id for it in items] == ["a/1.png", "b/2.png", "top.PNG"]
    assert [it.index for it in items] == [0, 1, 2]
    listed = resolve_images([tmp_path / "b/2.png", tmp_path / "a/1.png"], root=tmp_path)
    assert [it.id for it in listed] == ["b/2.png", "a/1.png"]
    with pytest.raises(ValueError, match="not under root"):
        resolve_images([tmp_path / "a/1.png"], root=tmp_path / "b")


def test_resolve_arrays_and_id_checks():
    imgs = np.zeros((3, 5, 5), np.uint8)
    items = resolve_images(imgs)
    assert [it.id for it in items] == ["0", "1", "2"]
    assert items[1].load().shape == (5, 5, 3)
    assert [it.id for it in resolve_images(imgs, ids=["x", "y", "z"])] == ["x", "y", "z"]
    with pytest.raises(ValueError, match="duplicate"):
        resolve_images(imgs, ids=["x", "x", "z"])
    with pytest.raises(ValueError, match="3 images"):
        resolve_images(imgs, ids=["x"])
    with pytest.raises(TypeError):
        resolve_images(42)
    with pytest.raises(FileNotFoundError):
        resolve_images("/no/such/folder/anywhere")
