"""A persistent Hamming index over packed binary codes (FAISS ``IndexBinaryFlat``,
or ``IndexBinaryIVF`` for approximate, sub-linear search).

The codes live in a FAISS binary index file (``faiss.write_index_binary``);
the item ids (e.g. a FeatureStore's ids) and a description of the codes live
in a sidecar ``<path>.ids.npz`` written through ``hardneg._persist``. Both are
written to temporary files first and renamed, the index file last, and the
sidecar records the index file's size, code count and BLAKE2b checksum, so a
torn pair or a damaged index file is detected on load. An index built by
:meth:`HammingIndex.from_store` also records its hasher's
:meth:`~hardneg.hashing.BaseHasher.fingerprint`, and
:meth:`HammingIndex.check_hasher` refuses to encode queries with another one.
Sidecars written before checksums existed load with a logged warning (the
size and shape checks still apply).

Row ids (``row_ids=True``): at 100 million codes a list of string ids would
take gigabytes beside the 800 MB of codes, so such an index keeps none: a
code's id is its row number, the int64 label FAISS stores and returns anyway,
and ids (or a store's item ids) are looked up only for the ``k`` rows a
search returns (:meth:`HammingIndex.ids_of`). The sidecar of such an index
is format version 2 (no id array); version-1 sidecars load as before.
:func:`hardneg.index.build_ivf_index` builds one from a store or any chunked
source of codes, in bounded memory, resuming after a kill (docs/scaling.md).

Approximate mode (``nlist`` given): FAISS ``IndexBinaryIVF`` clusters the
codes into ``nlist`` lists by binary k-means (trained on the first codes
added, or on :meth:`HammingIndex.train`'s sample) and a query scans only the
``nprobe`` lists nearest to it; distances are still exact Hamming distances,
but a true neighbour in an unprobed list is missed. Recall@100 against the
exhaustive scan and the speed-up: docs/methods/hashing.md.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import faiss
import numpy as np

from hardneg._atomic import atomic_path
from hardneg._persist import (
    ArraySpec,
    ModelFileError,
    deserialize_faiss,
    file_digest,
    load_model,
    model_kind,
    save_model,
)
from hardneg._typing import ArrayLike, RandomState
from hardneg._validation import check_k, check_positive_int
from .._parallel._partition import map_partition, open_model, partitions, store_url
from .._parallel._runner import Runner

if TYPE_CHECKING:
    from hardneg.hashing import BaseHasher

__all__ = ["HammingIndex"]

logger = logging.getLogger(__name__)

_KIND = "hamming-index"
_VERSION = 1
_VERSION_ROW_IDS = 2  # no id array: the ids are the row numbers
_SCHEMA = {"ids": ArraySpec("US", 1)}
_MAX_BITS = 1 << 16  # FAISS binary indexes take codes of at most a few thousand bits; far beyond is damage


def _check_codes(codes, n_bytes: int | None, name: str) -> np.ndarray:
    if codes is None or isinstance(codes, (str, bytes)):
        raise TypeError(f"{name}: expected a 2-D uint8 array of packed codes, got {type(codes).__name__}")
    codes = np.asarray(codes)
    if codes.dtype != np.uint8:
        raise TypeError(f"{name}: expected packed codes of dtype uint8, got {codes.dtype} (shape {codes.shape})")
    if codes.ndim != 2:
        raise ValueError(f"{name}: expected shape (n_codes, n_bytes), got {codes.shape}")
    if n_bytes is not None and codes.shape[1] != n_bytes:
        raise ValueError(f"{name}: has {codes.shape[1]} bytes per code but the index holds {n_bytes}-byte codes")
    return np.ascontiguousarray(codes)


def _counting_sort_faster(n_bits: int, k: int) -> bool:
    return n_bits <= 128 and k >= max(500, 6 * n_bits)


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".ids.npz")


def _sidecar_int(path: Path, meta: dict, key: str, low: int, high: int | None = None, *, label: str | None = None) -> int:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        raise ModelFileError(f"{path}: the id sidecar's {label or key}={value!r} is impossible")
    return value


class HammingIndex:
    """Top-k Hamming search over packed codes, with item ids: exact
    (exhaustive), or approximate with an inverted file (``nlist``).

    Parameters
    ----------
    n_bits : int
        Code length; codes are ``ceil(n_bits / 8)`` bytes (padding bits must
        be equal, e.g. zero, as ``np.packbits`` writes them).
    meta : dict, optional
        Free JSON metadata saved with the index.
    nlist : int, optional
        Number of inverted lists of the approximate mode (FAISS
        ``IndexBinaryIVF``); ``None`` (default) searches exhaustively. About
        sqrt(n) to 4 sqrt(n) lists suit n codes; the lists are trained on
        the first codes added (at least ``nlist`` of them; 40 per list or more
        is better) unless :meth:`train` was called.
    nprobe : int
        Lists scanned per query in the approximate mode (more: slower, higher
        recall); saved with the index and changeable at any time.
    row_ids : bool, default=False
        If True, keep no id list: a code's id is its row number (int64),
        and :meth:`search` gives ``str(row)`` as its id; map rows to item
        ids with :meth:`ids_of` or a store's item table, for the ``k`` rows
        returned only. The memory of the ids is then nothing beside FAISS's
        own (for 100 million codes a string array would take gigabytes).
        If False, :meth:`add` keeps the ids given (default: the row numbers
        as strings).

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.index import HammingIndex
    >>> codes = np.packbits(np.eye(8, dtype=bool), axis=1)
    >>> index = HammingIndex(8)
    >>> index.add(codes, ids=[f"img{i}" for i in range(8)])
    >>> res = index.search(codes[:1], k=2)
    >>> str(res.ids[0, 0]), int(res.distances[0, 0]), int(res.distances[0, 1])
    ('img0', 0, 2)
    """

    def __init__(
        self, n_bits: int, *, meta: dict | None = None, nlist: int | None = None, nprobe: int = 16, row_ids: bool = False,
    ):
        if not isinstance(row_ids, (bool, np.bool_)):
            raise TypeError(f"row_ids: expected True or False, got {row_ids!r}")
        self.row_ids = bool(row_ids)
        self.n_bits = check_positive_int(n_bits, "n_bits")
        self.n_bytes = (self.n_bits + 7) // 8
        self.meta = dict(meta or {})
        self.nlist = None if nlist is None else check_positive_int(nlist, "nlist")
        self.nprobe = check_positive_int(nprobe, "nprobe")
        self._index: faiss.IndexBinaryFlat | faiss.IndexBinaryIVF
        if self.nlist is None:
            self._index = faiss.IndexBinaryFlat(8 * self.n_bytes)
        else:
            self._quantizer = faiss.IndexBinaryFlat(8 * self.n_bytes)
            ivf = faiss.IndexBinaryIVF(self._quantizer, 8 * self.n_bytes, self.nlist)
            ivf.own_fields = False  # the quantizer lives as long as self
            self._index = ivf
        self._ids: list[np.ndarray] = []

    @property
    def approximate(self) -> bool:
        """True for the inverted-file (IVF) mode."""
        return self.nlist is not None

    def train(self, codes: ArrayLike) -> None:
        """Cluster a sample of codes into the ``nlist`` inverted lists
        (approximate mode only; the exact mode needs no training).

        Parameters
        ----------
        codes : ndarray of uint8, shape (n_codes, n_bytes)
            Packed codes, at least ``nlist`` of them.
        """
        if not self.approximate:
            raise ValueError("train: only an approximate index (nlist given) is trained")
        if len(self):
            raise ValueError("train: the index already holds codes; train before adding")
        codes = _check_codes(codes, self.n_bytes, "codes")
        if codes.shape[0] < self.nlist:
            raise ValueError(f"codes: {codes.shape[0]} codes cannot train nlist={self.nlist} lists")
        self._index.train(codes)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def ids(self) -> np.ndarray:
        """Item ids of the indexed codes, in the order added (str array of shape (n_codes,)).

        A ``row_ids`` index makes them (its row numbers as strings) on each call: for a large
        index use :meth:`ids_of` on the rows wanted instead.
        """
        if self.row_ids:
            return np.arange(len(self)).astype(str)
        if len(self._ids) > 1:
            self._ids = [np.concatenate(self._ids)]
        return self._ids[0] if self._ids else np.zeros(0, dtype=str)

    def ids_of(self, rows: ArrayLike) -> np.ndarray:
        """Item ids of some index rows (row -1, a place an approximate search left empty: ``""``).

        Parameters
        ----------
        rows : array-like of int
            Index rows, any shape (e.g. a search's ``(n, k)`` rows).

        Returns
        -------
        ndarray of str, the shape of ``rows``
            Their ids: the ids added, or for a ``row_ids`` index the row numbers as strings.
        """
        rows = np.asarray(rows)
        if rows.dtype.kind not in "iu":
            raise TypeError(f"rows: expected integer row numbers, got dtype {rows.dtype}")
        if rows.size and (rows.max() >= len(self) or rows.min() < -1):
            raise ValueError(f"rows: expected rows in -1..{len(self) - 1}, got {rows.min()}..{rows.max()}")
        if self.row_ids:
            found = rows.astype(np.int64).astype(str)
        else:
            table = self.ids
            found = np.take(table, np.maximum(rows, 0)) if rows.size else np.zeros(rows.shape, dtype="<U1")
        return np.where(rows >= 0, found, "") if (rows < 0).any() else found

    def add(self, codes: ArrayLike, ids: ArrayLike | None = None) -> None:
        """Append codes; ``ids`` default to their row numbers as strings.

        Parameters
        ----------
        codes : ndarray of uint8, shape (n_codes, n_bytes)
            Packed codes (``np.packbits`` of ``n_bits``-bit codes). An untrained approximate
            index trains its lists on them first.
        ids : array-like of str, shape (n_codes,), or None, default=None
            Their item ids; None numbers them on from the codes already held.
        """
        codes = _check_codes(codes, self.n_bytes, "codes")
        if self.row_ids:
            if ids is not None:
                raise ValueError("ids: a row_ids index numbers its codes by row; map rows to item ids with ids_of() "
                                 "or the store's item table")
            ids = np.zeros(0, dtype=str)
        elif ids is None:
            ids = np.arange(len(self), len(self) + codes.shape[0]).astype(str)
        ids = np.asarray(ids).astype(str)
        if not self.row_ids and ids.shape != (codes.shape[0],):
            raise ValueError(f"ids: expected {codes.shape[0]} ids, got shape {ids.shape}")
        if ids.size:
            # the narrowest string type: gathering the ids of n x k results copies their width
            ids = ids.astype(f"<U{max(1, int(np.char.str_len(ids).max()))}")
        if codes.shape[0] and not self._index.is_trained:
            if codes.shape[0] < self.nlist:
                raise ValueError(
                    f"codes: the first {codes.shape[0]} codes cannot train nlist={self.nlist} lists; call train() first"
                )
            self._index.train(codes)
        if codes.shape[0]:
            self._index.add(codes)
            if not self.row_ids:
                self._ids.append(ids)

    def rank(self, query_codes: ArrayLike, k: int, *, nprobe: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows: ``(rows int64 (n, k), distances int32 (n, k))``, nearest first.

        Approximate mode: ``nprobe`` overrides the index's for this call; when
        the probed lists hold fewer than ``k`` codes the missing places have
        row -1 and distance ``n_bits + 1``.

        Parameters
        ----------
        query_codes : ndarray of uint8, shape (n, n_bytes)
            Packed query codes.
        k : int
            Neighbours per query, at most the number of codes held.
        nprobe : int or None, default=None
            Lists scanned per query (approximate mode); None uses the index's ``nprobe``.

        Returns
        -------
        rows : ndarray of int64, shape (n, k)
            Index rows of the neighbours, nearest first.
        distances : ndarray of int32, shape (n, k)
            Their Hamming distances.
        """
        if len(self) == 0:
            raise ValueError("the index is empty; add codes first")
        k = check_k(k, len(self))
        q = _check_codes(query_codes, self.n_bytes, "query_codes")
        index = self._index
        if isinstance(index, faiss.IndexBinaryIVF):  # the approximate mode
            probe = min(index.nlist, self.nprobe if nprobe is None else check_positive_int(nprobe, "nprobe"))
            # per-call parameters, not the index's nprobe: concurrent searches may ask for different ones
            params = faiss.SearchParametersIVF()
            params.nprobe = probe
            dist, rows = index.search(q, k, params=params)
            missing = rows < 0
            if missing.any():
                dist[missing] = self.n_bits + 1
            return rows.astype(np.int64, copy=False), dist
        # FAISS's two exact top-k scans give the same rows; a heap wins for small k or long
        # codes, counting sort for large k on short codes (benchmarks/hashing_speed.py)
        index.use_heap = not _counting_sort_faster(self.n_bits, k)  # type: ignore[attr-defined]  # missing from faiss 1.15's stub
        dist, rows = index.search(q, k)
        return rows.astype(np.int64, copy=False), dist

    def search(self, query_codes: ArrayLike, k: int, *, nprobe: int | None = None):
        """Top-``k`` items of each query: a :class:`~hardneg.TopK` with ``ids``, ``rows`` and
        ``distances`` (int32 Hamming distances, ``metric="hamming"``), shape (n, k), nearest
        first; ``result[q]`` is query ``q``'s, iterable as ``(id, distance)`` pairs.

        Before hardneg 0.2 this returned the tuple ``(ids, distances)`` (the reverse of FAISS's
        ``(D, I)``); read ``result.ids`` / ``result.distances`` instead, unpacking raises.
        An approximate search that found fewer than ``k`` codes gives row -1, id ``""``
        and distance ``n_bits + 1`` in the missing places.

        Parameters
        ----------
        query_codes : ndarray of uint8, shape (n, n_bytes)
            Packed query codes.
        k : int
            Neighbours per query, at most the number of codes held.
        nprobe : int or None, default=None
            Lists scanned per query (approximate mode); None uses the index's ``nprobe``.

        Returns
        -------
        TopK
            ``ids``, ``rows`` and ``distances`` of shape (n, k), ``metric="hamming"``.
        """
        from hardneg._topk import TopK

        rows, dist = self.rank(query_codes, k, nprobe=nprobe)
        result = TopK(rows, dist, rows.shape[1], len(self), metric="hamming")
        if self.row_ids:  # ids of the k rows found only, never a table of every code's
            return dataclasses.replace(result, ids=self.ids_of(rows))
        return result.with_ids(self.ids)

    def codes(self) -> np.ndarray:
        """All stored codes in the order added, shape (n, n_bytes).

        Returns
        -------
        ndarray of uint8, shape (n_codes, n_bytes)
            The packed codes.
        """
        index = self._index
        if isinstance(index, faiss.IndexBinaryIVF):  # the approximate mode
            if len(self) == 0:
                return np.zeros((0, self.n_bytes), dtype=np.uint8)
            index.make_direct_map()
            return index.reconstruct_n(0, len(self)).reshape(len(self), self.n_bytes)
        return faiss.vector_to_array(index.xb).reshape(len(self), self.n_bytes)  # type: ignore[attr-defined]  # missing from faiss 1.15's stub

    def to_approximate(self, nlist: int, nprobe: int = 16, *, random_state: RandomState = 0) -> HammingIndex:
        """A copy in the approximate (IVF) mode, with the same codes, ids and
        metadata; its lists are trained on up to 40 * ``nlist`` codes drawn
        at random (``random_state``).

        Parameters
        ----------
        nlist : int
            Number of inverted lists, at most the number of codes held.
        nprobe : int, default=16
            Lists scanned per query.
        random_state : int, numpy.random.Generator or None, default=0
            Seed of the training sample.

        Returns
        -------
        HammingIndex
            The approximate copy (this index is unchanged).
        """
        nlist = check_positive_int(nlist, "nlist")  # as HammingIndex() checks it (n_bits is valid)
        out = HammingIndex(self.n_bits, meta=self.meta, nlist=nlist, nprobe=nprobe, row_ids=self.row_ids)
        if len(self) < nlist:
            raise ValueError(f"nlist={nlist}: the index holds only {len(self)} codes")
        codes = self.codes()
        rng = np.random.default_rng(random_state)
        sample = np.sort(rng.choice(len(self), min(len(self), 40 * nlist), replace=False))
        out.train(codes[sample])
        out.add(codes, None if self.row_ids else self.ids)
        return out

    # persistence ---------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Write the index file and its ``<path>.ids.npz`` sidecar (atomically, index last).

        Parameters
        ----------
        path : str or path-like
            The index file; the sidecar is written beside it.

        Returns
        -------
        Path
            ``path``.
        """
        path = Path(path)
        with atomic_path(path) as tmp:
            faiss.write_index_binary(self._index, str(tmp))
            meta = {
                "n_bits": self.n_bits, "ntotal": len(self), "index_bytes": tmp.stat().st_size,
                "index_blake2b": file_digest(tmp), "meta": self.meta,
            }
            if self.approximate:
                meta["ivf"] = {"nlist": self.nlist, "nprobe": self.nprobe}
            if self.row_ids:
                meta["row_ids"] = True
                save_model(_sidecar(path), _KIND, _VERSION_ROW_IDS, {"ids": np.zeros(0, dtype="<U1")}, meta)
            else:
                save_model(_sidecar(path), _KIND, _VERSION, {"ids": self.ids}, meta)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> HammingIndex:
        """Read an index written by :meth:`save`; :class:`ModelFileError` (one line)
        if either file is missing, damaged, or does not belong to the other.

        Parameters
        ----------
        path : str or path-like
            The index file (its ``.ids.npz`` sidecar must lie beside it).

        Returns
        -------
        HammingIndex
            The index, in the mode (exact or approximate) it was saved in.
        """
        path = Path(path)
        if not path.is_file():
            raise ModelFileError(f"index file {str(path)!r} does not exist")
        if not _sidecar(path).is_file():
            try:
                other = model_kind(path)
            except ModelFileError:
                other = None
            if other is not None:  # a hardneg model file, of another kind
                raise ModelFileError(f"{path}: holds a {other!r} model, expected {_KIND!r} (hardneg.load(path) reads any model file)")
            raise ModelFileError(f"{path}: not a Hamming index written by hardneg (no id sidecar {_sidecar(path).name} beside it)")
        arrays, meta = load_model(_sidecar(path), _KIND, (_VERSION, _VERSION_ROW_IDS), schema=_SCHEMA)
        row_ids = meta.get("row_ids", False) is True
        n_bits = _sidecar_int(path, meta, "n_bits", 1, _MAX_BITS)
        ntotal = _sidecar_int(path, meta, "ntotal", 0)
        size = _sidecar_int(path, meta, "index_bytes", 1)
        if not isinstance(meta.get("meta", {}), dict):
            raise ModelFileError(f"{path}: the id sidecar's 'meta' is not a JSON object")
        if path.stat().st_size != size:
            raise ModelFileError(f"{path}: index file and its id sidecar do not match (interrupted write?)")
        digest = meta.get("index_blake2b")
        if digest is None:
            logger.warning("%s: index written without a checksum by an older hardneg; re-save it to add one", path)
        elif file_digest(path) != digest:
            raise ModelFileError(f"{path}: the index file does not match its checksum (damaged, edited or from another index)")
        try:
            index = deserialize_faiss(path, binary=True)
        except ValueError as exc:
            raise ModelFileError(f"{path}: {exc}") from None
        ivf = meta.get("ivf")
        if ivf is None:
            out = cls(n_bits, meta=meta.get("meta"), row_ids=row_ids)
            expected = (
                isinstance(index, faiss.IndexBinaryFlat)
                and index.xb.size() == ntotal * out.n_bytes  # type: ignore[attr-defined]  # missing from faiss 1.15's stub
            )
        else:
            ivf = ivf if isinstance(ivf, dict) else {}
            nlist = _sidecar_int(path, ivf, "nlist", 1, label="ivf nlist")
            nprobe = _sidecar_int(path, ivf, "nprobe", 1, label="ivf nprobe")
            out = cls(n_bits, meta=meta.get("meta"), nlist=nlist, nprobe=nprobe, row_ids=row_ids)
            expected = (
                isinstance(index, faiss.IndexBinaryIVF) and index.nlist == nlist and index.is_trained
                and index.quantizer.ntotal == nlist
            )
        if (
            not expected or index.d != 8 * out.n_bytes or index.code_size != out.n_bytes
            or index.ntotal != ntotal or arrays["ids"].shape != ((0,) if row_ids else (ntotal,))
        ):
            raise ModelFileError(f"{path}: index holds {index.ntotal} codes of {index.d} bits, sidecar disagrees")
        if out.approximate:
            out._quantizer = index.quantizer
        out._index = index
        out._ids = [] if row_ids else [arrays["ids"].astype(str)]
        return out

    def check_hasher(self, hasher: BaseHasher) -> None:
        """Raise ``ValueError`` unless ``hasher`` is the one the index was built with.

        Compares code lengths, and the fingerprints when the index recorded
        one (indexes built by :meth:`from_store`); without one (an index built
        by hand, or by an older hardneg) only the code length can be checked,
        and a warning is logged.

        Parameters
        ----------
        hasher : BaseHasher
            A fitted hasher (``n_bits_`` and :meth:`~hardneg.hashing.BaseHasher.fingerprint`).
        """
        n_bits = int(hasher.n_bits_)
        if n_bits != self.n_bits:
            raise ValueError(f"the index holds {self.n_bits}-bit codes but the hasher makes {n_bits}-bit codes")
        recorded = self.meta.get("hasher_fingerprint")
        if recorded is None:
            logger.warning("the index records no hasher fingerprint: cannot check that its codes come from this hasher")
            return
        if recorded != hasher.fingerprint():
            raise ValueError(
                f"the index was built with another hasher ({self.meta.get('hasher', '?')} {str(recorded)[:12]}), "
                f"not this {type(hasher).__name__} ({hasher.fingerprint()[:12]}); rebuild the index with this hasher"
            )

    def check_store(self, store) -> None:
        """Raise ``ValueError`` when a ``row_ids`` index no longer numbers ``store``'s rows.

        Such an index returns row numbers that are looked up in the store at query time, so its
        row ``r`` must still hold the code of the store's row ``r``. The row counts must match,
        and when the build recorded the store's :meth:`~hardneg.store.FeatureStore.vectors_digest`
        (:func:`build_ivf_index` from a :class:`StoreCodes`) so must the digest: items removed
        and as many appended keep the count but change it. Label and tag edits change neither.
        An index with its own ids is not checked here (its ids are compared with the store's).

        Parameters
        ----------
        store : FeatureStore
            The store whose rows the index numbers.
        """
        if not self.row_ids:
            return
        if len(self) != len(store):
            raise ValueError(f"the index holds {len(self):,} codes but the store has {len(store):,} rows")
        recorded, now = self.meta.get("source_digest"), store.vectors_digest()
        if recorded and now and recorded != now:
            raise ValueError(f"the store's vectors changed since the index was built (items removed, appended or "
                             f"rebuilt; still {len(store):,} rows), so its rows are no longer the index's")

    @classmethod
    def from_store(
        cls, store, hasher, *, chunk_rows: int = 8192, progress=None, nlist: int | None = None, nprobe: int = 16,
        runner=None, partition_rows: int | None = None,
    ) -> HammingIndex:
        """Encode every row of a FeatureStore with a fitted hasher and index it,
        in this process or on a Dask cluster (``runner``; see
        :func:`hardneg.distributed.get_runner`): the same index, byte for byte.

        The store is encoded partition by partition (``partition_rows``, whole
        chunks), ``chunk_rows`` rows at a time; ``progress(n_rows)`` after each
        partition. ``hasher`` may be a model-file path (each worker opens it).
        With ``nlist`` the index is approximate and its lists are trained first on
        the codes of up to 40 * ``nlist`` rows drawn evenly from the store.

        Parameters
        ----------
        store : FeatureStore or str
            The store, or its path or URL.
        hasher : BaseHasher or str
            A fitted hasher, or the path of its model file.
        chunk_rows : int, default=8192
            Rows encoded per block.
        progress : callable or None, default=None
            Called with the number of rows of each partition when it is done.
        nlist : int or None, default=None
            Inverted lists of an approximate index; None builds an exact one.
        nprobe : int, default=16
            Lists scanned per query (approximate mode).
        runner : Runner or None, default=None
            Where partitions are encoded (:func:`hardneg.distributed.get_runner`);
            None runs them in this process.
        partition_rows : int or None, default=None
            Rows per partition, rounded up to whole store chunks; None picks about 64 MiB of rows.

        Returns
        -------
        HammingIndex
            The index of every store row, with the store's ids, in row order.
        """
        import functools

        from hardneg.store import FeatureStore

        runner = runner or Runner()
        st = store if hasattr(store, "iter_chunks") else FeatureStore.open(store)
        h = open_model(hasher, "hasher")
        if getattr(h, "n_features_in_", st.dim) != st.dim:
            raise ValueError(f"{st.path} has {st.dim}-d features but the hasher expects {h.n_features_in_}")
        block_rows = check_positive_int(chunk_rows, "chunk_rows")
        n_bits = int(h.n_bits_)
        index = cls(n_bits, meta={"hasher": type(h).__name__, "hasher_fingerprint": h.fingerprint(),
                             "store": str(getattr(st, "path", ""))}, nlist=nlist, nprobe=nprobe)
        ids = st.ids()
        if index.nlist is not None:  # index.approximate
            n = len(st)
            if n < index.nlist:
                raise ValueError(f"nlist={index.nlist}: the store holds only {n} rows")
            sample = np.unique(np.linspace(0, n - 1, min(n, 40 * index.nlist)).astype(np.int64))
            block = st.take(sample)
            index.train(h.transform(block.toarray() if hasattr(block, "toarray") else block))
        func = functools.partial(encode_partition, store=store_url(st.path), hasher=runner.share(hasher), block_rows=block_rows)
        parts = partitions(st, partition_rows)
        done = runner.map_ordered(func, parts, progress=None if progress is None else (lambda p: progress(p.size)))
        for part, codes in zip(parts, done):
            if codes.shape[0] != part.size:
                raise RuntimeError(f"partition {part}: {codes.shape[0]} codes for {part.size} rows")
            index.add(codes, ids[part.lo : part.hi])
        logger.info("indexed %d codes of %d bits", len(index), n_bits)
        return index


def encode_partition(part, *, store: str, hasher, block_rows: int) -> np.ndarray:
    """Packed codes (uint8) of one partition's rows, in row order (a worker's task)."""

    return map_partition(store, part, block_rows, open_model(hasher, "hasher").transform)
