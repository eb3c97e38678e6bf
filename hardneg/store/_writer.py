"""Writing a store: create (build beside, swap in), the writer lock, append, commit.

Only a writer touches the files of a store, and only through this module:
:meth:`FeatureStore.create` builds a new store with :func:`create_store`;
a store opened with ``mode="a"`` holds a :class:`StoreWriter`, which holds
the writer lock, trims what a killed writer left past the last commit, writes
vectors and item parts, and commits by replacing ``meta.json`` atomically
(see :mod:`hardneg.store._feature_store` for the crash-safety rules).
:mod:`hardneg.store._item_table` edits the item table through the same
writer (:meth:`StoreWriter.write_part`, :meth:`StoreWriter.commit`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from .._atomic import atomic_path
from .._validation import check_positive_int
from ._chunks import ChunkReader
from ._errors import StoreDamagedError, StoreError, StoreLockedError
from ._folder import TREE_ENTRY, ZARR_TEMP, check_replaceable, clear_stale_builds, local_store_path, remove_replaced, swap_in
from ._meta import CHECKSUM_ALGORITHM, FORMAT_VERSION, META, first_line
from ._summary import SUMMARY, make_summary
from ._verify import extend_checksums, n_chunks

if TYPE_CHECKING:
    from filelock import FileLock

logger = logging.getLogger(__name__)

DEFAULT_CHUNK_BYTES = 16 * 2**20  # ~16 MiB of float32 per Zarr chunk: large sequential reads
_SPARSE_NNZ_CHUNK = 4 * 2**20
_SPARSE_INDPTR_CHUNK = 1 << 20
_PART_NUMBER = re.compile(r"^part-(\d+)")


def meta_text(meta: dict) -> str:
    """``meta.json``'s text: indented for people, but the item summary (up to thousands of
    ``[value, count]`` pairs) compact on its last line, since json's indenting encoder is pure
    Python (~20 ms an append for 5,000 tags) and the compact one C."""
    summary = meta.get(SUMMARY)
    head = json.dumps({k: v for k, v in meta.items() if k != SUMMARY}, indent=1)
    if summary is None or head == "{}":
        return json.dumps(meta, indent=1)
    return f'{head[:-2]},\n "{SUMMARY}": {json.dumps(summary, separators=(",", ":"))}\n}}'


def atomic_write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def next_part_name(parts: Sequence[str]) -> str:
    """A part name after every numbered one in ``parts`` (names are never reused:
    a reader holding an older ``meta.json`` must not find other bytes under a name it knows)."""
    numbers = [int(m.group(1)) for p in parts if (m := _PART_NUMBER.match(p))]
    return f"part-{max([len(parts) - 1, *numbers]) + 1:08d}.parquet"


# ---------------------------------------------------------------------------- locks
def take_lock(path: Path | Any, *, overwrite: bool = False) -> FileLock:
    """The writer lock of the store at ``path``; :class:`StoreLockedError` if another writer holds it
    (``overwrite``: the messages say the store is to be replaced)."""
    from filelock import FileLock, Timeout  # writers only: a reader never locks

    lock = FileLock(str(path / ".lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        why = "; it cannot be overwritten while it is open" if overwrite else ""
        raise StoreLockedError(f"{path}: another process is writing to this store{why}") from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot take the store's writer lock{' to overwrite it' if overwrite else ''} ({exc})") from None
    return lock


def lock_for_overwrite(path: Path) -> FileLock:
    """:func:`take_lock` before the store at ``path`` is replaced."""
    return take_lock(path, overwrite=True)


# ---------------------------------------------------------------------------- create
def create_store(path, dim: int, *, sparse: bool, chunk_rows: int | None, overwrite: bool, attrs: dict | None) -> tuple[Path, FileLock]:
    """Build an empty store at ``path`` (see :meth:`FeatureStore.create`); return its folder and its
    writer lock, held from the moment the build folder was made."""
    dim = check_positive_int(dim, "dim")
    path = local_store_path(path)
    if chunk_rows is None:
        chunk_rows = max(1024, DEFAULT_CHUNK_BYTES // (4 * dim)) if not sparse else 65536
    chunk_rows = check_positive_int(chunk_rows, "chunk_rows")
    if attrs is not None and not isinstance(attrs, dict):
        raise TypeError(f"attrs: expected a dict, got {type(attrs).__name__}")
    try:
        json.dumps(attrs or {})
    except (TypeError, ValueError) as exc:
        raise TypeError(f"attrs: not JSON-serializable ({exc})") from None
    old_lock = None
    exists = path.exists() or path.is_symlink()
    if exists:
        if not overwrite:
            raise StoreError(f"{str(path)!r} already exists (overwrite=True / --overwrite replaces it)")
        check_replaceable(path)
        if (path / META).is_file():
            old_lock = lock_for_overwrite(path)
    try:
        # Build beside the target: a temporary folder elsewhere (the system's
        # temp dir) may be on another filesystem, where the final rename fails.
        path.parent.mkdir(parents=True, exist_ok=True)
        clear_stale_builds(path)
        tmp = Path(tempfile.mkdtemp(prefix=path.name + ".", suffix=".creating", dir=path.parent))
        from filelock import FileLock

        # the builder's lock from the first moment: a folder whose lock can be taken was left by a dead process
        build_lock = FileLock(str(tmp / ".lock"))
        build_lock.acquire(timeout=0)
        try:
            _build(tmp, dim, sparse, chunk_rows, attrs)
            if exists:
                trash = swap_in(tmp, path)
                if old_lock is not None:
                    old_lock.release()
                    old_lock = None
                remove_replaced(trash)
            else:
                os.replace(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            build_lock.release()
            raise
    finally:
        if old_lock is not None:
            old_lock.release()
    return path, build_lock


def _build(tmp: Path, dim: int, sparse: bool, chunk_rows: int, attrs) -> None:
    import zarr

    group = zarr.open_group(str(tmp / "vectors"), mode="w")
    if sparse:
        group.create_array("indptr", shape=(0,), chunks=(_SPARSE_INDPTR_CHUNK,), dtype="int64", compressors=None, fill_value=0)
        group.create_array("indices", shape=(0,), chunks=(_SPARSE_NNZ_CHUNK,), dtype="int32", compressors=None, fill_value=0)
        group.create_array("data", shape=(0,), chunks=(_SPARSE_NNZ_CHUNK,), dtype="float32", compressors=None, fill_value=0)
        chunks: dict[str, list[int]] = {"indptr": [], "indices": [], "data": []}
    else:
        # Uncompressed: features are dense floats that barely compress, and
        # scans should run at page-cache speed.
        group.create_array("X", shape=(0, dim), chunks=(chunk_rows, dim), dtype="float32", compressors=None, fill_value=0)
        chunks = {"X": []}
    (tmp / "items").mkdir()
    meta: dict[str, Any] = {
        "format": "hardneg.FeatureStore",
        "format_version": FORMAT_VERSION,
        "dim": dim,
        "sparse": bool(sparse),
        "chunk_rows": chunk_rows,
        "n_rows": 0,
        "nnz": 0,
        "parts": [],
        "attrs": attrs or {},
        "checksums": {"algorithm": CHECKSUM_ALGORITHM, "chunks": chunks, "parts": {}},
        SUMMARY: make_summary([], 0, [], [], []),
    }
    atomic_write_text(tmp / META, meta_text(meta))


# ---------------------------------------------------------------------------- the writer of an open store
class StoreWriter:
    """The writing half of a store opened with ``mode="a"``.

    Parameters
    ----------
    folder : Path
        The store's local folder.
    reader : ChunkReader
        The store's reader: its ``meta`` is the committed ``meta.json``, its ``arrays`` the layout.
    lock : FileLock
        The writer lock, taken by the caller; held until :meth:`close`.
    on_commit : callable
        ``on_commit(meta, items)``, called after each commit with the new ``meta.json`` and the
        whole new item table (or None when the caller keeps its own).
    """

    def __init__(self, folder: Path, reader: ChunkReader, lock: FileLock, on_commit: Callable[[dict, pa.Table | None], None]):
        import zarr  # only writers (and to_dask) need Zarr: reading a store opens chunk files directly

        self.folder = folder
        self.reader = reader
        self.on_commit = on_commit
        self.tail_checked = False
        self.zarr: dict = {}
        try:
            for name in reader.arrays:
                arr = zarr.open_array(str(folder / "vectors" / name), mode="r+")
                # Zarr skips chunks that equal the fill value; a missing chunk must mean damage.
                self.zarr[name] = arr.with_config({"write_empty_chunks": True})
        except Exception as exc:
            raise StoreError(f"{folder}: cannot open the vector arrays for writing ({first_line(exc)})") from None
        self.lock: FileLock | None = lock

    @property
    def meta(self) -> dict:
        """The committed ``meta.json``."""
        return self.reader.meta

    def close(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def trim_uncommitted(self) -> None:
        """Drop what a killed writer left past the last commit."""
        reader, base = self.reader, self.folder
        for name, a in reader.arrays.items():
            arr = self.zarr[name]
            committed = reader.committed(name)
            if arr.shape[0] != committed:
                arr.resize((committed, reader.dim) if name == "X" else (committed,))
            # Zarr keeps chunk files past a shrink; a later partial write would merge with them.
            keep = n_chunks(committed, a.chunk_len)
            folder = base / "vectors" / name / "c"
            if folder.is_dir():
                for f in folder.iterdir():
                    if f.name.isdigit() and int(f.name) >= keep and not f.is_symlink():  # other names are not Zarr's
                        logger.info("removing uncommitted chunk %s", f)
                        shutil.rmtree(f) if f.is_dir() else f.unlink()
        for root, _, files in os.walk(base / "vectors"):
            for file in files:
                if ZARR_TEMP.search(file):
                    logger.info("removing a temporary chunk file left by a killed writer: %s", file)
                    os.unlink(os.path.join(root, file))
        for f in base.glob(f"{META}.*.tmp"):
            f.unlink()
        committed_parts = set(self.meta["parts"])
        for f in (base / "items").iterdir():
            own = TREE_ENTRY.fullmatch(f"items/{f.name}") and not f.is_symlink()
            if own and f.name not in committed_parts:  # a file of the user's put here is not ours to delete
                logger.info("removing uncommitted item part %s", f)
                shutil.rmtree(f) if f.is_dir() else f.unlink()

    def check_tail(self) -> None:
        """Before extending a partly filled last chunk, check it: an append
        rewrites the chunk, and must not carry damage into a fresh checksum."""
        reader = self.reader
        sums = self.meta.get("checksums")
        for name, a in reader.arrays.items():
            committed = reader.committed(name)
            if committed % a.chunk_len == 0:
                continue
            c = committed // a.chunk_len
            reader.stat(a, c)
            if sums is not None:
                with open(self.folder / a.key(c), "rb") as fh:
                    raw = fh.read((committed - c * a.chunk_len) * a.row_bytes)
                if zlib.crc32(raw) != sums["chunks"][name][c]:
                    raise StoreDamagedError(str(self.folder), a.key(c), "does not match its checksum; refusing to append to it")
        self.tail_checked = True

    def write_vectors(self, X) -> tuple[int, dict | None]:
        """Write the rows ``X`` (checked; CSR for a sparse store) past the committed ones, uncommitted.

        Returns the new ``nnz`` and the chunk checksums that include them (None for a store without checksums).
        """
        reader = self.reader
        start, nnz, n_new = reader.n_rows, reader.nnz, X.shape[0]
        sums = self.meta.get("checksums")
        chunks = dict(sums["chunks"]) if sums is not None else None
        if reader.meta["sparse"]:
            new_nnz = nnz + X.nnz
            indices = X.indices.astype("<i4", copy=False)
            data = X.data.astype("<f4", copy=False)
            offsets = X.indptr.astype("<i8") + nnz  # offsets of rows start..start+n_new
            zi, zd, zp = self.zarr["indices"], self.zarr["data"], self.zarr["indptr"]
            zi.resize((new_nnz,))
            zd.resize((new_nnz,))
            zi[nnz:new_nnz] = indices
            zd[nnz:new_nnz] = data
            # A store without rows has no committed offsets: write the leading 0 too.
            new_offsets = offsets if start == 0 else offsets[1:]
            lo = reader.committed("indptr")
            zp.resize((start + n_new + 1,))
            zp[lo : start + n_new + 1] = new_offsets
            if chunks is not None:
                arrays = reader.arrays
                chunks["indices"] = extend_checksums(chunks["indices"], nnz, indices, arrays["indices"].chunk_len)
                chunks["data"] = extend_checksums(chunks["data"], nnz, data, arrays["data"].chunk_len)
                chunks["indptr"] = extend_checksums(chunks["indptr"], lo, new_offsets, arrays["indptr"].chunk_len)
            nnz = new_nnz
        else:
            zx = self.zarr["X"]
            zx.resize((start + n_new, reader.dim))
            zx[start : start + n_new] = X
            if chunks is not None:
                chunks["X"] = extend_checksums(chunks["X"], start, X.astype("<f4", copy=False), int(reader.meta["chunk_rows"]))
        return nnz, chunks

    def write_part(self, table: pa.Table) -> tuple[str, int]:
        """Write ``table`` as a new item part, uncommitted, under a name no commit has used; its name and CRC-32."""
        # Uncommitted parts were removed on open, so this name is free (and never used before).
        part_name = next_part_name(self.meta["parts"])
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        part = sink.getvalue()
        with atomic_path(self.folder / "items" / part_name) as tmp_part:
            tmp_part.write_bytes(memoryview(part))
        return part_name, zlib.crc32(memoryview(part))

    def commit(self, meta: dict, items: pa.Table | None = None) -> None:
        """Replace ``meta.json`` atomically: the commit point of appends and item edits."""
        atomic_write_text(self.folder / META, meta_text(meta))
        self.on_commit(meta, items)

    def remove_parts(self, names: Sequence[str]) -> None:
        """Delete item parts that a commit replaced (a failure leaves them for the next writer to trim)."""
        for name in names:
            try:
                (self.folder / "items" / name).unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:  # left for the next writer to trim
                logger.warning("could not remove the replaced item part %s: %s", name, exc)
