"""Minimal PNG encoding (grey or RGB uint8) with zlib: thumbnails without extra dependencies."""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np

from hardneg._typing import ArrayLike

__all__ = ["encode_png", "png_data_uri", "to_uint8_image"]


def to_uint8_image(image: ArrayLike, size: int | None = 64) -> np.ndarray:
    """Scale an image (2-D grey or H x W x 3) to uint8 and, optionally, upscale to ~``size`` px.

    Parameters
    ----------
    image : array-like of shape (H, W), (H, W, 3 or 4), or (H * W,) for a square image
        Any numeric range; a non-uint8 image is stretched to 0-255 (alpha dropped).
    size : int or None
        Smaller images are repeated up (nearest neighbour) to about this side; None keeps the size.

    Returns
    -------
    ndarray of uint8, shape (H', W') or (H', W', 3)

    Raises
    ------
    ValueError
        If the shape is not an image's.
    """
    img = np.asarray(image)
    if img.ndim == 1:  # a flat square image, e.g. 64 digits pixels
        side = int(round(np.sqrt(img.size)))
        if side * side != img.size:
            raise ValueError(f"image: cannot reshape {img.size} values into a square")
        img = img.reshape(side, side)
    if img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[2] not in (3, 4)):
        raise ValueError(f"image: expected (H, W) or (H, W, 3), got shape {img.shape}")
    if img.ndim == 3:
        img = img[:, :, :3]
    if img.dtype != np.uint8:
        img = img.astype(np.float64)
        lo, hi = float(img.min()), float(img.max())
        img = np.zeros(img.shape, np.uint8) if hi <= lo else ((img - lo) / (hi - lo) * 255).round().astype(np.uint8)
    if size is not None and max(img.shape[:2]) < size:
        f = max(1, size // max(img.shape[:2]))
        img = np.repeat(np.repeat(img, f, axis=0), f, axis=1)  # nearest neighbour: crisp pixels
    return np.ascontiguousarray(img)


def encode_png(img: np.ndarray) -> bytes:
    """PNG file bytes of a uint8 grey (H, W) or RGB (H, W, 3) image (no dependency beyond zlib).

    Parameters
    ----------
    img : ndarray of uint8, shape (H, W) or (H, W, 3)
        The pixels.

    Returns
    -------
    bytes
        A complete PNG file.
    """
    img = np.ascontiguousarray(img, dtype=np.uint8)
    h, w = img.shape[:2]
    color = 0 if img.ndim == 2 else 2
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def png_data_uri(image: ArrayLike, size: int | None = 64) -> str:
    """``data:image/png;base64,...`` for an inline ``<img>``.

    Parameters
    ----------
    image : array-like
        As for :func:`to_uint8_image`.
    size : int or None
        As for :func:`to_uint8_image`.

    Returns
    -------
    str
        The data URI.

    Raises
    ------
    ValueError
        If the shape is not an image's.
    """
    return "data:image/png;base64," + base64.b64encode(encode_png(to_uint8_image(image, size))).decode("ascii")
