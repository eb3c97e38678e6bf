"""Binned (uint8) copies of a FeatureStore, for scans with compressed concept models.

A compressed concept model (Li et al. 2013, [Li13] Eq. (13)-(16)) scores an image as
a sum of one table look-up per dimension, so it never needs the float value
itself, only where it falls on a grid. ``quantize_store`` writes that
position once per value as one byte: a quarter of the float32 store's bytes
to read per scan, and a scan that is a pure look-up + sum
(:meth:`hardneg.concept.CompressedConcept.decision_function_bins`).

The grid belongs to the store, not to a model: per dimension, ``q + 1``
equally spaced nodes from ``lo = 0`` to ``hi`` = the store's maximum in that
dimension (features are non-negative for the histogram-intersection kernel,
and zeros stay exact zeros). A value is stored as its nearest node, so it moves
by at most half a bin width; any model can score the codes, by tabulating its
H_i at the nodes (d x (q + 1) values, computed once per model and grid).

Layout of a binned store folder (written under a temporary name, then renamed
into place, so a crash leaves either the old folder or the complete new one)::

    binned.json     format marker, version, rows, dim, q, source store
    grid.npy        float64 (2, d): lo and hi per dimension
    codes.npy       uint8 (rows, d), memory-mapped on open
    items.parquet   the source store's item table (ids, tags, labels, split)

It is a sidecar folder rather than a uint8 dtype inside FeatureStore: the
codes are derived data, written once and never appended to, so one atomic
rename gives all the crash safety needed, and the FeatureStore format (its
chunk checksums, per-chunk value checks and resume logic, all float32) stays
untouched.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .._typing import ArrayLike
from .._validation import check_positive_int, issparse
from ._errors import StoreError

__all__ = ["BinGrid", "BinnedStore", "CodeBlock", "quantize_store"]

logger = logging.getLogger(__name__)

FORMAT = "hardneg.BinnedStore"
VERSION = 1
MARKER = "binned.json"
_ENTRIES = frozenset({MARKER, "grid.npy", "codes.npy", "items.parquet"})
MAX_BINS = 255  # q + 1 levels must fit in a byte


class BinGrid:
    """Per-dimension uniform grid of ``n_bins + 1`` nodes from ``lo`` to ``hi``.

    Parameters
    ----------
    lo, hi : ndarray (d,)
        Grid range per dimension, ``lo <= hi``, finite.
    n_bins : int
        q, 1 to 255 (codes 0..q are one byte).

    Examples
    --------
    >>> import numpy as np
    >>> g = BinGrid(np.zeros(2), np.array([1.0, 2.0]), 4)
    >>> g.quantize(np.array([[0.3, 2.0]], dtype=np.float32)).tolist()
    [[1, 4]]
    >>> g.dequantize(np.array([[1, 4]], dtype=np.uint8)).tolist()
    [[0.25, 2.0]]
    """

    def __init__(self, lo: ArrayLike, hi: ArrayLike, n_bins: int):
        self.lo = np.ascontiguousarray(lo, dtype=np.float64)
        self.hi = np.ascontiguousarray(hi, dtype=np.float64)
        self.n_bins = check_positive_int(n_bins, "n_bins")
        if self.n_bins > MAX_BINS:
            raise ValueError(f"n_bins: at most {MAX_BINS} (codes are one byte), got {n_bins}")
        if self.lo.ndim != 1 or self.lo.shape != self.hi.shape or self.lo.size < 1:
            raise ValueError(f"lo/hi: need two 1-D arrays of one shape, got {self.lo.shape} and {self.hi.shape}")
        if not (np.isfinite(self.lo).all() and np.isfinite(self.hi).all()) or np.any(self.hi < self.lo):
            raise ValueError("lo/hi: need finite values with lo <= hi in every dimension")
        self._nodes: np.ndarray | None = None

    @property
    def dim(self) -> int:
        """Number of dimensions d of the grid."""
        return self.lo.size

    def key(self) -> tuple:
        """Identity of the grid (for caches of per-grid tables).

        Returns
        -------
        tuple
            ``(n_bins, lo bytes, hi bytes)``: equal for two grids exactly when they are equal.
        """
        return (self.n_bins, self.lo.tobytes(), self.hi.tobytes())

    def nodes(self) -> np.ndarray:
        """Node values, float32 (d, q + 1): ``lo + k (hi - lo) / q``, the top node exactly ``hi``.

        Returns
        -------
        ndarray of float32, shape (d, n_bins + 1)
            The nodes of every dimension (read-only, computed once and cached).
        """
        if self._nodes is None:
            q = self.n_bins
            nodes = self.lo[:, None] + (self.hi - self.lo)[:, None] * (np.arange(q + 1) / q)[None, :]
            nodes[:, q] = self.hi
            nodes32 = nodes.astype(np.float32)
            nodes32.setflags(write=False)
            self._nodes = nodes32
        return self._nodes

    def quantize(self, X: ArrayLike) -> np.ndarray:
        """Codes of the nearest nodes, uint8 (n, d); values outside [lo, hi] take the end nodes.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Values to quantize.

        Returns
        -------
        ndarray of uint8, shape (n, d)
            Code (node number, 0 to ``n_bins``) of each value.
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.dim:
            raise ValueError(f"X: expected shape (n, {self.dim}), got {X.shape}")
        width = self.hi - self.lo
        scale = np.where(width > 0, self.n_bins / np.where(width > 0, width, 1.0), 0.0)
        t = np.rint((X - self.lo) * scale)
        return np.clip(t, 0, self.n_bins, out=t).astype(np.uint8)

    def dequantize(self, codes: ArrayLike) -> np.ndarray:
        """Node values of ``codes`` (float32): what a scan of the codes sees.

        Parameters
        ----------
        codes : ndarray of uint8, shape (n, d)
            Codes of this grid, each at most ``n_bins``.

        Returns
        -------
        ndarray of float32, shape (n, d)
            The node value of each code.
        """
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != self.dim or codes.dtype != np.uint8:
            raise ValueError(f"codes: expected uint8 of shape (n, {self.dim}), got {codes.dtype} {codes.shape}")
        if codes.size and int(codes.max()) > self.n_bins:
            raise ValueError(f"codes: value {int(codes.max())} is beyond the grid's {self.n_bins} bins")
        return np.take_along_axis(self.nodes(), codes.T.astype(np.intp), axis=1).T.copy()

    # Defining __eq__ alone leaves BinGrid unhashable (Python sets __hash__ = None).
    def __eq__(self, other) -> bool:
        return isinstance(other, BinGrid) and self.key() == other.key()

    def __repr__(self) -> str:
        return f"BinGrid(d={self.dim}, n_bins={self.n_bins})"


class CodeBlock(np.ndarray):
    """A uint8 block of codes that carries its :class:`BinGrid` (``.grid``).

    What :class:`BinnedStore` hands out, so a compressed concept model's
    ``decision_function`` knows the grid of the codes it is given.
    ``CodeBlock(codes, grid)`` views ``codes`` (array-like of uint8, shape (n, d)) as
    uint8 and attaches ``grid``.
    """

    def __new__(cls, codes: ArrayLike, grid: BinGrid):
        obj = np.asarray(codes, dtype=np.uint8).view(cls)
        obj.grid = grid
        return obj

    def __array_finalize__(self, obj):
        self.grid = getattr(obj, "grid", None)

    def toarray(self) -> CodeBlock:
        """Itself: scans densify blocks with ``toarray()`` when they have it, which keeps the grid."""
        return self


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _check_replaceable(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        raise StoreError(f"refusing to overwrite {str(path)!r}: it is not a folder; remove it yourself or choose another output")
    foreign = sorted(p.name for p in path.iterdir() if p.name not in _ENTRIES)
    if foreign or not (path / MARKER).is_file():
        raise StoreError(f"refusing to overwrite {str(path)!r}: it is not a binned store "
                         f"({'it holds ' + ', '.join(foreign[:3]) if foreign else 'no ' + MARKER}); choose another output")


def quantize_store(source: Any, out: str | Path, n_bins: int = 100, *, chunk_rows: int | None = None, overwrite: bool = False,
                   progress: Callable[[int], object] | None = None) -> BinnedStore:
    """Write a binned (uint8) copy of a FeatureStore: one byte per value on the store's own grid.

    Parameters
    ----------
    source : FeatureStore or path
    out : path
        New folder; it must not exist unless ``overwrite`` (then it must be a binned store).
    n_bins : int
        q, 1 to 255: q + 1 nodes from 0 to the store's maximum, per dimension.
    chunk_rows : int, optional
        Rows read at a time (default: the source's chunk).
    overwrite : bool
        Replace an existing binned store at ``out``.
    progress : callable, optional
        Called with the number of rows written after each block (second pass).

    Returns
    -------
    BinnedStore
        The new binned store, open for reading.

    Raises
    ------
    ValueError
        If ``n_bins`` is out of range.
    StoreError
        If ``out`` exists without ``overwrite``, or the source holds negative values.
    """
    from ._feature_store import FeatureStore, check_output_not_input

    n_bins = check_positive_int(n_bins, "n_bins")
    if n_bins > MAX_BINS:
        raise ValueError(f"n_bins: at most {MAX_BINS} (codes are one byte), got {n_bins}")
    store = source if isinstance(source, FeatureStore) else FeatureStore.open(source)
    out = Path(out)
    check_output_not_input(out, store.path, what="out")
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise StoreError(f"{str(out)!r} exists; pass overwrite=True (--overwrite) to replace it, or choose another output")
        _check_replaceable(out)
    rows = check_positive_int(chunk_rows if chunk_rows is not None else store.chunk_rows, "chunk_rows")
    n, d = len(store), store.dim

    def blocks():
        for lo, block in store.iter_chunks(rows):
            yield lo, (block.toarray() if issparse(block) else np.asarray(block))

    hi = np.zeros(d, dtype=np.float64)
    for _, block in blocks():
        if block.shape[0]:
            if block.min() < 0:
                raise StoreError(f"{store.path}: holds negative values; binned copies are for non-negative "
                                 "(histogram-intersection) features")
            np.maximum(hi, block.max(axis=0), out=hi)
    grid = BinGrid(np.zeros(d), hi, n_bins)

    tmp = out.parent / f".{out.name}.{uuid.uuid4().hex[:8]}.tmp"
    tmp.mkdir(parents=True)
    try:
        codes = np.lib.format.open_memmap(tmp / "codes.npy", mode="w+", dtype=np.uint8, shape=(n, d))
        for lo, block in blocks():
            codes[lo:lo + block.shape[0]] = grid.quantize(block)
            if progress is not None:
                progress(block.shape[0])
        codes.flush()
        del codes
        np.save(tmp / "grid.npy", np.stack([grid.lo, grid.hi]), allow_pickle=False)
        pq.write_table(store.items, tmp / "items.parquet")
        meta = {"format": FORMAT, "version": VERSION, "rows": n, "dim": d, "n_bins": n_bins,
                "source": str(store.path), "grid": "lo = 0, hi = per-dimension maximum of the source"}
        (tmp / MARKER).write_text(json.dumps(meta, indent=1), encoding="utf-8")
        for name in _ENTRIES:
            _fsync(tmp / name)
        _fsync(tmp)
        if out.exists():
            trash = out.parent / f".{out.name}.{uuid.uuid4().hex[:8]}.old"
            os.replace(out, trash)
            os.replace(tmp, out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(tmp, out)
        _fsync(out.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    logger.info("wrote %s: %d rows x %d dims as uint8 codes, q=%d", out, n, d, n_bins)
    return BinnedStore.open(out)


class BinnedStore:
    """A read-only binned copy written by :func:`quantize_store`.

    Offers the read side of a FeatureStore that a scan uses (``len``, ``dim``,
    ``items``, ``iter_chunks``, ``take``); its blocks are :class:`CodeBlock`
    (uint8 + grid), which :class:`~hardneg.concept.CompressedConcept` scores by
    look-up only.

    Parameters
    ----------
    path : Path
        The store folder.
    meta : dict
        Its metadata, as read from the folder.
    grid : BinGrid
        The grid of its codes.
    codes : ndarray of uint8, shape (n, d)
        The codes (a Zarr array or memory map).
    """

    def __init__(self, path: Path, meta: dict, grid: BinGrid, codes: np.ndarray):
        self.path = path
        self.meta = meta
        self.grid = grid
        self._codes = codes
        self._items = None

    @staticmethod
    def is_binned(path: str | os.PathLike) -> bool:
        """Whether ``path`` is a binned store folder (has the format marker).

        Parameters
        ----------
        path : str or path-like
            A folder.

        Returns
        -------
        bool
            True when ``path`` holds a ``binned.json`` marker file.
        """
        return (Path(path) / MARKER).is_file()

    @classmethod
    def open(cls, path: str | os.PathLike) -> BinnedStore:
        """Open a binned store folder written by :func:`quantize_store` (codes memory-mapped).

        Parameters
        ----------
        path : str or path-like
            The binned store folder.

        Returns
        -------
        BinnedStore
            The store, read-only.

        Raises
        ------
        StoreError
            If the folder is not a binned store, is of another version, or its files disagree.
        """
        path = Path(path)
        if not cls.is_binned(path):
            raise StoreError(f"{str(path)!r} is not a binned store (no {MARKER}); write one with `hardneg store quantize`")
        try:
            meta = json.loads((path / MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path}: {MARKER} cannot be read ({str(exc).splitlines()[0]}); re-create the copy with `hardneg store quantize`") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise StoreError(f"{path}: {MARKER} is not a {FORMAT} marker; re-create the copy with `hardneg store quantize`")
        if meta.get("version") != VERSION:
            raise StoreError(f"{path}: binned store version {meta.get('version')!r}, this hardneg reads version {VERSION}")
        try:
            n, d, q = (int(meta[k]) for k in ("rows", "dim", "n_bins"))
            lohi = np.load(path / "grid.npy", allow_pickle=False)
            if lohi.shape != (2, d) or lohi.dtype != np.float64:
                raise ValueError(f"grid.npy has {lohi.dtype} {lohi.shape}, expected float64 (2, {d})")
            grid = BinGrid(lohi[0], lohi[1], q)
            codes = np.load(path / "codes.npy", mmap_mode="r", allow_pickle=False)
            if codes.dtype != np.uint8 or codes.shape != (n, d):
                raise ValueError(f"codes.npy has {codes.dtype} {codes.shape}, expected uint8 ({n}, {d})")
        except (OSError, KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"{path}: inconsistent binned store ({str(exc).splitlines()[0]}); re-create it with `hardneg store quantize`") from None
        return cls(path, meta, grid, codes)

    def __len__(self) -> int:
        return self._codes.shape[0]

    @property
    def dim(self) -> int:
        """Number of dimensions d."""
        return self._codes.shape[1]

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_rows, d)``."""
        return self._codes.shape

    @property
    def n_bins(self) -> int:
        """Number of bins q of the grid (codes are 0 to q)."""
        return self.grid.n_bins

    @property
    def is_sparse(self) -> bool:
        """Always False: codes are dense (the :class:`FeatureStore` interface)."""
        return False

    @property
    def chunk_rows(self) -> int:
        """Rows per block of :meth:`iter_chunks` when none is given (65536)."""
        return 65536

    @property
    def items(self) -> pa.Table:
        """The source store's item table (``id``, tags, labels, split), one row per code row;
        read on first use, :class:`StoreError` if it is missing or of another length."""
        if self._items is None:
            try:
                items = pq.read_table(self.path / "items.parquet")
            except (OSError, pa.ArrowException) as exc:
                raise StoreError(f"{self.path}: items.parquet cannot be read ({str(exc).splitlines()[0]}); re-create the copy with `hardneg store quantize`") from None
            if items.num_rows != len(self) or "id" not in items.column_names:
                raise StoreError(f"{self.path}: items.parquet has {items.num_rows} rows for {len(self)} codes; re-create the copy with `hardneg store quantize`")
            self._items = items
        return self._items

    def iter_chunks(self, rows: int | None = None, *, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, CodeBlock]]:
        """Yield ``(first_row, codes)`` blocks (read-only :class:`CodeBlock` views of the file).

        Parameters
        ----------
        rows : int or None, default=None
            Rows per block; None uses :attr:`chunk_rows`.
        start : int, default=0
            First row.
        stop : int or None, default=None
            End row (exclusive); None is the end of the store.

        Yields
        ------
        first_row : int
            Store row of the block's first row.
        codes : CodeBlock of shape (n_rows, d)
            uint8 codes of rows ``first_row`` to ``first_row + n_rows``, with their grid.
        """
        rows = check_positive_int(rows if rows is not None else self.chunk_rows, "rows")
        stop = len(self) if stop is None else int(stop)
        if not 0 <= int(start) <= stop <= len(self):
            raise ValueError(f"start/stop: need 0 <= start <= stop <= {len(self)}, got {start}, {stop}")
        for lo in range(int(start), stop, rows):
            yield lo, CodeBlock(self._codes[lo:min(lo + rows, stop)], self.grid)

    def take(self, indices: ArrayLike) -> CodeBlock:
        """Codes of the rows ``indices``, in that order.

        Parameters
        ----------
        indices : array-like of int, shape (n,)
            Store rows, each in ``[0, n_rows)``.

        Returns
        -------
        CodeBlock of shape (n, d)
            uint8 codes of those rows, with their grid (a copy).
        """
        idx = np.asarray(indices)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise TypeError(f"indices: expected a 1-D array of integers, got shape {idx.shape} dtype {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise IndexError(f"indices: out of range for a store of {len(self)} rows")
        return CodeBlock(self._codes[idx.astype(np.int64)], self.grid)

    def dequantized(self, rows: ArrayLike | None = None) -> np.ndarray:
        """Float32 node values of all rows (or ``rows``): what a scan of the codes sees.

        Parameters
        ----------
        rows : array-like of int, shape (n,), or None, default=None
            Store rows; None takes every row.

        Returns
        -------
        ndarray of float32, shape (n, d)
            The node value of each code of those rows.
        """
        codes = self._codes if rows is None else self._codes[np.asarray(rows, dtype=np.int64)]
        return self.grid.dequantize(np.asarray(codes))

    def __repr__(self) -> str:
        return f"BinnedStore({str(self.path)!r}, rows={len(self)}, dim={self.dim}, n_bins={self.n_bins})"
