"""Concept search: score every item of a collection in chunks, keep the top k."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from hardneg._validation import check_finite_scores, check_k, check_matrix, check_positive_int

__all__ = ["SearchResult", "search"]


@dataclass
class SearchResult:
    """Top-k items, best first: row positions, item ids and decision values."""

    rows: np.ndarray
    ids: list
    scores: np.ndarray


def _merge_topk(best_rows, best_scores, rows, scores, k):
    check_finite_scores(scores)
    rows = np.concatenate([best_rows, rows])
    scores = np.concatenate([best_scores, scores])
    if scores.size > k:
        keep = np.argpartition(-scores, k - 1)[:k]
        rows, scores = rows[keep], scores[keep]
    return rows, scores


def search(model, data, k: int = 100, *, rows=None, chunk_rows: int = 16384, progress=None) -> SearchResult:
    """Rank a collection by a concept model and return the ``k`` best items.

    Parameters
    ----------
    model : object with ``decision_function`` (e.g. a :class:`CompressedConcept`)
    data : array-like (n, d) or FeatureStore
        A store is scanned chunk by chunk; memory stays bounded by one chunk.
    k : int
        Number of results (at most the collection size).
    rows : array of int, optional
        Restrict the search to these rows (e.g. a test split).
    chunk_rows : int
        Rows scored per block.
    progress : callable, optional
        Called with the number of rows scored after each block.

    Returns
    -------
    SearchResult
        Sorted by decreasing score; ties by row position.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.concept import search
    >>> class Sum:
    ...     def decision_function(self, X): return X.sum(axis=1)
    >>> search(Sum(), np.arange(12.0).reshape(6, 2), k=2).rows.tolist()
    [5, 4]
    """
    if not callable(getattr(model, "decision_function", None)):
        raise TypeError(f"model: expected an object with a decision_function method, got {type(model).__name__}")
    chunk_rows = check_positive_int(chunk_rows, "chunk_rows")
    is_store = hasattr(data, "iter_chunks") and hasattr(data, "items")
    if not is_store:
        data = check_matrix(data, "data", non_negative=True, min_rows=0)
    n = len(data) if is_store else data.shape[0]
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
    k = check_k(k, n if subset is None else subset.size)
    best_rows = np.empty(0, dtype=np.int64)
    best_scores = np.empty(0, dtype=np.float64)

    def blocks():
        if subset is not None:
            for lo in range(0, subset.size, chunk_rows):
                idx = subset[lo : lo + chunk_rows]
                yield idx, (data.take(idx) if is_store else data[idx])
        elif is_store:
            for lo, block in data.iter_chunks(chunk_rows):
                yield np.arange(lo, lo + block.shape[0]), block
        else:
            for lo in range(0, n, chunk_rows):
                yield np.arange(lo, min(lo + chunk_rows, n)), data[lo : lo + chunk_rows]

    for idx, block in blocks():
        if sp.issparse(block):
            block = block.toarray()
        scores = np.asarray(model.decision_function(block), dtype=np.float64)
        best_rows, best_scores = _merge_topk(best_rows, best_scores, idx, scores, k)
        if progress is not None:
            progress(idx.size)
    order = np.lexsort((best_rows, -best_scores))
    best_rows, best_scores = best_rows[order], best_scores[order]
    if is_store:
        col = data.items.column("id")
        ids = [col[int(r)].as_py() for r in best_rows]
    else:
        ids = [str(int(r)) for r in best_rows]
    return SearchResult(rows=best_rows, ids=ids, scores=best_scores)
