"""Reading images: from a folder, a list of paths or an in-memory array.

Every image leaves this module as an ``uint8`` array: ``(H, W, 3)`` RGB for
the CNN, or ``(H, W)`` grey for SIFT. Grey images are repeated to three
channels, RGBA images are composited onto white (transparent pixels carry no
colour, and white is how a viewer shows them), 16-bit and float images are
rescaled. A file that cannot be decoded raises :class:`ImageReadError`, which
the extraction pipeline catches, skips and lists.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hardneg._imaging import MAX_IMAGE_PIXELS
from hardneg._typing import ArrayLike
from hardneg.exceptions import ImageReadError  # defined there, re-exported here

logger = logging.getLogger(__name__)

__all__ = [
    "IMAGE_EXTENSIONS",
    "ImageItem",
    "ImageReadError",
    "list_image_files",
    "fit_square",
    "read_image",
    "read_image_square",
    "resolve_images",
    "to_gray",
    "to_rgb",
]

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm", ".pbm"})


def to_rgb(image: ArrayLike) -> np.ndarray:
    """Convert one image array to ``uint8`` RGB ``(H, W, 3)``.

    Accepts ``(H, W)`` grey, ``(H, W, 1)``, ``(H, W, 3)`` RGB and ``(H, W, 4)``
    RGBA (composited onto white). Integer images wider than 8 bits are scaled
    by their dtype's maximum; float images are taken as ``[0, 1]`` when their
    maximum is at most 1, else as ``[0, 255]``.

    Parameters
    ----------
    image : array-like of shape (H, W), (H, W, 1), (H, W, 3) or (H, W, 4)
        The pixels.

    Returns
    -------
    ndarray of uint8, shape (H, W, 3)

    Raises
    ------
    ValueError
        If the shape is not one of those, or the image is empty.
    """
    a = np.asarray(image)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (3, 4)):
        raise ValueError(f"image: expected shape (H, W), (H, W, 1), (H, W, 3) or (H, W, 4), got {a.shape}")
    if a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"image: empty image of shape {a.shape}")
    a = _to_uint8(a)
    if a.ndim == 2:
        return np.repeat(a[:, :, None], 3, axis=2)
    if a.shape[2] == 4:
        return _composite_on_white(a)
    return np.ascontiguousarray(a)


def _composite_on_white(rgba: np.ndarray) -> np.ndarray:
    """``round((rgb * a + 255 * (255 - a)) / 255)`` in 16-bit integers, exact.

    The sum is at most ``255 * 255``, so it fits ``uint16``;
    ``(v + 128 + ((v + 128) >> 8)) >> 8`` is ``round(v / 255)`` for every
    such ``v`` (no ties exist: ``v / 255`` is never a half). Three times
    faster than the float32 formula it replaces, with the same pixels.
    """
    alpha = rgba[:, :, 3:4].astype(np.uint16)
    v = rgba[:, :, :3] * alpha  # uint16: the product of uint8 and uint16 arrays
    v += (255 - alpha) * np.uint16(255)
    v += 128
    v += v >> 8
    v >>= 8
    return v.astype(np.uint8)


def to_gray(image: ArrayLike) -> np.ndarray:
    """Convert one image array to ``uint8`` grey ``(H, W)`` (ITU-R 601 luma, as PIL's ``L``).

    Parameters
    ----------
    image : array-like of shape (H, W), (H, W, 1), (H, W, 3) or (H, W, 4)
        The pixels (value ranges as for :func:`to_rgb`).

    Returns
    -------
    ndarray of uint8, shape (H, W)

    Raises
    ------
    ValueError
        If the shape is not an image's.
    """
    a = np.asarray(image)
    if a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 1):
        return np.ascontiguousarray(_to_uint8(a.reshape(a.shape[0], a.shape[1])))
    rgb = to_rgb(a).astype(np.float32)
    grey = rgb[:, :, 0] * 0.299 + rgb[:, :, 1] * 0.587 + rgb[:, :, 2] * 0.114
    return np.clip(np.rint(grey), 0, 255).astype(np.uint8)


def _to_uint8(a: np.ndarray) -> np.ndarray:
    if a.dtype == np.uint8:
        return a
    if a.dtype == np.bool_:
        return a.astype(np.uint8) * 255
    if np.issubdtype(a.dtype, np.integer):
        top = 65535.0 if a.dtype.itemsize >= 2 and a.max(initial=0) > 255 else 255.0
        return np.clip(np.rint(a.astype(np.float64) * (255.0 / top)), 0, 255).astype(np.uint8)
    if np.issubdtype(a.dtype, np.floating):
        if not np.isfinite(a).all():
            raise ValueError("image: contains NaN or infinity")
        scale = 255.0 if a.max(initial=0.0) <= 1.0 else 1.0
        return np.clip(np.rint(a.astype(np.float64) * scale), 0, 255).astype(np.uint8)
    raise TypeError(f"image: unsupported dtype {a.dtype}")


def read_image(path: str | os.PathLike, *, max_pixels: int | None = MAX_IMAGE_PIXELS, target_size: int | None = None) -> np.ndarray:
    """Decode an image file into ``uint8`` RGB ``(H, W, 3)``.

    Only the formats in :data:`hardneg._imaging.ALLOWED_FORMATS` are decoded,
    recognised by content, never by the file's name; no external program is
    ever run (see :func:`hardneg._imaging.open_image`, which also explains
    ``max_pixels`` and ``target_size``).

    Parameters
    ----------
    path : str or path-like
        The image file.
    max_pixels : int or None, default=MAX_IMAGE_PIXELS
        Refuse images that declare more pixels (a decompression-bomb guard; the
        limit every image reader in hardneg shares).
    target_size : int, optional
        The size the image will be resized to: the decoder may shrink it on the way, keeping
        at least twice this on each side.

    Returns
    -------
    ndarray of uint8, shape (H, W, 3)

    Raises
    ------
    ImageReadError
        If the file is missing, truncated, not an image or in another format.
    """
    from hardneg._imaging import open_image

    path = Path(path)
    im = open_image(path, max_pixels=max_pixels, target_size=target_size)  # decoded in full: truncation fails here
    with im:
        return np.asarray(rgb_image(im, path))


def read_image_square(path, size: int, resize: str = "crop", *, target_size: int | None = None) -> np.ndarray:
    """Decode an image file straight into a CNN input: ``uint8`` RGB ``(size, size, 3)``.

    The pixels of ``fit_square(read_image(path), size, resize)`` (the
    extractor's own preprocessing), without the round trip through a
    full-size array, so a loader thread does all the per-image work.

    ``target_size``: the image may be decoded reduced (JPEG draft, an integer
    box reduction), and the bicubic resize box-reduces first (Pillow's
    ``reducing_gap``), both never below :data:`RESIZE_REDUCING_GAP` times
    ``target_size`` on a side. None: the exact full-size path.
    """
    from hardneg._imaging import REDUCING_GAP, open_image

    path = Path(path)
    gap = None
    if target_size is not None:
        gap = RESIZE_REDUCING_GAP
        # open_image keeps REDUCING_GAP x its target_size: ask for what keeps gap x ours
        target_size = -(-int(target_size) * int(gap) // int(REDUCING_GAP))
    im = open_image(path, target_size=target_size)
    with im:
        return np.asarray(fit_square(rgb_image(im, path), size, resize, reducing_gap=gap))


# The loader's shortcuts stop at 3x the output side. At 2x (open_image's own gap) the box
# reduction before the bicubic resize moved one of 30 sampled openclipart rows to cosine
# 0.99884 against the full decode (a 1200 x 1123 couch of thin lines); at 3x every sampled
# row stays at cosine >= 0.999999, for about the CPU of the 2x read
# (benchmarks/features_cnn_runtime.py measures the rows and the speed).
RESIZE_REDUCING_GAP = 3.0


def fit_square(im, size: int, resize: str = "crop", *, reducing_gap: float | None = None):
    """Resize a PIL image to ``size x size`` with one bicubic resize.

    ``resize="stretch"``: straight to the square; ``"crop"``: the shorter
    side to ``size``, then the centre square. The geometry of every CNN
    extractor's preprocessing (``TorchExtractor.preprocess``).
    ``reducing_gap``: Pillow's (None: the exact bicubic resize).
    """
    from PIL import Image

    s = int(size)
    w, h = im.size
    if resize == "stretch":
        return im.resize((s, s), Image.Resampling.BICUBIC, reducing_gap=reducing_gap) if (w, h) != (s, s) else im
    scale = s / min(w, h)
    nw, nh = max(s, round(w * scale)), max(s, round(h * scale))
    if (nw, nh) != (w, h):
        im = im.resize((nw, nh), Image.Resampling.BICUBIC, reducing_gap=reducing_gap)
    left, top = (nw - s) // 2, (nh - s) // 2
    return im.crop((left, top, left + s, top + s))


def rgb_image(im, path):
    """A decoded PIL image in ``RGB``; transparent ones composited onto white by Pillow.

    The one conversion every reader of images uses -- extraction, uploads to the service,
    ``--query-image``, the page's thumbnails and contact sheets -- so that a transparent
    image looks the same to the features and to the eye. Details: composited by Pillow
    (a paste through the alpha band: integer maths, the pixels of :func:`to_rgb`'s formula
    on every (colour, alpha) pair, in one pass; ``alpha_composite`` took three)."""
    from PIL import Image

    try:
        if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
            rgba = im if im.mode == "RGBA" else im.convert("RGBA")
            out = Image.new("RGB", rgba.size, (255, 255, 255))
            out.paste(rgba, mask=rgba)  # an RGBA mask: its alpha band
            return out
        if im.mode not in ("I;16", "I;16B", "I;16L", "I", "F"):
            return im.convert("RGB")
        arr = np.asarray(im)
    except Exception as exc:  # noqa: BLE001 - PIL raises many types (OSError, ValueError, ...)
        raise ImageReadError(f"{path}: cannot decode ({type(exc).__name__}: {exc})") from None
    try:
        return Image.fromarray(to_rgb(arr))
    except (ValueError, TypeError) as exc:
        raise ImageReadError(f"{path}: {exc}") from None


def list_image_files(folder: str | os.PathLike, *, recursive: bool = True, extensions: Iterable[str] = IMAGE_EXTENSIONS) -> list[Path]:
    """Files under ``folder`` whose extension marks an image, sorted by relative path.

    Only the extension is checked: a corrupt file with an image extension is
    listed and will be reported when it fails to decode.

    Parameters
    ----------
    folder : str or path-like
        The folder.
    recursive : bool
        Include subfolders.
    extensions : iterable of str
        Extensions with the dot (case ignored).

    Returns
    -------
    list of Path

    Raises
    ------
    FileNotFoundError
        If ``folder`` is not a folder.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{str(folder)!r} is not a folder")
    exts = {e.lower() for e in extensions}
    walker = folder.rglob("*") if recursive else folder.iterdir()
    files = [p for p in walker if p.suffix.lower() in exts and p.is_file()]
    return sorted(files, key=lambda p: p.relative_to(folder).as_posix())


@dataclass(frozen=True)
class ImageItem:
    """One image to extract: its store id, its path (if a file) and how to get its pixels.

    Parameters
    ----------
    id : str
        The store id.
    path : str or None
        The image file, or None for an in-memory image.
    index : int
        Position in the input, to look up labels and in-memory arrays.
    _array : ndarray, optional
        The in-memory image.
    """

    id: str
    path: str | None
    index: int  # position in the input, to look up labels and in-memory arrays
    _array: object = None

    def load(self) -> np.ndarray:
        """The image's pixels: the in-memory array, or the file decoded.

        Returns
        -------
        ndarray of shape (H, W, 3), dtype uint8
            RGB pixels.
        """
        if self._array is not None:
            return to_rgb(self._array)
        if self.path is None:
            raise ValueError(f"image {self.id!r}: neither a path nor pixels")
        return read_image(self.path)


def resolve_images(source: Any, *, ids: Sequence[str] | None = None, root: str | os.PathLike | None = None,
                   recursive: bool = True) -> list[ImageItem]:
    """Turn a folder, a list of paths or an image array into :class:`ImageItem` s.

    Parameters
    ----------
    source : str, Path, sequence of paths, ndarray or sequence of arrays
        A folder (every image file under it, sorted), a list of image paths,
        an array ``(N, H, W)`` / ``(N, H, W, C)``, or a list of image arrays.
    ids : sequence of str, optional
        Item ids. Defaults: the path relative to the folder (or to ``root``)
        in POSIX form for files, and ``"0".."N-1"`` for arrays.
    root : str or Path, optional
        For a list of paths: ids are the paths relative to ``root``.
    recursive : bool
        For a folder: include subfolders.

    Returns
    -------
    list of ImageItem
        In input order (sorted for a folder).

    Raises
    ------
    FileNotFoundError
        If ``source`` names no folder.
    ValueError
        For an array of the wrong shape, a path outside ``root``, or ids that do not match the images.
    TypeError
        For a source (or entry) that is neither a path nor an image array.
    """
    if isinstance(source, (str, os.PathLike)):
        folder = Path(source)
        if not folder.is_dir():
            raise FileNotFoundError(f"source: {str(folder)!r} is not a folder (pass a list for single files)")
        files = list_image_files(folder, recursive=recursive)
        default_ids = [p.relative_to(folder).as_posix() for p in files]
        items = [ImageItem(i, str(p), k) for k, (i, p) in enumerate(zip(default_ids, files))]
    elif isinstance(source, np.ndarray):
        if source.ndim not in (3, 4):
            raise ValueError(f"source: an image array must be (N, H, W) or (N, H, W, C), got shape {source.shape}")
        items = [ImageItem(str(k), None, k, source[k]) for k in range(source.shape[0])]
    elif isinstance(source, Sequence):
        items = []
        root_path = Path(root).resolve() if root is not None else None
        for k, entry in enumerate(source):
            if isinstance(entry, (str, os.PathLike)):
                p = Path(entry)
                if root_path is not None:
                    try:
                        item_id = p.resolve().relative_to(root_path).as_posix()
                    except ValueError:
                        raise ValueError(f"source: {str(p)!r} is not under root {str(root_path)!r}") from None
                else:
                    item_id = p.as_posix()
                items.append(ImageItem(item_id, str(p), k))
            elif isinstance(entry, np.ndarray):
                items.append(ImageItem(str(k), None, k, entry))
            else:
                raise TypeError(f"source[{k}]: expected a path or an image array, got {type(entry).__name__}")
    else:
        raise TypeError(f"source: expected a folder, a list of paths or an image array, got {type(source).__name__}")
    if ids is not None:
        ids = [str(i) for i in ids]
        if len(ids) != len(items):
            raise ValueError(f"ids: has {len(ids)} entries for {len(items)} images")
        items = [ImageItem(i, it.path, it.index, it._array) for i, it in zip(ids, items)]
    seen = set()
    for it in items:
        if it.id in seen:
            raise ValueError(f"ids: duplicate id {it.id!r}")
        seen.add(it.id)
    return items
