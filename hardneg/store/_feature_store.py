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
"""

from __future__ import annotations

import json
import logging
import numbers
import os
import re
import shutil
import tempfile
import uuid
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._atomic import atomic_path
from .._typing import ArrayLike, RandomState
from .._validation import check_matrix, check_positive_int, check_random_state, issparse
from ._errors import StoreDamagedError, StoreError, StoreLockedError
from ._finite import all_finite
from ._item_table import edit_items, next_part_name, store_summary, summarize_items
from ._items import check_label, control_character, per_row, tag_list
from ._meta import ARRAY_TYPES, CHECKSUM_ALGORITHM, FORMAT_VERSION, META, check_layouts, first_line, load_meta
from ._remote import LOCAL_PROTOCOLS, RemoteFolder, RemoteReadError, remote_timeout, url_protocol
from ._summary import SUMMARY, make_summary, merge_summaries
from ._verify import VerifyReport, extend_checksums, n_chunks, verify_store

if TYPE_CHECKING:
    from filelock import FileLock

logger = logging.getLogger(__name__)

DEFAULT_CHUNK_BYTES = 16 * 2**20  # ~16 MiB of float32 per Zarr chunk: large sequential reads
_SPARSE_NNZ_CHUNK = 4 * 2**20
_SPARSE_INDPTR_CHUNK = 1 << 20
# Zarr's LocalStore writes a chunk to "<name>.<uuid4 hex>.partial", then renames it.
_ZARR_TEMP = re.compile(r"\.[0-9a-f]{32}\.partial$")

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


@dataclass(frozen=True)
class _Array:
    """One Zarr array of the store, as files: chunk ``c`` is ``vectors/<name>/c/<c>[/0]``."""

    name: str
    dtype: np.dtype
    width: int  # values per row along axis 0 (dim for X, 1 for the CSR arrays)
    chunk_len: int  # rows per chunk
    length: int  # rows in zarr.json when opened (may exceed the committed rows)

    @property
    def row_bytes(self) -> int:
        return self.width * self.dtype.itemsize

    @property
    def chunk_bytes(self) -> int:
        return self.chunk_len * self.row_bytes

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.chunk_len, self.width) if self.name == "X" else (self.chunk_len,)

    def key(self, c: int) -> str:
        return f"vectors/{self.name}/c/{c}/0" if self.name == "X" else f"vectors/{self.name}/c/{c}"


def local_store_path(path) -> Path:
    """The local folder of a store given as a path or a ``file://`` URL (for writing).

    ``file://`` (and ``local://``) URLs name a local or shared-filesystem
    folder (NFS, a mounted bucket): what every worker of a cluster can open
    by the same name. Object-store URLs (``s3://``, ``gs://``, ...) are
    refused here with a clear error: a store is written by atomic renames,
    which an object store lacks. They can be opened read-only, see
    :func:`store_location`.
    """
    protocol = url_protocol(path)
    if protocol is not None:
        if protocol not in LOCAL_PROTOCOLS:
            raise ValueError(
                f"{path}: a store is written to a local or shared-filesystem folder (a path or a file:// URL), "
                f"not to {protocol}:// (no atomic rename there); write it locally and upload it, or mount the bucket"
            )
        from fsspec.utils import infer_storage_options

        return Path(infer_storage_options(path)["path"])
    return Path(path)


def store_location(path, timeout: float | None = None) -> Path | RemoteFolder:
    """Where a store is read from: a local folder, or a :class:`RemoteFolder`
    for an object-store URL (any fsspec protocol with its backend installed),
    whose requests time out after ``timeout`` seconds (see :func:`remote_timeout`)."""
    protocol = url_protocol(path)
    if protocol is not None and protocol not in LOCAL_PROTOCOLS:
        return RemoteFolder.from_url(path, timeout=timeout)
    if timeout is not None:
        remote_timeout(timeout)  # checked, unused: local reads do not time out
    return local_store_path(path)


def _csr(*args, **kwargs):
    """``scipy.sparse.csr_matrix``: SciPy is imported for sparse stores only (it costs a start ~0.3 s)."""
    import scipy.sparse as sp

    return sp.csr_matrix(*args, **kwargs)


def _finite_block(block: np.ndarray, where: str) -> np.ndarray:
    if not all_finite(block):
        raise StoreDamagedError(where, "vectors/X", "is damaged: a block holds NaN or infinity, which the store never writes")
    return block


def _meta_text(meta: dict) -> str:
    """``meta.json``'s text: indented for people, but the item summary (up to thousands of
    ``[value, count]`` pairs) compact on its last line, since json's indenting encoder is pure
    Python (~20 ms an append for 5,000 tags, benchmarks/store_append_summary.py) and the compact one C."""
    summary = meta.get(SUMMARY)
    head = json.dumps({k: v for k, v in meta.items() if k != SUMMARY}, indent=1)
    if summary is None or head == "{}":
        return json.dumps(meta, indent=1)
    return f'{head[:-2]},\n "{SUMMARY}": {json.dumps(summary, separators=(",", ":"))}\n}}'


def _atomic_write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


# What a store folder may hold: anything else in it is not ours to delete.
# codebook.npz: the bag-of-words / VLAD extractor's vocabulary (hardneg.features._codebook.CODEBOOK_FILE).
_STORE_ENTRIES = frozenset({META, "vectors", "items", ".lock", "codebook.npz"})
_ATOMIC_TEMP = re.compile(r"(meta\.json|codebook\.npz)\..*\.tmp$")  # left by a write killed before its rename


def _is_store_entry(name: str) -> bool:
    return name in _STORE_ENTRIES or bool(_ATOMIC_TEMP.match(name))


# What vectors/ and items/ may hold (paths relative to the store, folders included): Zarr's metadata
# and chunk files, item parts, and the temporary files of their atomic writes.
_TREE_ENTRY = re.compile(
    r"(vectors(/zarr\.json|/(X|indptr|indices|data)(/zarr\.json|/c(/\d+){0,2})?)?(\.[0-9a-f]{32}\.partial)?"
    r"|items(/part-\d+\.parquet(\..+\.tmp)?)?)"
)


def _foreign_entries(path: Path) -> list[str]:
    """Entries of a store folder, at any depth, that the store did not write (relative paths;
    links count as foreign: deleting the store must not follow or drop them)."""
    foreign = []
    for entry in sorted(path.iterdir()):
        if not _is_store_entry(entry.name) or (entry.is_symlink() and entry.name != META):
            foreign.append(entry.name)
        elif entry.name in ("vectors", "items") and entry.is_dir():
            for root, dirs, files in os.walk(entry):
                for name in sorted(dirs + files):
                    rel = os.path.relpath(os.path.join(root, name), path).replace(os.sep, "/")
                    if os.path.islink(os.path.join(root, name)) or not _TREE_ENTRY.fullmatch(rel):
                        foreign.append(rel)
                dirs[:] = [d for d in dirs if _TREE_ENTRY.fullmatch(os.path.relpath(os.path.join(root, d), path).replace(os.sep, "/"))]
    return foreign


def _check_replaceable(path: Path, action: str = "overwrite") -> None:
    """Refuse to overwrite anything but a hardneg store (by its format marker) or an empty folder.

    ``--overwrite`` must never delete what the store did not write: a folder
    that merely holds a ``meta.json``, a store with the user's own files put
    inside it, a plain file, or a symbolic link are all refused, naming why.
    """
    if path.is_symlink() or not path.is_dir():
        kind = "a symbolic link" if path.is_symlink() else "a file"
        raise StoreError(f"refusing to {action} {str(path)!r}: it is {kind}, not a FeatureStore; remove it yourself or choose another output")
    entries = sorted(p.name for p in path.iterdir())
    if not entries:
        return
    foreign = _foreign_entries(path)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise StoreError(f"refusing to {action} {str(path)!r}: it is a non-empty folder with files that are not a FeatureStore's ({shown}); move them out first")
    try:
        meta = json.loads((path / META).read_text(encoding="utf-8"))
        marker = meta.get("format") if isinstance(meta, dict) else None
    except (OSError, ValueError, RecursionError):
        marker = None
    # A store whose meta.json is damaged is still recognisable by its layout, and may be rebuilt.
    layout = (path / "vectors").is_dir() and (path / "items").is_dir()
    if marker != "hardneg.FeatureStore" and not layout:
        raise StoreError(f"refusing to {action} {str(path)!r}: it is a non-empty folder that is not a FeatureStore (no hardneg format marker in {META})")


def writes_into_input(output, source) -> bool:
    """Whether writing ``output`` would overwrite ``source`` or put a file inside it (a store folder).

    Paths are compared after resolving links; URLs (and ``None``) never match:
    they are read, never written here.
    """
    if output is None or source is None or url_protocol(str(output)) not in (None, *LOCAL_PROTOCOLS):
        return False
    source_path = getattr(source, "path", source)
    if isinstance(source_path, RemoteFolder) or url_protocol(str(source_path)) not in (None, *LOCAL_PROTOCOLS):
        return False
    target = os.path.realpath(local_store_path(output))
    src = os.path.realpath(local_store_path(source_path))
    inside_store = target.startswith(src.rstrip(os.sep) + os.sep) and (Path(src) / META).is_file()
    return target == src or inside_store


def check_output_not_input(output: str | os.PathLike, *inputs: str | os.PathLike | RemoteFolder, what: str = "output") -> None:
    """Refuse a job whose output is one of its inputs, before anything is touched.

    Writing a store onto the store it reads (``esvm encode S.store -o
    S.store --overwrite``) would empty the input and then fail; writing inside
    an input store would put a foreign file in it. See :func:`writes_into_input`.

    Parameters
    ----------
    output : str or path-like
        Where the job writes.
    *inputs : str, path-like or RemoteFolder
        What it reads (a remote input never matches).
    what : str
        How the error names the output (e.g. ``"--out"``).

    Raises
    ------
    StoreError
        If ``output`` is an input, or lies inside an input store.
    """
    for source in inputs:
        if writes_into_input(output, source):
            raise StoreError(f"{what} {str(output)!r} is also an input of this run; write it somewhere else")


def _remove_tree(store: Path, folder: Path) -> None:
    """Delete the store's own files under ``folder`` (:data:`_TREE_ENTRY`), then the emptied folders;
    a foreign file (put there by hand) stays, with the folders that hold it."""
    for root, dirs, files in os.walk(folder, topdown=False):
        for name in files + dirs:
            p = os.path.join(root, name)
            rel = os.path.relpath(p, store).replace(os.sep, "/")
            if os.path.islink(p) or not _TREE_ENTRY.fullmatch(rel):
                continue
            try:
                os.rmdir(p) if name in dirs else os.unlink(p)
            except OSError:
                pass  # a folder that still holds a foreign file
    try:
        folder.rmdir()
    except OSError:
        pass


def _remove_replaced(trash: Path) -> None:
    """Delete a replaced store folder: only the store's own entries, then the folder if empty."""
    if trash.is_symlink() or not trash.is_dir():
        trash.unlink(missing_ok=True)
        return
    for entry in trash.iterdir():
        if not _is_store_entry(entry.name):
            continue  # checked before the swap; never delete what is not the store's
        if entry.name in ("vectors", "items") and entry.is_dir() and not entry.is_symlink():
            _remove_tree(trash, entry)
        elif entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    try:
        trash.rmdir()
    except OSError:
        logger.warning("could not remove all of the replaced store %s", trash)


_STALE_AFTER_S = 3600


def _build_folders(path: Path) -> list[Path]:
    """The folders beside ``path`` that a rebuild, an import or ``FeatureStore.create`` of it makes:
    ``.NAME.<hex>.swap`` (and the ``.creating`` folder built inside that name), ``NAME.<rand>.creating``,
    ``NAME.<hex>.deleting``."""
    name = re.escape(path.name)
    pattern = re.compile(rf"\.{name}\.[0-9a-f]{{32}}\.swap(\.[a-z0-9_]+\.creating)?|{name}\.([a-z0-9_]{{8}}\.creating|[0-9a-f]{{32}}\.deleting)")
    try:
        return [p for p in path.parent.iterdir() if pattern.fullmatch(p.name) and p.is_dir() and not p.is_symlink()]
    except OSError:
        return []


def clear_stale_builds(path: Path) -> None:
    """Remove the build folders beside ``path`` that dead processes left (a killed import or rebuild).

    A builder holds the lock file inside its folder from just after the folder is made
    (:meth:`FeatureStore.create`) until it is renamed into place: a folder whose lock can be
    taken, and that holds ``meta.json`` (written under the lock) or is over an hour old (its
    builder died before writing it), has no living owner. A folder with no lock file is left
    alone (its owner cannot be told), and only the store's own files are deleted
    (:func:`_remove_replaced`). A ``.swap`` or ``.deleting`` folder may hold the old store
    itself (a process killed between the two renames of a swap): it is removed only while a
    store is in place at ``path``; a ``.creating`` folder never holds a committed store.
    """
    import time

    from filelock import FileLock, Timeout

    store_in_place = (path / META).is_file()
    for stale in _build_folders(path):
        if not (store_in_place or stale.name.endswith(".creating")):
            continue  # perhaps the only copy of the store: left for the user
        try:
            started = (stale / META).is_file() or time.time() - stale.stat().st_mtime > _STALE_AFTER_S
        except OSError:
            continue
        if not (stale / ".lock").is_file() or not started:
            continue  # no lock file, or made a moment ago: perhaps a builder about to take its lock
        lock = FileLock(str(stale / ".lock"))
        try:
            lock.acquire(timeout=0)
        except (Timeout, OSError):
            continue  # a live builder
        try:
            logger.info("removing %s, left by an interrupted build of %s", stale, path)
            _remove_replaced(stale)
        finally:
            lock.release()



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
        self.path = store_location(path, _timeout)
        self._remote = isinstance(self.path, RemoteFolder)
        if self._remote and _mode != "r":
            raise StoreError(f"{self.path}: stores on {url_protocol(str(self.path))}:// open read-only (appends need atomic renames); append to a local copy")
        self._recent: dict = {}  # remote stores: the last chunks fetched, so nearby reads do not fetch again
        self._mode = _mode
        self._lock: FileLock | None = None
        self._items_cache = None
        self._checked: set[tuple[str, int]] = set()  # chunks that passed the first-touch checks
        self._zarr: dict = {}
        self._tail_checked = False
        if _lock is not None:
            self._lock = _lock  # taken by create() before the store had a name: held since, never let go
        meta = load_meta(self.path)
        if _mode == "a" and self._lock is None:
            self._acquire_lock()
        try:
            if _mode == "a":
                # Re-read: the previous writer may have committed after our first read.
                meta = load_meta(self.path)
            self._meta = meta
            self._arrays = self._load_arrays()
            if not (self.path / "items").is_dir():
                raise StoreError(f"{self.path}: the items/ folder is missing")
            if _mode == "a":
                import zarr  # only writers (and to_dask) need Zarr: reading a store opens chunk files directly

                try:
                    for name in self._arrays:
                        arr = zarr.open_array(str(self.path / "vectors" / name), mode="r+")
                        # Zarr skips chunks that equal the fill value; a missing chunk must mean damage.
                        self._zarr[name] = arr.with_config({"write_empty_chunks": True})
                except Exception as exc:
                    raise StoreError(f"{self.path}: cannot open the vector arrays for writing ({first_line(exc)})") from None
                self._trim_uncommitted()
        except BaseException:
            self.close()
            raise

    def _load_arrays(self) -> dict[str, _Array]:
        n, nnz, dim = len(self), self.nnz, self.dim
        widths = {"X": dim, "indptr": 1, "indices": 1, "data": 1}
        arrays = {name: _Array(name, np.dtype(ARRAY_TYPES[name]), widths[name], chunk_len, length)
                  for name, (chunk_len, length) in check_layouts(self.path, self._meta).items()}
        self._arrays = arrays
        if self.is_sparse and n:
            ends = self._read(arrays["indptr"], 0, 1)[0], self._read(arrays["indptr"], n, n + 1)[0]
            if ends != (0, nnz):
                raise StoreError(f"{self.path}: vectors/indptr runs from {ends[0]} to {ends[1]} but {META} says nnz={nnz} (offsets must run from 0)")
        return arrays

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
            _check_replaceable(path)
            if (path / META).is_file():
                old_lock = cls._lock_for_overwrite(path)
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
                cls._build(tmp, dim, sparse, chunk_rows, attrs)
                if exists:
                    trash = path.with_name(f"{path.name}.{uuid.uuid4().hex}.deleting")
                    os.rename(path, trash)
                    try:
                        os.rename(tmp, path)
                    except BaseException:
                        os.rename(trash, path)
                        raise
                    if old_lock is not None:
                        old_lock.release()
                        old_lock = None
                    _remove_replaced(trash)
                else:
                    os.replace(tmp, path)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                build_lock.release()
                raise
        finally:
            if old_lock is not None:
                old_lock.release()
        return cls(path, _mode="a", _lock=build_lock)

    @staticmethod
    def _lock_for_overwrite(path: Path) -> FileLock:
        from filelock import FileLock, Timeout  # writers only: a reader never locks

        lock = FileLock(str(path / ".lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise StoreLockedError(f"{path}: another process is writing to this store; it cannot be overwritten while it is open") from None
        except OSError as exc:
            raise StoreError(f"{path}: cannot take the store's writer lock to overwrite it ({exc})") from None
        return lock

    @staticmethod
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
        _atomic_write_text(tmp / META, _meta_text(meta))

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

    def _acquire_lock(self) -> None:
        from filelock import FileLock, Timeout  # writers only: a reader never locks

        lock = FileLock(str(self.path / ".lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise StoreLockedError(f"{self.path}: another process is writing to this store") from None
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot take the store's writer lock ({exc})") from None
        self._lock = lock

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
        """Committed rows of array ``name``. A CSR store without rows has no
        committed offsets yet (its implicit first offset, 0, comes with the
        first row)."""
        n = len(self)
        return {"X": n, "indptr": n + 1 if n else 0}.get(name, self.nnz)

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

    def _stat_chunk(self, a: _Array, c: int) -> None:
        key = a.key(c)
        try:
            size = (self.path / key).stat().st_size
        except FileNotFoundError:
            first = c * a.chunk_len
            last = min(first + a.chunk_len, self._committed(a.name)) - 1
            raise StoreDamagedError(str(self.path), key, f"is missing ({'rows' if a.name in ('X', 'indptr') else 'values'} {first}-{last})") from None
        except OSError as exc:
            raise StoreDamagedError(str(self.path), key, f"cannot be read ({exc.strerror or exc})") from None
        if size != a.chunk_bytes:
            raise StoreDamagedError(str(self.path), key, f"is damaged: {size} bytes, expected {a.chunk_bytes}")

    def _chunk(self, a: _Array, c: int) -> np.ndarray:
        """Chunk ``c`` of ``a`` as a read-only view of its file, checked the first time."""
        first = (a.name, c) not in self._checked
        if first:
            self._stat_chunk(a, c)
        folder = self.path
        try:
            m = self._fetch(folder, a, c) if isinstance(folder, RemoteFolder) else np.memmap(folder / a.key(c), dtype=a.dtype, mode="r", shape=a.shape)
        except FileNotFoundError:
            raise StoreDamagedError(str(self.path), a.key(c), "is missing") from None
        except RemoteReadError:  # the server or the network, not the store
            raise
        except (ValueError, OSError) as exc:  # shrunk since the check
            raise StoreDamagedError(str(self.path), a.key(c), f"is damaged ({first_line(exc)})") from None
        if first:
            if a.name == "X":
                self._check_finite(a, c, m)
            self._checked.add((a.name, c))
        return m

    def _fetch(self, folder: RemoteFolder, a: _Array, c: int) -> np.ndarray:
        """Chunk ``c`` of a remote store (at ``folder``), read whole (one request), the last few kept."""
        key = (a.name, c)
        if key not in self._recent:
            raw = (folder / a.key(c)).read_bytes(max_bytes=a.chunk_bytes)
            if len(raw) != a.chunk_bytes:
                raise ValueError(f"{len(raw)} bytes, expected {a.chunk_bytes}")
            if len(self._recent) >= 4:  # bounded: 4 chunks of ~16 MiB
                self._recent.pop(next(iter(self._recent)))
            m = np.frombuffer(raw, dtype=a.dtype).reshape(a.shape)
            self._recent[key] = m
        return self._recent[key]

    def _check_finite(self, a: _Array, c: int, m: np.ndarray) -> None:
        """Every committed value of dense chunk ``c`` must be finite (the store never writes NaN or infinity).

        Checked in full the first time a store object touches the chunk (a
        sampled check let one NaN in a 65,536-row chunk through 18 times in
        20), so a damaged value never reaches a scorer; later reads of the
        chunk are free. ``benchmarks/store_scan.py`` measures the cost.
        """
        rows = min(a.chunk_len, self._committed(a.name) - c * a.chunk_len)
        if rows > 0 and not all_finite(np.asarray(m)[:rows]):
            raise StoreDamagedError(str(self.path), a.key(c), "is damaged: it holds NaN or infinity, which the store never writes")

    def _check_values(self, a: _Array, first: int, values: np.ndarray, key: str, *, prev: int | None = None) -> None:
        """Check values ``first..`` of ``a`` read from ``key``; StoreDamagedError if invalid."""
        if not values.size:
            return
        if a.name in ("X", "data"):
            if not np.isfinite(values).all():
                raise StoreDamagedError(str(self.path), key, "is damaged: it holds NaN or infinity, which the store never writes")
        elif a.name == "indices":
            if values.min() < 0 or values.max() >= self.dim:
                raise StoreDamagedError(str(self.path), key, f"is damaged: column indices outside 0..{self.dim - 1}")
        else:  # indptr
            if (
                values.min() < 0
                or values.max() > self.nnz
                or (first == 0 and values[0] != 0)
                or (prev is not None and values[0] < prev)
                or (values.size > 1 and (np.diff(values) < 0).any())
            ):
                raise StoreDamagedError(str(self.path), key, f"is damaged: row offsets out of order or outside 0..{self.nnz}")

    def _keys(self, a: _Array, lo: int, hi: int) -> str:
        first, last = lo // a.chunk_len, max(hi - 1, lo) // a.chunk_len
        return a.key(first) if first == last else f"{a.key(first)}..{last}"

    def _read(self, a: _Array, lo: int, hi: int) -> np.ndarray:
        """Rows ``lo..hi`` of ``a``: a read-only view when they lie in one chunk."""
        if hi <= lo:
            return np.empty((0,) + a.shape[1:], a.dtype)
        L = a.chunk_len
        pieces = [self._chunk(a, c)[max(lo - c * L, 0) : min(hi - c * L, L)] for c in range(lo // L, (hi - 1) // L + 1)]
        return np.asarray(pieces[0]) if len(pieces) == 1 else np.concatenate(pieces)

    def _read_csr_values(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Column indices and values ``lo..hi`` of a CSR store, checked in full (they are copied anyway)."""
        ind, dat = self._arrays["indices"], self._arrays["data"]
        indices, data = np.array(self._read(ind, lo, hi)), np.array(self._read(dat, lo, hi))
        self._check_values(ind, lo, indices, self._keys(ind, lo, hi))
        self._check_values(dat, lo, data, self._keys(dat, lo, hi))
        return indices, data

    def _check_offsets(self, starts: np.ndarray, ends: np.ndarray, first_row: int, last_row: int) -> None:
        if starts.size and (starts.min() < 0 or ends.max() > self.nnz or (ends < starts).any()):
            ip = self._arrays["indptr"]
            raise StoreDamagedError(str(self.path), self._keys(ip, first_row, last_row + 1), f"is damaged: row offsets out of order or outside 0..{self.nnz}")

    # ------------------------------------------------------------------ writing
    def _require_writable(self) -> None:
        if self._mode != "a" or self._lock is None:
            raise StoreError(f"{self.path}: opened read-only; use FeatureStore.open(path, mode='a') to append")

    def _local_folder(self) -> Path:
        """The folder of a store opened to write: always local (__init__ opens a remote store read-only only)."""
        if isinstance(self.path, RemoteFolder):
            raise StoreError(f"{self.path}: stores on {url_protocol(str(self.path))}:// open read-only; append to a local copy")
        return self.path

    def _trim_uncommitted(self) -> None:
        """Drop what a killed writer left past the last commit."""
        n = len(self)
        base = self._local_folder()
        for name, a in self._arrays.items():
            arr = self._zarr[name]
            committed = n if name == "X" else self._committed(name)
            if arr.shape[0] != committed:
                arr.resize((committed, self.dim) if name == "X" else (committed,))
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
                if _ZARR_TEMP.search(file):
                    logger.info("removing a temporary chunk file left by a killed writer: %s", file)
                    os.unlink(os.path.join(root, file))
        for f in base.glob(f"{META}.*.tmp"):
            f.unlink()
        committed_parts = set(self._meta["parts"])
        for f in (base / "items").iterdir():
            own = _TREE_ENTRY.fullmatch(f"items/{f.name}") and not f.is_symlink()
            if own and f.name not in committed_parts:  # a file of the user's put here is not ours to delete
                logger.info("removing uncommitted item part %s", f)
                shutil.rmtree(f) if f.is_dir() else f.unlink()

    def _check_tail(self) -> None:
        """Before extending a partly filled last chunk, check it: an append
        rewrites the chunk, and must not carry damage into a fresh checksum.
        The item parts are read (and checked against their CRC) too: an append
        must not build on a damaged item table (a table this object already
        loaded was checked then, and is not read again)."""
        _ = self.items
        sums = self._meta.get("checksums")
        for name, a in self._arrays.items():
            committed = self._committed(name)
            if committed % a.chunk_len == 0:
                continue
            c = committed // a.chunk_len
            self._stat_chunk(a, c)
            if sums is not None:
                with open(self._local_folder() / a.key(c), "rb") as fh:
                    raw = fh.read((committed - c * a.chunk_len) * a.row_bytes)
                if zlib.crc32(raw) != sums["chunks"][name][c]:
                    raise StoreDamagedError(str(self.path), a.key(c), "does not match its checksum; refusing to append to it")
        self._tail_checked = True

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
        self._require_writable()
        X = check_matrix(X, "X", accept_sparse=self.is_sparse, n_features=self.dim, min_rows=1)
        if self.is_sparse and not issparse(X):
            X = _csr(X)
        n_new = X.shape[0]
        start = len(self)
        table = self._make_items(n_new, start, ids, paths, tags, labels, split)
        if not self._tail_checked:
            self._check_tail()

        nnz = self.nnz
        sums = self._meta.get("checksums")
        chunks = dict(sums["chunks"]) if sums is not None else None
        if self.is_sparse:
            new_nnz = nnz + X.nnz
            indices = X.indices.astype("<i4", copy=False)
            data = X.data.astype("<f4", copy=False)
            offsets = X.indptr.astype("<i8") + nnz  # offsets of rows start..start+n_new
            zi, zd, zp = self._zarr["indices"], self._zarr["data"], self._zarr["indptr"]
            zi.resize((new_nnz,))
            zd.resize((new_nnz,))
            zi[nnz:new_nnz] = indices
            zd[nnz:new_nnz] = data
            # A store without rows has no committed offsets: write the leading 0 too.
            new_offsets = offsets if start == 0 else offsets[1:]
            lo = self._committed("indptr")
            zp.resize((start + n_new + 1,))
            zp[lo : start + n_new + 1] = new_offsets
            if chunks is not None:
                chunks["indices"] = extend_checksums(chunks["indices"], nnz, indices, self._arrays["indices"].chunk_len)
                chunks["data"] = extend_checksums(chunks["data"], nnz, data, self._arrays["data"].chunk_len)
                chunks["indptr"] = extend_checksums(chunks["indptr"], lo, new_offsets, self._arrays["indptr"].chunk_len)
            nnz = new_nnz
        else:
            zx = self._zarr["X"]
            zx.resize((start + n_new, self.dim))
            zx[start : start + n_new] = X
            if chunks is not None:
                chunks["X"] = extend_checksums(chunks["X"], start, X.astype("<f4", copy=False), self.chunk_rows)

        # Uncommitted parts were removed on open, so this name is free (and never used before).
        part_name = next_part_name(self._meta["parts"])
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        part = sink.getvalue()
        with atomic_path(self.path / "items" / part_name) as tmp_part:
            tmp_part.write_bytes(memoryview(part))

        meta = dict(self._meta)
        meta.update(n_rows=start + n_new, nnz=nnz, parts=self._meta["parts"] + [part_name])
        meta[SUMMARY] = self._appended_summary(table, meta["parts"])
        if sums is not None:
            meta["checksums"] = {"algorithm": CHECKSUM_ALGORITHM, "chunks": chunks, "parts": {**sums["parts"], part_name: zlib.crc32(memoryview(part))}}
        self._commit_meta(meta)  # the commit point
        if self._items_cache is not None:
            self._items_cache = pa.concat_tables([self._items_cache, table])

    def _appended_summary(self, table: pa.Table, parts: list) -> dict:
        """The item summary after appending ``table`` (see :mod:`hardneg.store._summary`): the new
        part's counts merged in, or, where none is recorded (an older store) or it is stale, the
        whole table counted once (it is in memory: :meth:`_check_tail` read it)."""
        old = self._meta.get(SUMMARY)
        if old is not None and old["parts"] == self._meta["parts"]:
            return merge_summaries(old, summarize_items(table, []), parts)
        return summarize_items(pa.concat_tables([self.items, table]), parts)

    def _commit_meta(self, meta: dict) -> None:
        """Replace ``meta.json`` atomically: the commit point of appends and item edits."""
        _atomic_write_text(self._local_folder() / META, _meta_text(meta))
        self._meta = meta

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

    def _make_items(self, n, start, ids, paths, tags, labels, split) -> pa.Table:
        if ids is None:
            ids = [str(start + i) for i in range(n)]
        else:
            ids = per_row(ids, n, "ids")
            for i, v in enumerate(ids):
                if v is None or isinstance(v, bytes):
                    raise TypeError(f"ids: row {i} holds {v!r}; ids are strings")
            ids = [str(i) for i in ids]
            for i, v in enumerate(ids):
                bad = control_character(v)
                if bad is not None:
                    raise ValueError(f"ids: row {i} holds the id {v[:80]!r}, which contains the control character {bad!r}")
            if len(set(ids)) != n:
                raise ValueError("ids: contains duplicates within the batch")
            if len(self) and pc.any(pc.is_in(self.items.column("id"), value_set=pa.array(ids))).as_py():
                raise ValueError("ids: some ids already exist in the store")
        if paths is not None:
            paths = [None if p is None else str(p) for p in per_row(paths, n, "paths")]
        if tags is not None:
            if isinstance(tags, (str, bytes)):
                raise TypeError(
                    f"tags: expected one entry per row (a tag or a list of tags), got the string {tags!r}"[:160]
                    + "; to give every row one tag, pass [[tag]] * n_rows"
                )
            tags = [tag_list(v, i) for i, v in enumerate(per_row(tags, n, "tags"))]
        label: list[int | None] | None = None
        multi: list[list[int]] | None = None
        if labels is not None:
            labels = per_row(labels, n, "labels")
            if any(isinstance(v, (list, tuple, np.ndarray)) for v in labels):
                multi = []
                for i, v in enumerate(labels):
                    if v is None:
                        multi.append([])
                    elif isinstance(v, (list, tuple, np.ndarray)):
                        multi.append([check_label(t, "labels", i, multi=True) for t in v])
                    else:
                        value = check_label(v, "labels", i, multi=False)
                        multi.append([] if value < 0 else [value])
                label = [v[0] if v else None for v in multi]
            else:
                label = [None if v is None else check_label(v, "labels", i, multi=False) for i, v in enumerate(labels)]
                label = [None if v is None or v < 0 else v for v in label]
        if isinstance(split, str):
            split = [split] * n
        elif split is not None:
            split = [None if s is None else str(s) for s in per_row(split, n, "split")]
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

    def _mask_tags(self, tags) -> np.ndarray:
        col = self.items.column("tags").combine_chunks()
        flat = pc.list_flatten(col)
        parents = pc.list_parent_indices(col).to_numpy()
        hit = pc.is_in(flat, value_set=pa.array([str(t) for t in tags], pa.string())).to_numpy(zero_copy_only=False)
        mask = np.zeros(len(self), dtype=bool)
        mask[parents[hit]] = True
        return mask

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
        if not self.is_sparse:
            return self._read(self._arrays["X"], start, stop)
        ip = self._arrays["indptr"]
        if stop <= start:
            return _csr((0, self.dim), dtype=np.float32)
        indptr = np.array(self._read(ip, start, stop + 1))
        self._check_offsets(indptr[:-1], indptr[1:], start, stop)
        lo, hi = int(indptr[0]), int(indptr[-1])
        indices, data = self._read_csr_values(lo, hi)
        return _csr((data, indices, indptr - lo), shape=(stop - start, self.dim))

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
            return _csr((0, self.dim), dtype=np.float32) if self.is_sparse else np.empty((0, self.dim), np.float32)
        order = np.argsort(idx, kind="stable")
        sorted_idx = idx[order]
        if self.is_sparse:
            indptr = self._read(self._arrays["indptr"], 0, len(self) + 1)
            starts, ends = indptr[sorted_idx], indptr[sorted_idx + 1]
            self._check_offsets(starts, ends, int(sorted_idx[0]), int(sorted_idx[-1]) + 1)
            # Read the covering span once, then gather: far fewer reads than per-row ones.
            lo, hi = int(starts.min()), int(ends.max())
            indices, data = self._read_csr_values(lo, hi)
            lengths = ends - starts
            gather = np.concatenate([np.arange(s - lo, e - lo) for s, e in zip(starts, ends)]) if lengths.sum() else np.empty(0, np.int64)
            out_indptr = np.concatenate([[0], np.cumsum(lengths)])
            block = _csr((data[gather], indices[gather], out_indptr), shape=(idx.size, self.dim))
        else:
            a = self._arrays["X"]
            block = np.empty((idx.size, self.dim), np.float32)
            chunk_of = sorted_idx // a.chunk_len
            bounds = np.flatnonzero(np.diff(chunk_of)) + 1
            for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, idx.size]):
                c = int(chunk_of[lo])
                block[lo:hi] = self._chunk(a, c)[sorted_idx[lo:hi] - c * a.chunk_len]
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
                self._stat_chunk(a, c)  # presence and size here; values per block, on the workers
            import zarr

            arr = zarr.open_array(str(self.path / "vectors" / "X"), mode="r")
            view = da.from_zarr(arr, chunks=(chunk_rows or self.chunk_rows, self.dim))[:n]
            return view.map_blocks(_finite_block, str(self.path), dtype=np.float32)
        import dask

        for a in self._arrays.values():
            for c in range(n_chunks(self._committed(a.name), a.chunk_len)):
                self._stat_chunk(a, c)
        rows = chunk_rows or self.chunk_rows
        empty = _csr((0, self.dim), dtype=np.float32) if self.is_sparse else np.empty((0, self.dim), np.float32)
        blocks = [
            da.from_delayed(dask.delayed(self._rows)(lo, min(lo + rows, n)), shape=(min(lo + rows, n) - lo, self.dim), dtype=np.float32, meta=empty)
            for lo in range(0, n, rows)
        ]
        return da.concatenate(blocks, axis=0) if blocks else da.zeros((0, self.dim), dtype=np.float32)
