"""FeatureStore: feature vectors in Zarr plus an item table in Parquet.

Layout of a store directory::

    store/
      meta.json            committed state (the commit point): format version,
                           dim, sparse, chunk_rows, n_rows, nnz, the list of
                           item-table parts, user attrs, the checksums of
                           every committed chunk and part, and the item
                           summary (counts per split, label and tag, see
                           :mod:`hardneg.store._summary`)
      vectors/             Zarr v3 group, uncompressed little-endian chunks:
                           dense ``X`` (n, dim) float32, or the CSR arrays
                           ``indptr`` (n + 1,) int64, ``indices`` (nnz,) int32
                           and ``data`` (nnz,) float32
      items/part-*.parquet one Parquet file per appended batch
      .lock                writer lock (an OS lock: released if the writer dies)

Crash safety. An append writes vectors past the committed row count, then
the batch's Parquet part under a temporary name, renames it, and only then
replaces ``meta.json`` atomically (write, fsync, ``os.replace``). Readers
trust only ``meta.json``: a writer killed at any point leaves every batch
that completed readable, and the next writer trims the leftovers (rows past
the commit, chunk files past the last committed chunk, uncommitted parts, and
the temporary files of Zarr's atomic chunk writes, ``*.<uuid>.partial``, and
of ``meta.json``). Zarr writes each chunk and its array metadata by atomic
rename, so a committed row is never torn. A second writer is refused by the
lock, and so is ``create(..., overwrite=True)`` while a writer holds it; an
overwrite builds the new store beside the old one and swaps it in, so a
failed rebuild leaves the old store as it was. Editing tags, labels or
splits (:meth:`FeatureStore.edit_items`, :mod:`hardneg.store._item_table`)
writes the whole new item table as one new part and commits it the same
way; the old parts are removed only after the commit, and part names are
never reused.

Integrity. Reads check what is cheap to check, so scans keep page-cache
speed:

- on open, ``meta.json`` is validated (types, part names that stay inside
  ``items/``) and checked against the arrays (shapes, ``dim``, chunk rows,
  first and last row offset of a CSR store);
- the first time a store object touches a chunk, the chunk file must exist
  with its exact size (a missing chunk no longer reads as zeros; every chunk
  is written even when all zero);
- a dense chunk's committed values are checked in full for NaN / infinity
  the first time a store object touches it (``iter_chunks``, ``take``,
  ``to_numpy``; every block of ``to_dask``), by one vectorized pass
  (:mod:`hardneg.store._finite`): the store refuses NaN on write, so any is
  damage, and a single damaged value must never reach a scorer (a sampled
  check let one NaN in a 65,536-row chunk through 18 times in 20).
  ``benchmarks/store_scan.py`` measures the cost against a plain memory map;
- sparse blocks, which are copied anyway, are checked in full: row offsets in
  order, column indices inside ``0..dim-1``, finite values;
- item parts are checked against their CRC-32 when the item table is loaded
  (it is read whole anyway).

Reads do not hash vector chunks: CRC-32 runs at a few GB/s, well below the
speed of a scan from the page cache. The full content check is
:meth:`FeatureStore.verify` (``hardneg store verify STORE``), which reads
every committed chunk and compares it with the CRC-32 recorded at commit
time, see :mod:`hardneg.store._verify`. A writer checks the CRC of the
partly filled last chunk it is about to extend, once per session, so an
append never blesses damage. Stores written before checksums existed open
and read as before; they gain no checksums, and ``verify`` says so (it still
checks presence, sizes and values). One difference: Zarr did not write
chunks that were all zeros for them, and such a chunk now reads as missing.

Where the code lives. This module is the read API (:class:`FeatureStore`);
the chunk reads and their checks are :mod:`hardneg.store._chunks` (one
reader interface, local or remote), the writer (create, lock, append,
commit) is :mod:`hardneg.store._writer`, and what a store folder may hold
and how one is replaced is :mod:`hardneg.store._folder`.
"""

from __future__ import annotations

import numbers
import os
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._typing import ArrayLike, RandomState
from .._validation import check_matrix, check_positive_int, check_random_state, issparse
from ._chunks import ChunkReader, StoreArray, chunk_reader, csr, finite_block
from ._errors import StoreDamagedError, StoreError, StoreLockedError
from ._folder import check_output_not_input, local_store_path, store_location, writes_into_input
from ._item_table import edit_items, store_summary, summarize_items
from ._items import ITEM_SCHEMA, make_items, rows_with_any_tag
from ._meta import FORMAT_VERSION, META, first_line, load_meta
from ._remote import RemoteFolder, url_protocol
from ._summary import SUMMARY, merge_summaries
from ._verify import VerifyReport, n_chunks, verify_store
from ._writer import DEFAULT_CHUNK_BYTES, StoreWriter, create_store, take_lock

if TYPE_CHECKING:
    from filelock import FileLock

# re-exported: the public names (hardneg.store) and the places other modules find them
__all__ = ["DEFAULT_CHUNK_BYTES", "FORMAT_VERSION", "ITEM_SCHEMA", "FeatureStore", "StoreDamagedError", "StoreError", "StoreLockedError",
           "check_output_not_input", "local_store_path", "store_location", "writes_into_input"]


class FeatureStore:
    """A directory of feature vectors (dense or CSR) with an item table.

    Open an existing store with :meth:`open` (read-only by default) and make a
    new one with :meth:`create`. Rows are addressed by position ``0..len-1``;
    each row also has a string ``id`` that is unique within the store.

    Parameters
    ----------
    path : str, path-like or URL
        The store folder (a ``file://`` or object-store URL opens read-only).
    _mode : {"r", "a"}
        Internal: use :meth:`open` / :meth:`create`, which set it.
    _timeout : float, optional
        Internal: the remote-store timeout in seconds.
    _lock : FileLock, optional
        Internal: the writer lock :meth:`create` took while building, handed over.

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
    >>> store.verify().ok
    True
    """

    def __init__(self, path: str | os.PathLike, *, _mode: str, _timeout: float | None = None, _lock: FileLock | None = None):
        self._writer: StoreWriter | None = None
        self._items_cache: pa.Table | None = None
        self.path = store_location(path, _timeout)
        self._remote = isinstance(self.path, RemoteFolder)
        if self._remote and _mode != "r":
            raise StoreError(f"{self.path}: stores on {url_protocol(str(self.path))}:// open read-only (appends need atomic renames); append to a local copy")
        self._mode = _mode
        lock = _lock  # taken by create() before the store had a name: held since, never let go
        try:
            meta = load_meta(self.path)
            if _mode == "a":
                if lock is None:
                    lock = take_lock(self.path)
                # Re-read: the previous writer may have committed after our first read.
                meta = load_meta(self.path)
            self._reader: ChunkReader = chunk_reader(self.path, meta)
            self._reader.open_arrays()
            if not (self.path / "items").is_dir():
                raise StoreError(f"{self.path}: the items/ folder is missing")
            if _mode == "a":
                # a local folder (a remote store opens read-only, see above), and the lock is held
                self._writer = StoreWriter(cast(Path, self.path), self._reader, cast("FileLock", lock), on_commit=self._on_commit)
                lock = None  # the writer holds it now
                self._writer.trim_uncommitted()
        except BaseException:
            if lock is not None:
                lock.release()
            self.close()
            raise

    @property
    def _meta(self) -> dict:
        """The committed ``meta.json`` (its one copy is the reader's: it bounds what the reader checks)."""
        return self._reader.meta

    @_meta.setter
    def _meta(self, meta: dict) -> None:
        self._reader.meta = meta

    @property
    def _arrays(self) -> dict[str, StoreArray]:
        return self._reader.arrays

    def _on_commit(self, meta: dict, items: pa.Table | None) -> None:
        """The writer committed ``meta``; ``items``: the whole new item table, if the writer's caller has it."""
        self._meta = meta
        if items is not None:
            self._items_cache = items

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
            Directory to create; missing parent folders are created. It must
            not exist unless ``overwrite``.
        dim : int
            Number of features per row.
        sparse : bool
            Store rows as CSR (bag-of-visual-words); otherwise dense float32.
        chunk_rows : int, optional
            Rows per Zarr chunk (dense) — default aims at ~16 MiB chunks.
        overwrite : bool
            Replace an existing store (or an empty folder). Only what is
            recognisably a hardneg store (the format marker in its
            ``meta.json``) is replaced, and only if it holds nothing but the
            store's own files; anything else (a folder with other files, a
            plain file, a link) is refused with :class:`StoreError` and left
            untouched.
            The old store's writer lock is taken first: a store that another
            process (or this one) has open for appending is not replaced
            (:class:`StoreLockedError`). The new store is built beside the
            old one and swapped in, so a failure leaves the old one intact.
        attrs : dict, optional
            JSON-serializable user metadata (e.g. the extractor's settings).
        """
        path, lock = create_store(path, dim, sparse=sparse, chunk_rows=chunk_rows, overwrite=overwrite, attrs=attrs)
        return cls(path, _mode="a", _lock=lock)

    @classmethod
    def open(cls, path: str | os.PathLike, mode: str = "r", *, timeout: float | None = None) -> FeatureStore:
        """Open an existing store: ``mode="r"`` read-only, ``"a"`` to append.

        Appending takes the store's writer lock; a second writer gets
        :class:`StoreLockedError` instead of a chance to corrupt the store.
        ``path`` may be a URL (``s3://``, ``https://``, ...), opened read-only;
        ``timeout`` bounds each of its requests, in seconds (default
        ``$HARDNEG_REMOTE_TIMEOUT``, else 30), and a failure of the server or
        the network is one :class:`StoreError` line naming the URL.

        Parameters
        ----------
        path : str or path-like
            The store folder, or the URL of one.
        mode : {"r", "a"}, default="r"
            ``"r"`` to read, ``"a"`` to append and edit items (takes the writer lock).
        timeout : float or None, default=None
            Seconds allowed for each request to a remote store; None reads
            ``$HARDNEG_REMOTE_TIMEOUT``, else 30. Unused for a local store.

        Returns
        -------
        FeatureStore
            The open store; close it (or use it in a ``with`` block) to release the lock.
        """
        if mode not in ("r", "a"):
            raise ValueError(f"mode: expected 'r' or 'a', got {mode!r}")
        return cls(path, _mode=mode, _timeout=timeout)

    def close(self) -> None:
        """Release the writer lock (read-only stores hold nothing)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

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
        """Number of features per row."""
        return int(self._meta["dim"])

    @property
    def nnz(self) -> int:
        """Stored non-zeros (sparse stores; 0 for dense ones)."""
        return int(self._meta["nnz"])

    @property
    def is_sparse(self) -> bool:
        """Whether rows are stored as CSR (blocks are then scipy CSR matrices)."""
        return bool(self._meta["sparse"])

    @property
    def chunk_rows(self) -> int:
        """Rows per Zarr chunk: the default block of :meth:`iter_chunks` and :meth:`to_dask`."""
        return int(self._meta["chunk_rows"])

    @property
    def attrs(self) -> dict:
        """User metadata saved with the store (read-only view)."""
        return dict(self._meta.get("attrs", {}))

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_rows, dim)``."""
        return (len(self), self.dim)

    def __repr__(self) -> str:
        kind = "sparse CSR" if self.is_sparse else "dense"
        return f"FeatureStore({str(self.path)!r}, rows={len(self)}, dim={self.dim}, {kind}, mode={self._mode!r})"

    def _committed(self, name: str) -> int:
        """Committed rows of array ``name`` (see :meth:`ChunkReader.committed`)."""
        return self._reader.committed(name)

    def vectors_digest(self) -> str | None:
        """A digest of the rows' vectors, in order: the shape and the checksums of every vector chunk.

        It changes when any row's vector changes (an append, a removal, a rebuild) and not when
        labels or tags are edited, so an index that numbers its codes by store row records it at
        build time and can tell, without reading the vectors, whether its row ``r`` is still the
        store's row ``r``.

        Returns
        -------
        str or None
            32 hex digits; None for a store written before checksums were recorded.
        """
        import hashlib
        import json

        sums = self._meta.get("checksums")
        if not sums:
            return None
        state = {"shape": [len(self), self.dim], "sparse": self.is_sparse, "chunk_rows": self.chunk_rows,
                 "algorithm": sums["algorithm"], "chunks": sums["chunks"]}
        return hashlib.blake2b(json.dumps(state, sort_keys=True).encode(), digest_size=16).hexdigest()

    # ------------------------------------------------------------------ integrity
    def verify(self) -> VerifyReport:
        """Read every committed chunk and item part and check it.

        Each chunk must be present, of the right size, match the CRC-32
        recorded when it was committed and hold valid values; each item part
        must match its CRC-32 and be a readable item table. Reads only check
        what is cheap (see the module docstring); this is the full check.

        Returns
        -------
        VerifyReport
            ``report.ok``, and ``report.problems``: one line per damaged
            chunk or part, naming it.
        """
        report = verify_store(self)
        summary = self._meta.get(SUMMARY)
        if summary is not None and summary["parts"] == self._meta["parts"] and not any(p.startswith("items/") for p in report.problems):
            # cheap checks on open cannot see a well-formed summary that counts another table
            actual = summarize_items(self.items, self._meta["parts"])
            wrong = [f for f in ("rows", "splits", "labels", "tags") if summary[f] is not None and summary[f] != actual[f]]
            if wrong:
                report.problems.append(f"{META} {SUMMARY} does not match the item table ({', '.join(wrong)} differ)")
        return report

    # ------------------------------------------------------------------ writing
    def _require_writable(self) -> StoreWriter:
        """The store's writer; StoreError if it was opened read-only (or closed)."""
        if self._mode != "a" or self._writer is None:
            raise StoreError(f"{self.path}: opened read-only; use FeatureStore.open(path, mode='a') to append")
        return self._writer

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
        tags : sequence, optional
            User tags, one entry per row: a list of tag strings, one tag
            string, or None. A single string for the whole batch is refused
            (it would be read as one character per row).
        labels : sequence of int or of (list of int), optional
            One class label per row (stored in ``label``), or a list per row
            for multi-label data (stored in ``labels``; ``label`` holds the
            first). ``-1`` or ``None`` means unlabeled. Labels are integers:
            floats must be integral (``2.0``), booleans are refused.
        split : str or sequence of str, optional
            ``"train"``, ``"test"``, ... for every row or per row.
        """
        writer = self._require_writable()
        X = check_matrix(X, "X", accept_sparse=self.is_sparse, n_features=self.dim, min_rows=1)
        if self.is_sparse and not issparse(X):
            X = csr(X)
        n_new = X.shape[0]
        start = len(self)
        table = make_items(n_new, start, ids, paths, tags, labels, split, existing=self._existing_ids)
        if not writer.tail_checked:
            # an append must not build on a damaged item table (read, and checked against its CRC, once)
            _ = self.items
            writer.check_tail()
        nnz, chunks = writer.write_vectors(X)
        part_name, crc = writer.write_part(table)
        meta = dict(self._meta)
        sums = meta.get("checksums")
        meta.update(n_rows=start + n_new, nnz=nnz, parts=self._meta["parts"] + [part_name])
        meta[SUMMARY] = self._appended_summary(table, meta["parts"])
        if sums is not None:
            meta["checksums"] = {"algorithm": sums["algorithm"], "chunks": chunks, "parts": {**sums["parts"], part_name: crc}}
        writer.commit(meta, None if self._items_cache is None else pa.concat_tables([self._items_cache, table]))  # the commit point

    def _existing_ids(self, ids: list[str]) -> bool:
        """Whether any of ``ids`` is already an item of the store."""
        return bool(len(self)) and pc.any(pc.is_in(self.items.column("id"), value_set=pa.array(ids))).as_py()

    def _appended_summary(self, table: pa.Table, parts: list) -> dict:
        """The item summary after appending ``table`` (see :mod:`hardneg.store._summary`): the new
        part's counts merged in, or, where none is recorded (an older store) or it is stale, the
        whole table counted once (it is in memory: the writer's first append read it)."""
        old = self._meta.get(SUMMARY)
        if old is not None and old["parts"] == self._meta["parts"]:
            return merge_summaries(old, summarize_items(table, []), parts)
        return summarize_items(pa.concat_tables([self.items, table]), parts)

    # ------------------------------------------------------------------ editing items (see _item_table.py)
    def edit_items(
        self,
        *,
        add_tags: Mapping[str, Sequence[str]] | None = None,
        remove_tags: Mapping[str, Sequence[str]] | None = None,
        labels: Mapping[str, int | None] | None = None,
        split: Mapping[str, str | None] | None = None,
    ) -> int:
        """Change tags, labels or splits of items by id; one atomic commit.

        ``add_tags`` / ``remove_tags``: ``{id: [tag, ...]}``; ``labels``:
        ``{id: label or None}``; ``split``: ``{id: name or None}``. Needs
        ``mode="a"``. The old table stays readable until the new one is
        committed (see :mod:`hardneg.store._item_table`). Returns the number of
        items changed.

        Parameters
        ----------
        add_tags : dict of str to list of str, or None, default=None
            Tags to add, by item id.
        remove_tags : dict of str to list of str, or None, default=None
            Tags to remove, by item id.
        labels : dict of str to int or None, or None, default=None
            New single label by item id (None makes the item unlabeled).
        split : dict of str to str or None, or None, default=None
            New split name by item id (None takes the item out of every split).

        Returns
        -------
        int
            Number of items changed.

        Examples
        --------
        >>> import numpy as np, tempfile
        >>> from hardneg.store import FeatureStore
        >>> with FeatureStore.create(tempfile.mkdtemp() + "/s", dim=2) as store:
        ...     store.append(np.ones((3, 2)), ids=["a", "b", "c"])
        ...     store.edit_items(add_tags={"a": ["cat"], "c": ["cat"]}, split={"a": "train", "b": "test"})
        3
        >>> store.select(tags="cat").tolist(), store.select(split="test").tolist()
        ([0, 2], [1])
        """
        return edit_items(self, add_tags=add_tags, remove_tags=remove_tags, labels=labels, split=split)

    def summary(self) -> str:
        """One line: rows, tags, labels and splits with their counts.

        Returns
        -------
        str
            The line (see :func:`hardneg.store._edit.store_summary`).
        """
        return store_summary(self)

    # ------------------------------------------------------------------ item table
    def _read_part(self, name: str) -> pa.Table:
        key = f"items/{name}"
        try:
            raw = (self.path / "items" / name).read_bytes()
        except FileNotFoundError:
            raise StoreDamagedError(str(self.path), key, "is missing") from None
        except OSError as exc:
            raise StoreDamagedError(str(self.path), key, f"cannot be read ({exc.strerror or exc})") from None
        sums = self._meta.get("checksums")
        if sums is not None and zlib.crc32(raw) != sums["parts"][name]:
            raise StoreDamagedError(str(self.path), key, "does not match its checksum")
        try:
            table = pq.ParquetFile(pa.BufferReader(raw)).read()  # not read_table: that imports pyarrow.dataset and pandas (~1 s)
            # Reading with schema= would fill missing columns with nulls: compare first.
            if table.schema.names != ITEM_SCHEMA.names:
                raise StoreDamagedError(str(self.path), key, f"has columns {table.schema.names} instead of {ITEM_SCHEMA.names}"[:200])
            table = table.cast(ITEM_SCHEMA)
        except (pa.ArrowException, OSError, ValueError, TypeError, KeyError, IndexError) as exc:
            if isinstance(exc, StoreDamagedError):
                raise
            raise StoreDamagedError(str(self.path), key, f"is not a readable item table ({first_line(exc)[:120]})") from None
        if table.column("id").null_count:
            raise StoreDamagedError(str(self.path), key, "has rows without an id")
        return table

    @property
    def items(self) -> pa.Table:
        """The item table (id, path, tags, label, labels, split), one row per vector."""
        if self._items_cache is None:
            try:
                parts = [self._read_part(p) for p in self._meta["parts"]]
            except StoreDamagedError as exc:
                parts = self._reread_edited_parts(exc)
            table = pa.concat_tables(parts) if parts else ITEM_SCHEMA.empty_table()
            if table.num_rows > len(self) and self._mode == "r":
                table = table.slice(0, len(self))  # appended after our meta.json was read
            if table.num_rows != len(self):
                raise StoreError(f"{self.path}: item table has {table.num_rows} rows but the store has {len(self)} vectors")
            self._items_cache = table
        return self._items_cache

    def _reread_edited_parts(self, damage: StoreDamagedError) -> list:
        """A part of our ``meta.json`` is gone or changed: an item edit committed
        since we read it (it removes the old parts after its commit). Read the
        table of the current ``meta.json``; an edit keeps rows and their order,
        and appends only add rows, so its first ``len(self)`` rows are ours."""
        fresh = load_meta(self.path)
        if fresh["parts"] == self._meta["parts"] or fresh["n_rows"] < len(self):
            raise damage  # the same parts: real damage
        meta = {**self._meta, "parts": fresh["parts"]}
        if "checksums" in meta and "checksums" in fresh:
            meta["checksums"] = {**meta["checksums"], "parts": fresh["checksums"]["parts"]}
        else:
            meta.pop("checksums", None)
        self._meta = meta
        return [self._read_part(p) for p in fresh["parts"]]

    def labels(self) -> np.ndarray:
        """Single labels as int64, ``-1`` where unlabeled.

        Returns
        -------
        ndarray of int64, shape (n_rows,)
            The label of every row.
        """
        # From the Arrow buffers (values, validity bitmap): fill_null and to_numpy import pandas
        # (~0.5 s), which `hardneg store info` would pay for this one column.
        col = self.items.column("label").combine_chunks()
        n = len(col)
        if col.null_count == n:
            return np.full(n, -1, np.int64)
        values = np.frombuffer(col.buffers()[1], np.int64, count=n, offset=8 * col.offset)
        if not col.null_count:
            return values.copy()
        bits = np.unpackbits(np.frombuffer(col.buffers()[0], np.uint8), count=col.offset + n, bitorder="little")[col.offset:]
        return np.where(bits.astype(bool), values, -1)

    def ids(self) -> np.ndarray:
        """Item ids, in row order.

        Returns
        -------
        ndarray of object (str), shape (n_rows,)
            The id of every row.
        """
        return np.asarray(self.items.column("id").to_pylist(), dtype=object)

    def rows_of(self, ids: Sequence[str]) -> np.ndarray:
        """Store rows of item ids, ``-1`` for an id the store does not hold.

        One vectorized pass over the id column (Arrow's ``is_in``); no table of every id is
        built, so looking up a few ids of a 100-million-row store costs a scan, not gigabytes
        of Python strings.

        Parameters
        ----------
        ids : sequence of str
            Item ids, in any order, repeats allowed.

        Returns
        -------
        ndarray of int64, shape (len(ids),)
            The row of each id, or -1.
        """
        wanted = [str(i) for i in ids]
        out = np.full(len(wanted), -1, dtype=np.int64)
        if not wanted or len(self) == 0:
            return out
        column = self.items.column("id")
        hit = pc.is_in(column, value_set=pa.array(list(dict.fromkeys(wanted)), type=column.type))
        rows = np.flatnonzero(hit.to_numpy(zero_copy_only=False))
        found = dict(zip(column.take(pa.array(rows)).to_pylist(), rows.tolist()))
        out[:] = [found.get(i, -1) for i in wanted]
        return out

    def _mask_tags(self, tags) -> np.ndarray:
        return rows_with_any_tag(self.items.column("tags"), tags)

    def select(
        self,
        *,
        tags: str | Sequence[str] | None = None,
        labels: int | Sequence[int] | None = None,
        split: str | Sequence[str] | None = None,
    ) -> np.ndarray:
        """Row indices of items matching every given condition.

        ``tags``: items carrying any of these tags; ``labels``: items whose
        label (or any of whose multi-labels) is one of these; ``split``: a
        split name or several.

        Parameters
        ----------
        tags : str or sequence of str, or None, default=None
            Keep items carrying any of these tags.
        labels : int or sequence of int, or None, default=None
            Keep items whose label, or one of whose multi-labels, is one of these.
        split : str or sequence of str, or None, default=None
            Keep items in this split (or one of these).

        Returns
        -------
        ndarray of int64, shape (n_selected,)
            Rows of the matching items, ascending.
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

    def _check_rows(self, rows, name: str) -> np.ndarray:
        rows = np.asarray(rows)
        if rows.size and rows.dtype.kind not in "iu":
            raise TypeError(f"{name}: expected row numbers (integers), got dtype {rows.dtype}")
        rows = rows.astype(np.int64).ravel()
        if rows.size and (rows.min() < 0 or rows.max() >= len(self)):
            raise IndexError(f"{name}: row numbers must lie in 0..{len(self) - 1}, got {rows.min()}..{rows.max()}")
        return rows

    def sample(
        self,
        n: int,
        random_state: RandomState = None,
        *,
        exclude_tags: str | Sequence[str] | None = None,
        exclude_ids: str | Sequence[str] | None = None,
        exclude_rows: ArrayLike | None = None,
    ) -> np.ndarray:
        """Draw ``n`` distinct rows uniformly at random, skipping excluded items.

        Returns row indices in random order. Excluding by tag is how a
        negative pool leaves out items tagged with the concept (or related
        tags); ``exclude_ids`` and ``exclude_rows`` leave out given items
        (row numbers must lie in ``0..len-1``: negative numbers are not
        counted from the end).

        Parameters
        ----------
        n : int
            Number of rows to draw, at most the number left after exclusions.
        random_state : int, numpy.random.Generator or None, default=None
            Seed or generator of the draw.
        exclude_tags : str or sequence of str, or None, default=None
            Leave out items carrying any of these tags.
        exclude_ids : str or sequence of str, or None, default=None
            Leave out the items with these ids.
        exclude_rows : array-like of int, or None, default=None
            Leave out these rows.

        Returns
        -------
        ndarray of int64, shape (n,)
            Distinct rows, in random order.
        """
        n = check_positive_int(n, "n")
        rng = check_random_state(random_state)
        allowed = np.ones(len(self), dtype=bool)
        if exclude_rows is not None:
            allowed[self._check_rows(exclude_rows, "exclude_rows")] = False
        if exclude_tags is not None:
            allowed &= ~self._mask_tags([exclude_tags] if isinstance(exclude_tags, str) else exclude_tags)
        if exclude_ids is not None:
            wanted = [exclude_ids] if isinstance(exclude_ids, str) else [str(i) for i in exclude_ids]
            allowed &= ~pc.is_in(self.items.column("id"), value_set=pa.array(wanted, pa.string())).to_numpy(zero_copy_only=False)
        candidates = np.flatnonzero(allowed)
        if n > candidates.size:
            raise ValueError(f"n={n} is larger than the {candidates.size} items left after exclusions")
        return rng.choice(candidates, size=n, replace=False)

    # ------------------------------------------------------------------ reading vectors
    def _rows(self, start: int, stop: int):
        return self._reader.rows(start, stop)

    def _row_arg(self, value, name: str) -> int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name}: expected a row number (integer), got {value!r}")
        value = int(value)
        if not 0 <= value <= len(self):
            raise IndexError(f"{name}={value} is outside 0..{len(self)} (negative rows are not counted from the end)")
        return value

    def iter_chunks(self, rows: int | None = None, *, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_row, block)`` over rows ``start..stop`` in blocks of ``rows``.

        Blocks are float32 arrays (CSR matrices for sparse stores). Memory is
        bounded by one block; the default block is one Zarr chunk. Dense
        blocks are read-only views of the chunk files. ``0 <= start <= stop
        <= len(store)``.

        Parameters
        ----------
        rows : int or None, default=None
            Rows per block; None uses :attr:`chunk_rows`.
        start : int, default=0
            First row.
        stop : int or None, default=None
            End row (exclusive); None is the end of the store.

        Returns
        -------
        iterator of (int, ndarray or scipy.sparse.csr_matrix)
            ``(first_row, block)`` pairs; a block holds rows ``first_row`` to
            ``first_row + len(block)``, of shape (n_rows, dim). The arguments are
            checked here, before the first block is read.
        """
        rows = check_positive_int(rows if rows is not None else self.chunk_rows, "rows")
        start = self._row_arg(start, "start")
        stop = len(self) if stop is None else self._row_arg(stop, "stop")
        if start > stop:
            raise ValueError(f"start={start} is after stop={stop}")
        return self._iter_chunks(rows, start, stop)

    def _iter_chunks(self, rows: int, start: int, stop: int):
        for lo in range(start, stop, rows):
            yield lo, self._rows(lo, min(lo + rows, stop))

    def take(self, indices: ArrayLike) -> np.ndarray:
        """Rows at ``indices`` (any order, repeats allowed), as one block.

        Parameters
        ----------
        indices : array-like of int, shape (n,)
            Rows, each in ``0..len-1``.

        Returns
        -------
        ndarray of float32 of shape (n, dim), or scipy.sparse.csr_matrix for a sparse store
            The rows, in the order of ``indices``.
        """
        idx = np.asarray(indices)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise TypeError(f"indices: expected a 1-D array of integers, got shape {idx.shape} dtype {idx.dtype}")
        idx = idx.astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise IndexError(f"indices: out of range for a store of {len(self)} rows")
        if idx.size == 0:
            return csr((0, self.dim), dtype=np.float32) if self.is_sparse else np.empty((0, self.dim), np.float32)
        order = np.argsort(idx, kind="stable")
        block = self._reader.gather(idx[order])
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        return block[inverse]

    def to_numpy(self):
        """Load every row (dense array, or CSR for sparse stores). Loads it all: mind the size.

        Returns
        -------
        ndarray of float32 of shape (n_rows, dim), or scipy.sparse.csr_matrix for a sparse store
            Every row of the store.
        """
        if len(self) == 0:
            return self.take(np.empty(0, np.int64))
        return self._rows(0, len(self))

    def to_dask(self, chunk_rows: int | None = None):
        """A Dask array view of the rows (dense stores; sparse blocks are CSR).

        Every chunk is checked for presence and size up front, and every
        dense block for NaN / infinity when it is computed. A remote store's blocks are read by the
        store itself, one request per chunk.

        Parameters
        ----------
        chunk_rows : int or None, default=None
            Rows per Dask chunk; None uses :attr:`chunk_rows`.

        Returns
        -------
        dask.array.Array of float32, shape (n_rows, dim)
            A lazy view of the rows; nothing is read before it is computed.
        """
        import dask.array as da

        n = len(self)
        if not self.is_sparse and not self._remote:
            a = self._arrays["X"]
            for c in range(n_chunks(n, a.chunk_len)):
                self._reader.stat(a, c)  # presence and size here; values per block, on the workers
            import zarr

            arr = zarr.open_array(str(self.path / "vectors" / "X"), mode="r")
            view = da.from_zarr(arr, chunks=(chunk_rows or self.chunk_rows, self.dim))[:n]
            return view.map_blocks(finite_block, str(self.path), dtype=np.float32)
        import dask

        for a in self._arrays.values():
            for c in range(n_chunks(self._committed(a.name), a.chunk_len)):
                self._reader.stat(a, c)
        rows = chunk_rows or self.chunk_rows
        empty = csr((0, self.dim), dtype=np.float32) if self.is_sparse else np.empty((0, self.dim), np.float32)
        blocks = [
            da.from_delayed(dask.delayed(self._rows)(lo, min(lo + rows, n)), shape=(min(lo + rows, n) - lo, self.dim), dtype=np.float32, meta=empty)
            for lo in range(0, n, rows)
        ]
        return da.concatenate(blocks, axis=0) if blocks else da.zeros((0, self.dim), dtype=np.float32)
