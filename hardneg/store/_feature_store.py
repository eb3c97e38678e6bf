"""FeatureStore: feature vectors in Zarr plus an item table in Parquet.

Layout of a store directory::

    store/
      meta.json            committed state: format version, dim, sparse, n_rows,
                           nnz, the list of item-table parts (the commit point)
      vectors/             Zarr v3 group: dense ``X`` (n, dim) float32, or the
                           CSR arrays ``indptr`` (n + 1,) int64, ``indices`` (nnz,)
                           int32 and ``data`` (nnz,) float32
      items/part-*.parquet one Parquet file per appended batch
      .lock                writer lock (an OS lock: released if the writer dies)

Crash safety. An append writes vectors past the committed row count, then
the batch's Parquet part under a temporary name, renames it, and only then
replaces ``meta.json`` atomically (write, fsync, ``os.replace``). Readers
trust only ``meta.json``: a writer killed at any point leaves every batch
that completed readable, and the next writer trims the leftovers. Zarr
itself writes each chunk and its array metadata by atomic rename, so a
committed row is never torn. A second writer is refused by the lock.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import scipy.sparse as sp
import zarr
from filelock import FileLock, Timeout

from .._atomic import atomic_path
from .._validation import check_matrix, check_positive_int, check_random_state

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
_META = "meta.json"
DEFAULT_CHUNK_BYTES = 16 * 2**20  # ~16 MiB of float32 per Zarr chunk: large sequential reads

ITEM_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("path", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("label", pa.int64()),
        ("labels", pa.list_(pa.int64())),
        ("split", pa.string()),
    ]
)


class StoreError(ValueError):
    """A store is missing, corrupt, or used in a way it does not allow."""


class StoreLockedError(StoreError):
    """Another process is writing to the store."""


def _atomic_write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _as_list_column(values, n: int, name: str, item_type) -> list | None:
    if values is None:
        return None
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{name}: has {len(values)} entries for {n} rows")
    out = []
    for v in values:
        if v is None:
            out.append([])
        elif isinstance(v, (str, bytes)) or np.isscalar(v):
            out.append([item_type(v)])
        else:
            out.append([item_type(t) for t in v])
    return out


class FeatureStore:
    """A directory of feature vectors (dense or CSR) with an item table.

    Open an existing store with :meth:`open` (read-only by default) and make a
    new one with :meth:`create`. Rows are addressed by position ``0..len-1``;
    each row also has a string ``id`` that is unique within the store.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from hardneg.store import FeatureStore
    >>> path = tempfile.mkdtemp() + "/demo.store"
    >>> with FeatureStore.create(path, dim=4) as store:
    ...     store.append(np.eye(4), labels=[0, 1, 2, 3], tags=[["a"], ["b"], [], ["a", "c"]])
    >>> store = FeatureStore.open(path)
    >>> len(store), store.dim, store.is_sparse
    (4, 4, False)
    >>> store.select(tags=["a"]).tolist()
    [0, 3]
    """

    def __init__(self, path, *, _mode: str):
        self.path = Path(path)
        self._mode = _mode
        self._lock = None
        self._items_cache = None
        meta_path = self.path / _META
        if not meta_path.is_file():
            raise StoreError(f"{str(self.path)!r} is not a FeatureStore (no {_META})")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise StoreError(f"{self.path}: corrupt {_META} ({exc})") from None
        if meta.get("format") != "hardneg.FeatureStore":
            raise StoreError(f"{self.path}: {_META} does not describe a hardneg FeatureStore")
        if meta.get("format_version") != FORMAT_VERSION:
            raise StoreError(
                f"{self.path}: store format version {meta.get('format_version')} is not supported (this hardneg reads {FORMAT_VERSION})"
            )
        if _mode == "a":
            self._acquire_lock()
            # Re-read: the previous writer may have committed after our first read.
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        self._meta = meta
        try:
            self._group = zarr.open_group(str(self.path / "vectors"), mode="r" if _mode == "r" else "r+")
            if self.is_sparse:
                self._indptr = self._group["indptr"]
                self._indices = self._group["indices"]
                self._data = self._group["data"]
            else:
                self._X = self._group["X"]
                self._raw_chunks = self._raw_chunk_layout()
        except Exception as exc:
            self.close()
            raise StoreError(f"{self.path}: cannot open the vector arrays ({exc})") from None
        if _mode == "a":
            self._trim_uncommitted()

    # ------------------------------------------------------------------ create / open
    @classmethod
    def create(
        cls,
        path,
        dim: int,
        *,
        sparse: bool = False,
        chunk_rows: int | None = None,
        overwrite: bool = False,
        attrs: dict | None = None,
    ) -> FeatureStore:
        """Create an empty store and return it open for appending.

        Parameters
        ----------
        path : str or Path
            Directory to create. It must not exist unless ``overwrite``.
        dim : int
            Number of features per row.
        sparse : bool
            Store rows as CSR (bag-of-visual-words); otherwise dense float32.
        chunk_rows : int, optional
            Rows per Zarr chunk (dense) — default aims at ~16 MiB chunks.
        attrs : dict, optional
            JSON-serializable user metadata (e.g. the extractor's settings).
        """
        dim = check_positive_int(dim, "dim")
        path = Path(path)
        if path.exists():
            if not overwrite:
                raise StoreError(f"{str(path)!r} already exists; pass overwrite=True to replace it")
            if path.is_dir() and not (path / _META).is_file() and any(path.iterdir()):
                raise StoreError(f"refusing to overwrite {str(path)!r}: it is a non-empty directory that is not a FeatureStore")
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        if chunk_rows is None:
            chunk_rows = max(1024, DEFAULT_CHUNK_BYTES // (4 * dim)) if not sparse else 65536
        chunk_rows = check_positive_int(chunk_rows, "chunk_rows")
        tmp = Path(tempfile.mkdtemp(prefix=path.name + ".", suffix=".creating", dir=path.parent if path.parent.exists() else None))
        try:
            group = zarr.open_group(str(tmp / "vectors"), mode="w")
            if sparse:
                nnz_chunk = 4 * 2**20
                group.create_array("indptr", shape=(1,), chunks=(1 << 20,), dtype="int64", compressors=None, fill_value=0)
                group.create_array("indices", shape=(0,), chunks=(nnz_chunk,), dtype="int32", compressors=None, fill_value=0)
                group.create_array("data", shape=(0,), chunks=(nnz_chunk,), dtype="float32", compressors=None, fill_value=0)
            else:
                # Uncompressed: features are dense floats that barely compress, and
                # scans should run at page-cache speed.
                group.create_array("X", shape=(0, dim), chunks=(chunk_rows, dim), dtype="float32", compressors=None, fill_value=0)
            (tmp / "items").mkdir()
            meta = {
                "format": "hardneg.FeatureStore",
                "format_version": FORMAT_VERSION,
                "dim": dim,
                "sparse": bool(sparse),
                "chunk_rows": chunk_rows,
                "n_rows": 0,
                "nnz": 0,
                "parts": [],
                "attrs": attrs or {},
            }
            json.dumps(meta)  # fail early on non-JSON attrs
            _atomic_write_text(tmp / _META, json.dumps(meta, indent=1))
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return cls(path, _mode="a")

    @classmethod
    def open(cls, path, mode: str = "r") -> FeatureStore:
        """Open an existing store: ``mode="r"`` read-only, ``"a"`` to append.

        Appending takes the store's writer lock; a second writer gets
        :class:`StoreLockedError` instead of a chance to corrupt the store.
        """
        if mode not in ("r", "a"):
            raise ValueError(f"mode: expected 'r' or 'a', got {mode!r}")
        return cls(path, _mode=mode)

    def _acquire_lock(self) -> None:
        self._lock = FileLock(str(self.path / ".lock"))
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            self._lock = None
            raise StoreLockedError(f"{self.path}: another process is writing to this store") from None

    def close(self) -> None:
        """Release the writer lock (read-only stores hold nothing)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # ------------------------------------------------------------------ properties
    def __len__(self) -> int:
        return int(self._meta["n_rows"])

    @property
    def dim(self) -> int:
        return int(self._meta["dim"])

    @property
    def is_sparse(self) -> bool:
        return bool(self._meta["sparse"])

    @property
    def chunk_rows(self) -> int:
        return int(self._meta["chunk_rows"])

    @property
    def attrs(self) -> dict:
        """User metadata saved with the store (read-only view)."""
        return dict(self._meta.get("attrs", {}))

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), self.dim)

    def __repr__(self) -> str:
        kind = "sparse CSR" if self.is_sparse else "dense"
        return f"FeatureStore({str(self.path)!r}, rows={len(self)}, dim={self.dim}, {kind}, mode={self._mode!r})"

    # ------------------------------------------------------------------ writing
    def _require_writable(self) -> None:
        if self._mode != "a" or self._lock is None:
            raise StoreError(f"{self.path}: opened read-only; use FeatureStore.open(path, mode='a') to append")

    def _trim_uncommitted(self) -> None:
        """Drop what a killed writer left past the last commit."""
        n, nnz = len(self), int(self._meta["nnz"])
        if self.is_sparse:
            if self._indptr.shape[0] != n + 1:
                self._indptr.resize((n + 1,))
            if self._indices.shape[0] != nnz:
                self._indices.resize((nnz,))
                self._data.resize((nnz,))
        elif self._X.shape[0] != n:
            self._X.resize((n, self.dim))
        committed = set(self._meta["parts"])
        for f in (self.path / "items").iterdir():
            if f.name not in committed:
                logger.info("removing uncommitted item part %s", f)
                f.unlink()

    def append(
        self,
        X,
        *,
        ids: Sequence[str] | None = None,
        paths: Sequence[str | None] | None = None,
        tags: Sequence | None = None,
        labels: Sequence | None = None,
        split: str | Sequence[str | None] | None = None,
    ) -> None:
        """Append a batch of rows and commit it atomically.

        Parameters
        ----------
        X : array-like (n, dim) or sparse matrix
            Rows to add; sparse input is required for sparse stores and
            densified for dense ones. NaN / infinity are refused.
        ids : sequence of str, optional
            Unique item ids; default ``str(row_number)``.
        paths : sequence of str, optional
            Image path per row.
        tags : sequence of (list of str), optional
            User tags per row.
        labels : sequence of int or of (list of int), optional
            One class label per row (stored in ``label``), or a list per row
            for multi-label data (stored in ``labels``; ``label`` holds the
            first). ``-1`` or ``None`` means unlabeled.
        split : str or sequence of str, optional
            ``"train"``, ``"test"``, ... for every row or per row.
        """
        self._require_writable()
        X = check_matrix(X, "X", accept_sparse=self.is_sparse, n_features=self.dim, min_rows=1)
        if self.is_sparse and not sp.issparse(X):
            X = sp.csr_matrix(X)
        n_new = X.shape[0]
        start = len(self)
        table = self._make_items(n_new, start, ids, paths, tags, labels, split)

        nnz = int(self._meta["nnz"])
        if self.is_sparse:
            new_nnz = nnz + X.nnz
            self._indices.resize((new_nnz,))
            self._data.resize((new_nnz,))
            self._indices[nnz:new_nnz] = X.indices.astype(np.int32, copy=False)
            self._data[nnz:new_nnz] = X.data
            self._indptr.resize((start + n_new + 1,))
            self._indptr[start + 1 : start + n_new + 1] = X.indptr[1:].astype(np.int64) + nnz
            nnz = new_nnz
        else:
            self._X.resize((start + n_new, self.dim))
            self._X[start : start + n_new] = X

        # Uncommitted parts were removed on open, so this name is free.
        part_name = f"part-{len(self._meta['parts']):08d}.parquet"
        with atomic_path(self.path / "items" / part_name) as tmp_part:
            pq.write_table(table, tmp_part)

        meta = dict(self._meta)
        meta.update(n_rows=start + n_new, nnz=nnz, parts=self._meta["parts"] + [part_name])
        _atomic_write_text(self.path / _META, json.dumps(meta, indent=1))  # the commit point
        self._meta = meta
        if self._items_cache is not None:
            self._items_cache = pa.concat_tables([self._items_cache, table])

    def _make_items(self, n, start, ids, paths, tags, labels, split) -> pa.Table:
        if ids is None:
            ids = [str(start + i) for i in range(n)]
        else:
            ids = [str(i) for i in ids]
            if len(ids) != n:
                raise ValueError(f"ids: has {len(ids)} entries for {n} rows")
            if len(set(ids)) != n:
                raise ValueError("ids: contains duplicates within the batch")
            if len(self) and pc.any(pc.is_in(self.items.column("id"), value_set=pa.array(ids))).as_py():
                raise ValueError("ids: some ids already exist in the store")
        if paths is not None:
            paths = [None if p is None else str(p) for p in paths]
            if len(paths) != n:
                raise ValueError(f"paths: has {len(paths)} entries for {n} rows")
        tags = _as_list_column(tags, n, "tags", str)
        label, multi = None, None
        if labels is not None:
            labels = list(labels)
            if len(labels) != n:
                raise ValueError(f"labels: has {len(labels)} entries for {n} rows")
            if any(isinstance(v, (list, tuple, np.ndarray)) for v in labels):
                multi = _as_list_column(labels, n, "labels", int)
                label = [v[0] if v else None for v in multi]
            else:
                label = [None if v is None or int(v) < 0 else int(v) for v in labels]
        if isinstance(split, str):
            split = [split] * n
        elif split is not None:
            split = [None if s is None else str(s) for s in split]
            if len(split) != n:
                raise ValueError(f"split: has {len(split)} entries for {n} rows")
        cols = {
            "id": ids,
            "path": paths if paths is not None else [None] * n,
            "tags": tags if tags is not None else [[] for _ in range(n)],
            "label": label if label is not None else [None] * n,
            "labels": multi if multi is not None else [None] * n,
            "split": split if split is not None else [None] * n,
        }
        return pa.table(cols, schema=ITEM_SCHEMA)

    # ------------------------------------------------------------------ item table
    @property
    def items(self) -> pa.Table:
        """The item table (id, path, tags, label, labels, split), one row per vector."""
        if self._items_cache is None:
            parts = [pq.read_table(self.path / "items" / p, schema=ITEM_SCHEMA) for p in self._meta["parts"]]
            table = pa.concat_tables(parts) if parts else ITEM_SCHEMA.empty_table()
            if table.num_rows != len(self):
                raise StoreError(f"{self.path}: item table has {table.num_rows} rows but the store has {len(self)} vectors")
            self._items_cache = table
        return self._items_cache

    def labels(self) -> np.ndarray:
        """Single labels as int64, ``-1`` where unlabeled."""
        return self.items.column("label").fill_null(-1).to_numpy().astype(np.int64)

    def ids(self) -> np.ndarray:
        return np.asarray(self.items.column("id").to_pylist(), dtype=object)

    def _mask_tags(self, tags) -> np.ndarray:
        col = self.items.column("tags").combine_chunks()
        flat = pc.list_flatten(col)
        parents = pc.list_parent_indices(col).to_numpy()
        hit = pc.is_in(flat, value_set=pa.array([str(t) for t in tags], pa.string())).to_numpy(zero_copy_only=False)
        mask = np.zeros(len(self), dtype=bool)
        mask[parents[hit]] = True
        return mask

    def select(self, *, tags=None, labels=None, split=None) -> np.ndarray:
        """Row indices of items matching every given condition.

        ``tags``: items carrying any of these tags; ``labels``: items whose
        label (or any of whose multi-labels) is one of these; ``split``: a
        split name or several.
        """
        mask = np.ones(len(self), dtype=bool)
        if tags is not None:
            mask &= self._mask_tags([tags] if isinstance(tags, str) else tags)
        if labels is not None:
            wanted = np.atleast_1d(np.asarray(labels, dtype=np.int64))
            mask &= np.isin(self.labels(), wanted) | self._mask_multilabels(wanted)
        if split is not None:
            splits = [split] if isinstance(split, str) else list(split)
            mask &= pc.is_in(self.items.column("split"), value_set=pa.array(splits, pa.string())).fill_null(False).to_numpy(zero_copy_only=False)
        return np.flatnonzero(mask)

    def _mask_multilabels(self, wanted: np.ndarray) -> np.ndarray:
        col = self.items.column("labels").combine_chunks()
        mask = np.zeros(len(self), dtype=bool)
        flat = pc.list_flatten(col).to_numpy(zero_copy_only=False)
        if flat.size:
            parents = pc.list_parent_indices(col).to_numpy()
            mask[parents[np.isin(flat, wanted)]] = True
        return mask

    def sample(self, n: int, random_state=None, *, exclude_tags=None, exclude_ids=None, exclude_rows=None) -> np.ndarray:
        """Draw ``n`` distinct rows uniformly at random, skipping excluded items.

        Returns row indices in random order. Excluding by tag is how a
        negative pool leaves out items tagged with the concept (or related
        tags); ``exclude_ids`` and ``exclude_rows`` leave out given items.
        """
        n = check_positive_int(n, "n")
        rng = check_random_state(random_state)
        allowed = np.ones(len(self), dtype=bool)
        if exclude_tags is not None:
            allowed &= ~self._mask_tags([exclude_tags] if isinstance(exclude_tags, str) else exclude_tags)
        if exclude_ids is not None:
            allowed &= ~pc.is_in(self.items.column("id"), value_set=pa.array([str(i) for i in exclude_ids], pa.string())).to_numpy(zero_copy_only=False)
        if exclude_rows is not None:
            allowed[np.asarray(exclude_rows, dtype=np.int64)] = False
        candidates = np.flatnonzero(allowed)
        if n > candidates.size:
            raise ValueError(f"n={n} is larger than the {candidates.size} items left after exclusions")
        return rng.choice(candidates, size=n, replace=False)

    # ------------------------------------------------------------------ reading vectors
    def _raw_chunk_layout(self) -> bool:
        """True when the dense array's chunks are plain little-endian float32
        files (Zarr v3, no compression, default "c/i/0" keys). Reads then map
        the chunk files straight from the page cache, zero-copy, instead of
        going through Zarr's decode pipeline (several times slower)."""
        try:
            meta = json.loads((self.path / "vectors" / "X" / "zarr.json").read_text())
            return (
                meta.get("zarr_format") == 3
                and meta["data_type"] == "float32"
                and meta["codecs"] == [{"name": "bytes", "configuration": {"endian": "little"}}]
                and meta["chunk_key_encoding"] == {"name": "default", "configuration": {"separator": "/"}}
                and meta["chunk_grid"]["configuration"]["chunk_shape"] == [self.chunk_rows, self.dim]
                and not meta.get("storage_transformers")
            )
        except (OSError, KeyError, TypeError, json.JSONDecodeError):
            return False

    def _chunk(self, c: int) -> np.ndarray:
        """Dense chunk ``c`` as a read-only view of its file (fill value 0 if absent)."""
        shape = (self.chunk_rows, self.dim)
        path = self.path / "vectors" / "X" / "c" / str(c) / "0"
        try:
            return np.memmap(path, dtype="<f4", mode="r", shape=shape)
        except FileNotFoundError:
            return np.zeros(shape, np.float32)
        except ValueError as exc:  # truncated chunk file
            raise StoreError(f"{self.path}: chunk {c} is damaged ({exc})") from None

    def _rows(self, start: int, stop: int):
        if not self.is_sparse and self._raw_chunks:
            cr = self.chunk_rows
            pieces = [
                self._chunk(c)[max(start - c * cr, 0) : min(stop - c * cr, cr)]
                for c in range(start // cr, (stop - 1) // cr + 1)
            ] if stop > start else [np.empty((0, self.dim), np.float32)]
            return np.asarray(pieces[0]) if len(pieces) == 1 else np.concatenate(pieces)
        if self.is_sparse:
            indptr = self._indptr[start : stop + 1]
            lo, hi = int(indptr[0]), int(indptr[-1])
            return sp.csr_matrix(
                (self._data[lo:hi], self._indices[lo:hi], indptr - lo), shape=(stop - start, self.dim)
            )
        return self._X[start:stop]

    def iter_chunks(self, rows: int | None = None, *, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_row, block)`` over rows ``start..stop`` in blocks of ``rows``.

        Blocks are float32 arrays (CSR matrices for sparse stores). Memory is
        bounded by one block; the default block is one Zarr chunk.
        """
        rows = check_positive_int(rows if rows is not None else self.chunk_rows, "rows")
        stop = len(self) if stop is None else min(int(stop), len(self))
        for lo in range(int(start), stop, rows):
            yield lo, self._rows(lo, min(lo + rows, stop))

    def take(self, indices) -> np.ndarray:
        """Rows at ``indices`` (any order, repeats allowed), as one block."""
        idx = np.asarray(indices)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise TypeError(f"indices: expected a 1-D array of integers, got shape {idx.shape} dtype {idx.dtype}")
        idx = idx.astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise IndexError(f"indices: out of range for a store of {len(self)} rows")
        if idx.size == 0:
            return sp.csr_matrix((0, self.dim), dtype=np.float32) if self.is_sparse else np.empty((0, self.dim), np.float32)
        order = np.argsort(idx, kind="stable")
        sorted_idx = idx[order]
        if self.is_sparse:
            indptr = self._indptr[: len(self) + 1]
            starts, ends = indptr[sorted_idx], indptr[sorted_idx + 1]
            # Read the covering span once, then gather: far fewer Zarr calls than per-row reads.
            lo, hi = int(starts.min()), int(ends.max())
            data, indices = self._data[lo:hi], self._indices[lo:hi]
            lengths = ends - starts
            gather = np.concatenate([np.arange(s - lo, e - lo) for s, e in zip(starts, ends)]) if lengths.sum() else np.empty(0, np.int64)
            out_indptr = np.concatenate([[0], np.cumsum(lengths)])
            block = sp.csr_matrix((data[gather], indices[gather], out_indptr), shape=(idx.size, self.dim))
        elif self._raw_chunks:
            block = np.empty((idx.size, self.dim), np.float32)
            chunk_of = sorted_idx // self.chunk_rows
            bounds = np.flatnonzero(np.diff(chunk_of)) + 1
            for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, idx.size]):
                c = int(chunk_of[lo])
                block[lo:hi] = self._chunk(c)[sorted_idx[lo:hi] - c * self.chunk_rows]
        else:
            block = self._X.get_orthogonal_selection((sorted_idx, slice(None)))
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        return block[inverse]

    def to_numpy(self):
        """Load every row (dense array, or CSR for sparse stores). Loads it all: mind the size."""
        if len(self) == 0:
            return self.take(np.empty(0, np.int64))
        return self._rows(0, len(self))

    def to_dask(self, chunk_rows: int | None = None):
        """A Dask array view of the rows (dense stores; sparse blocks are CSR)."""
        import dask.array as da

        n = len(self)
        if not self.is_sparse:
            arr = da.from_zarr(self._X, chunks=(chunk_rows or self.chunk_rows, self.dim))
            return arr[:n]
        import dask

        rows = chunk_rows or self.chunk_rows
        blocks = [
            da.from_delayed(dask.delayed(self._rows)(lo, min(lo + rows, n)), shape=(min(lo + rows, n) - lo, self.dim), dtype=np.float32, meta=sp.csr_matrix((0, self.dim), dtype=np.float32))
            for lo in range(0, n, rows)
        ]
        return da.concatenate(blocks, axis=0) if blocks else da.zeros((0, self.dim), dtype=np.float32)
