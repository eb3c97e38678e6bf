"""Build an approximate Hamming index (FAISS ``IndexBinaryIVF``) from a chunked
source of codes, in bounded memory, resuming after a kill.

FAISS's own ``IndexBinaryIVF.add`` assigns each code to its nearest list
(``quantizer->assign``, an exhaustive Hamming search over the ``nlist``
centroids) and appends it there, in one call that holds every code; a build
killed in it starts again from nothing. Here the work is cut where FAISS cuts
it (``IndexBinaryIVF::add_core(n, x, xids, precomputed_idx)`` takes the list
numbers precomputed, faiss/IndexBinaryIVF.cpp) and each step is saved:

1. *train*: binary k-means (``IndexBinaryIVF.train``) on a sample of rows
   drawn with ``random_state``; the ``nlist`` centroids are saved
   (``quantizer.npz``);
2. *assign*: per chunk of the source, the codes and their lists (the
   nearest centroid, what ``quantizer->assign`` computes; here with the CPU's
   popcount, :func:`~hardneg.index._nearest.nearest_centroid`) are saved as ``chunk-NNNNNN.npz``; a chunk
   whose file is there and whole is skipped, so a rerun after a kill resumes
   at the first missing chunk;
3. *finish*: the chunks are read back one at a time and appended with their
   precomputed lists (``add_core``); the index is written atomically
   (:meth:`HammingIndex.save`, temporary file + rename), then the work folder
   is removed.

Every checkpoint is written to a temporary file and renamed, and records its
row range and a BLAKE2b checksum of its arrays; one that is torn, damaged or
of another build is logged and redone. The work folder's ``plan.json`` holds
the build's settings; a rerun with other settings is refused (one
``ValueError`` naming the folder) rather than mixing two builds.

Memory: one chunk of the source at a time in the first two steps; the last
holds the index itself (per code its ``n_bytes`` bytes and an int64 row id,
what FAISS's inverted lists store) and one chunk. The index keeps no id list
(``row_ids=True``): a code's id is its source row.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import faiss
import numpy as np

from hardneg._atomic import atomic_path
from hardneg._typing import RandomState
from hardneg._validation import check_positive_int
from .._parallel._partition import open_model, partitions, store_url
from ._hamming import HammingIndex, _check_codes, encode_partition
from ._nearest import nearest_centroid

if TYPE_CHECKING:
    from hardneg.hashing import BaseHasher
    from hardneg.store import FeatureStore

__all__ = ["ArrayCodes", "CodeSource", "IVFBuilder", "StoreCodes", "build_ivf_index"]

logger = logging.getLogger(__name__)

_PLAN_VERSION = 1


class CodeSource:
    """What :class:`IVFBuilder` reads (base class; any object with these members will do):
    ``n_rows`` packed codes of ``n_bits`` bits, in ``n_chunks`` chunks addressable in any
    order (a rerun reads only the missing ones). The same chunk must give the same codes on
    every call.

    ``digest`` (optional, default None) names the content of the codes' source: a build records
    it in its plan (a resume then refuses a source that changed) and in the index's meta as
    ``"source_digest"`` (:meth:`HammingIndex.check_store` compares it with the store's).
    """

    n_rows: int
    n_bits: int
    n_chunks: int
    digest: str | None = None

    def bounds(self, j: int) -> tuple[int, int]:
        """Row range of chunk ``j``.

        Parameters
        ----------
        j : int
            Chunk number, ``0 <= j < n_chunks``.

        Returns
        -------
        tuple of int
            ``(lo, hi)``: the chunk holds rows ``lo..hi-1``; the chunks cover ``0..n_rows`` in order.
        """
        raise NotImplementedError

    def chunk(self, j: int) -> np.ndarray:
        """Codes of chunk ``j``.

        Parameters
        ----------
        j : int
            Chunk number.

        Returns
        -------
        ndarray of uint8, shape (hi - lo, n_bytes)
            The packed codes of its rows, in row order.
        """
        raise NotImplementedError

    def take(self, rows: np.ndarray) -> np.ndarray:
        """Codes of some rows (the training sample).

        Parameters
        ----------
        rows : ndarray of int64
            Sorted, distinct rows.

        Returns
        -------
        ndarray of uint8, shape (len(rows), n_bytes)
            Their packed codes.
        """
        raise NotImplementedError


class ArrayCodes(CodeSource):
    """Packed codes already in an array (e.g. an ``np.memmap`` of a codes file) as a
    :class:`CodeSource`, ``chunk_rows`` rows per chunk.

    Parameters
    ----------
    codes : ndarray of uint8, shape (n_rows, n_bytes)
        Packed codes; a memory map is read one chunk at a time.
    n_bits : int, optional
        Code length; default ``8 * n_bytes``.
    chunk_rows : int, default=1_000_000
        Rows per chunk (per checkpoint file).
    """

    def __init__(self, codes: np.ndarray, *, n_bits: int | None = None, chunk_rows: int = 1_000_000):
        if codes is None or isinstance(codes, (str, bytes)) or not hasattr(codes, "dtype"):
            raise TypeError(f"codes: expected a 2-D uint8 array (or memory map) of packed codes, got {type(codes).__name__}")
        if codes.dtype != np.uint8:
            raise TypeError(f"codes: expected packed codes of dtype uint8, got {codes.dtype} (shape {codes.shape})")
        if codes.ndim != 2 or codes.shape[1] == 0:
            raise ValueError(f"codes: expected shape (n_codes, n_bytes), got {codes.shape}")
        if codes.shape[0] == 0:
            raise ValueError("codes: no codes to index (0 rows)")
        self.codes = codes
        self.n_rows = int(codes.shape[0])
        self.n_bits = 8 * codes.shape[1] if n_bits is None else check_positive_int(n_bits, "n_bits")
        if (self.n_bits + 7) // 8 != codes.shape[1]:
            raise ValueError(f"n_bits={self.n_bits}: codes of {codes.shape[1]} bytes hold {8 * codes.shape[1] - 7} to "
                             f"{8 * codes.shape[1]} bits")
        self.chunk_rows = check_positive_int(chunk_rows, "chunk_rows")
        self.n_chunks = -(-self.n_rows // self.chunk_rows)

    def bounds(self, j: int) -> tuple[int, int]:
        return j * self.chunk_rows, min(self.n_rows, (j + 1) * self.chunk_rows)

    def chunk(self, j: int) -> np.ndarray:
        lo, hi = self.bounds(j)
        return np.ascontiguousarray(self.codes[lo:hi])

    def take(self, rows: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(self.codes[rows])


class StoreCodes(CodeSource):
    """A FeatureStore's rows encoded by a fitted hasher, as a :class:`CodeSource`: one chunk
    per partition of whole store chunks (``chunk_rows`` rows or a little more), encoded
    ``block_rows`` rows at a time when the builder asks for it.

    Parameters
    ----------
    store : FeatureStore or str
        The store, or its path or URL.
    hasher : BaseHasher or str
        A fitted hasher of Hamming codes, or its model file.
    chunk_rows : int, default=1_000_000
        Rows per chunk (rounded up to whole store chunks).
    block_rows : int, default=8192
        Rows encoded per call of the hasher.
    """

    def __init__(self, store: FeatureStore | str | os.PathLike, hasher: BaseHasher | str | os.PathLike, *,
                 chunk_rows: int = 1_000_000, block_rows: int = 8192):
        from hardneg.store import FeatureStore

        self.store = cast(FeatureStore, store if hasattr(store, "iter_chunks") else FeatureStore.open(store))
        self.hasher = open_model(hasher, "hasher")
        if getattr(self.hasher, "n_features_in_", self.store.dim) != self.store.dim:
            raise ValueError(f"{self.store.path} has {self.store.dim}-d features but the hasher expects "
                             f"{self.hasher.n_features_in_}")
        self.n_rows = len(self.store)
        if self.n_rows == 0:
            raise ValueError(f"{self.store.path}: the store is empty")
        self.n_bits = int(self.hasher.n_bits_)
        self.block_rows = check_positive_int(block_rows, "block_rows")
        self._url = store_url(self.store.path)
        self.digest = self.store.vectors_digest()
        self._parts = partitions(self.store, check_positive_int(chunk_rows, "chunk_rows"))
        self.n_chunks = len(self._parts)

    def bounds(self, j: int) -> tuple[int, int]:
        part = self._parts[j]
        return int(part.lo), int(part.hi)

    def chunk(self, j: int) -> np.ndarray:
        return encode_partition(self._parts[j], store=self._url, hasher=self.hasher, block_rows=self.block_rows)

    def take(self, rows: np.ndarray) -> np.ndarray:
        block = self.store.take(rows)
        return self.hasher.transform(block.toarray() if hasattr(block, "toarray") else block)


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(np.ascontiguousarray(a).data)
    return h.hexdigest()


def _write_checked(path: Path, **arrays: np.ndarray) -> None:
    """``np.savez`` (no pickle) through a temporary file, with a checksum of the arrays."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        payload: dict[str, Any] = {"digest": np.array(_digest(*arrays.values())), **arrays}
        np.savez(fh, **payload)


def _read_checked(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The arrays of a file :func:`_write_checked` wrote, or None (logged) if it is torn or damaged."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {n: z[n] for n in names}
            digest = str(z["digest"])
    except Exception as exc:  # a torn zip raises any of zipfile's, numpy's or OS errors
        logger.warning("%s: unreadable checkpoint (%s); redoing it", path, str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__)
        return None
    if _digest(*out.values()) != digest:
        logger.warning("%s: checkpoint does not match its checksum; redoing it", path)
        return None
    return out


class IVFBuilder:
    """The three resumable steps of :func:`build_ivf_index` (``train``, ``assign``,
    ``finish``), callable one by one (e.g. to time them); :meth:`run` does all three.

    Parameters
    ----------
    source : CodeSource
        The codes (:class:`ArrayCodes`, :class:`StoreCodes`, or any object of that shape).
    path : str or path-like
        The index file to write (with its ``.ids.npz`` sidecar).
    nlist : int
        Inverted lists (at most the number of codes).
    nprobe : int, default=16
        Lists scanned per query, saved with the index.
    work_dir : str or path-like, optional
        Checkpoint folder; default ``<path>.build`` beside the index. A rerun with the same
        folder and settings resumes there.
    n_train : int, optional
        Rows of the training sample; default ``min(n_rows, 64 * nlist)`` (FAISS's k-means
        samples at most 256 per list anyway).
    random_state : int, numpy.random.Generator or None, default=0
        Seed of the training sample (an int is recorded in the plan; None draws one).
    meta : dict, optional
        JSON metadata saved with the index.
    progress : callable or None, default=None
        ``progress(n)`` after each chunk is assigned (chunks found done first), ``n`` its rows:
        the calls add up to the source's rows.
    keep_work : bool, default=False
        Keep the checkpoint folder after the index is written.
    """

    def __init__(
        self, source: CodeSource, path: str | os.PathLike, *, nlist: int, nprobe: int = 16,
        work_dir: str | os.PathLike | None = None, n_train: int | None = None, random_state: RandomState = 0,
        meta: dict | None = None, progress: Callable[[int], Any] | None = None, keep_work: bool = False,
    ):
        for name in ("n_rows", "n_bits", "n_chunks", "bounds", "chunk", "take"):
            if not hasattr(source, name):
                raise TypeError(f"source: expected a CodeSource (n_rows, n_bits, n_chunks, bounds, chunk, take), "
                                f"{type(source).__name__} has no {name!r}")
        self.source = source
        self.n_rows = check_positive_int(source.n_rows, "source.n_rows")
        self.n_bits = check_positive_int(source.n_bits, "source.n_bits")
        self.n_bytes = (self.n_bits + 7) // 8
        self.nlist = check_positive_int(nlist, "nlist")
        if self.nlist > self.n_rows:
            raise ValueError(f"nlist={self.nlist}: more lists than the {self.n_rows:,} codes to index")
        self.nprobe = check_positive_int(nprobe, "nprobe")
        self.path = Path(path)
        self.work_dir = Path(work_dir) if work_dir is not None else self.path.with_name(self.path.name + ".build")
        self.n_train = min(self.n_rows, 64 * self.nlist if n_train is None else check_positive_int(n_train, "n_train"))
        if self.n_train < self.nlist:
            raise ValueError(f"n_train={self.n_train}: cannot train nlist={self.nlist} lists")
        if isinstance(random_state, np.random.Generator):
            random_state = int(random_state.integers(2**31))
        self.seed = int(np.random.SeedSequence(random_state).generate_state(1)[0]) if random_state is None else random_state
        self.meta = dict(meta or {})
        self.progress = progress
        self.keep_work = keep_work
        self.chunks_redone = 0  # chunks assigned by this builder (not found done)
        self._quantizer: faiss.IndexBinaryFlat | None = None
        self._plan()

    # the work folder ------------------------------------------------------
    def _plan(self) -> None:
        bounds = [self.source.bounds(j) for j in range(self.source.n_chunks)]
        if not bounds or bounds[0][0] != 0 or bounds[-1][1] != self.n_rows or any(
            a[1] != b[0] or a[0] >= a[1] for a, b in zip(bounds, bounds[1:] + [(self.n_rows, None)])
        ):
            raise ValueError(f"source: its {self.source.n_chunks} chunks do not cover rows 0..{self.n_rows} in order")
        self.bounds = bounds
        plan = {"version": _PLAN_VERSION, "n_rows": self.n_rows, "n_bits": self.n_bits, "nlist": self.nlist,
                "n_train": self.n_train, "seed": self.seed, "chunks": _digest(np.asarray(bounds, np.int64))}
        source_digest = getattr(self.source, "digest", None)
        if source_digest:  # the store's vectors at planning time: a resume over a changed store is refused
            plan["source"] = source_digest
            self.meta["source_digest"] = source_digest
        self.work_dir.mkdir(parents=True, exist_ok=True)
        plan_path = self.work_dir / "plan.json"
        if plan_path.is_file():
            try:
                old = json.loads(plan_path.read_text())
            except (OSError, ValueError):
                old = None
            if old is not None and old != plan:
                raise ValueError(f"work_dir {str(self.work_dir)!r}: holds another build ({old}); remove it or pass "
                                 "another work_dir")
            if old is not None:
                logger.info("%s: resuming a build", self.work_dir)
                return
        with atomic_path(plan_path) as tmp:
            tmp.write_text(json.dumps(plan, sort_keys=True))

    def _chunk_path(self, j: int) -> Path:
        return self.work_dir / f"chunk-{j:06d}.npz"

    # step 1 --------------------------------------------------------------
    def train(self) -> faiss.IndexBinaryFlat:
        """The quantizer (the ``nlist`` binary centroids): read back if saved, else trained and saved.

        Returns
        -------
        faiss.IndexBinaryFlat
            The centroids, as FAISS's IVF quantizer holds them.
        """
        if self._quantizer is not None:
            return self._quantizer
        qpath = self.work_dir / "quantizer.npz"
        saved = _read_checked(qpath, ("centroids",))
        if saved is not None and saved["centroids"].shape != (self.nlist, self.n_bytes):
            logger.warning("%s: centroids of shape %s, expected %s; retraining", qpath, saved["centroids"].shape,
                           (self.nlist, self.n_bytes))
            saved = None
        if saved is None:
            rng = np.random.default_rng(self.seed)
            rows = np.sort(rng.choice(self.n_rows, self.n_train, replace=False))
            sample = _check_codes(self.source.take(rows), self.n_bytes, "source.take(rows)")
            if sample.shape[0] != rows.size:
                raise ValueError(f"source.take: {sample.shape[0]} codes for {rows.size} rows")
            quantizer = faiss.IndexBinaryFlat(8 * self.n_bytes)
            ivf = faiss.IndexBinaryIVF(quantizer, 8 * self.n_bytes, self.nlist)
            ivf.train(sample)  # binary k-means: FAISS clusters the codes as +-1 floats, then binarizes the centroids
            centroids = faiss.vector_to_array(quantizer.xb).reshape(self.nlist, self.n_bytes)  # type: ignore[attr-defined]
            _write_checked(qpath, centroids=centroids)
            logger.info("trained %d lists on %d codes", self.nlist, rows.size)
        else:
            centroids = saved["centroids"]
        q = faiss.IndexBinaryFlat(8 * self.n_bytes)
        q.add(np.ascontiguousarray(centroids))
        self._quantizer = q
        return q

    # step 2 --------------------------------------------------------------
    def _read_chunk(self, j: int) -> dict[str, np.ndarray] | None:
        lo, hi = self.bounds[j]
        got = _read_checked(self._chunk_path(j), ("codes", "lists", "rows"))
        if got is None:
            return None
        if (got["rows"].tolist() != [lo, hi] or got["codes"].shape != (hi - lo, self.n_bytes)
                or got["codes"].dtype != np.uint8 or got["lists"].shape != (hi - lo,)
                or (got["lists"].size and not 0 <= got["lists"].min() <= got["lists"].max() < self.nlist)):
            logger.warning("%s: checkpoint of another chunk or build; redoing it", self._chunk_path(j))
            return None
        return got

    def assign(self) -> None:
        """Codes and list numbers of every chunk, saved per chunk; done chunks are skipped."""
        quantizer = self.train()
        centroids = faiss.vector_to_array(quantizer.xb).reshape(self.nlist, self.n_bytes)  # type: ignore[attr-defined]
        todo = []
        for j in range(len(self.bounds)):
            if self._read_chunk(j) is None:
                todo.append(j)
            elif self.progress is not None:
                self.progress(self.bounds[j][1] - self.bounds[j][0])
        if len(todo) < len(self.bounds):
            logger.info("%s: %d of %d chunks already done", self.work_dir, len(self.bounds) - len(todo), len(self.bounds))
        for j in todo:
            lo, hi = self.bounds[j]
            codes = _check_codes(self.source.chunk(j), self.n_bytes, f"source.chunk({j})")
            if codes.shape[0] != hi - lo:
                raise ValueError(f"source.chunk({j}): {codes.shape[0]} codes for rows {lo}..{hi}")
            # what IndexBinaryIVF::add_core's quantizer->assign computes (same lists, ties to the lowest), with the
            # CPU's popcount: about 4x FAISS's generic wheel here (hardneg/index/_nearest.py)
            lists = nearest_centroid(codes, centroids)
            _write_checked(self._chunk_path(j), codes=codes, lists=lists.astype(np.int32),
                           rows=np.array([lo, hi], np.int64))
            self.chunks_redone += 1
            if self.progress is not None:
                self.progress(hi - lo)

    # step 3 --------------------------------------------------------------
    def finish(self) -> HammingIndex:
        """Append every chunk with its precomputed lists and write the index (atomically).

        Returns
        -------
        HammingIndex
            The index (``row_ids=True``), also written to ``path``.
        """
        quantizer = self.train()
        out = HammingIndex(self.n_bits, meta=self.meta, nlist=self.nlist, nprobe=self.nprobe, row_ids=True)
        ivf: Any = out._index  # an IndexBinaryIVF; add_core is missing from faiss 1.15's stub
        # our trained centroids in the index's own quantizer (the IVF's quantizer is the index's)
        out._quantizer.add(faiss.vector_to_array(quantizer.xb).reshape(self.nlist, self.n_bytes))  # type: ignore[attr-defined]
        ivf.is_trained = True
        for j, (lo, hi) in enumerate(self.bounds):
            got = self._read_chunk(j)
            if got is None:
                raise RuntimeError(f"{self._chunk_path(j)}: missing or damaged after the assign step; rerun the build")
            codes = np.ascontiguousarray(got["codes"])
            lists = got["lists"].astype(np.int64)
            # IndexBinaryIVF::add_core(n, x, xids, precomputed_idx): xids NULL numbers the codes on from ntotal
            ivf.add_core(hi - lo, faiss.swig_ptr(codes), None, faiss.swig_ptr(lists))
        if len(out) != self.n_rows:
            raise RuntimeError(f"built {len(out)} codes, expected {self.n_rows}")
        out.save(self.path)
        logger.info("wrote %s: %d codes in %d lists", self.path, len(out), self.nlist)
        if not self.keep_work:
            shutil.rmtree(self.work_dir, ignore_errors=True)
        return out

    def run(self) -> HammingIndex:
        """All three steps.

        Returns
        -------
        HammingIndex
            The index, also written to ``path``.
        """
        self.train()
        self.assign()
        return self.finish()


def build_ivf_index(
    source: CodeSource | np.ndarray, path: str | os.PathLike, *, nlist: int, nprobe: int = 16,
    work_dir: str | os.PathLike | None = None, chunk_rows: int = 1_000_000, n_train: int | None = None,
    random_state: RandomState = 0, meta: dict | None = None, progress: Callable[[int], Any] | None = None,
    keep_work: bool = False,
) -> HammingIndex:
    """An approximate :class:`HammingIndex` (FAISS ``IndexBinaryIVF``, ``row_ids=True``) built
    in bounded memory from a chunked source of codes, written to ``path``; a rerun after a kill
    resumes from the last chunk saved (:class:`IVFBuilder`; docs/scaling.md).

    Parameters
    ----------
    source : CodeSource or ndarray of uint8, shape (n_rows, n_bytes)
        The codes: an array or memory map (read ``chunk_rows`` rows at a time), a
        :class:`StoreCodes` (a store encoded by a hasher), or any :class:`CodeSource`.
    path : str or path-like
        The index file to write.
    nlist, nprobe, work_dir, n_train, random_state, meta, progress, keep_work
        As :class:`IVFBuilder`.
    chunk_rows : int, default=1_000_000
        Rows per chunk when ``source`` is an array.

    Returns
    -------
    HammingIndex
        The index; its id of a code is the code's source row.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from hardneg.index import build_ivf_index
    >>> codes = np.random.default_rng(0).integers(0, 256, (1000, 8), dtype=np.uint8)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     index = build_ivf_index(codes, os.path.join(d, "codes.index"), nlist=8, chunk_rows=300)
    >>> len(index), index.search(codes[5:6], k=1, nprobe=8).rows.tolist()
    (1000, [[5]])
    """
    src = cast(CodeSource, source) if hasattr(source, "chunk") else ArrayCodes(cast(np.ndarray, source), chunk_rows=chunk_rows)
    return IVFBuilder(
        src, path, nlist=nlist, nprobe=nprobe, work_dir=work_dir, n_train=n_train, random_state=random_state,
        meta=meta, progress=progress, keep_work=keep_work,
    ).run()


# the sources' methods keep the contract CodeSource documents
for _cls in (ArrayCodes, StoreCodes):
    for _name in ("bounds", "chunk", "take"):
        getattr(_cls, _name).__doc__ = getattr(CodeSource, _name).__doc__
