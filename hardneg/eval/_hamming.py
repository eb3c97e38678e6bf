"""Exact Hamming ranking of packed binary codes (the evaluation reference).

The index layer (``hardneg.index``) serves fast search; this module is the
exact, deterministic ranking the metrics are computed on.
"""

from __future__ import annotations

import numpy as np

from hardneg._typing import ArrayLike
from hardneg._validation import check_k, check_positive_int, check_random_state

__all__ = ["hamming_rank", "hamming_distances"]

# popcount of every byte value, for numpy < 2.0 (no np.bitwise_count)
_POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
_HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")
# bytes of XOR workspace per query block
_BLOCK_BYTES = 1 << 25
_TIES = ("stable", "random")


def _check_codes(codes, name: str) -> np.ndarray:
    if codes is None or isinstance(codes, (str, bytes)):
        raise TypeError(f"{name}: expected a 2-D uint8 array of packed codes, got {type(codes).__name__}")
    codes = np.asarray(codes)
    if codes.dtype != np.uint8:
        raise TypeError(
            f"{name}: expected packed codes of dtype uint8 (np.packbits of the bits), got dtype {codes.dtype} shape {codes.shape}"
        )
    if codes.ndim != 2:
        raise ValueError(f"{name}: expected shape (n_codes, n_bits / 8), got shape {codes.shape}")
    if codes.shape[0] == 0 or codes.shape[1] == 0:
        raise ValueError(f"{name}: is empty (shape {codes.shape})")
    return np.ascontiguousarray(codes)


def _as_words(codes: np.ndarray) -> np.ndarray:
    """View packed bytes as uint64 words (zero-padded) when popcount is native."""
    if not _HAS_BITWISE_COUNT:
        return codes
    n_bytes = codes.shape[1]
    pad = (-n_bytes) % 8
    if pad:
        codes = np.concatenate([codes, np.zeros((codes.shape[0], pad), dtype=np.uint8)], axis=1)
    return np.ascontiguousarray(codes).view(np.uint64)


def _block_distances(q_words: np.ndarray, db_words: np.ndarray) -> np.ndarray:
    x = np.bitwise_xor(q_words[:, None, :], db_words[None, :, :])
    counts = np.bitwise_count(x) if _HAS_BITWISE_COUNT else _POPCOUNT8[x]
    return counts.sum(axis=2, dtype=np.int64)


def _block_rows(n_db: int, row_bytes: int, block_size: int | None) -> int:
    if block_size is not None:
        return block_size
    return max(1, _BLOCK_BYTES // max(1, n_db * row_bytes))


def hamming_distances(query_codes: ArrayLike, db_codes: ArrayLike) -> np.ndarray:
    """All Hamming distances between packed codes, shape (n_queries, n_db).

    Parameters
    ----------
    query_codes : ndarray of uint8, shape (n_queries, n_bytes)
        Packed codes (``np.packbits(bits, axis=1)``).
    db_codes : ndarray of uint8, shape (n_db, n_bytes)
        Packed codes with the same number of bytes per code.

    Returns
    -------
    ndarray of int32, shape (n_queries, n_db)
        ``out[i, j]`` is the number of bits where query ``i`` and code ``j`` differ.

    Raises
    ------
    ValueError
        If the two arrays have different numbers of bytes per code.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.eval import hamming_distances
    >>> hamming_distances(np.array([[0b1111_0000]], np.uint8), np.array([[0], [255]], np.uint8)).tolist()
    [[4, 4]]
    """
    q = _check_codes(query_codes, "query_codes")
    db = _check_codes(db_codes, "db_codes")
    if q.shape[1] != db.shape[1]:
        raise ValueError(f"query_codes has {q.shape[1]} bytes per code but db_codes has {db.shape[1]} (shapes {q.shape} and {db.shape})")
    qw, dw = _as_words(q), _as_words(db)
    step = _block_rows(db.shape[0], dw.shape[1] * dw.itemsize, None)
    out = np.empty((q.shape[0], db.shape[0]), dtype=np.int32)
    for start in range(0, q.shape[0], step):
        out[start : start + step] = _block_distances(qw[start : start + step], dw)
    return out


def hamming_rank(
    query_codes: ArrayLike,
    db_codes: ArrayLike,
    k: int | None = None,
    *,
    ties: str = "stable",
    random_state: int | np.random.Generator | None = None,
    block_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest database codes of every query by Hamming distance.

    Distances are popcounts of the XOR of packed bytes (``np.bitwise_count``
    on 64-bit words when NumPy >= 2.0, a byte lookup table otherwise),
    computed for a block of queries at a time to bound memory. The top ``k``
    are selected with ``np.argpartition`` and sorted by the composite key
    ``(distance, tie-break)``, which is unique, so the result is exact.

    Ties matter: with short codes many database items share a distance, and
    which of them make the top ``k`` changes precision and mAP.

    ``ties="stable"`` (default)
        Equal distances are ordered by database index, ascending. Results
        are deterministic, but favour items stored early.
    ``ties="random"``
        Equal distances are ordered by a random permutation drawn per query
        from ``random_state``: the fair convention when many codes share a
        distance. Reproducible for a fixed ``random_state`` and
        ``block_size``.

    Parameters
    ----------
    query_codes : ndarray of uint8, shape (n_queries, n_bytes)
        Packed codes (``np.packbits(bits, axis=1)``).
    db_codes : ndarray of uint8, shape (n_db, n_bytes)
    k : int, optional
        ``1 <= k <= n_db``; default ``n_db`` (a full ranking).
    ties : {"stable", "random"}
    random_state : None, int or numpy Generator
        Only used with ``ties="random"``.
    block_size : int, optional
        Queries per block; by default chosen so a block's XOR workspace
        stays near 32 MiB.

    Returns
    -------
    indices : ndarray of int64, shape (n_queries, k)
        Database rows, nearest first.
    distances : ndarray of int32, shape (n_queries, k)

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.eval import hamming_rank
    >>> db = np.array([[0b0000_0011], [0b0000_0001], [0b1000_0001], [0]], dtype=np.uint8)
    >>> idx, dist = hamming_rank(np.array([[0]], dtype=np.uint8), db, k=3)
    >>> idx.tolist(), dist.tolist()
    ([[3, 1, 0]], [[0, 1, 2]])
    """
    q = _check_codes(query_codes, "query_codes")
    db = _check_codes(db_codes, "db_codes")
    if q.shape[1] != db.shape[1]:
        raise ValueError(f"query_codes has {q.shape[1]} bytes per code but db_codes has {db.shape[1]} (shapes {q.shape} and {db.shape})")
    if ties not in _TIES:
        raise ValueError(f"ties: expected one of {_TIES}, got {ties!r}")
    n_db = db.shape[0]
    k = n_db if k is None else check_k(k, n_db)
    if block_size is not None:
        block_size = check_positive_int(block_size, "block_size")
    rng = check_random_state(random_state) if ties == "random" else None

    qw, dw = _as_words(q), _as_words(db)
    step = _block_rows(n_db, dw.shape[1] * dw.itemsize, block_size)
    indices = np.empty((q.shape[0], k), dtype=np.int64)
    distances = np.empty((q.shape[0], k), dtype=np.int32)
    db_index = np.arange(n_db, dtype=np.int64)
    for start in range(0, q.shape[0], step):
        dist = _block_distances(qw[start : start + step], dw)
        if rng is None:
            order = np.broadcast_to(db_index, dist.shape)
        else:
            order = rng.permuted(np.broadcast_to(db_index, dist.shape), axis=1)
        # unique key per item: distance major, tie-break minor
        keys = dist * n_db + order
        if k < n_db:
            part = np.argpartition(keys, k - 1, axis=1)[:, :k]
            top = np.take_along_axis(keys, part, axis=1)
        else:
            part = None
            top = keys
        pos = np.argsort(top, axis=1)
        top_sorted = np.take_along_axis(top, pos, axis=1)
        cols = pos if part is None else np.take_along_axis(part, pos, axis=1)
        indices[start : start + step] = cols
        distances[start : start + step] = top_sorted // n_db
    return indices, distances
