"""Job: the decision value of every row (or of a row subset) of a store, for evaluation sweeps.

Partition function: a model's ``decision_function`` over a partition's rows;
merge: the score arrays concatenated in row order (float64, one value per row,
8 bytes a row travel back: 800 MB for 100M rows, so an evaluation over a whole
store of that size wants a split). Ranking metrics (average precision,
precision at k) are then computed on the client as in process.
"""

from __future__ import annotations

import functools

import numpy as np

from .._validation import check_positive_int
from ._partition import dense, iter_partition, open_model, open_store, partitions, store_url
from ._runner import Runner

__all__ = ["score_rows", "scores_partition"]


def scores_partition(part, *, store: str, model, block_rows: int) -> np.ndarray:
    st = open_store(store)
    m = open_model(model, "concept")
    out = [np.asarray(m.decision_function(dense(block)), dtype=np.float64) for _, block in iter_partition(st, part, block_rows)]
    return np.concatenate(out) if out else np.empty(0, np.float64)


def score_rows(model, store, rows=None, *, runner: Runner | None = None, partition_rows: int | None = None,
               block_rows: int | None = None, progress=None) -> np.ndarray:
    """Scores of ``rows`` (sorted, unique; default every row) in that order, in process or on a cluster.

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
    from ..store import FeatureStore

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
