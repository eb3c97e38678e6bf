"""A retrieval criterion on held-out triplets, for choosing η and λ (an extra, not in the paper).

The paper chooses parameters by the error on a held-out triplet stream. A triplet error
counts every (positive, negative) order equally; retrieval mAP weighs the top of the
ranking. :func:`heldout_map` reads the same held-out triplets as a small retrieval task:
each anchor ranks the positives and negatives it was paired with, and the score is the
mean average precision. It needs no labels beyond those the triplets already carry.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hardneg._typing import ArrayLike
from ._checks import check_triplets

__all__ = ["heldout_map"]


def heldout_map(model: Any, X: Any, triplets: ArrayLike) -> float:
    """Mean AP of each anchor ranking its own held-out positives among its negatives.

    For every distinct anchor ``a`` of ``triplets``: the candidates are the
    distinct rows paired with it, relevant if they appear as its positive,
    irrelevant if they appear only as its negative; they are ranked by
    ``model``'s similarity to ``a``, ties broken against the relevant ones
    (so a model that scores everything equal earns no credit), and AP is
    averaged over the anchors.

    Parameters
    ----------
    model : fitted similarity model (``score_pairs``)
    X : sparse matrix or sparse FeatureStore
    triplets : (n, 3) int array of row indices ``(anchor, positive, negative)``

    Returns
    -------
    float
        The mean AP over the anchors.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from hardneg.similarity import TfidfCosine, heldout_map
    >>> X = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [0.0, 1.0]]))
    >>> model = TfidfCosine().fit(X)  # both words in 3 rows: equal idf, so the plain cosine
    >>> # anchor 0: positive 1 scores 1.0, negatives 2 (0.6) and 3 (0.0) below -> AP 1
    >>> heldout_map(model, X, [[0, 1, 2], [0, 1, 3]])
    1.0
    >>> # anchor 3: positive 1 scores 0.0, negative 2 scores 0.8 -> ranked 2nd -> AP 1/2
    >>> heldout_map(model, X, [[0, 1, 2], [0, 1, 3], [3, 1, 2]])
    0.75
    """
    shape = getattr(X, "shape", None)
    if shape is None:  # was a TypeError from comparing row indices with None
        raise TypeError(f"X: expected a sparse matrix or a sparse FeatureStore, got {type(X).__name__}")
    t = check_triplets(triplets, shape[0])
    ap = []
    # np.unique sorts the pairs by anchor: each anchor's pairs are one slice (no per-anchor scan of all pairs)
    pos_pairs = np.unique(t[:, :2], axis=0)
    neg_pairs = np.unique(t[:, [0, 2]], axis=0)
    s_pos = model.score_pairs(X, pos_pairs)
    s_neg = model.score_pairs(X, neg_pairs)
    anchors = np.unique(t[:, 0])
    p_lo, p_hi = np.searchsorted(pos_pairs[:, 0], anchors, "left"), np.searchsorted(pos_pairs[:, 0], anchors, "right")
    n_lo, n_hi = np.searchsorted(neg_pairs[:, 0], anchors, "left"), np.searchsorted(neg_pairs[:, 0], anchors, "right")
    for i in range(anchors.size):
        sp_ = s_pos[p_lo[i]:p_hi[i]]
        pos_rows = pos_pairs[p_lo[i]:p_hi[i], 1]
        keep = ~np.isin(neg_pairs[n_lo[i]:n_hi[i], 1], pos_rows)
        sn = s_neg[n_lo[i]:n_hi[i]][keep]
        # rank of each positive: 1 + negatives scoring >= it + positives scoring strictly above it
        sp_sorted = np.sort(sp_)[::-1]
        n_neg_ge = sn.size - np.searchsorted(np.sort(sn), sp_sorted, side="left")
        ranks = np.arange(1, sp_sorted.size + 1) + n_neg_ge
        ap.append(float(np.mean(np.arange(1, sp_sorted.size + 1) / ranks)))
    return float(np.mean(ap))
