"""Top-k partial results and their merge: associative, commutative, tie-exact.

A partial result holds, per query, the ``k`` best ``(score, row)`` pairs
under the total order "higher score first, then lower row". Because that
order is total, the ``k`` best of a union are the same whichever way the
union is split and merged, so a tree reduction over partitions that finish in
any order gives the same bytes as one sequential pass. (``np.argpartition``
alone would keep an arbitrary one of tied rows at the cut; here ties at the
cut are resolved by row.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_finite_scores

__all__ = ["TopK", "merge_topk", "topk_of"]


@dataclass
class TopK:
    """``rows`` int64 and ``scores`` float64, shape (n_queries, <= k), best first."""

    rows: np.ndarray
    scores: np.ndarray
    k: int
    n_scanned: int = 0  # rows scored: a partition lost or counted twice shows here

    @classmethod
    def empty(cls, n_queries: int, k: int) -> TopK:
        return cls(np.empty((n_queries, 0), np.int64), np.empty((n_queries, 0), np.float64), k)


def _best(rows: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of one query's candidates, sorted (score desc, row asc)."""
    if scores.size > k:
        kth = np.partition(scores, scores.size - k)[scores.size - k]
        keep = scores >= kth  # every candidate tied with the k-th stays for the exact cut below
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]


def topk_of(rows: np.ndarray, scores: np.ndarray, k: int, n_scanned: int | None = None) -> TopK:
    """The top-k of a block: ``rows`` (m,), ``scores`` (n_queries, m) or (m,)."""
    scores = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    check_finite_scores(scores)
    rows = np.asarray(rows, dtype=np.int64)
    pairs = [_best(rows, s, k) for s in scores]
    width = min(k, rows.size)
    return TopK(
        np.array([r for r, _ in pairs], dtype=np.int64).reshape(len(pairs), width),
        np.array([s for _, s in pairs], dtype=np.float64).reshape(len(pairs), width),
        k,
        rows.size if n_scanned is None else n_scanned,
    )


def merge_topk(a: TopK, b: TopK) -> TopK:
    """The top-k of the union of two partial results (the tree-reduction merge)."""
    if a.k != b.k or a.rows.shape[0] != b.rows.shape[0]:
        raise ValueError(f"cannot merge top-k results of k={a.k}/{b.k}, {a.rows.shape[0]}/{b.rows.shape[0]} queries")
    rows = np.concatenate([a.rows, b.rows], axis=1)
    scores = np.concatenate([a.scores, b.scores], axis=1)
    pairs = [_best(r, s, a.k) for r, s in zip(rows, scores)]
    width = min(a.k, rows.shape[1])
    return TopK(
        np.array([r for r, _ in pairs], dtype=np.int64).reshape(len(pairs), width),
        np.array([s for _, s in pairs], dtype=np.float64).reshape(len(pairs), width),
        a.k,
        a.n_scanned + b.n_scanned,
    )
