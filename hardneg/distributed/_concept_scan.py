"""Job: rank a store by a compressed concept model (top-k scan, tree-merged).

Partition function: score a partition's rows block by block with the model's
``decision_function`` (Eq. (16) of Li et al. through the compressed tables)
and keep its top k; merge: :func:`~hardneg.distributed._topk.merge_topk`.
"""

from __future__ import annotations

import functools

import numpy as np

from .._validation import check_k, check_positive_int
from ._partition import dense, iter_partition, open_model, open_store, partitions, store_url
from ._runner import Runner
from ._topk import TopK, merge_topk, topk_of

__all__ = ["scan_topk", "score_partition"]


def score_partition(part, *, store: str, model, k: int, block_rows: int) -> TopK:
    """Top-``k`` of one partition (pure: the same partition gives the same bytes)."""
    st = open_store(store)
    m = open_model(model, "concept")
    best = TopK.empty(1, k)
    for idx, block in iter_partition(st, part, block_rows):
        scores = np.asarray(m.decision_function(dense(block)), dtype=np.float64)
        best = merge_topk(best, topk_of(idx, scores, k))
    return best


def scan_topk(model, store, k: int = 100, *, rows=None, runner: Runner | None = None, partition_rows: int | None = None,
              block_rows: int | None = None, progress=None):
    """The ``k`` best rows of a store under a concept model, in process or on a cluster.

    Parameters
    ----------
    model : CompressedConcept (or any object with ``decision_function``) or path of a model file
        A path is opened by each worker itself; an object is sent to each worker once.
    store : FeatureStore, path or ``file://`` URL
    k : int
    rows : array of int, optional
        Only these rows (e.g. a split).
    runner : Runner, optional
        Where to run (default: in this process); see :func:`hardneg.distributed.get_runner`.
    partition_rows, block_rows : int, optional
        Rows per task (rounded up to whole store chunks) and rows scored at a time in a task.
    progress : callable, optional
        Called with the number of rows of each finished partition.

    Returns
    -------
    hardneg.concept.SearchResult
        Best first; ties by row. The same bytes in process and on any cluster.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from hardneg.store import FeatureStore
    >>> class Sum:
    ...     def decision_function(self, X): return X.sum(axis=1)
    >>> with FeatureStore.create(tempfile.mkdtemp() + "/s", dim=2, chunk_rows=2) as st:
    ...     st.append(np.arange(12.0).reshape(6, 2))
    >>> scan_topk(Sum(), st, k=2).rows.tolist()
    [5, 4]
    """
    from ..concept import SearchResult
    from ..store import FeatureStore

    runner = runner or Runner()
    st = store if isinstance(store, FeatureStore) else FeatureStore.open(store)
    m = open_model(model, "concept")
    if not callable(getattr(m, "decision_function", None)):
        raise TypeError(f"model: expected an object with a decision_function method, got {type(m).__name__}")
    n_model = getattr(m, "n_features_in_", None)
    if n_model is not None and n_model != st.dim:
        raise ValueError(f"{st.path} has {st.dim}-d vectors but the model expects {n_model}")
    subset = None
    if rows is not None:
        rows = np.asarray(rows)
        if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
            raise TypeError(f"rows: expected a 1-D array of integer row positions, got shape {rows.shape} dtype {rows.dtype}")
        subset = np.unique(rows.astype(np.int64))
        if subset.size and (subset[0] < 0 or subset[-1] >= len(st)):
            raise IndexError(f"rows: out of range for a store of {len(st)} rows")
    k = check_k(k, len(st) if subset is None else subset.size)
    block_rows = check_positive_int(block_rows or st.chunk_rows, "block_rows")
    parts = partitions(st, partition_rows, rows=subset)
    func = functools.partial(score_partition, store=store_url(st.path), model=runner.share(model), k=k, block_rows=block_rows)
    best = runner.map_reduce(func, parts, merge_topk, progress=None if progress is None else (lambda p: progress(p.size)))
    expected = len(st) if subset is None else subset.size
    if best.n_scanned != expected:  # a lost or doubled partition; never expected
        raise RuntimeError(f"scan covered {best.n_scanned} rows, expected {expected}")
    col = st.items.column("id")
    out_rows, scores = best.rows[0], best.scores[0]
    return SearchResult(rows=out_rows, ids=[col[int(r)].as_py() for r in out_rows], scores=scores)
