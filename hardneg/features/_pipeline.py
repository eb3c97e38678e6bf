"""Decoding a batch of images in worker threads, ready for its extractor.

The extraction loop (:func:`hardneg.features.extract_to_store`) reads a
batch, transforms it and appends it. :func:`load_batch` is its read: one
``skipping`` line per unreadable file (listed in the summary), the others
decoded in threads (Pillow's decoders and resizers release the GIL). For a
CNN extractor (one with ``input_size`` and ``resize``) each worker also does
the one bicubic resize to the network input and the compositing of
transparent images onto white (:func:`hardneg.features._images.read_image_square`),
so the extractor gets ``(S, S, 3)`` arrays and only normalizes them; files
at least three times the input side are decoded downscaled (JPEG draft mode,
an integer reduction for other formats) and box-reduced inside the resize,
never below three times the side. :func:`prefetch` overlaps the decoding of
the next batch with the forward pass of the current one.

``n_threads=0`` is the serial reference path: each item's ``load()`` in the
calling thread, full size, as extraction did before the loader existed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Generator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

from .._validation import check_positive_int
from ._images import ImageItem, ImageReadError, fit_square, read_image_square, to_rgb

logger = logging.getLogger(__name__)

_B = TypeVar("_B")  # a batch of prefetch
_L = TypeVar("_L")  # what its load makes of it

__all__ = ["decode_size_of", "input_geometry", "load_batch", "prefetch"]


def decode_size_of(extractor) -> int | None:
    """The side an extractor resizes images to (``decode_size`` attribute), or None for full size."""
    size = getattr(extractor, "decode_size", None)
    return None if size is None else int(size)


def _default_threads() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def input_geometry(extractor) -> tuple[int, str] | None:
    """``(side, resize)`` of a CNN extractor's square input, or None for extractors that take whole images."""
    size, resize = getattr(extractor, "input_size", None), getattr(extractor, "resize", None)
    if size is None or resize not in ("crop", "stretch") or not hasattr(extractor, "preprocess"):
        return None
    return int(size), resize


def _load_one(item: ImageItem, target_size: int | None, geometry):
    if item.path is None or item._array is not None:
        img = item.load()
        if geometry is None:
            return img
        from PIL import Image

        return np.asarray(fit_square(Image.fromarray(to_rgb(img)), *geometry))
    if geometry is None:
        from ._images import read_image

        return read_image(item.path, target_size=target_size)
    # Large files are decoded downscaled, never below 3x the side (_images.RESIZE_REDUCING_GAP):
    # per-row cosine to the full decode, benchmarks/features_cnn_runtime.py.
    size, resize = geometry
    return read_image_square(item.path, size, resize, target_size=size)


def load_batch(batch: Sequence[ImageItem], summary, *, target_size: int | None = None, n_threads: int | None = None,
               geometry: tuple[int, str] | None = None):
    """Decode ``batch`` in threads; unreadable items are logged, listed in ``summary.failed`` and left out.

    Parameters
    ----------
    batch : sequence of ImageItem
    summary : object with a ``failed`` list
        Receives ``(id, message)`` for every item that cannot be read.
    target_size : int, optional
        For whole images (no ``geometry``): larger files are decoded
        downscaled, never below twice this side. None: full size.
    n_threads : int, optional
        Decoding threads (default: the CPU count, at most 8); 0: each item's
        ``load()`` in this thread, full size (the reference path).
    geometry : (side, resize), optional
        A CNN input (:func:`input_geometry`): every image comes back as a
        ``(side, side, 3)`` array, resized as the extractor would.

    Returns
    -------
    good : list of ImageItem
    images : list of uint8 RGB arrays, in the order of ``good``
    """
    if n_threads is None:
        n_threads = _default_threads()
    elif n_threads != 0:
        n_threads = check_positive_int(n_threads, "n_threads")
    if target_size is not None:
        target_size = check_positive_int(target_size, "target_size")
    good, images = [], []
    if n_threads == 0:
        results = [_try(ImageItem.load, it) for it in batch]
    elif n_threads == 1 or len(batch) <= 1:
        results = [_try(_load_one, it, target_size, geometry) for it in batch]
    else:
        with ThreadPoolExecutor(min(n_threads, len(batch)), thread_name_prefix="hardneg-decode") as pool:
            results = list(pool.map(lambda it: _try(_load_one, it, target_size, geometry), batch))
    for it, (img, exc) in zip(batch, results):
        if exc is None:
            good.append(it)
            images.append(img)
        else:
            logger.warning("skipping %s: %s", it.id, exc)
            summary.failed.append((it.id, str(exc)))
    return good, images


def _try(fn, *args):
    try:
        return fn(*args), None
    except (ImageReadError, ValueError, TypeError) as exc:
        return None, exc


def prefetch(batches: Iterable[_B], load: Callable[[_B], _L]) -> Generator[tuple[_B, _L], None, None]:
    """Yield ``(batch, load(batch))``, loading the next batch in a thread while the caller works on this one
    (a generator: ``close()`` it to stop early)."""
    it = iter(batches)
    try:
        first = next(it)
    except StopIteration:
        return
    with ThreadPoolExecutor(1, thread_name_prefix="hardneg-prefetch") as pool:
        cur, fut = first, pool.submit(load, first)
        for nxt in it:
            loaded = fut.result()
            fut = pool.submit(load, nxt)
            yield cur, loaded
            cur = nxt
        yield cur, fut.result()
