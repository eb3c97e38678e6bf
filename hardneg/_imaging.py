"""The one place hardneg decodes image files: a safe opener over Pillow.

Every image file the library reads (feature extraction, uploads to the
service, thumbnails, contact sheets) goes through :func:`open_image`, which

- decodes only :data:`ALLOWED_FORMATS`, chosen by the file's *content* with
  Pillow's ``formats=`` argument and never by its name or by plugin
  discovery: a PostScript file named ``a.png`` is refused, and Pillow's EPS
  plugin (which runs Ghostscript, an external process) is never imported by
  this module nor reachable through it. No input ever starts a process;
- hands Pillow an open file object rather than a path, so Pillow does not
  import the plugin that the file name's extension points at;
- refuses an image whose declared size exceeds ``max_pixels`` (by default
  :data:`MAX_IMAGE_PIXELS`, the one limit extraction, uploads, thumbnails and
  contact sheets share) before any pixel is decoded; Pillow's own
  decompression-bomb warning is not repeated for every such file;
- decodes the whole image now, with ``ImageFile.LOAD_TRUNCATED_IMAGES``
  forced off, and for PNG also checks that the compressed pixel data holds
  every row (Pillow silently accepts a zlib stream that ends early and
  leaves the missing rows black);
- decodes large images downscaled when the caller needs only
  ``target_size`` pixels: JPEG at a reduced DCT scale (``draft``), other
  formats reduced by an integer factor (``Image.reduce``) right after
  decoding, always keeping at least twice ``target_size`` on each side, so
  the caller's own resize still has the detail it needs.
"""

from __future__ import annotations

import io
import logging
import os
import struct
import warnings
import zlib

from hardneg._extras import install_hint
from hardneg.exceptions import (  # defined there, re-exported here
    ImageFormatError,
    ImageReadError,
    ImageTooLargeError,
)

logger = logging.getLogger(__name__)

__all__ = ["ALLOWED_FORMATS", "MAX_IMAGE_PIXELS", "ImageFormatError", "ImageReadError", "ImageTooLargeError", "open_image"]

# PPM (with PGM/PBM) is a plain raster format that Pillow decodes itself; it is listed
# because hardneg.features.IMAGE_EXTENSIONS has always offered .ppm / .pgm / .pbm.
ALLOWED_FORMATS = ("PNG", "JPEG", "GIF", "BMP", "WEBP", "TIFF", "PPM")

# Keep at least this many times target_size on each side when decoding downscaled
# (Pillow's reducing_gap: 2 is "indistinguishable from fair resampling in most cases").
REDUCING_GAP = 2.0

#: The one image size policy: every reader (extraction, uploads, ``--query-image``,
#: thumbnails, contact sheets) refuses an image that declares more pixels. It is Pillow's
#: own decompression-bomb warning threshold (2**32 / 4 / 3: 256 MiB as 8-bit RGB, about
#: 89.5 megapixels), so a file Pillow would warn about is refused in one line instead, and
#: an item that made it into a store always has a thumbnail.
MAX_IMAGE_PIXELS = 89_478_485

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # colour type -> samples per pixel
_REDUCE_MODES = frozenset({"L", "LA", "RGB", "RGBA", "RGBX", "CMYK", "YCbCr", "I", "F"})
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))


def _pil():
    try:
        from PIL import Image, ImageFile
    except ImportError as exc:  # pragma: no cover - pillow is in every extra that reads images
        raise ImportError(f"reading image files needs Pillow: {install_hint('bow')} (or the cnn extra)") from exc
    return Image, ImageFile


def _register_allowed_plugins(Image) -> None:
    """Import exactly the allowed plugins, so ``Image.open(formats=...)`` finds them all
    registered and never falls back to ``Image.init()`` (which imports every plugin)."""
    from PIL import (  # noqa: F401 - imported for their registration side effect
        BmpImagePlugin,
        GifImagePlugin,
        JpegImagePlugin,
        PngImagePlugin,
        PpmImagePlugin,
        TiffImagePlugin,
    )

    try:
        from PIL import WebPImagePlugin  # noqa: F401 - Pillow built without libwebp has none
    except ImportError:  # pragma: no cover
        pass


def _allowed(Image) -> tuple[str, ...]:
    _register_allowed_plugins(Image)
    return tuple(f for f in ALLOWED_FORMATS if f in Image.OPEN)


def _describe(source, name) -> str:
    if name is not None:
        return str(name)
    if isinstance(source, (str, os.PathLike)):
        return str(source)
    return "image"


def open_image(source, *, max_pixels: int | None = MAX_IMAGE_PIXELS, target_size: int | None = None, name=None):
    """Open and fully decode one image file, safely.

    Parameters
    ----------
    source : str, Path, bytes or binary file object
        The image file, its bytes, or an open binary file (read from its start).
    max_pixels : int or None, default=MAX_IMAGE_PIXELS
        Refuse (:class:`ImageTooLargeError`) an image that declares more pixels
        (width x height), before decoding any of them. ``None``: no limit of
        hardneg's own (Pillow's decompression-bomb error still applies).
    target_size : int, optional
        The side, in pixels, that the caller will resize the image to (a CNN
        input side, a thumbnail side). A larger image may come back reduced by
        an integer factor, but never below ``2 * target_size`` on either side
        (nor below its own size). ``None``: decode at full size.
    name : str, optional
        How to name the file in error messages (default: the path, or "image").

    Returns
    -------
    PIL.Image.Image
        Decoded (``load()`` done); its ``format`` attribute names the format
        found in the content. The source file is closed when it was a path.

    Raises
    ------
    ImageReadError
        Missing file, a format outside :data:`ALLOWED_FORMATS`, damaged or
        truncated data. :class:`ImageTooLargeError` (a subclass) for too many pixels.
    """
    label = _describe(source, name)
    if max_pixels is not None and int(max_pixels) < 1:
        raise ValueError(f"max_pixels: expected a positive number of pixels or None, got {max_pixels!r}")
    if target_size is not None and int(target_size) < 1:
        raise ValueError(f"target_size: expected a positive side in pixels or None, got {target_size!r}")
    Image, ImageFile = _pil()
    # A process-wide switch another library may have turned on: it would make a truncated
    # file decode "successfully" with the missing part filled in.
    if ImageFile.LOAD_TRUNCATED_IMAGES:
        logger.warning("PIL.ImageFile.LOAD_TRUNCATED_IMAGES was on; hardneg turns it off so truncated images are refused")
        ImageFile.LOAD_TRUNCATED_IMAGES = False

    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source, "rb") as fp:  # a file object, not the path: no plugin import by extension
                return _decode(Image, fp, label, max_pixels, target_size)
        except FileNotFoundError:
            raise ImageReadError(f"{label}: no such file") from None
        except OSError as exc:  # a folder, no permission, ...
            raise ImageReadError(f"{label}: cannot open ({exc.strerror or exc})") from None
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _decode(Image, io.BytesIO(bytes(source)), label, max_pixels, target_size)
    if hasattr(source, "read"):
        return _decode(Image, source, label, max_pixels, target_size)
    raise TypeError(f"source: expected a path, bytes or a binary file object, got {type(source).__name__}")


def _decode(Image, fp, label, max_pixels, target_size):
    formats = _allowed(Image)
    try:
        with warnings.catch_warnings():
            # the size is checked against max_pixels below, with one clear line
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(fp, formats=formats)
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(f"{label}: {exc}") from None
    except Image.UnidentifiedImageError:
        raise ImageFormatError(f"{label}: not an image file, cannot decode it (accepted formats: "
                             f"{', '.join(formats)}; the format is read from the content, not the file name)") from None
    except Exception as exc:  # noqa: BLE001 - Pillow raises many types for garbage
        raise ImageReadError(f"{label}: cannot decode ({type(exc).__name__}: {exc})") from None
    try:
        w, h = im.size
        if max_pixels is not None and w * h > max_pixels:
            raise ImageTooLargeError(f"{label}: {w} x {h} pixels, more than hardneg's limit of {max_pixels:,} "
                                     "(a decompression-bomb guard; downscale the image first)")
        fmt = im.format
        if target_size is not None and fmt == "JPEG":
            keep = max(1, int(target_size * REDUCING_GAP))
            im.draft(im.mode, (keep, keep))  # DCT scaling: decodes 1/2, 1/4 or 1/8 of the pixels
        im.load()
        if fmt == "PNG":
            _check_png_complete(fp, label)
        if target_size is not None:
            factor = min(im.size) // max(1, int(target_size * REDUCING_GAP))
            if factor >= 2:
                im = _reducible(im).reduce(factor)
        return im
    except ImageReadError:
        raise
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(f"{label}: {exc}") from None
    except MemoryError:
        raise ImageReadError(f"{label}: cannot decode (not enough memory)") from None
    except Exception as exc:  # noqa: BLE001 - OSError "image file is truncated", SyntaxError, ...
        raise ImageReadError(f"{label}: cannot decode ({type(exc).__name__}: {exc})") from None


def _reducible(im):
    """``im`` in a mode whose pixels can be averaged (palette indices and 1-bit cannot)."""
    if im.mode in _REDUCE_MODES:
        return im
    if im.mode in ("P", "PA"):
        return im.convert("RGBA" if im.mode == "PA" or "transparency" in im.info else "RGB")
    if im.mode == "1":
        return im.convert("L")
    if im.mode.startswith("I;16"):
        return im.convert("I")
    return im.convert("RGBA" if "A" in im.getbands() else "RGB")


def _png_raw_size(width: int, height: int, bit_depth: int, colour_type: int, interlace: int) -> int:
    """Bytes of filtered scanlines a complete PNG's IDAT stream inflates to."""
    bits = _PNG_CHANNELS[colour_type] * bit_depth

    def rows(w, h):
        return 0 if w == 0 or h == 0 else h * (1 + (w * bits + 7) // 8)

    if not interlace:
        return rows(width, height)
    return sum(rows(max(0, (width - x0 + dx - 1) // dx), max(0, (height - y0 + dy - 1) // dy))
               for x0, y0, dx, dy in _ADAM7)


def _check_png_complete(fp, label) -> None:
    """Refuse a PNG whose compressed pixel data ends before the last row.

    Pillow stops at the end of the zlib stream without checking that it held
    every row, so a file that declares 6000 x 6000 and carries 4 rows decodes
    "successfully". This inflates the IDAT stream again, in 1 MiB pieces that
    are counted and dropped, until the expected byte count is reached.
    """
    fp.seek(0)
    if fp.read(8) != _PNG_SIGNATURE:
        raise ImageReadError(f"{label}: cannot decode (not a PNG signature)")
    need, got = None, 0
    inflater = zlib.decompressobj()
    piece = 1 << 20
    while True:
        head = fp.read(8)
        if len(head) < 8:
            break
        length, tag = struct.unpack(">I4s", head)
        if tag == b"IHDR" and need is None:
            ihdr = fp.read(length)
            if len(ihdr) < 13:
                break
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", ihdr[:13])
            if colour not in _PNG_CHANNELS:
                raise ImageReadError(f"{label}: cannot decode (PNG colour type {colour} is not valid)")
            need = _png_raw_size(width, height, depth, colour, interlace)
            fp.seek(4, io.SEEK_CUR)
        elif tag == b"IDAT" and need is not None:
            left = length
            while left > 0 and got < need:
                data = fp.read(min(piece, left))
                if not data:
                    break
                left -= len(data)
                try:
                    got += len(inflater.decompress(data, piece))
                    while inflater.unconsumed_tail and got < need:
                        got += len(inflater.decompress(inflater.unconsumed_tail, piece))
                except zlib.error as exc:
                    raise ImageReadError(f"{label}: cannot decode (PNG pixel data is damaged: {exc})") from None
            if got >= need:
                return
            fp.seek(left + 4, io.SEEK_CUR)
        elif tag == b"IEND":
            break
        else:
            fp.seek(length + 4, io.SEEK_CUR)
    if need is not None and got < need:
        raise ImageReadError(f"{label}: cannot decode (truncated: the PNG's pixel data ends after "
                             f"{got:,} of {need:,} bytes, so rows are missing)")
