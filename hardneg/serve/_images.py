"""Uploaded images -> query vectors with the store's own extractor; thumbnails.

Every image is decoded by :func:`hardneg._imaging.open_image`: only PNG, JPEG,
GIF, BMP, WebP, TIFF (and PPM) recognised by content, never an external
program, the declared pixel count checked against the service's limit before
any pixel is decoded, truncated files refused, large images decoded
downscaled to what the extractor (or the thumbnail) needs. At most
:data:`DECODE_SLOTS` decodes run at once, so concurrent uploads of large
images cannot add up to gigabytes.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from hardneg._imaging import (
    MAX_IMAGE_PIXELS,
    ImageFormatError,
    ImageReadError,
    ImageTooLargeError,
    open_image,
)
from hardneg.features._images import rgb_image
from hardneg.features._query import QueryFeatures, pixel_scale
from hardneg.store._items import resolve_stored_path

from ._errors import ServeError

__all__ = ["DECODE_SLOTS", "ImageQuery", "Thumbnails", "decode_slot", "decode_upload", "pixel_scale"]  # pixel_scale: from features._query

# Image decodes running at once in this process (uploads and thumbnails): a decode holds
# up to ~4 bytes per declared pixel, so this bounds the service's decoding memory.
DECODE_SLOTS = max(2, min(4, os.cpu_count() or 2))
DECODE_WAIT_S = 60.0  # a request that waits longer for a slot is answered 503
_decode_slots = threading.BoundedSemaphore(DECODE_SLOTS)


@contextlib.contextmanager
def decode_slot(what: str = "image"):
    """Hold one of the :data:`DECODE_SLOTS` while decoding; 503 when none frees in time."""
    if not _decode_slots.acquire(timeout=DECODE_WAIT_S):
        raise ServeError(503, f"{what}: the service is busy decoding other images; try again shortly")
    try:
        yield
    finally:
        _decode_slots.release()

def decode_upload(data: bytes, max_pixels: int, target_size: int | None = None):
    """Decode image bytes to an RGB uint8 array; ServeError 413/422 when refused.

    ``target_size``: the side the extractor resizes to (``ImageQuery.target_size``);
    a larger image is decoded reduced, keeping at least twice that side.
    """
    with decode_slot("image"):
        try:
            img = open_image(data, max_pixels=max_pixels, target_size=target_size, name="image")
        except ImageTooLargeError as exc:
            raise ServeError(413, str(exc)) from None
        except ImageFormatError:
            raise ServeError(422, "image: not a readable image file (PNG, JPEG, GIF, BMP, WebP, TIFF); "
                                  "the format is read from the content, not the file name") from None
        except ImageReadError as exc:
            raise ServeError(422, f"image: the file is damaged or truncated and cannot be decoded ({_reason(exc)})") from None
        try:
            with img:
                # transparent pixels onto white, as extraction composites them: an uploaded
                # copy of a stored transparent PNG must find the stored item
                return np.asarray(rgb_image(img, "image"))
        except Exception:  # noqa: BLE001
            raise ServeError(422, "image: the file is damaged and cannot be decoded") from None


def _reason(exc: ImageReadError) -> str:
    """What is wrong, without the file's name: "cannot decode (X)" -> "X"."""
    msg = str(exc).partition(": ")[2] or str(exc)
    return msg[len("cannot decode ("):-1] if msg.startswith("cannot decode (") and msg.endswith(")") else msg


class ImageQuery(QueryFeatures):
    """An uploaded RGB image -> its feature vector, made the way the store's rows were
    (:class:`hardneg.features._query.QueryFeatures`, shared with the CLI's ``--query-image``),
    with the service's answers: 422 when the store cannot take image queries, 503 when its
    extractor cannot be loaded here. One extractor, built once, with one thread."""

    def __init__(self, store):
        super().__init__(store, num_threads=1)
        self.reason = None if self.available else (
            "the store records no extractor settings (attrs['extractor']) and is not a built-in "
            "pixel data set, so an uploaded image cannot be turned into its features; "
            "query by a stored item instead")

    def transform(self, rgb: np.ndarray) -> np.ndarray:  # type: ignore[override]
        if not self.available:
            raise ServeError(422, f"upload: {self.reason}")
        if self.kind != "pixels":
            try:
                self.load()
            except Exception as exc:  # noqa: BLE001 - missing weights, missing codebook, ...
                raise ServeError(503, f"upload: the store's extractor ({self.kind}) cannot be loaded here: {exc}") from None
        return super().transform([rgb])[0]


class Thumbnails:
    """PNG thumbnails per store row, cached (LRU, bounded by count)."""

    def __init__(self, store, size: int = 96, cache_items: int = 4096, max_pixels: int = MAX_IMAGE_PIXELS):
        self.store, self.size, self.max_pixels = store, size, max_pixels
        self.scale = pixel_scale(store)
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cap = cache_items
        self._lock = threading.Lock()
        self._paths = store.items.column("path")
        self._fashion: tuple[dict[str, np.ndarray], np.ndarray | None] | None = None  # rows per split, images

    def _fashion_image(self, row: int):
        """Fashion-MNIST feature stores (CNN, DSIFT): the image from the data set, by id."""
        if self.store.attrs.get("dataset") != "fashion-mnist":
            return None
        item_id = self.store.ids()[row]
        split, _, pos = item_id.partition("-")
        if split not in ("train", "test") or not pos.isdigit():
            return None
        fashion = self._fashion
        if fashion is None:
            from hardneg.datasets import load_fashion_mnist

            ds = load_fashion_mnist()
            fashion = self._fashion = {s: np.flatnonzero(ds.split == s) for s in ("train", "test")}, ds.images
        where, images = fashion
        if images is None:
            return None
        return images[where[split][int(pos)]] if int(pos) < where[split].size else None

    def _render(self, row: int) -> bytes | None:
        from hardneg.report import encode_png, to_uint8_image

        if self.scale is not None:
            x = self.store.take(np.array([row]))[0]
            img = np.clip(np.asarray(x, np.float64) / self.scale * 255.0, 0, 255).astype(np.uint8)
            return encode_png(to_uint8_image(img, self.size))
        path = resolve_stored_path(self.store, self._paths[row].as_py())
        if path and Path(path).is_file():
            with decode_slot("thumbnail"):
                try:
                    im = open_image(path, max_pixels=self.max_pixels, target_size=self.size, name="the item's image file")
                except ImageReadError as exc:  # ImageTooLargeError too: the same limit as extraction
                    raise ServeError(422, f"thumbnail: {exc}") from None
                with im:
                    im = rgb_image(im, "the item's image file")  # transparency on white, as extraction sees it
                    im.thumbnail((self.size, self.size))
                    return encode_png(np.asarray(im))
        try:
            pixels = self._fashion_image(row)
        except Exception:  # noqa: BLE001 - data set files missing: no thumbnail
            pixels = None
        return None if pixels is None else encode_png(to_uint8_image(pixels, self.size))

    def get(self, row: int) -> bytes | None:
        with self._lock:
            if row in self._cache:
                self._cache.move_to_end(row)
                return self._cache[row]
        png = self._render(row)
        if png is not None:
            with self._lock:
                self._cache[row] = png
                while len(self._cache) > self._cap:
                    self._cache.popitem(last=False)
        return png
