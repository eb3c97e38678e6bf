"""Zero-shot search: rank the items of a FeatureStore by S to attribute vectors.

One scan for a store (partitions of whole chunks) or an array (one partition),
in this process or on a Dask cluster (``runner``), merged exactly by
:func:`hardneg._topk.merge_topk`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from hardneg._topk import TopK, merge_topk, topk_of
from hardneg._typing import ArrayLike
from hardneg._validation import check_positive_int
from .._parallel._partition import dense, is_store, iter_partition, open_source, source_for, source_partitions
from .._parallel._runner import Runner

__all__ = ["zero_shot_partition", "zero_shot_search"]


def zero_shot_partition(part, *, source, model, queries: np.ndarray, k: int, block_rows: int) -> TopK:
    """Per-query top ``k`` (smallest ``S``) of one partition (a worker's task)."""

    data = open_source(source)
    best = TopK.empty(queries.shape[0], k, metric="distance")
    for idx, block in iter_partition(data, part, block_rows):
        d = np.asarray(model.distances(dense(block), queries), dtype=np.float64).T  # (n_queries, rows)
        best = merge_topk(best, topk_of(idx, d, k, metric="distance"))
    return best


def zero_shot_search(model: Any, store: Any, query: Any, k: int = 10, *, chunk_rows: int | None = None, rows: ArrayLike | None = None,
                     runner: Any = None) -> TopK:
    """The ``k`` items of ``store`` closest to each query by ``S`` ([Bucher16] Eq. (1)), read chunk by chunk.

    Parameters
    ----------
    model : fitted ZeroShotClassifier
    store : hardneg.store.FeatureStore (dense) or array (n, d)
    query : array-like (n_attributes,) or (n_queries, n_attributes), or str
        Attribute vectors, or a class description (embedded with the sentence
        model of :func:`hardneg.zeroshot.embed_texts`; only meaningful for a model
        trained on such embeddings).
    k : int
        At most the number of items searched.
    chunk_rows : int, optional
        Rows per read (default: the store's chunk size).
    rows : array-like of int, optional
        Search only these rows.
    runner : Runner, optional
        Where to run (default: in this process); see :func:`hardneg.distributed.get_runner`.

    Returns
    -------
    TopK
        ``ids``, ``rows`` and ``distances`` (``S``, ``metric="distance"``) of shape (n_queries, k),
        closest first, ties by row; ``result[0]`` is the first query's. (Before hardneg 0.2: the
        tuple ``(rows, distances)`` of one query; unpacking now raises.)

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.zeroshot import ZeroShotClassifier, zero_shot_search
    >>> rng = np.random.default_rng(0)
    >>> attrs = rng.random((4, 5)); y = np.repeat(np.arange(4), 20)
    >>> X = attrs[y] @ rng.normal(size=(5, 12)) + 0.05 * rng.normal(size=(80, 12))
    >>> clf = ZeroShotClassifier(n_epochs=20, m=8, random_state=0).fit(X, y, attrs)
    >>> res = zero_shot_search(clf, X, attrs[2], k=5)
    >>> bool((y[res.rows[0]] == 2).all()), bool((np.diff(res.distances[0]) >= 0).all())
    (True, True)
    """

    if isinstance(query, str):
        from ._protocols import embed_texts

        query = embed_texts([query])[0]
    n_attr = model.prototypes_.shape[1]
    q = np.asarray(query, dtype=np.float32)
    q = q.reshape(1, -1) if q.ndim == 1 else q
    if q.ndim != 2 or q.shape[1] != n_attr or not np.isfinite(q).all():
        raise ValueError(f"query: expected a finite attribute vector of length {n_attr}, got shape {np.shape(query)}")
    runner = runner or Runner()
    in_store = is_store(store)
    if in_store:
        if store.is_sparse:
            raise ValueError("store: zero-shot search needs a dense feature store")
        data, n = store, len(store)
    else:
        data = np.asarray(store)
        n = data.shape[0]
    subset = None
    if rows is not None:
        subset = np.unique(np.asarray(rows, dtype=np.int64))
        if subset.size and (subset[0] < 0 or subset[-1] >= n):
            raise IndexError(f"rows: out of range for a collection of {n} items")
    expected = n if subset is None else subset.size
    k = min(check_positive_int(k, "k"), expected)
    block_rows = check_positive_int(chunk_rows or (store.chunk_rows if in_store else max(n, 1)), "chunk_rows")
    parts = source_partitions(data, None, rows=subset)
    func = functools.partial(zero_shot_partition, source=source_for(data, runner), model=runner.share(model), queries=q, k=k,
                             block_rows=block_rows)
    best = runner.map_reduce(func, parts, merge_topk)
    return best.with_ids(store.ids() if in_store else np.arange(n).astype(str))
