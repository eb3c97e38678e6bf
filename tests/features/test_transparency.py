"""Issue 37 items 1-2: a transparent image looks the same to extraction, uploads and thumbnails.

Extraction composites transparency onto white; uploads to the service and the thumbnails of the
page and of contact sheets used ``convert("RGB")``, which turns a transparent background black, so
an uploaded copy of a stored transparent PNG did not find itself and line art became a black square.
"""

import io

import numpy as np
import pytest
from PIL import Image

from hardneg.features._images import read_image
from hardneg.report import thumbnail


def line_art(mode: str) -> Image.Image:
    """Black strokes on a fully transparent background, as clip art is drawn."""
    rgba = np.zeros((40, 40, 4), np.uint8)
    rgba[18:22, :, 3] = 255  # a black horizontal stroke, opaque
    rgba[:, 18:22, 3] = 255
    rgba[5:10, 5:10] = [200, 30, 30, 128]  # a half-transparent red patch
    im = Image.fromarray(rgba, "RGBA")
    return im if mode == "RGBA" else im.convert(mode)


@pytest.mark.parametrize("mode", ["RGBA", "LA"])
def test_upload_decodes_as_extraction_reads(tmp_path, mode):
    pytest.importorskip("fastapi")
    from hardneg.serve._images import decode_upload

    path = tmp_path / "art.png"
    line_art(mode).save(path)
    stored = read_image(path)
    uploaded = decode_upload(path.read_bytes(), max_pixels=10_000_000)
    np.testing.assert_array_equal(uploaded, stored)
    assert (uploaded[0, 0] == 255).all()  # the transparent corner is white, not black


def test_contact_sheet_thumbnail_is_drawn_on_white(tmp_path):
    path = tmp_path / "art.png"
    line_art("RGBA").save(path)
    thumb = thumbnail(path, size=20)
    assert (thumb[0, 0] == 255).all() and (thumb[thumb.shape[0] // 2, thumb.shape[1] // 2] < 60).all()


def test_palette_png_with_a_transparent_index(tmp_path):
    im = Image.new("P", (16, 16), 0)
    im.putpalette([0, 0, 0, 255, 0, 0] + [0] * (254 * 3))
    im.paste(1, (4, 4, 12, 12))
    buf = io.BytesIO()
    im.save(buf, format="PNG", transparency=0)  # index 0 (black) is transparent
    path = tmp_path / "p.png"
    path.write_bytes(buf.getvalue())
    assert (thumbnail(path, size=16)[0, 0] == 255).all()
    assert (read_image(path)[0, 0] == 255).all()


def test_uploaded_copy_of_a_stored_transparent_png_finds_itself(tmp_path):
    """Issue 37 item 1, end to end with CNN features: before, a stored transparent apple.png
    matched itself at cosine 0.83-0.87 when uploaded (an eagle and a duck came first)."""
    pytest.importorskip("fastapi")
    pytest.importorskip("torch")
    from fastapi.testclient import TestClient

    from hardneg.features import EfficientNetLite0, extract_to_store
    from hardneg.serve import create_app

    rng = np.random.default_rng(0)
    (tmp_path / "art").mkdir()
    for k in range(6):  # line art: strokes of random colour and place on a transparent background
        rgba = np.zeros((64, 64, 4), np.uint8)
        for _ in range(4):
            r, c = rng.integers(4, 56, 2)
            rgba[r:r + 6, max(0, c - 20):c + 8] = [*rng.integers(0, 120, 3), 255]
        Image.fromarray(rgba, "RGBA").save(tmp_path / "art" / f"a{k}.png")
    extract_to_store(tmp_path / "art", tmp_path / "s.store", EfficientNetLite0(input_size=64, num_threads=1))
    with TestClient(create_app(tmp_path / "s.store"), base_url="http://localhost") as client:
        for k in (0, 3):
            data = (tmp_path / "art" / f"a{k}.png").read_bytes()
            r = client.post("/api/search/upload", files={"file": ("q.png", data, "image/png")}, data={"mode": "cosine", "k": "3"})
            assert r.status_code == 200, r.text
            top = r.json()["results"][0]
            assert top["id"] == f"a{k}.png" and top["score"] >= 0.999, r.json()["results"]
