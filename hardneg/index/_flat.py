"""Exact k-nearest neighbours of a few queries in a store or an array (a flat top-k scan).

Partition function: a FAISS flat index over each block of the partition,
searched for every query, kept as a per-query top k; merge:
:func:`hardneg._topk.merge_topk`. One implementation in this process or on a
Dask cluster (``runner``). Values: inner products (of l2-normalized rows for
``cosine``; higher is better) or squared L2 distances (``l2``; lower is better).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from hardneg._topk import TopK, merge_topk
from hardneg._typing import ArrayLike
from hardneg._validation import check_finite_scores, check_k, check_positive_int
from .._parallel._partition import dense, is_store, iter_partition, open_source, source_for, source_partitions
from .._parallel._runner import Runner

__all__ = ["knn_partition", "knn_topk"]

_METRICS = ("cosine", "ip", "l2")


def knn_partition(part, *, store, queries: np.ndarray, metric: str, k: int, block_rows: int) -> TopK:
    """Per-query top ``k`` of one partition (a worker's task)."""
    import faiss


    st = open_source(store)
    best = TopK.empty(queries.shape[0], k, metric=metric)
    for idx, block in iter_partition(st, part, block_rows):
        X = np.ascontiguousarray(dense(block), dtype=np.float32)
        if metric == "cosine":
            X = X.copy()
            faiss.normalize_L2(X)
        ix = faiss.IndexFlat(X.shape[1], faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT)
        ix.add(X)
        kk = min(k, X.shape[0])
        dist, found = ix.search(queries, kk)
        scores = dist.astype(np.float64)
        check_finite_scores(scores, "kNN scores")
        if (found < 0).any():  # FAISS marks results it could not rank (NaN distances) with -1
            raise ValueError("kNN scores: some neighbours could not be ranked (non-finite distances); the features or the queries hold non-finite values")
        part_best = TopK(idx[found], scores, k, idx.size, metric=metric)
        # FAISS orders ties arbitrarily: merge_topk re-sorts by (value, row)
        best = merge_topk(best, part_best)
    return best


def knn_topk(store: Any, queries: ArrayLike, k: int = 10, *, metric: str = "cosine", rows: ArrayLike | None = None, runner: Any = None,
             partition_rows: int | None = None, block_rows: int | None = None, progress: Callable[[int], object] | None = None) -> TopK:
    """The ``k`` nearest rows of ``store`` (a FeatureStore, its path, or an array) to each query.

    Parameters
    ----------
    store : FeatureStore, path / URL of a store, or array-like of shape (n, d)
        The collection.
    queries : array-like of shape (n_queries, d)
        The query vectors.
    k : int
        Neighbours per query.
    metric : {"cosine", "ip", "l2"}
        Similarity or distance.
    rows : array-like of int, optional
        Search these rows only.
    runner : Runner, optional
        Where to run (default: in this process).
    partition_rows : int, optional
        Rows per task (rounded up to whole chunks).
    block_rows : int, optional
        Rows read per block.
    progress : callable, optional
        Called with the number of rows scanned after each partition.

    Returns
    -------
    TopK
        ``ids``, ``rows`` and values of shape (n_queries, k), best first, ties by row:
        ``scores`` (inner products) for ``cosine`` / ``ip``, ``distances`` (squared L2) for ``l2``.

    Raises
    ------
    ValueError
        For an unknown metric, or queries whose dimension differs from the store's.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.index import knn_topk
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]], np.float32)
    >>> res = knn_topk(X, X[1:2], k=2, metric="l2")
    >>> res.rows.tolist(), res.distances.tolist()
    ([[1, 0]], [[0.0, 1.0]])
    """
    import faiss

    from hardneg.store import FeatureStore

    if metric not in _METRICS:
        raise ValueError(f"metric: expected one of {', '.join(_METRICS)}, got {metric!r}")
    runner = runner or Runner()
    st = store if is_store(store) or hasattr(store, "shape") else FeatureStore.open(store)
    in_store = is_store(st)
    if not in_store:
        st = np.ascontiguousarray(st, dtype=np.float32)
    n, dim = (len(st), st.dim) if in_store else st.shape
    Q = np.ascontiguousarray(np.atleast_2d(np.asarray(queries, dtype=np.float32)))
    if Q.shape[1] != dim:
        raise ValueError(f"queries: {Q.shape[1]} features, the store has {dim}")
    if metric == "cosine":
        Q = Q.copy()
        faiss.normalize_L2(Q)
    subset = None if rows is None else np.unique(np.asarray(rows, dtype=np.int64))
    expected = n if subset is None else subset.size
    k = check_k(k, expected)
    block_rows = check_positive_int(block_rows or (st.chunk_rows if in_store else 16384), "block_rows")
    parts = source_partitions(st, partition_rows, rows=subset)
    func = functools.partial(knn_partition, store=source_for(st, runner), queries=Q, metric=metric, k=k, block_rows=block_rows)
    best = runner.map_reduce(func, parts, merge_topk, progress=None if progress is None else (lambda p: progress(p.size)))
    if best.n_scanned != expected:
        raise RuntimeError(f"scan covered {best.n_scanned} rows, expected {expected}")
    return best.with_ids(st.ids() if in_store else np.arange(n).astype(str))
