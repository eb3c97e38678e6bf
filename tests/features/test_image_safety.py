"""Image decoding is safe: allowed formats only, by content; no external process; truncated
files refused; large images decoded downscaled; concurrent decodes bounded in the service."""

from __future__ import annotations

import io
import struct
import subprocess
import threading
import zlib

import numpy as np
import pytest

PIL = pytest.importorskip("PIL")
from PIL import EpsImagePlugin, Image, ImageFile

from hardneg._imaging import (
    ALLOWED_FORMATS,
    ImageFormatError,
    ImageTooLargeError,
    open_image,
)
from hardneg.features import ImageReadError, read_image
from hardneg.report._contact import _MISSING, thumbnail

EPS = (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 8 8\n%%EndComments\n"
       b"{ } loop\nshowpage\n%%EOF\n")  # an endless loop: Ghostscript would never answer


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def _png_rows(width, height, rows, *, colour=2, depth=8, interlace=0, raw=None) -> bytes:
    """A PNG declaring ``width x height`` whose (complete, valid) zlib stream holds ``rows`` rows."""
    if raw is None:
        channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
        raw = (b"\0" + bytes((width * channels * depth + 7) // 8)) * rows
    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, interlace)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(raw))
            + _chunk(b"IEND", b""))


def _encode(arr, fmt, **kw) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt, **kw)
    return buf.getvalue()


@pytest.fixture()
def no_ghostscript(monkeypatch):
    """Record any use of Pillow's EPS plugin or of a child process (the old code reached both)."""
    calls = []

    def record(what):
        def fail(*args, **kwargs):
            calls.append(what)
            raise RuntimeError(f"{what} must never be called while decoding an image")
        return fail

    monkeypatch.setattr(subprocess, "Popen", record("subprocess.Popen"))
    monkeypatch.setattr(subprocess, "check_call", record("subprocess.check_call"))
    monkeypatch.setattr(subprocess, "run", record("subprocess.run"))
    monkeypatch.setattr(EpsImagePlugin, "Ghostscript", record("EpsImagePlugin.Ghostscript"))
    monkeypatch.setattr(EpsImagePlugin.EpsImageFile, "_open", record("EpsImageFile._open"))
    monkeypatch.setattr(EpsImagePlugin.EpsImageFile, "load", record("EpsImageFile.load"))
    yield calls
    assert calls == [], f"the EPS plugin or an external process was reached: {calls}"


# ---------------------------------------------------------------- formats, by content
@pytest.mark.parametrize("name", ["box.eps", "box.ps", "a.png", "a.jpg"])
def test_postscript_is_refused_without_ghostscript(tmp_path, no_ghostscript, name):
    f = tmp_path / name
    f.write_bytes(EPS)
    with pytest.raises(ImageReadError, match=name):
        read_image(f)
    with pytest.raises(ImageFormatError, match="accepted format"):
        open_image(EPS)
    assert thumbnail(f, 16) is _MISSING  # contact sheets show a placeholder
    assert no_ghostscript == []


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "BMP", "WEBP", "TIFF", "PPM"])
def test_allowed_formats_decode_whatever_the_file_is_named(tmp_path, fmt, no_ghostscript):
    assert fmt in ALLOWED_FORMATS
    arr = np.zeros((12, 20, 3), np.uint8)
    arr[:, 10:] = 200
    f = tmp_path / "named-wrong.eps"  # the name says PostScript, the content decides
    f.write_bytes(_encode(arr, fmt))
    out = read_image(f)
    assert out.shape == (12, 20, 3) and out.dtype == np.uint8
    assert abs(int(out[6, 15, 0]) - 200) < 20 and int(out[6, 2, 0]) < 20


def test_formats_outside_the_list_are_refused(tmp_path):
    f = tmp_path / "a.png"
    f.write_bytes(_encode(np.zeros((8, 8, 3), np.uint8), "ICO"))  # a format Pillow reads, not on the list
    with pytest.raises(ImageReadError, match="accepted format"):
        read_image(f)
    with pytest.raises(ImageReadError, match="accepted format"):
        read_image(_empty(tmp_path))


def _empty(tmp_path):
    f = tmp_path / "empty.png"
    f.write_bytes(b"")
    return f


# ---------------------------------------------------------------- truncated files
def test_png_declaring_large_size_with_four_rows_is_refused(tmp_path):
    data = _png_rows(6000, 6000, 4)  # ~35 KB of zeros would be 36 Mpx; here only 4 rows exist
    f = tmp_path / "t.png"
    f.write_bytes(data)
    with pytest.raises(ImageReadError, match="truncated"):
        read_image(f)
    with pytest.raises(ImageReadError, match="truncated"):
        open_image(_png_rows(7, 5, 4), target_size=2)  # small ones too


@pytest.mark.parametrize("colour, depth", [(0, 1), (0, 4), (0, 16), (2, 8), (2, 16), (4, 8), (6, 8), (6, 16)])
@pytest.mark.parametrize("size", [(1, 1), (3, 5), (9, 9), (17, 4)])
def test_png_completeness_check_counts_rows_right(colour, depth, size):
    """Interlaced (Adam7) and sub-byte depths: complete files pass, one byte short is refused."""
    w, h = size
    bits = {0: 1, 2: 3, 4: 2, 6: 4}[colour] * depth
    passes = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))
    raw = b""
    for x0, y0, dx, dy in passes:
        pw, ph = max(0, (w - x0 + dx - 1) // dx), max(0, (h - y0 + dy - 1) // dy)
        if pw and ph:
            raw += (b"\0" + bytes((pw * bits + 7) // 8)) * ph
    assert open_image(_png_rows(w, h, 0, colour=colour, depth=depth, interlace=1, raw=raw)).size == (w, h)
    flat = (b"\0" + bytes((w * bits + 7) // 8)) * h
    assert open_image(_png_rows(w, h, 0, colour=colour, depth=depth, raw=flat)).size == (w, h)
    with pytest.raises(ImageReadError, match="truncated"):
        open_image(_png_rows(w, h, 0, colour=colour, depth=depth, interlace=1, raw=raw[:-1]))


def test_truncated_jpeg_refused_even_if_someone_turned_on_load_truncated_images(monkeypatch):
    data = _encode(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8), "JPEG")
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    with pytest.raises(ImageReadError, match="truncated"):
        open_image(data[: len(data) // 2])
    assert ImageFile.LOAD_TRUNCATED_IMAGES is False


# ---------------------------------------------------------------- downscaled decoding
def test_large_jpeg_is_decoded_at_a_reduced_dct_scale(monkeypatch):
    data = _encode(np.full((1600, 2000, 3), 120, np.uint8), "JPEG", quality=80)
    from PIL import JpegImagePlugin

    drafts, real_draft = [], JpegImagePlugin.JpegImageFile.draft

    def spy(self, mode, size):
        drafts.append(size)
        return real_draft(self, mode, size)

    monkeypatch.setattr(JpegImagePlugin.JpegImageFile, "draft", spy)
    im = open_image(data, target_size=100)
    assert drafts == [(200, 200)]
    assert im.size == (250, 200)  # 1/8 scale: both sides still >= 2 x 100
    assert open_image(data).size == (2000, 1600)  # no target: full size


def test_large_png_is_reduced_but_keeps_twice_the_target():
    arr = np.zeros((800, 1000, 4), np.uint8)
    arr[..., 0], arr[..., 3] = 250, 255
    im = open_image(_encode(arr, "PNG"), target_size=100)
    assert im.size == (250, 200) and im.mode == "RGBA"
    assert np.asarray(im)[100, 100, 0] == 250
    pal = Image.new("P", (1000, 800), 1)  # palette indices cannot be averaged: converted first
    pal.putpalette([0, 0, 0, 30, 60, 90] + [0] * 762)
    im = open_image(_save(pal), target_size=100)
    assert im.size == (250, 200) and tuple(np.asarray(im.convert("RGB"))[5, 5]) == (30, 60, 90)
    assert open_image(_encode(arr, "PNG"), target_size=1000).size == (1000, 800)  # never below 2 x target


def _save(im) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def test_max_pixels_is_checked_before_decoding():
    with pytest.raises(ImageTooLargeError, match="pixels"):
        open_image(_png_rows(6000, 6000, 4), max_pixels=1_000_000)


# ---------------------------------------------------------------- the service
fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from hardneg.serve import _images as serve_images
from hardneg.serve import create_app
from hardneg.store import FeatureStore


def _bad_files(tmp_path):
    files = {"good": _encode(np.full((30, 20, 3), 90, np.uint8), "PNG"), "trunc": _png_rows(3000, 3000, 4),
             "empty": b"", "ps": EPS}
    for name, data in files.items():
        (tmp_path / f"{name}.png").write_bytes(data)
    return list(files), [str(tmp_path / f"{name}.png") for name in files]


@pytest.fixture()
def pixel_app(tmp_path):
    """A small 8x8 'digits' store: uploads are turned into pixels, as for the demo store."""
    path = tmp_path / "px.store"
    with FeatureStore.create(path, dim=64, attrs={"dataset": "digits"}) as s:
        s.append(np.random.default_rng(0).random((4, 64)).astype(np.float32) * 16, ids=list("abcd"))
    with TestClient(create_app(path), base_url="http://localhost") as c:
        yield c


@pytest.fixture()
def files_app(tmp_path):
    """A store whose thumbnails come from its items' files: one good, three bad."""
    ids, paths = _bad_files(tmp_path)
    path = tmp_path / "files.store"
    with FeatureStore.create(path, dim=4) as s:
        s.append(np.eye(4, dtype=np.float32), ids=ids, paths=paths)
    with TestClient(create_app(path), base_url="http://localhost") as c:
        yield c


def _upload(client, name, data):
    return client.post("/api/search/upload", files={"file": (name, data, "image/png")}, data={"mode": "cosine", "k": "2"})


def test_upload_refuses_postscript_by_content(pixel_app, no_ghostscript):
    for name in ("box.eps", "x.png"):
        r = _upload(pixel_app, name, EPS)
        assert r.status_code == 422, r.text
        assert "not a readable image" in r.json()["detail"] and "\n" not in r.json()["detail"]
    ok = _upload(pixel_app, "q.png", _encode(np.zeros((40, 40, 3), np.uint8), "PNG"))
    assert ok.status_code == 200, ok.text


def test_upload_refuses_truncated_png(pixel_app):
    r = _upload(pixel_app, "t.png", _png_rows(6000, 6000, 4))
    assert r.status_code == 422 and "truncated" in r.json()["detail"]


def test_thumbnails_of_bad_files_are_one_line_4xx(files_app, no_ghostscript):
    assert files_app.get("/api/items/good/thumbnail").status_code == 200
    for item in ("trunc", "empty", "ps"):
        r = files_app.get(f"/api/items/{item}/thumbnail")
        assert r.status_code == 422, (item, r.status_code, r.text)
        detail = r.json()["detail"]
        assert detail.startswith("thumbnail: ") and "\n" not in detail and "Traceback" not in detail


def test_upload_target_size_follows_the_extractor():
    from types import SimpleNamespace

    def query(attrs, dim=1280):
        return serve_images.ImageQuery(SimpleNamespace(attrs=attrs, dim=dim, is_sparse=False))

    assert query({"dataset": "digits"}, dim=64).target_size == 8
    assert query({"extractor": {"extractor": "cnn", "input_size": 224}}).target_size == 224
    bow = {"extractor": "bow", "descriptor": {"descriptor": "dense-sift", "max_side": 320, "resize_to": None}}
    assert query({"extractor": bow}).target_size == 320
    bow["descriptor"]["max_side"] = None  # the full image is used: decode it in full
    assert query({"extractor": bow}).target_size is None
    data = _encode(np.full((1600, 2000, 3), 60, np.uint8), "JPEG")
    assert serve_images.decode_upload(data, 40_000_000, target_size=224).shape == (800, 1000, 3)  # 1/2 scale
    assert serve_images.decode_upload(data, 40_000_000).shape == (1600, 2000, 3)


def test_concurrent_decodes_are_bounded(monkeypatch):
    """More uploads than DECODE_SLOTS: only DECODE_SLOTS are inside the decoder at once."""
    limit = serve_images.DECODE_SLOTS
    assert limit >= 1
    inside, peak, cond, go = [0], [0], threading.Condition(), threading.Event()
    real_open = serve_images.open_image

    def slow_open(*args, **kwargs):
        with cond:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
            cond.notify_all()
        go.wait(30)
        with cond:
            inside[0] -= 1
        return real_open(*args, **kwargs)

    monkeypatch.setattr(serve_images, "open_image", slow_open)
    data = _encode(np.zeros((8, 8, 3), np.uint8), "PNG")
    results = []
    threads = [threading.Thread(target=lambda: results.append(serve_images.decode_upload(data, 10_000)))
               for _ in range(limit + 3)]
    for t in threads:
        t.start()
    with cond:
        assert cond.wait_for(lambda: inside[0] == limit, timeout=30)
    # every slot is taken, so the other decodes are waiting outside the decoder
    assert serve_images._decode_slots.acquire(blocking=False) is False
    assert inside[0] == limit
    go.set()
    for t in threads:
        t.join(30)
    assert len(results) == limit + 3 and peak[0] == limit


def test_no_plugin_outside_the_list_is_even_imported(tmp_path):
    """Opening by path gives Pillow a file object: the .eps name does not import the EPS plugin,
    and the allowed plugins are registered up front, so Image.init() (every plugin) never runs."""
    import json
    import subprocess as sp
    import sys

    f = tmp_path / "box.eps"
    f.write_bytes(EPS)
    code = ("import json, sys\nfrom hardneg._imaging import open_image, ImageReadError\n"
            f"try:\n    open_image({str(f)!r})\nexcept ImageReadError:\n    pass\n"
            "print(json.dumps([m.split('.')[-1] for m in sys.modules if m.startswith('PIL.') and m.endswith('ImagePlugin')]))")
    out = sp.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    loaded = set(json.loads(out))
    assert "EpsImagePlugin" not in loaded
    assert loaded <= {f"{n.capitalize() if n != 'WEBP' else 'WebP'}ImagePlugin" for n in ALLOWED_FORMATS}, loaded


# ------------------------------------------------------- one size policy everywhere
def test_one_pixel_limit_for_every_reader(tmp_path, recwarn):
    """Extraction, contact sheets, uploads and thumbnails share MAX_IMAGE_PIXELS (issue 37
    item 8: extraction took 168 MP while sheets refused 40 MP), and Pillow's own
    DecompressionBombWarning is not printed for each file on top of the one-line refusal."""
    from hardneg._imaging import MAX_IMAGE_PIXELS

    side = int(MAX_IMAGE_PIXELS ** 0.5) + 1  # just over the limit, under Pillow's error (2x)
    big = tmp_path / "big.png"
    big.write_bytes(_png_rows(side, side, 4))
    with pytest.raises(ImageTooLargeError, match="limit"):
        read_image(big)
    with pytest.raises(ImageTooLargeError, match="limit"):
        open_image(big.read_bytes())
    with pytest.raises(serve_images.ServeError, match="limit"):
        serve_images.decode_upload(big.read_bytes(), MAX_IMAGE_PIXELS)
    assert thumbnail(str(big), 64) is _MISSING
    # just under the limit the size is no reason to refuse: it fails as truncated instead
    under = int((MAX_IMAGE_PIXELS - 1) ** 0.5)
    with pytest.raises(ImageReadError, match="truncated"):
        read_image_bytes = _png_rows(under, under, 4)
        open_image(read_image_bytes)
    assert not [w for w in recwarn.list if issubclass(w.category, Image.DecompressionBombWarning)]


def test_thumbnail_of_a_too_large_stored_image_says_why(tmp_path):
    from hardneg._imaging import MAX_IMAGE_PIXELS

    side = int(MAX_IMAGE_PIXELS ** 0.5) + 1
    (tmp_path / "big.png").write_bytes(_png_rows(side, side, 4))
    path = tmp_path / "s.store"
    with FeatureStore.create(path, dim=2) as s:
        s.append(np.eye(2, dtype=np.float32), ids=["big", "none"], paths=[str(tmp_path / "big.png"), None])
    with TestClient(create_app(path), base_url="http://localhost") as c:
        r = c.get("/api/items/big/thumbnail")
    assert r.status_code == 422 and "limit" in r.json()["detail"], r.text
