"""Concept search: score every item of a collection partition by partition, keep the top k.

One implementation for an in-memory array (one partition) and a FeatureStore
(partitions of whole chunks), in this process or on a Dask cluster
(``runner``, see :func:`hardneg.distributed.get_runner`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from hardneg._topk import TopK, merge_topk, topk_of
from hardneg._typing import ArrayLike
from hardneg._validation import check_k, check_matrix, check_positive_int
from .._parallel._partition import dense, is_store, iter_partition, map_partition, open_model, open_source, partitions, source_for, source_partitions, store_url
from .._parallel._runner import Runner

__all__ = ["SearchResult", "score_partition", "score_rows", "scores_partition", "search"]

#: Compatibility name: concept search returns the library's one top-k type (``.rows``, ``.ids``, ``.scores``).
SearchResult = TopK


def score_partition(part, *, source, model, k: int, block_rows: int) -> TopK:
    """Top-``k`` of one partition (pure: the same partition gives the same bytes)."""

    data = open_source(source)
    m = open_model(model, "concept")
    best = TopK.empty(1, k, metric="decision")
    for idx, block in iter_partition(data, part, block_rows):
        scores = np.asarray(m.decision_function(dense(block)), dtype=np.float64)
        best = merge_topk(best, topk_of(idx, scores, k, metric="decision"))
    return best


def search(model: Any, data: Any, k: int = 100, *, rows: ArrayLike | None = None, chunk_rows: int | None = None,
           runner: Any = None, partition_rows: int | None = None, progress: Callable[[int], object] | None = None) -> TopK:
    """Rank a collection by a concept model and return the ``k`` best items.

    Parameters
    ----------
    model : object with ``decision_function`` (e.g. a :class:`CompressedConcept`) or path of a model file
        A path is opened by each worker itself; an object is sent to each worker once.
    data : array-like (n, d), FeatureStore, or path / ``file://`` URL of a store
        A store is scanned partition by partition, chunk by chunk; memory stays bounded by one
        block. An array is one partition.
    k : int
        Number of results (at most the collection size).
    rows : array of int, optional
        Restrict the search to these rows (e.g. a test split).
    chunk_rows : int, optional
        Rows scored per block (default: the store's chunk, 16384 for an array).
    runner : Runner, optional
        Where to run (default: in this process); see :func:`hardneg.distributed.get_runner`.
    partition_rows : int, optional
        Rows per task of a store (rounded up to whole chunks).
    progress : callable, optional
        Called with the number of rows scored after each partition.

    Returns
    -------
    TopK
        ``(k,)`` arrays ``rows``, ``ids``, ``scores`` (``metric="decision"``), sorted by decreasing
        score; ties by row position. The same bytes in process and on any cluster.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.concept import search
    >>> class Sum:
    ...     def decision_function(self, X): return X.sum(axis=1)
    >>> search(Sum(), np.arange(12.0).reshape(6, 2), k=2).rows.tolist()
    [5, 4]
    """
    from hardneg.store import FeatureStore

    runner = runner or Runner()
    m = open_model(model, "concept")
    if not callable(getattr(m, "decision_function", None)):
        raise TypeError(f"model: expected an object with a decision_function method, got {type(m).__name__}")
    if isinstance(data, (str, os.PathLike)):
        from hardneg.store._quantize import BinnedStore

        data = BinnedStore.open(data) if BinnedStore.is_binned(data) else FeatureStore.open(data)
    store = is_store(data)
    if not store:
        data = check_matrix(data, "data", non_negative=True, min_rows=0)
    n = len(data) if store else data.shape[0]
    dim = data.dim if store else data.shape[1]
    n_model = getattr(m, "n_features_in_", None)
    if store and n_model is not None and n_model != dim:
        raise ValueError(f"{data.path} has {dim}-d vectors but the model expects {n_model}")
    subset = None
    if rows is not None:
        rows = np.asarray(rows)
        # Float rows (1.7) would truncate silently to a different item: refuse them.
        if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
            raise TypeError(f"rows: expected a 1-D array of integer row positions, "
                            f"got shape {rows.shape} dtype {rows.dtype}")
        subset = np.unique(rows.astype(np.int64))
        if subset.size and (subset[0] < 0 or subset[-1] >= n):
            raise IndexError(f"rows: out of range for a collection of {n} items")
    expected = n if subset is None else subset.size
    k = check_k(k, expected)
    block_rows = check_positive_int(chunk_rows if chunk_rows is not None else (data.chunk_rows if store else 16384), "chunk_rows")
    parts = source_partitions(data, partition_rows, rows=subset)
    func = functools.partial(score_partition, source=source_for(data, runner), model=runner.share(model), k=k,
                             block_rows=block_rows)
    best = runner.map_reduce(func, parts, merge_topk, progress=None if progress is None else (lambda p: progress(p.size)))
    if best.n_scanned != expected:  # a lost or doubled partition; never expected
        raise RuntimeError(f"scan covered {best.n_scanned} rows, expected {expected}")
    out = best.for_query(0)
    if store:
        col = data.items.column("id")
        ids = [col[int(r)].as_py() for r in out.rows]
    else:
        ids = [str(int(r)) for r in out.rows]
    out.ids = ids
    return out


def scores_partition(part, *, store: str, model, block_rows: int) -> np.ndarray:
    """Decision values (float64) of one partition's rows, in row order (a worker's task)."""

    return map_partition(store, part, block_rows, open_model(model, "concept").decision_function, dtype=np.float64)


def score_rows(model: Any, store: Any, rows: ArrayLike | None = None, *, runner: Any = None, partition_rows: int | None = None,
               block_rows: int | None = None, progress: Callable[[int], object] | None = None) -> np.ndarray:
    """The decision value of ``rows`` (sorted, unique; default every row) in that order, in process or on a cluster.

    Parameters
    ----------
    model : object with ``decision_function``, or path of a model file
        As for :func:`search`.
    store : FeatureStore or path / URL of a store
        The collection.
    rows : array-like of int, optional
        Row positions, sorted and unique; default every row.
    runner : Runner, optional
        Where to run (default: in this process).
    partition_rows : int, optional
        Rows per task (rounded up to whole chunks).
    block_rows : int, optional
        Rows scored per block (default: the store's chunk).
    progress : callable, optional
        Called with the number of rows scored after each partition.

    Returns
    -------
    ndarray of shape (n_rows,)
        One decision value per row, in row order.

    Raises
    ------
    TypeError
        If ``rows`` is not a 1-D array of integers.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from hardneg.store import FeatureStore
    >>> class Sum:
    ...     def decision_function(self, X): return X.sum(axis=1)
    >>> with FeatureStore.create(tempfile.mkdtemp() + "/s", dim=2, chunk_rows=2) as st:
    ...     st.append(np.arange(10.0).reshape(5, 2))
    >>> score_rows(Sum(), st, [0, 3, 4]).tolist()
    [1.0, 13.0, 17.0]
    """
    from hardneg.store import FeatureStore

    runner = runner or Runner()
    st = store if isinstance(store, FeatureStore) else FeatureStore.open(store)
    if rows is not None:
        rows = np.asarray(rows)
        if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
            raise TypeError(f"rows: expected a 1-D array of integer row positions, got shape {rows.shape} dtype {rows.dtype}")
        rows = rows.astype(np.int64)
        if rows.size and ((np.diff(rows) <= 0).any() or rows[0] < 0 or rows[-1] >= len(st)):
            raise ValueError(f"rows: expected sorted unique row positions in 0..{len(st) - 1}")
    block_rows = check_positive_int(block_rows or st.chunk_rows, "block_rows")
    parts = partitions(st, partition_rows, rows=rows)
    func = functools.partial(scores_partition, store=store_url(st.path), model=runner.share(model), block_rows=block_rows)
    pieces = list(runner.map_ordered(func, parts, progress=None if progress is None else (lambda p: progress(p.size))))
    return np.concatenate(pieces) if pieces else np.empty(0, np.float64)
