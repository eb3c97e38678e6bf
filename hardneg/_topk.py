"""One top-k result type for every search in hardneg, and its exact merge.

Every search (concept search, Hamming and inverted index search, kNN, E-SVM
query by example, zero-shot search, the store-wide scans on a cluster)
returns a :class:`TopK`: per query, the ``k`` best items as item ids, store
row positions and the metric's values, best first, ties by row.

Access is by name, never by position: ``result.ids``, ``result.rows``,
``result.scores`` (the metric's values; also ``result.distances`` for a
distance metric). The old ``(ids, distances)`` tuples of ``HammingIndex.search``
(the reverse of FAISS's ``(D, I)``) and ``InvertedIndex.search`` are gone:
unpacking a result of several queries raises ``TypeError`` saying what to use.

Shapes: a result of a query batch holds ``(n_queries, k)`` arrays; a search
without a query axis (concept search ranks a collection by one model) holds
``(k,)`` arrays, as does ``result[q]`` / ``result.for_query(q)``, the result
of one query, which iterates as ``(id, score)`` pairs.

The merge (:func:`merge_topk`) is associative, commutative and tie-exact
under the total order "better value first, then lower row", so a tree
reduction over partitions finishing in any order gives the same bytes as one
sequential pass (``np.argpartition`` alone would keep an arbitrary one of
tied rows at the cut).

Examples
--------
>>> import numpy as np
>>> from hardneg import TopK
>>> r = TopK(rows=np.array([[2, 0]]), scores=np.array([[0.9, 0.5]]), k=2, ids=np.array([["c", "a"]]))
>>> r.n_queries, list(r[0])
(1, [('c', 0.9), ('a', 0.5)])
>>> r[0].to_records()
[{'rank': 1, 'id': 'c', 'row': 2, 'score': 0.9}, {'rank': 2, 'id': 'a', 'row': 0, 'score': 0.5}]
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ._typing import ArrayLike
from ._validation import check_finite_scores

__all__ = ["TopK", "merge_topk", "topk_of"]

# metric -> higher is better
METRICS = {"score": True, "decision": True, "cosine": True, "ip": True, "similarity": True,
           "l2": False, "hamming": False, "distance": False}


@dataclass
class TopK:
    """The ``k`` best items per query, best first; ties by row.

    Parameters
    ----------
    rows : ndarray of int64, (n_queries, k) or (k,)
        Store row positions (-1 in places an approximate search left empty).
    scores : ndarray, same shape
        The metric's values: similarities when ``higher_is_better``, distances otherwise
        (also readable as :attr:`distances`).
    k : int
        The ``k`` asked for (a partial result may hold fewer).
    n_scanned : int
        Rows scored (a partition lost or counted twice shows here).
    ids : list or ndarray of str, same shape, or None
        Item ids (None only for the partial results of a scan before they are resolved).
    metric : str
        ``"decision"``, ``"cosine"``, ``"ip"``, ``"l2"``, ``"hamming"``, ``"distance"``, ...
    higher_is_better : bool
        Derived from ``metric`` when it is a known one.
    """

    rows: np.ndarray
    scores: np.ndarray
    k: int = 0
    n_scanned: int = 0
    ids: object = None
    metric: str = "score"
    higher_is_better: bool | None = field(default=None)

    def __post_init__(self):
        self.rows = np.asarray(self.rows, dtype=np.int64)
        self.scores = np.asarray(self.scores)
        if self.higher_is_better is None:
            self.higher_is_better = METRICS.get(self.metric, True)
        if not self.k:
            self.k = int(self.rows.shape[-1]) if self.rows.ndim else 0
        if self.scores.shape != self.rows.shape:
            raise ValueError(f"scores: shape {self.scores.shape} does not match rows {self.rows.shape}")

    # construction ----------------------------------------------------------
    @classmethod
    def empty(cls, n_queries: int, k: int, *, metric: str = "score", higher_is_better: bool | None = None) -> TopK:
        """A partial result with no candidates yet (the merge's identity).

        Parameters
        ----------
        n_queries : int
            Number of queries (rows of the ``(n_queries, 0)`` arrays).
        k : int
            The ``k`` the merged result will keep.
        metric : str, default="score"
            Name of the metric (see :class:`TopK`).
        higher_is_better : bool or None, default=None
            Order of the metric; None derives it from ``metric``.

        Returns
        -------
        TopK
            A result with ``(n_queries, 0)`` rows and scores.
        """
        return cls(np.empty((n_queries, 0), np.int64), np.empty((n_queries, 0), np.float64), k,
                   metric=metric, higher_is_better=higher_is_better)

    def with_ids(self, ids: ArrayLike) -> TopK:
        """This result with ``ids`` looked up by row in ``ids`` (a store's or index's id array);
        rows -1 get id ``""``.

        Parameters
        ----------
        ids : array-like of str, shape (n_rows,)
            Item id of every row of the store or index the rows point into.

        Returns
        -------
        TopK
            A copy with :attr:`ids` of the same shape as :attr:`rows` (a list for ``(k,)`` rows).
        """
        table = np.asarray(ids).astype(str)
        if self.rows.size == 0:
            found = np.zeros(self.rows.shape, dtype=table.dtype if table.size else "<U1")
        else:
            found = np.take(table, np.maximum(self.rows, 0)) if table.size else np.zeros(self.rows.shape, dtype="<U1")
            if (self.rows < 0).any():
                found = np.where(self.rows >= 0, found, "")
        return replace(self, ids=found.tolist() if found.ndim == 1 else found)

    # access ----------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        """Number of queries (1 for a result without a query axis)."""
        return 1 if self.rows.ndim == 1 else int(self.rows.shape[0])

    @property
    def distances(self) -> np.ndarray:
        """The values of a distance metric (``hamming``, ``l2``, ...), nearest first."""
        if self.higher_is_better:
            raise AttributeError(f"distances: the {self.metric!r} metric is a similarity (higher is better); read .scores")
        return self.scores

    def for_query(self, q: int) -> TopK:
        """The result of query ``q``: ``(k,)`` arrays, iterable as ``(id, score)`` pairs.

        Parameters
        ----------
        q : int
            Query number; negative numbers count from the end.

        Returns
        -------
        TopK
            The result of that query (``self`` for a result without a query axis).
        """
        if self.rows.ndim == 1:
            if q not in (0, -1):
                raise IndexError(f"query {q}: this result has one query")
            return self
        if not -self.n_queries <= q < self.n_queries:
            raise IndexError(f"query {q}: this result has {self.n_queries} queries")
        ids = None if self.ids is None else list(np.asarray(self.ids)[q].tolist())
        return replace(self, rows=self.rows[q], scores=self.scores[q], ids=ids)

    def __getitem__(self, q) -> TopK:
        if isinstance(q, (int, np.integer)):
            return self.for_query(int(q))
        raise TypeError(f"TopK indices are query numbers (int), got {type(q).__name__}; use .ids, .rows, .scores")

    def queries(self):
        """The per-query results, in query order.

        Returns
        -------
        list of TopK
            ``n_queries`` results of ``(k,)`` arrays (see :meth:`for_query`).
        """
        return [self.for_query(q) for q in range(self.n_queries)]

    def __iter__(self):
        if self.rows.ndim != 1:
            raise TypeError(
                f"a TopK of {self.n_queries} queries is not a tuple: read result.ids / result.rows / result.scores "
                f"(or .distances), or iterate result[q] for one query's (id, score) pairs"
            )
        ids = self.ids if self.ids is not None else [str(r) for r in self.rows.tolist()]
        return iter(zip(list(ids), self.scores.tolist()))

    def __len__(self) -> int:
        """Number of hits (one query) or of queries (a batch)."""
        return int(self.rows.shape[0])

    # export ----------------------------------------------------------------
    def to_records(self) -> list[dict]:
        """One dict per hit (``query`` added for a batch): rank, id, row, and the metric's value
        under ``score`` or ``distance``; ready for ``csv.DictWriter`` or JSON.

        Returns
        -------
        list of dict
            One dict per hit, queries in order and hits best first.
        """
        key = "score" if self.higher_is_better else "distance"
        out = []
        for q, one in enumerate(self.queries()):
            ids = one.ids if one.ids is not None else [None] * len(one.rows)
            for rank, (i, r, s) in enumerate(zip(ids, one.rows.tolist(), one.scores.tolist()), 1):
                rec = {"rank": rank, "id": i, "row": r, key: s}
                out.append(rec if self.rows.ndim == 1 else {"query": q, **rec})
        return out

    def to_dict(self) -> dict:
        """A JSON-ready dict: metric, k, n_scanned and per-query lists of ids, rows and values.

        Returns
        -------
        dict
            Keys ``metric``, ``higher_is_better``, ``k``, ``n_scanned``, ``ids``, ``rows`` and
            ``scores`` (a similarity) or ``distances`` (a distance metric).
        """
        values = "scores" if self.higher_is_better else "distances"
        ids = None if self.ids is None else np.asarray(self.ids).tolist()
        return {"metric": self.metric, "higher_is_better": bool(self.higher_is_better), "k": int(self.k),
                "n_scanned": int(self.n_scanned), "ids": ids, "rows": self.rows.tolist(), values: self.scores.tolist()}

    def __eq__(self, other):
        if not isinstance(other, TopK):
            return NotImplemented
        return (np.array_equal(self.rows, other.rows) and np.array_equal(self.scores, other.scores)
                and self.metric == other.metric and np.array_equal(np.asarray(self.ids), np.asarray(other.ids)))

    __hash__ = None  # type: ignore[assignment]  # unhashable on purpose: __eq__ compares arrays


def _best(rows: np.ndarray, scores: np.ndarray, k: int, higher: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of one query's candidates, sorted (best value first, row asc)."""
    key = -scores if higher else scores
    if key.size > k:
        kth = np.partition(key, k - 1)[k - 1]
        keep = key <= kth  # every candidate tied with the k-th stays for the exact cut below
        rows, scores, key = rows[keep], scores[keep], key[keep]
    order = np.lexsort((rows, key))[:k]
    return rows[order], scores[order]


def _stack(pairs, width, dtype):
    return (np.array([r for r, _ in pairs], dtype=np.int64).reshape(len(pairs), width),
            np.array([s for _, s in pairs], dtype=dtype).reshape(len(pairs), width))


def topk_of(rows: np.ndarray, scores: np.ndarray, k: int, n_scanned: int | None = None, *, metric: str = "score",
            higher_is_better: bool | None = None) -> TopK:
    """The top-k of a block: ``rows`` (m,), ``scores`` (n_queries, m) or (m,)."""
    scores = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    check_finite_scores(scores)
    rows = np.asarray(rows, dtype=np.int64)
    higher = METRICS.get(metric, True) if higher_is_better is None else higher_is_better
    pairs = [_best(rows, s, k, higher) for s in scores]
    r, s = _stack(pairs, min(k, rows.size), np.float64)
    return TopK(r, s, k, rows.size if n_scanned is None else n_scanned, metric=metric, higher_is_better=higher)


def merge_topk(a: TopK, b: TopK) -> TopK:
    """The top-k of the union of two partial results (the tree-reduction merge).

    Parameters
    ----------
    a, b : TopK
        Results of the same ``k``, number of queries and direction (``higher_is_better``).

    Returns
    -------
    TopK
        The best ``k`` of both per query; ``n_scanned`` is the sum.

    Raises
    ------
    ValueError
        If the two results do not match.
    """
    if a.k != b.k or a.rows.shape[0] != b.rows.shape[0] or a.higher_is_better != b.higher_is_better:
        raise ValueError(f"cannot merge top-k results of k={a.k}/{b.k}, {a.rows.shape[0]}/{b.rows.shape[0]} queries")
    rows = np.concatenate([a.rows, b.rows], axis=1)
    scores = np.concatenate([a.scores, b.scores], axis=1)
    pairs = [_best(r, s, a.k, bool(a.higher_is_better)) for r, s in zip(rows, scores)]  # a bool after __post_init__
    r, s = _stack(pairs, min(a.k, rows.shape[1]), scores.dtype)
    return TopK(r, s, a.k, a.n_scanned + b.n_scanned, metric=a.metric, higher_is_better=a.higher_is_better)
