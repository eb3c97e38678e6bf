"""Partitions of store rows that follow the store's chunking, and what a worker opens.

A partition is ``(lo, hi)``: whole Zarr chunks of the store (the last one may
be short), on a fixed grid of ``partition_rows`` (a multiple of the chunk), so
a job resumed from a committed partition boundary cuts the remaining rows
exactly as a clean run does. Workers open the store and the model files
themselves, by path or object-store URL, and keep them open per process (keyed
by the file's modification time and size, or a remote meta.json's CRC-32, so a
rewritten file is opened afresh).
"""

from __future__ import annotations

import functools
import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .._typing import ArrayLike
from ..store._remote import LOCAL_PROTOCOLS, RemoteFolder, url_protocol

__all__ = ["Partition", "iter_partition", "map_partition", "open_model", "open_source", "open_store", "partitions", "source_for", "source_partitions", "store_url"]

DEFAULT_PARTITION_BYTES = 64 * 2**20  # rows per partition: ~64 MiB of float32, 4 default chunks


class Partition(tuple):
    """``(lo, hi, rows)``: rows ``lo..hi`` of the store, or only ``rows`` (sorted, inside ``lo..hi``) when given.

    Parameters
    ----------
    lo : int
        First row.
    hi : int
        One past the last row.
    rows : ndarray of int, optional
        The rows to read, sorted, inside ``lo..hi``; None for all of them.
    """

    __slots__ = ()

    def __new__(cls, lo: int, hi: int, rows: np.ndarray | None = None):
        return super().__new__(cls, (int(lo), int(hi), rows))

    def __init__(self, lo: int, hi: int, rows: np.ndarray | None = None):
        # the tuple is made by __new__; this signature is the one the API docs read
        super().__init__()

    def __getnewargs__(self):
        return tuple(self)

    @property
    def lo(self) -> int:
        """First row of the partition."""
        return self[0]

    @property
    def hi(self) -> int:
        """One past the last row of the partition."""
        return self[1]

    @property
    def rows(self) -> np.ndarray | None:
        """The rows to read (sorted, inside ``lo..hi``), or None for all rows ``lo..hi``."""
        return self[2]

    @property
    def size(self) -> int:
        """Number of rows the partition reads: ``hi - lo``, or ``len(rows)`` when rows are given."""
        return self.hi - self.lo if self.rows is None else int(len(self.rows))

    def __repr__(self) -> str:
        return f"Partition({self.lo}, {self.hi}{'' if self.rows is None else f', {len(self.rows)} rows'})"


def partition_rows_for(store, partition_rows: int | None = None) -> int:
    """Rows per partition: ``partition_rows`` rounded up to whole chunks (default ~64 MiB)."""
    c = store.chunk_rows
    if partition_rows is None:
        row_bytes = 4 * store.dim if not store.is_sparse else 64  # CSR: a guess of ~8 non-zeros per row
        partition_rows = max(c, DEFAULT_PARTITION_BYTES // max(row_bytes, 1))
    if isinstance(partition_rows, bool) or not isinstance(partition_rows, (int, np.integer)) or partition_rows < 1:
        raise ValueError(f"partition_rows: expected a positive integer, got {partition_rows!r}")
    return int(-(-int(partition_rows) // c) * c)


def partitions(store: Any, partition_rows: int | None = None, *, start: int = 0, stop: int | None = None,
               rows: ArrayLike | None = None) -> list[Partition]:
    """Partitions of rows ``start..stop`` (or of the row subset ``rows``) on the store's chunk grid.

    Parameters
    ----------
    store : FeatureStore
        The store.
    partition_rows : int, optional
        Rows per partition, rounded up to whole chunks; default about 64 MiB of rows.
    start, stop : int
        The row range (default all rows).
    rows : array-like of int, optional
        A sorted subset of rows; partitions holding none of them are left out.

    Returns
    -------
    list of Partition
        In row order, edges on the chunk grid (except ``start`` and ``stop``).

    Raises
    ------
    ValueError
        If ``start..stop`` is not inside the store or ``partition_rows`` is not a positive integer.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from hardneg.store import FeatureStore
    >>> with FeatureStore.create(tempfile.mkdtemp() + "/s", dim=2, chunk_rows=4) as st:
    ...     st.append(np.ones((10, 2)))
    >>> [p[:2] for p in partitions(st, 8)]
    [(0, 8), (8, 10)]
    >>> [p[:2] for p in partitions(st, 8, start=5)]
    [(5, 8), (8, 10)]
    """
    size = partition_rows_for(store, partition_rows)
    n = len(store)
    stop = n if stop is None else int(stop)
    if not 0 <= start <= stop <= n:
        raise ValueError(f"start={start}, stop={stop}: expected 0 <= start <= stop <= {n}")
    edges = [start] + list(range((start // size + 1) * size, stop, size)) + [stop]
    if rows is None:
        return [Partition(lo, hi) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]
    rows = np.asarray(rows, dtype=np.int64)
    cut = np.searchsorted(rows, edges)
    return [Partition(lo, hi, rows[a:b]) for lo, hi, a, b in zip(edges[:-1], edges[1:], cut[:-1], cut[1:]) if b > a]


def store_url(path) -> str:
    """The store location workers open: an absolute local path (``file://`` URLs become
    paths), or an object-store URL, which every worker reads itself."""
    from ..store._feature_store import store_location

    where = store_location(str(path) if not isinstance(path, (str, os.PathLike)) else path)
    return str(where) if isinstance(where, RemoteFolder) else str(Path(where).absolute())


def _stamp(path: str, name: str | None = None):
    if url_protocol(path) not in (None, *LOCAL_PROTOCOLS):
        # an object store's meta.json: its bytes say whether the store changed
        where = RemoteFolder.from_url(path)
        return zlib.crc32((where / name if name else where).read_bytes())
    st = os.stat(os.path.join(path, name) if name else path)
    return st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=8)
def _open_store(path: str, stamp):
    from ..store import FeatureStore

    return FeatureStore.open(path)


def open_store(path: str):
    """The store at ``path``, opened read-only once per process and meta.json version."""
    from ..store._meta import META
    from ..store._quantize import MARKER, BinnedStore

    if url_protocol(path) in (None, *LOCAL_PROTOCOLS) and BinnedStore.is_binned(path):
        # a uint8 binned copy (`hardneg store quantize`): compressed models score its codes directly
        return _open_binned(path, _stamp(path, MARKER))
    return _open_store(path, _stamp(path, META))


@functools.lru_cache(maxsize=8)
def _open_binned(path: str, stamp):
    from ..store._quantize import BinnedStore

    return BinnedStore.open(path)


# what each job expects a model file to hold: kind -> (module, class)
_MODEL_CLASSES = {
    "concept": ("hardneg.concept._compressed", "CompressedConcept"),
    "hasher": ("hardneg.hashing._base", "BaseHasher"),
    "esvm": ("hardneg.encoding._esvm", "ESVMEncoder"),
}


@functools.lru_cache(maxsize=8)
def _open_model(kind: str, path: str, stamp):
    import importlib

    from .._load import load
    from ..exceptions import ModelFileError

    if kind not in _MODEL_CLASSES:
        raise ValueError(f"kind: expected 'concept', 'hasher' or 'esvm', got {kind!r}")
    module, name = _MODEL_CLASSES[kind]
    model = load(path)
    if not isinstance(model, getattr(importlib.import_module(module), name)):
        raise ModelFileError(f"{path}: holds a {type(model).__name__}, expected a {kind} model ({name})")
    return model


def open_model(model, kind: str):
    """``model`` itself, or the model file at that path loaded once per process."""
    if isinstance(model, (str, os.PathLike)):
        path = str(Path(model).absolute())
        return _open_model(kind, path, _stamp(path))
    return model


def dense(block) -> np.ndarray:
    return block.toarray() if hasattr(block, "toarray") else np.asarray(block)


def is_store(data) -> bool:
    return hasattr(data, "iter_chunks") and hasattr(data, "items")


def source_for(data, runner):
    """What partition functions receive for ``data``: a store's location (each worker opens it),
    or an in-memory array, sent to each worker once."""
    return store_url(data.path) if is_store(data) else runner.share(data)


def open_source(source):
    """The store at a location given by :func:`source_for`, or the in-memory array itself."""
    return open_store(source) if isinstance(source, str) else source


def source_partitions(data, partition_rows: int | None = None, *, rows=None) -> list[Partition]:
    """:func:`partitions` of a store; an in-memory array is one partition."""
    if is_store(data):
        return partitions(data, partition_rows, rows=rows)
    n = data.shape[0]
    if rows is not None:
        rows = np.asarray(rows, dtype=np.int64)
        return [Partition(0, n, rows)] if rows.size else []
    return [Partition(0, n)] if n else []


def iter_partition(store, part: Partition, block_rows: int):
    """``(rows, block)`` over a partition, ``block_rows`` at a time (bounded memory);
    ``store`` may also be an in-memory array."""
    if not is_store(store):
        for a in range(0, part.size, block_rows):
            idx = np.arange(part.lo + a, min(part.lo + a + block_rows, part.hi), dtype=np.int64) if part.rows is None \
                else part.rows[a : a + block_rows]
            yield idx, store[idx[0] : idx[-1] + 1] if part.rows is None else store[idx]
        return
    if part.rows is None:
        for lo, block in store.iter_chunks(block_rows, start=part.lo, stop=part.hi):
            yield np.arange(lo, lo + block.shape[0], dtype=np.int64), block
    else:
        for a in range(0, len(part.rows), block_rows):
            idx = part.rows[a : a + block_rows]
            yield idx, store.take(idx)


def map_partition(source, part: Partition, block_rows: int, fn, *, dtype=None) -> np.ndarray:
    """``fn(block)`` (a dense block) over a partition's blocks, concatenated in row order:
    the shape of every per-row partition function (scores, codes)."""
    data = open_source(source)
    out = [np.asarray(fn(dense(block)), dtype=dtype) for _, block in iter_partition(data, part, block_rows)]
    if not out:
        return np.empty(0, dtype or np.float64)
    return np.concatenate(out) if len(out) > 1 else out[0]
