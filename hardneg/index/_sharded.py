"""Hamming search over codes sharded across processes (a Dask cluster, or this process).

:func:`shard_index` cuts an index into shards of contiguous rows. An approximate
(IVF) index is cut list by list: every shard keeps the whole quantizer (the same
``nlist`` centroids) and, in each inverted list, the entries of its own rows, with
their global row numbers as FAISS ids. A query then probes the same lists in every
shard as in the whole index, so the union of the shards' top-k holds the whole
index's top-k: the sharded search equals the single-machine one, the approximate
mode included (``tests/index/test_sharded.py``). An exact index is cut into flat
shards (FAISS ``IndexBinaryFlat`` numbers its codes from 0; the shard records its
first global row and the search adds it).

:class:`ShardedSearch` sends each query batch to every shard and merges the
shards' top-k into one (by distance, ties by row). On a Dask cluster
(:func:`hardneg.distributed.get_runner`) shard ``i`` is pinned to worker
``i mod W``: each worker opens its shard files once (by path, a per-process
cache) and holds only those, so the memory per worker is its share of the
codes; only the queries and the ``k`` results per shard travel.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from hardneg._typing import ArrayLike
from hardneg._validation import check_k, check_positive_int
from .._parallel._runner import Runner
from ._hamming import HammingIndex, _check_codes

__all__ = ["ShardedSearch", "merge_topk", "search_shard", "shard_index"]

_CACHE: dict[tuple[str, int, int], HammingIndex] = {}
_CACHE_LOCK = threading.Lock()


def shard_index(index: HammingIndex, n_shards: int, folder: str | os.PathLike) -> list[Path]:
    """Write ``index`` as ``n_shards`` shard index files of contiguous rows (``shard-000.index`` ...).

    Parameters
    ----------
    index : HammingIndex
        The index to cut (exact or approximate); its row numbers become the shards' ids.
    n_shards : int
        Number of shards, at most the number of codes.
    folder : str or path-like
        Where the shard files (and their sidecars) are written.

    Returns
    -------
    list of Path
        The shard files, in row order.
    """
    n_shards = check_positive_int(n_shards, "n_shards")
    n = len(index)
    if n_shards > n:
        raise ValueError(f"n_shards={n_shards}: more shards than the {n:,} codes")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, n, n_shards + 1).astype(np.int64)
    meta = dict(index.meta, shards=n_shards, n_rows_total=n)
    shards: list[tuple[Any, int, int]] = []  # (FAISS index, first row, end row)
    if index.nlist is None:  # an exact index
        codes = index.codes()
        for s in range(n_shards):
            lo, hi = int(bounds[s]), int(bounds[s + 1])
            flat = faiss.IndexBinaryFlat(8 * index.n_bytes)
            flat.add(codes[lo:hi])
            shards.append((flat, lo, hi))
    else:
        nlist = index.nlist
        src: Any = index._index  # an IndexBinaryIVF (invlists, add_core: missing from faiss 1.15's stub)
        quantizer: Any = faiss.downcast_IndexBinary(src.quantizer)  # a loaded index's is a bare IndexBinary proxy
        centroids = faiss.vector_to_array(quantizer.xb).reshape(nlist, index.n_bytes)
        ivfs: list[Any] = []
        for s in range(n_shards):
            q = faiss.IndexBinaryFlat(8 * index.n_bytes)
            q.add(centroids)
            ivf = faiss.IndexBinaryIVF(q, 8 * index.n_bytes, nlist)
            ivf.own_fields = True
            q.this.disown()  # type: ignore[attr-defined]  # the shard's IVF owns its quantizer now (SWIG)
            ivfs.append(ivf)
        invlists = src.invlists
        for lst in range(nlist):
            size = invlists.list_size(lst)
            if not size:
                continue
            ids = faiss.rev_swig_ptr(invlists.get_ids(lst), size).copy()
            codes = faiss.rev_swig_ptr(invlists.get_codes(lst), size * index.n_bytes).copy().reshape(size, index.n_bytes)
            which = np.searchsorted(bounds, ids, side="right") - 1
            for s in np.unique(which):
                sel = which == s
                part_ids = np.ascontiguousarray(ids[sel], np.int64)
                part = np.ascontiguousarray(codes[sel])
                lists = np.full(part_ids.size, lst, np.int64)
                # IndexBinaryIVF::add_core(n, x, xids, precomputed_idx): the entries keep their list and their global row
                ivfs[s].add_core(part_ids.size, faiss.swig_ptr(part), faiss.swig_ptr(part_ids), faiss.swig_ptr(lists))
        shards = [(ivfs[s], int(bounds[s]), int(bounds[s + 1])) for s in range(n_shards)]
    paths = []
    for s, (raw, lo, hi) in enumerate(shards):
        out = HammingIndex(index.n_bits, meta=dict(meta, shard=s, rows=[lo, hi]), nlist=index.nlist,
                           nprobe=index.nprobe, row_ids=True)
        out._index = raw
        if index.nlist is not None:
            out._quantizer = raw.quantizer
        paths.append(out.save(folder / f"shard-{s:03d}.index"))
    return paths


def _open_shard(path: str) -> HammingIndex:
    """A shard index, opened once per process (keyed by path, size and mtime: a rewritten file is reread)."""
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _CACHE_LOCK:
        index = _CACHE.get(key)
        if index is None:
            for old in [k for k in _CACHE if k[0] == str(path)]:
                del _CACHE[old]
            index = _CACHE[key] = HammingIndex.load(path)
    return index


def search_shard(path: str, queries: np.ndarray, k: int, nprobe: int | None) -> tuple[np.ndarray, np.ndarray]:
    """One shard's top-``k`` (global rows int64, distances int32), shape (n, k') with k' <= k (a task)."""
    index = _open_shard(path)
    rows, dist = index.rank(queries, min(k, len(index)), nprobe=nprobe if index.approximate else None)
    if not index.approximate:  # a flat shard numbers its codes from 0: its first global row is recorded
        rows = np.where(rows >= 0, rows + int(index.meta["rows"][0]), -1)
    return rows, dist


def merge_topk(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of two top-k lists per query, by distance then row (empty places, row -1, last).

    Associative and commutative, so the merged result does not depend on the order shards answer.
    """
    rows = np.concatenate([a[0], b[0]], axis=1)
    dist = np.concatenate([a[1], b[1]], axis=1).astype(np.int64)
    big = np.iinfo(np.int64).max // 4
    key_d = np.where(rows >= 0, dist, big)
    key_r = np.where(rows >= 0, rows, big)
    order = np.lexsort((key_r, key_d), axis=1)[:, :k]
    return np.take_along_axis(rows, order, axis=1), np.take_along_axis(dist, order, axis=1).astype(np.int32)


class ShardedSearch:
    """Top-k Hamming search over shard files written by :func:`shard_index`, on a runner.

    Parameters
    ----------
    paths : list of str or path-like
        The shard index files (all of one code length).
    runner : Runner or None, default=None
        :func:`hardneg.distributed.get_runner`'s runner; None searches the shards in this process.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from hardneg.index import HammingIndex, ShardedSearch, shard_index
    >>> codes = np.random.default_rng(0).integers(0, 256, (300, 8), dtype=np.uint8)
    >>> index = HammingIndex(64)
    >>> index.add(codes)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     rows, dist = ShardedSearch(shard_index(index, 3, d)).rank(codes[[42]], k=1)
    >>> rows.tolist(), dist.tolist()
    ([[42]], [[0]])
    """

    def __init__(self, paths: Sequence[str | os.PathLike], *, runner: Runner | None = None):
        self.paths = [str(p) for p in paths]
        if not self.paths:
            raise ValueError("paths: no shard files")
        self.runner = runner or Runner()
        heads = [HammingIndex.load(p) for p in self.paths] if self.runner.client is None else []
        first = heads[0] if heads else HammingIndex.load(self.paths[0])
        self.n_bits, self.n_bytes = first.n_bits, first.n_bytes
        self.n_rows = int(first.meta.get("n_rows_total", 0)) or sum(len(h) for h in heads)
        self._workers: list[str] = []

    def _pinned(self) -> list[str]:
        """Worker address for each shard (shard i on worker i mod W), fixed at the first search."""
        if not self._workers:
            workers = sorted(self.runner.client.scheduler_info()["workers"])
            if not workers:
                raise RuntimeError("the Dask cluster has no workers")
            self._workers = [workers[i % len(workers)] for i in range(len(self.paths))]
        return self._workers

    def rank(self, query_codes: ArrayLike, k: int, *, nprobe: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows of every query over all shards: ``(rows int64 (n, k), distances int32 (n, k))``,
        nearest first, ties by row.

        Parameters
        ----------
        query_codes : ndarray of uint8, shape (n, n_bytes)
            Packed query codes.
        k : int
            Neighbours per query, at most the number of codes.
        nprobe : int or None, default=None
            Lists scanned per query in each approximate shard; None: the shards' own.

        Returns
        -------
        rows : ndarray of int64, shape (n, k)
            Global rows of the neighbours.
        distances : ndarray of int32, shape (n, k)
            Their Hamming distances.
        """
        q = _check_codes(query_codes, self.n_bytes, "query_codes")
        if self.n_rows:
            k = check_k(k, self.n_rows)
        if nprobe is not None:
            nprobe = check_positive_int(nprobe, "nprobe")
        client = self.runner.client
        if client is None:
            parts = [search_shard(p, q, k, nprobe) for p in self.paths]
        else:
            futures = [client.submit(search_shard, p, q, k, nprobe, workers=[w], allow_other_workers=False, pure=False)
                       for p, w in zip(self.paths, self._pinned())]
            parts = client.gather(futures)
        out = parts[0]
        for part in parts[1:]:
            out = merge_topk(out, part, k)
        if out[0].shape[1] < k:  # fewer codes in every shard together than k cannot happen after check_k; pad defensively
            pad = k - out[0].shape[1]
            out = (np.pad(out[0], ((0, 0), (0, pad)), constant_values=-1),
                   np.pad(out[1], ((0, 0), (0, pad)), constant_values=self.n_bits + 1))
        return out
