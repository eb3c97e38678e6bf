"""Job: encode a store with a fitted E-SVM encoder into a new store (resumable).

Partition function: ``encoder.transform`` (Eq. (2)-(3) of Zepeda & Perez)
over a partition's rows; merge: the client appends each partition's codes to
the output store in partition order, one atomic commit per partition (by
default a partition is one batch of ``block_rows``, ``--batch-rows``). A job
interrupted at any point leaves whole partitions committed; run again, it
resumes after the last committed row and, partitions lying on a fixed grid of
the source's chunks, computes the rest exactly as a clean run would.

The output store records the same stamp as
:func:`hardneg.encoding.encode_store` (encoder fingerprint, level, source,
source rows), so either one resumes the other's store.
"""

from __future__ import annotations

import functools
import logging

import numpy as np

from .._validation import check_positive_int
from ._partition import Partition, dense, iter_partition, open_model, open_store, partitions, store_url
from ._runner import Runner

__all__ = ["encode_store", "esvm_partition"]

logger = logging.getLogger(__name__)


def esvm_partition(part, *, store: str, encoder, n_recursions: int, block_rows: int) -> np.ndarray:
    """Codes (float32) of one partition's rows, in row order."""
    st = open_store(store)
    enc = open_model(encoder, "esvm")
    blocks = [np.asarray(enc.transform(dense(block), n_recursions=n_recursions), dtype=np.float32)
              for _, block in iter_partition(st, part, block_rows)]
    return np.concatenate(blocks) if len(blocks) > 1 else blocks[0]


def encode_store(encoder, store, out, *, n_recursions=None, runner: Runner | None = None, partition_rows: int | None = None,
                 block_rows: int = 1024, overwrite: bool = False, progress=None, on_commit=None):
    """Encode every row of ``store`` into the new store ``out``, partition by partition.

    Parameters
    ----------
    encoder : fitted ESVMEncoder or path of an encoder file (opened by each worker)
    store : FeatureStore or path
    out : path of the output store (resumed if it exists and was written by this encoder from this source)
    n_recursions : int, optional
    runner : Runner, optional
    partition_rows, block_rows : int, optional
        Rows per task and commit (default: ``block_rows``; a given value is rounded up to whole
        chunks of the source) and rows encoded at a time.
    overwrite : bool
    progress : callable, optional
        ``progress(n_rows)`` per committed partition (rows already there count at the start).
    on_commit : callable, optional
        ``on_commit(n_committed_rows)`` after each commit (tests interrupt a job with it).

    Returns
    -------
    FeatureStore
        ``out``, open for reading.
    """
    from sklearn.utils.validation import check_is_fitted

    from ..encoding._store import _item_columns, check_level, discard_if_empty, open_output
    from ..store import FeatureStore

    runner = runner or Runner()
    enc = open_model(encoder, "esvm")
    check_is_fitted(enc)
    block_rows = check_positive_int(block_rows, "block_rows")
    src = store if isinstance(store, FeatureStore) else FeatureStore.open(store)
    level = check_level(enc, n_recursions)
    # the partitions first: a bad partition_rows is refused before the output exists
    parts = _commit_grid(src, partition_rows, block_rows, 0)
    dst, start, created = open_output(enc, src, out, level, overwrite)
    try:
        if progress is not None and start:
            progress(start)
        items = src.items
        parts = _commit_grid(src, partition_rows, block_rows, start)
        func = functools.partial(esvm_partition, store=store_url(src.path), encoder=runner.share(encoder), n_recursions=level,
                                 block_rows=block_rows)
        for part, codes in zip(parts, runner.map_ordered(func, parts)):
            if codes.shape[0] != part.size or len(dst) != part.lo:
                raise RuntimeError(f"partition {part}: {codes.shape[0]} codes, output at row {len(dst)}")
            dst.append(codes, **_item_columns(items.slice(part.lo, part.size)))  # the partition's commit
            if progress is not None:
                progress(part.size)
            if on_commit is not None:
                on_commit(len(dst))
    except BaseException:
        discard_if_empty(dst, out, created)
        raise
    finally:
        dst.close()
    return FeatureStore.open(out)


def _commit_grid(src, partition_rows: int | None, block_rows: int, start: int) -> list[Partition]:
    """Partitions from ``start``: ``partition_rows`` on the source's chunk grid when given, else
    ``block_rows`` rows each (``--batch-rows``), on a fixed grid of multiples of ``block_rows``.

    E-SVM costs ~10 ms a row: a partition is the work a kill loses, so by default it is one
    batch, not one source chunk (65,536 rows of a sparse store: a kill lost them all).
    """
    if partition_rows is not None:
        return partitions(src, partition_rows, start=start)
    n = len(src)
    edges = [start] + list(range((start // block_rows + 1) * block_rows, n, block_rows)) + [n]
    return [Partition(lo, hi) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]
