"""Reading a store's vector chunks, and the checks made on reading them.

As zarr-python separates where bytes live (``LocalStore``, ``FsspecStore``) from
what they mean (``Array``), a :class:`ChunkReader` is the one interface through
which :class:`~hardneg.store.FeatureStore` reads its arrays: :class:`LocalChunks`
memory-maps the chunk files of a local folder, :class:`RemoteChunks` fetches
each chunk of a :class:`~hardneg.store._remote.RemoteFolder` whole (one request)
and keeps the last few. Everything above :meth:`ChunkReader._load` is shared:
the first-touch checks (presence and exact size; every committed value of a
dense chunk finite), the full checks of copied CSR values and row offsets, and
the assembly of row blocks (dense views, or CSR matrices).

Reads do not hash chunks; :mod:`hardneg.store._verify` does (``verify``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._errors import StoreDamagedError, StoreError
from ._finite import all_finite
from ._meta import ARRAY_TYPES, META, check_layouts, first_line
from ._remote import RemoteFolder, RemoteReadError


@dataclass(frozen=True)
class StoreArray:
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


def csr(*args, **kwargs):
    """``scipy.sparse.csr_matrix``: SciPy is imported for sparse stores only (it costs a start ~0.3 s)."""
    import scipy.sparse as sp

    return sp.csr_matrix(*args, **kwargs)


def finite_block(block: np.ndarray, where: str) -> np.ndarray:
    """``block`` if it is all finite (a Dask block of a dense store), else :class:`StoreDamagedError`."""
    if not all_finite(block):
        raise StoreDamagedError(where, "vectors/X", "is damaged: a block holds NaN or infinity, which the store never writes")
    return block


class ChunkReader:
    """The chunks of one open store, read and checked; subclasses say where the bytes are (:meth:`_load`).

    ``meta`` is the store's committed ``meta.json`` (the owning store replaces it at
    each commit): it says how many rows and values are committed, so how much of a
    chunk is checked.
    """

    local = True

    def __init__(self, path: Path | RemoteFolder, meta: dict):
        self.path = path
        self.meta = meta
        self.arrays: dict[str, StoreArray] = {}
        self._checked: set[tuple[str, int]] = set()  # chunks that passed the first-touch checks

    @property
    def n_rows(self) -> int:
        return int(self.meta["n_rows"])

    @property
    def nnz(self) -> int:
        return int(self.meta["nnz"])

    @property
    def dim(self) -> int:
        return int(self.meta["dim"])

    def open_arrays(self) -> dict[str, StoreArray]:
        """Check the arrays' layouts against ``meta.json`` (and a CSR store's first and last offset)."""
        n, nnz, dim = self.n_rows, self.nnz, self.dim
        widths = {"X": dim, "indptr": 1, "indices": 1, "data": 1}
        self.arrays = {name: StoreArray(name, np.dtype(ARRAY_TYPES[name]), widths[name], chunk_len, length)
                       for name, (chunk_len, length) in check_layouts(self.path, self.meta).items()}
        if self.meta["sparse"] and n:
            ends = self.read(self.arrays["indptr"], 0, 1)[0], self.read(self.arrays["indptr"], n, n + 1)[0]
            if ends != (0, nnz):
                raise StoreError(f"{self.path}: vectors/indptr runs from {ends[0]} to {ends[1]} but {META} says nnz={nnz} (offsets must run from 0)")
        return self.arrays

    def committed(self, name: str) -> int:
        """Committed rows of array ``name``. A CSR store without rows has no
        committed offsets yet (its implicit first offset, 0, comes with the
        first row)."""
        n = self.n_rows
        return {"X": n, "indptr": n + 1 if n else 0}.get(name, self.nnz)

    # ------------------------------------------------------------------ one chunk
    def _load(self, a: StoreArray, c: int) -> np.ndarray:
        """Chunk ``c`` of ``a``, whole (FileNotFoundError, OSError or ValueError if it cannot be)."""
        raise NotImplementedError

    def stat(self, a: StoreArray, c: int) -> None:
        """Chunk ``c`` of ``a`` must exist with its exact size."""
        key = a.key(c)
        try:
            size = (self.path / key).stat().st_size
        except FileNotFoundError:
            first = c * a.chunk_len
            last = min(first + a.chunk_len, self.committed(a.name)) - 1
            raise StoreDamagedError(str(self.path), key, f"is missing ({'rows' if a.name in ('X', 'indptr') else 'values'} {first}-{last})") from None
        except OSError as exc:
            raise StoreDamagedError(str(self.path), key, f"cannot be read ({exc.strerror or exc})") from None
        if size != a.chunk_bytes:
            raise StoreDamagedError(str(self.path), key, f"is damaged: {size} bytes, expected {a.chunk_bytes}")

    def chunk(self, a: StoreArray, c: int) -> np.ndarray:
        """Chunk ``c`` of ``a`` as a read-only array, checked the first time."""
        first = (a.name, c) not in self._checked
        if first:
            self.stat(a, c)
        try:
            m = self._load(a, c)
        except FileNotFoundError:
            raise StoreDamagedError(str(self.path), a.key(c), "is missing") from None
        except RemoteReadError:  # the server or the network, not the store
            raise
        except (ValueError, OSError) as exc:  # shrunk since the check
            raise StoreDamagedError(str(self.path), a.key(c), f"is damaged ({first_line(exc)})") from None
        if first:
            if a.name == "X":
                self.check_finite(a, c, m)
            self._checked.add((a.name, c))
        return m

    def check_finite(self, a: StoreArray, c: int, m: np.ndarray) -> None:
        """Every committed value of dense chunk ``c`` must be finite (the store never writes NaN or infinity).

        Checked in full the first time a store object touches the chunk (a
        sampled check let one NaN in a 65,536-row chunk through 18 times in
        20), so a damaged value never reaches a scorer; later reads of the
        chunk are free.
        """
        rows = min(a.chunk_len, self.committed(a.name) - c * a.chunk_len)
        if rows > 0 and not all_finite(np.asarray(m)[:rows]):
            raise StoreDamagedError(str(self.path), a.key(c), "is damaged: it holds NaN or infinity, which the store never writes")

    def check_values(self, a: StoreArray, first: int, values: np.ndarray, key: str, *, prev: int | None = None) -> None:
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

    # ------------------------------------------------------------------ ranges and rows
    def keys(self, a: StoreArray, lo: int, hi: int) -> str:
        first, last = lo // a.chunk_len, max(hi - 1, lo) // a.chunk_len
        return a.key(first) if first == last else f"{a.key(first)}..{last}"

    def read(self, a: StoreArray, lo: int, hi: int) -> np.ndarray:
        """Rows ``lo..hi`` of ``a``: a read-only view when they lie in one chunk."""
        if hi <= lo:
            return np.empty((0,) + a.shape[1:], a.dtype)
        L = a.chunk_len
        pieces = [self.chunk(a, c)[max(lo - c * L, 0) : min(hi - c * L, L)] for c in range(lo // L, (hi - 1) // L + 1)]
        return np.asarray(pieces[0]) if len(pieces) == 1 else np.concatenate(pieces)

    def read_csr_values(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Column indices and values ``lo..hi`` of a CSR store, checked in full (they are copied anyway)."""
        ind, dat = self.arrays["indices"], self.arrays["data"]
        indices, data = np.array(self.read(ind, lo, hi)), np.array(self.read(dat, lo, hi))
        self.check_values(ind, lo, indices, self.keys(ind, lo, hi))
        self.check_values(dat, lo, data, self.keys(dat, lo, hi))
        return indices, data

    def check_offsets(self, starts: np.ndarray, ends: np.ndarray, first_row: int, last_row: int) -> None:
        if starts.size and (starts.min() < 0 or ends.max() > self.nnz or (ends < starts).any()):
            ip = self.arrays["indptr"]
            raise StoreDamagedError(str(self.path), self.keys(ip, first_row, last_row + 1), f"is damaged: row offsets out of order or outside 0..{self.nnz}")

    def rows(self, start: int, stop: int):
        """Rows ``start..stop``: a dense block (a read-only view within one chunk) or a CSR matrix."""
        if not self.meta["sparse"]:
            return self.read(self.arrays["X"], start, stop)
        ip = self.arrays["indptr"]
        if stop <= start:
            return csr((0, self.dim), dtype=np.float32)
        indptr = np.array(self.read(ip, start, stop + 1))
        self.check_offsets(indptr[:-1], indptr[1:], start, stop)
        lo, hi = int(indptr[0]), int(indptr[-1])
        indices, data = self.read_csr_values(lo, hi)
        return csr((data, indices, indptr - lo), shape=(stop - start, self.dim))

    def gather(self, sorted_idx: np.ndarray):
        """The rows ``sorted_idx`` (ascending, in range, not empty), in that order, as one block."""
        n = sorted_idx.size
        if self.meta["sparse"]:
            indptr = self.read(self.arrays["indptr"], 0, self.n_rows + 1)
            starts, ends = indptr[sorted_idx], indptr[sorted_idx + 1]
            self.check_offsets(starts, ends, int(sorted_idx[0]), int(sorted_idx[-1]) + 1)
            # Read the covering span once, then gather: far fewer reads than per-row ones.
            lo, hi = int(starts.min()), int(ends.max())
            indices, data = self.read_csr_values(lo, hi)
            lengths = ends - starts
            gather = np.concatenate([np.arange(s - lo, e - lo) for s, e in zip(starts, ends)]) if lengths.sum() else np.empty(0, np.int64)
            out_indptr = np.concatenate([[0], np.cumsum(lengths)])
            return csr((data[gather], indices[gather], out_indptr), shape=(n, self.dim))
        a = self.arrays["X"]
        block = np.empty((n, self.dim), np.float32)
        chunk_of = sorted_idx // a.chunk_len
        bounds = np.flatnonzero(np.diff(chunk_of)) + 1
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, n]):
            c = int(chunk_of[lo])
            block[lo:hi] = self.chunk(a, c)[sorted_idx[lo:hi] - c * a.chunk_len]
        return block


class LocalChunks(ChunkReader):
    """Chunks of a local folder, memory-mapped (scans run at page-cache speed)."""

    path: Path

    def _load(self, a: StoreArray, c: int) -> np.ndarray:
        return np.memmap(self.path / a.key(c), dtype=a.dtype, mode="r", shape=a.shape)


class RemoteChunks(ChunkReader):
    """Chunks of a remote folder: each read whole (one request), the last few kept, so nearby reads do not fetch again."""

    local = False
    path: RemoteFolder
    KEEP = 4  # bounded: 4 chunks of ~16 MiB

    def __init__(self, path: RemoteFolder, meta: dict):
        super().__init__(path, meta)
        self._recent: dict[tuple[str, int], np.ndarray] = {}

    def _load(self, a: StoreArray, c: int) -> np.ndarray:
        key = (a.name, c)
        if key not in self._recent:
            raw = (self.path / a.key(c)).read_bytes(max_bytes=a.chunk_bytes)
            if len(raw) != a.chunk_bytes:
                raise ValueError(f"{len(raw)} bytes, expected {a.chunk_bytes}")
            if len(self._recent) >= self.KEEP:
                self._recent.pop(next(iter(self._recent)))
            self._recent[key] = np.frombuffer(raw, dtype=a.dtype).reshape(a.shape)
        return self._recent[key]


def chunk_reader(path: Path | RemoteFolder, meta: dict) -> ChunkReader:
    """The reader for a store at ``path`` (local or remote) whose ``meta.json`` is ``meta``."""
    return RemoteChunks(path, meta) if isinstance(path, RemoteFolder) else LocalChunks(path, meta)
