"""Ranking metrics: average precision, AP@k, mAP@k, precision@k.

Two families of inputs appear here:

* *scores* for every item of a collection (``average_precision``,
  ``precision_recall_curve``), where ties between scores matter, and
* *ranked relevance*: a boolean vector (one query) or matrix (one row per
  query) saying whether the item returned at rank ``r`` is relevant
  (``ap_at_k``, ``mean_average_precision_at_k``, ``precision_at_k``,
  ``precision_at_ranks``). A ranked-label form is turned into relevance by
  :func:`relevance_from_labels`.
"""

from __future__ import annotations

import numpy as np

from hardneg._typing import ArrayLike
from hardneg._validation import check_k

__all__ = [
    "average_precision",
    "ap_at_k",
    "mean_average_precision_at_k",
    "relevance_from_labels",
    "precision_at_k",
    "precision_at_ranks",
    "precision_recall_curve",
]

_NORMALIZATIONS = ("retrieved", "all")


# --------------------------------------------------------------------------- #
# input checks
# --------------------------------------------------------------------------- #
def _as_binary(values, name: str, ndim: int | tuple[int, ...]) -> np.ndarray:
    """Return ``values`` as a bool array after checking it holds only 0/1."""
    arr = np.asarray(values)
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if arr.ndim not in ndims:
        want = " or ".join(f"{d}-D" for d in ndims)
        raise ValueError(f"{name}: expected a {want} array of 0/1 relevance, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: is empty (shape {arr.shape})")
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected 0/1 or boolean values, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name}: contains NaN or infinity (shape {arr.shape})")
    if not np.isin(arr, (0, 1)).all():
        bad = np.unique(arr[~np.isin(arr, (0, 1))])[:5]
        raise ValueError(f"{name}: expected binary relevance (0/1 or bool), found values {bad.tolist()}")
    return arr.astype(bool)


def _as_scores(scores, n: int, name: str = "scores") -> np.ndarray:
    s = np.asarray(scores)
    if s.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of scores, got shape {s.shape}")
    if s.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected numeric scores, got dtype {s.dtype}")
    if s.shape[0] != n:
        raise ValueError(f"{name}: has {s.shape[0]} entries but y_true has {n}")
    s = s.astype(np.float64)
    if not np.isfinite(s).all():
        raise ValueError(f"{name}: contains NaN or infinity (shape {s.shape})")
    return s


def _check_normalize(normalize: str) -> str:
    if normalize not in _NORMALIZATIONS:
        raise ValueError(f"normalize: expected one of {_NORMALIZATIONS}, got {normalize!r}")
    return normalize


# --------------------------------------------------------------------------- #
# scores for every item
# --------------------------------------------------------------------------- #
def average_precision(y_true: ArrayLike, scores: ArrayLike) -> float:
    """Non-interpolated average precision of one ranking given by scores.

    ``AP = sum_n (R_n - R_{n-1}) P_n`` over the distinct score thresholds,
    taken from the highest score down. Items with equal scores enter the
    ranking together (one threshold), so the result equals
    :func:`sklearn.metrics.average_precision_score` for binary relevance,
    ties included. Without ties this is the familiar
    ``(1 / n_rel) * sum_{r : rel(r)} precision@r``.

    Parameters
    ----------
    y_true : array-like of shape (n_items,)
        Binary relevance (0/1 or bool).
    scores : array-like of shape (n_items,)
        Higher means ranked earlier. Must be finite.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On shape mismatch, empty input, NaN/inf scores, non-binary
        relevance, or when ``y_true`` holds no relevant item (AP undefined).

    Examples
    --------
    >>> from hardneg.eval import average_precision
    >>> round(average_precision([1, 0, 1, 0, 0, 1], [6, 5, 4, 3, 2, 1]), 4)
    0.7222
    """
    y = _as_binary(y_true, "y_true", 1)
    s = _as_scores(scores, y.shape[0])
    n_pos = int(y.sum())
    if n_pos == 0:
        raise ValueError(f"y_true: holds no relevant item among {y.shape[0]}; average precision is undefined")
    order = np.argsort(-s, kind="stable")
    s_sorted, y_sorted = s[order], y[order]
    # The last position of every run of equal scores is one threshold.
    ends = np.flatnonzero(np.r_[s_sorted[1:] != s_sorted[:-1], True])
    tp = np.cumsum(y_sorted)[ends]
    precision = tp / (ends + 1.0)
    recall_step = np.diff(np.r_[0, tp]) / n_pos
    return float(np.sum(recall_step * precision))


def precision_recall_curve(y_true: ArrayLike, scores: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision-recall curve of one query ranked by scores.

    A checked wrapper around :func:`sklearn.metrics.precision_recall_curve`
    (same outputs and ordering: precision and recall end with the point
    ``(1, 0)``, ``thresholds`` is increasing and one shorter).

    Parameters
    ----------
    y_true : array-like of shape (n_items,)
        Binary relevance with at least one relevant item.
    scores : array-like of shape (n_items,)

    Returns
    -------
    precision, recall, thresholds : ndarray

    Examples
    --------
    >>> from hardneg.eval import precision_recall_curve
    >>> p, r, t = precision_recall_curve([1, 0, 1], [0.9, 0.5, 0.1])
    >>> r.tolist()
    [1.0, 0.5, 0.5, 0.0]
    """
    from sklearn.metrics import precision_recall_curve as _prc

    y = _as_binary(y_true, "y_true", 1)
    s = _as_scores(scores, y.shape[0])
    if not y.any():
        raise ValueError(f"y_true: holds no relevant item among {y.shape[0]}; recall is undefined")
    return _prc(y.astype(np.int8), s)


# --------------------------------------------------------------------------- #
# ranked relevance
# --------------------------------------------------------------------------- #
def _ap_rows(rel: np.ndarray, n_relevant, normalize: str) -> np.ndarray:
    """AP@k for every row of a (n_queries, k) boolean matrix."""
    k = rel.shape[1]
    hits = np.cumsum(rel, axis=1, dtype=np.int64)
    precision = hits / np.arange(1, k + 1, dtype=np.float64)
    numerator = np.sum(precision * rel, axis=1)
    if normalize == "retrieved":
        denom = hits[:, -1].astype(np.float64)
    else:
        denom = np.minimum(k, n_relevant).astype(np.float64)
    out = np.zeros(rel.shape[0], dtype=np.float64)
    np.divide(numerator, denom, out=out, where=denom > 0)
    return out


def _check_n_relevant(n_relevant, rel_full: np.ndarray) -> np.ndarray:
    """Total relevant items per query; defaults to the count in the list."""
    in_list = rel_full.sum(axis=1)
    if n_relevant is None:
        return in_list
    n = np.asarray(n_relevant)
    if n.dtype.kind not in "iu" and not (n.dtype.kind == "f" and np.all(np.mod(n, 1) == 0)):
        raise TypeError(f"n_relevant: expected integer counts, got dtype {n.dtype}")
    n = np.broadcast_to(n, in_list.shape) if n.ndim == 0 else n
    if n.shape != in_list.shape:
        raise ValueError(f"n_relevant: expected one count per query, shape {in_list.shape}, got shape {n.shape}")
    n = n.astype(np.int64)
    if np.any(n < in_list):
        q = int(np.flatnonzero(n < in_list)[0])
        raise ValueError(
            f"n_relevant: query {q} has {int(in_list[q])} relevant items in its ranked list but n_relevant={int(n[q])}"
        )
    return n


def ap_at_k(relevance_ranked: ArrayLike, k: int | None = None, n_relevant: int | None = None, *, normalize: str = "retrieved") -> float:
    """Average precision over the top ``k`` of one ranked list.

    ``AP@k = (1 / Z) * sum_{r <= k} rel(r) * precision@r``. The normalizer
    ``Z`` is where conventions differ:

    ``normalize="retrieved"`` (default)
        ``Z`` = number of relevant items *within the top k*. This is the
        hashing literature's "mAP over the top 500 returned" (the ITQ
        evaluation code of Gong & Lazebnik, and the Cevikalp et al. CVIU 2017
        tables); a list with no relevant item in its top ``k`` scores 0.
    ``normalize="all"``
        ``Z = min(k, n_relevant)``, with ``n_relevant`` the total number of
        relevant items for the query in the whole collection; a list that
        misses relevant items is penalized. With ``k`` equal to the full
        collection this is plain (non-interpolated) AP.

    Parameters
    ----------
    relevance_ranked : array-like of shape (n_ranked,)
        0/1 relevance of the items in ranked order (best first).
    k : int, optional
        Cut-off, ``1 <= k <= n_ranked``; default ``n_ranked``.
    n_relevant : int, optional
        Only for ``normalize="all"``: total relevant items in the collection.
        Default: the count in ``relevance_ranked`` (correct when it holds the
        ranking of the whole collection).
    normalize : {"retrieved", "all"}

    Returns
    -------
    float

    Examples
    --------
    >>> from hardneg.eval import ap_at_k
    >>> rel = [1, 0, 1, 0, 0, 1]
    >>> round(ap_at_k(rel, 3), 4)              # (1/1 + 2/3) / 2
    0.8333
    >>> round(ap_at_k(rel, 3, normalize="all"), 4)  # (1/1 + 2/3) / min(3, 3)
    0.5556
    """
    normalize = _check_normalize(normalize)
    rel = _as_binary(relevance_ranked, "relevance_ranked", 1)[None, :]
    k = rel.shape[1] if k is None else check_k(k, rel.shape[1])
    n_rel = _check_n_relevant(n_relevant, rel) if normalize == "all" else None
    return float(_ap_rows(rel[:, :k], n_rel, normalize)[0])


def relevance_from_labels(query_labels: ArrayLike, retrieved_labels: ArrayLike) -> np.ndarray:
    """Boolean relevance of retrieved items: shares at least one label.

    Parameters
    ----------
    query_labels : array-like of shape (n_queries,) or (n_queries, n_labels)
        Integer class labels, or multi-hot (0/1) label vectors.
    retrieved_labels : array-like of shape (n_queries, n_retrieved) or (n_queries, n_retrieved, n_labels)
        Labels of the retrieved items in ranked order, e.g.
        ``db_labels[indices]`` for ``indices`` from :func:`hamming_rank`.

    Returns
    -------
    ndarray of bool, shape (n_queries, n_retrieved)

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.eval import relevance_from_labels
    >>> relevance_from_labels([3, 1], [[3, 0, 3], [2, 1, 1]]).astype(int).tolist()
    [[1, 0, 1], [0, 1, 1]]
    >>> q = np.array([[1, 0, 1]]); r = np.array([[[0, 0, 1], [0, 1, 0]]])
    >>> relevance_from_labels(q, r).tolist()
    [[True, False]]
    """
    q = np.asarray(query_labels)
    r = np.asarray(retrieved_labels)
    if q.ndim == 1:
        if r.ndim != 2:
            raise ValueError(
                f"retrieved_labels: with 1-D query_labels expected shape (n_queries, n_retrieved), got {r.shape}"
            )
        if r.shape[0] != q.shape[0]:
            raise ValueError(f"retrieved_labels: has {r.shape[0]} rows but query_labels has {q.shape[0]} queries")
        if q.size == 0 or r.shape[1] == 0:
            raise ValueError(f"query_labels / retrieved_labels: empty (shapes {q.shape} and {r.shape})")
        return r == q[:, None]
    if q.ndim == 2:
        if r.ndim != 3:
            raise ValueError(
                "retrieved_labels: with multi-hot query_labels expected shape "
                f"(n_queries, n_retrieved, n_labels), got {r.shape}"
            )
        if r.shape[0] != q.shape[0] or r.shape[2] != q.shape[1]:
            raise ValueError(f"retrieved_labels: shape {r.shape} does not match query_labels shape {q.shape}")
        qb = _as_binary(q, "query_labels", 2)
        rb = _as_binary(r, "retrieved_labels", 3)
        # float32 matmul counts shared labels exactly (far below 2**24 labels)
        shared = np.matmul(rb.astype(np.float32), qb.astype(np.float32)[:, :, None])[:, :, 0]
        return shared > 0
    raise ValueError(f"query_labels: expected 1-D labels or 2-D multi-hot labels, got shape {q.shape}")


def _relevance_matrix(relevance) -> np.ndarray:
    if isinstance(relevance, tuple):
        if len(relevance) != 2:
            raise ValueError(
                f"relevance: a tuple must be (query_labels, ranked_db_labels), got a tuple of length {len(relevance)}"
            )
        return relevance_from_labels(*relevance)
    rel = _as_binary(relevance, "relevance", (1, 2))
    return rel[None, :] if rel.ndim == 1 else rel


def mean_average_precision_at_k(
    relevance: ArrayLike | tuple[ArrayLike, ArrayLike],
    k: int | None = None,
    *,
    n_relevant: ArrayLike | None = None,
    normalize: str = "retrieved",
    return_per_query: bool = False,
) -> float | tuple[float, np.ndarray]:
    """Mean of AP@k over a batch of queries (vectorized).

    See :func:`ap_at_k` for the two normalizations; the default
    ``"retrieved"`` is the hashing convention (ITQ / Cevikalp et al.): AP is
    divided by the number of relevant items within the top ``k``.

    Parameters
    ----------
    relevance : array-like of shape (n_queries, n_ranked), or tuple
        Either a boolean (0/1) relevance matrix in ranked order, or a tuple
        ``(query_labels, ranked_db_labels)`` that is passed to
        :func:`relevance_from_labels` (1-D integer or 2-D multi-hot labels).
    k : int, optional
        Cut-off, ``1 <= k <= n_ranked``; default ``n_ranked``.
    n_relevant : int or array-like of shape (n_queries,), optional
        Only for ``normalize="all"``: total relevant items per query in the
        collection. Default: the count in each row of ``relevance``.
    normalize : {"retrieved", "all"}
    return_per_query : bool
        Also return the (n_queries,) array of AP@k values.

    Returns
    -------
    float, or (float, ndarray) when ``return_per_query``

    Examples
    --------
    >>> from hardneg.eval import mean_average_precision_at_k
    >>> rel = [[1, 0, 1, 0], [0, 0, 0, 1]]
    >>> round(mean_average_precision_at_k(rel, k=3), 4)   # (0.8333 + 0) / 2
    0.4167
    >>> mean_average_precision_at_k(([3, 1], [[3, 3], [1, 2]]), k=2)
    1.0
    """
    normalize = _check_normalize(normalize)
    rel = _relevance_matrix(relevance)
    k = rel.shape[1] if k is None else check_k(k, rel.shape[1])
    n_rel = _check_n_relevant(n_relevant, rel) if normalize == "all" else None
    per_query = _ap_rows(rel[:, :k], n_rel, normalize)
    value = float(per_query.mean())
    return (value, per_query) if return_per_query else value


def precision_at_k(relevance: ArrayLike | tuple[ArrayLike, ArrayLike], k: int) -> float:
    """Fraction of relevant items among the top ``k``, averaged over queries.

    Parameters
    ----------
    relevance : array-like of shape (n_ranked,) or (n_queries, n_ranked), or tuple
        Ranked 0/1 relevance (one query or one row per query), or a tuple
        ``(query_labels, ranked_db_labels)`` as in
        :func:`mean_average_precision_at_k`.
    k : int
        ``1 <= k <= n_ranked``.

    Returns
    -------
    float

    Examples
    --------
    >>> from hardneg.eval import precision_at_k
    >>> precision_at_k([1, 0, 1, 1], 2)
    0.5
    """
    rel = _relevance_matrix(relevance)
    k = check_k(k, rel.shape[1])
    return float(rel[:, :k].mean())


def precision_at_ranks(relevance: ArrayLike | tuple[ArrayLike, ArrayLike], ranks: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Precision-vs-rank curve: mean precision@r for every requested rank.

    Parameters
    ----------
    relevance : array-like of shape (n_ranked,) or (n_queries, n_ranked), or tuple
        As in :func:`precision_at_k`.
    ranks : array-like of int, optional
        Ranks ``1 <= r <= n_ranked``; default every rank ``1..n_ranked``.

    Returns
    -------
    ranks : ndarray of int64, shape (n_ranks,)
    precision : ndarray of float64, shape (n_ranks,)

    Examples
    --------
    >>> from hardneg.eval import precision_at_ranks
    >>> r, p = precision_at_ranks([1, 0, 1, 1])
    >>> p.tolist()
    [1.0, 0.5, 0.6666666666666666, 0.75]
    """
    rel = _relevance_matrix(relevance)
    n = rel.shape[1]
    if ranks is None:
        ranks = np.arange(1, n + 1, dtype=np.int64)
    else:
        ranks = np.asarray(ranks)
        if ranks.ndim != 1 or ranks.size == 0 or ranks.dtype.kind not in "iu":
            raise ValueError(f"ranks: expected a non-empty 1-D array of integers, got shape {ranks.shape} dtype {ranks.dtype}")
        if ranks.min() < 1 or ranks.max() > n:
            raise ValueError(f"ranks: every rank must lie in 1..{n} (the ranked list length), got {ranks.min()}..{ranks.max()}")
        ranks = ranks.astype(np.int64)
    hits = np.cumsum(rel, axis=1, dtype=np.int64)[:, ranks - 1]
    return ranks, (hits / ranks).mean(axis=0)
