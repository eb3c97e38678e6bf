"""Decoding a batch of images in worker threads, each at the size its extractor needs.

The extraction loop (:func:`hardneg.features.extract_to_store`) reads a batch,
transforms it and appends it. Reading one file at a time on the calling
thread leaves a core idle while it decodes, and decodes a 4,000 px image at
full size for a 224 px network input. :func:`load_batch` is the drop-in
replacement of that read: the same ``(good, images)`` result and the same one
``skipping`` line per unreadable file, but the files are decoded in threads
(Pillow's decoders and resizers release the GIL) and, for an extractor that
declares ``decode_size`` (the CNN's input side), downscaled while decoding
(JPEG draft mode, an integer reduction otherwise; see
:func:`hardneg._imaging.open_image`).

:func:`prefetch` overlaps the decoding of the next batch with the work on the
current one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from .._validation import check_positive_int
from ._images import ImageItem, ImageReadError, read_image

logger = logging.getLogger(__name__)

__all__ = ["decode_size_of", "load_batch", "prefetch"]


def decode_size_of(extractor) -> int | None:
    """The side an extractor resizes images to (``decode_size`` attribute), or None for full size."""
    size = getattr(extractor, "decode_size", None)
    return None if size is None else int(size)


def _default_threads() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def _load_one(item: ImageItem, target_size: int | None):
    if item.path is not None and item._array is None:
        return read_image(item.path, target_size=target_size)
    return item.load()


def load_batch(batch: Sequence[ImageItem], summary, *, target_size: int | None = None, n_threads: int | None = None):
    """Decode ``batch`` in threads; unreadable items are logged, listed in ``summary.failed`` and left out.

    Parameters
    ----------
    batch : sequence of ImageItem
    summary : object with a ``failed`` list
        Receives ``(id, message)`` for every item that cannot be read.
    target_size : int, optional
        Side the extractor resizes to: larger files are decoded downscaled,
        never below twice this side. None: full size.
    n_threads : int, optional
        Decoding threads (default: the CPU count, at most 8).

    Returns
    -------
    good : list of ImageItem
    images : list of uint8 RGB arrays, in the order of ``good``
    """
    n_threads = _default_threads() if n_threads is None else check_positive_int(n_threads, "n_threads")
    if target_size is not None:
        target_size = check_positive_int(target_size, "target_size")
    good, images = [], []
    if n_threads == 1 or len(batch) <= 1:
        results = [_try(_load_one, it, target_size) for it in batch]
    else:
        with ThreadPoolExecutor(min(n_threads, len(batch)), thread_name_prefix="hardneg-decode") as pool:
            results = list(pool.map(lambda it: _try(_load_one, it, target_size), batch))
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


def prefetch(batches: Iterable, load: Callable) -> Iterator[tuple[object, object]]:
    """Yield ``(batch, load(batch))``, loading the next batch in a thread while the caller works on this one."""
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
