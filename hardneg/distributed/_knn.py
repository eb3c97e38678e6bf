"""Job: exact k-nearest neighbours of a few queries in a store (top-k scan).

Partition function: a FAISS flat index over each block of the partition,
searched for every query, kept as a per-query top k; merge:
:func:`~hardneg.distributed._topk.merge_topk`. Scores are "higher is
better": inner products (of l2-normalized rows for ``cosine``) or negated
squared L2 distances.
"""

from __future__ import annotations

import functools

import numpy as np

from .._validation import check_finite_scores, check_k, check_positive_int
from ._partition import dense, iter_partition, open_store, partitions, store_url
from ._runner import Runner
from ._topk import TopK, merge_topk

__all__ = ["knn_partition", "knn_topk"]

_METRICS = ("cosine", "ip", "l2")


def knn_partition(part, *, store: str, queries: np.ndarray, metric: str, k: int, block_rows: int) -> TopK:
    import faiss

    st = open_store(store)
    best = TopK.empty(queries.shape[0], k)
    for idx, block in iter_partition(st, part, block_rows):
        X = np.ascontiguousarray(dense(block), dtype=np.float32)
        if metric == "cosine":
            X = X.copy()
            faiss.normalize_L2(X)
        ix = faiss.IndexFlat(X.shape[1], faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT)
        ix.add(X)
        kk = min(k, X.shape[0])
        dist, found = ix.search(queries, kk)
        scores = -dist.astype(np.float64) if metric == "l2" else dist.astype(np.float64)
        check_finite_scores(scores, "kNN scores")
        if (found < 0).any():  # FAISS marks results it could not rank (NaN distances) with -1
            raise ValueError("kNN scores: some neighbours could not be ranked (non-finite distances); the features or the queries hold non-finite values")
        part_best = TopK(idx[found], scores, k, idx.size)
        # FAISS orders ties arbitrarily: merge_topk re-sorts by (score, row)
        best = merge_topk(best, part_best)
    return best


def knn_topk(store, queries, k: int = 10, *, metric: str = "cosine", rows=None, runner: Runner | None = None,
             partition_rows: int | None = None, block_rows: int | None = None, progress=None) -> TopK:
    """The ``k`` nearest rows of ``store`` to each query, in process or on a cluster.

    Returns a :class:`TopK` with ``rows`` and ``scores`` of shape (n_queries, k).
    For ``l2`` the scores are negated squared distances.
    """
    import faiss

    from ..store import FeatureStore

    if metric not in _METRICS:
        raise ValueError(f"metric: expected one of {', '.join(_METRICS)}, got {metric!r}")
    runner = runner or Runner()
    st = store if isinstance(store, FeatureStore) else FeatureStore.open(store)
    Q = np.ascontiguousarray(np.atleast_2d(np.asarray(queries, dtype=np.float32)))
    if Q.shape[1] != st.dim:
        raise ValueError(f"queries: {Q.shape[1]} features, the store has {st.dim}")
    if metric == "cosine":
        Q = Q.copy()
        faiss.normalize_L2(Q)
    subset = None if rows is None else np.unique(np.asarray(rows, dtype=np.int64))
    k = check_k(k, len(st) if subset is None else subset.size)
    block_rows = check_positive_int(block_rows or st.chunk_rows, "block_rows")
    parts = partitions(st, partition_rows, rows=subset)
    func = functools.partial(knn_partition, store=store_url(st.path), queries=Q, metric=metric, k=k, block_rows=block_rows)
    best = runner.map_reduce(func, parts, merge_topk, progress=None if progress is None else (lambda p: progress(p.size)))
    expected = len(st) if subset is None else subset.size
    if best.n_scanned != expected:
        raise RuntimeError(f"scan covered {best.n_scanned} rows, expected {expected}")
    return best
