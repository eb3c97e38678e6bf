"""Exhaustive Hamming top-k of many queries in one pass over the codes (the service's exact search).

FAISS's ``IndexBinaryFlat`` scans the codes once per query, so a batch of n
exact queries costs n scans (about 1.5-2 ms each over 1M 64-bit codes with the
generic FAISS wheel, whose popcount is not the CPU's instruction):
batching them saves only the per-call overhead. :func:`hamming_topk` walks the
codes block by block (a block stays in cache while every query of the batch
reads it) and keeps, per query, only the codes nearer than its current k-th
distance: one xor, one hardware popcount and one compare per code and query.
The answer equals FAISS's: the ``k`` nearest rows, nearest first, ties by row.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["hamming_topk"]

_BLOCK = 512  # codes per block: block + distance buffer stay in L1 (4 KB each at 64 bits) while every query reads them;
# smaller blocks than 4096 measured faster in benchmarks/serve_load.py (issue 29)


@intrinsic
def _popcount(typingctx, x):
    sig = types.int64(types.uint64)  # the bit count as a signed int: no float promotion when summed

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return sig, codegen


@njit(cache=True, nogil=True)
def _kth(hist, k, n_bits):
    """Smallest distance t with at least k held codes at distance <= t (n_bits + 1 if none)."""
    c = 0
    for t in range(n_bits + 1):
        c += hist[t]
        if c >= k:
            return t
    return n_bits + 1


@njit(cache=True, nogil=True)
def _scan(planes, queries, k, n_bits):
    w, n = planes.shape  # word b of every code, contiguous: the distance loop vectorizes
    nq = queries.shape[0]
    cap = 2 * k + 64
    cand_d = np.empty((nq, cap), np.int32)
    cand_r = np.empty((nq, cap), np.int64)
    ncand = np.zeros(nq, np.int64)
    hist = np.zeros((nq, n_bits + 2), np.int64)
    thr = np.full(nq, n_bits + 1, np.int64)  # accept d < thr: thr is the k-th held distance
    buf = np.empty(_BLOCK, np.int64)
    for lo in range(0, n, _BLOCK):
        hi = min(lo + _BLOCK, n)
        for q in range(nq):
            # branch-free distance loop (vectorized popcount), then a look at the block only when
            # some code in it is nearer than the query's current k-th: rare once k codes are held
            p, qb = planes[0, lo:hi], queries[q, 0]
            for j in range(hi - lo):
                buf[j] = _popcount(p[j] ^ qb)
            for b in range(1, w):
                p, qb = planes[b, lo:hi], queries[q, b]
                for j in range(hi - lo):
                    buf[j] += _popcount(p[j] ^ qb)
            t = thr[q]
            mn = n_bits + 1
            for j in range(hi - lo):
                mn = min(mn, buf[j])
            if mn >= t:
                continue
            for j in range(lo, hi):
                d = buf[j - lo]
                if d < t:
                    m = ncand[q]
                    if m == cap:  # compact: every code at d < thr, and the earliest rows at d == thr
                        need = k
                        for i in range(m):
                            if cand_d[q, i] < t:
                                need -= 1
                        keep = 0
                        for i in range(m):
                            di = cand_d[q, i]
                            if di < t or (di == t and need > 0):
                                if di == t:
                                    need -= 1
                                cand_d[q, keep] = di
                                cand_r[q, keep] = cand_r[q, i]
                                keep += 1
                        hist[q, :] = 0
                        for i in range(keep):
                            hist[q, cand_d[q, i]] += 1
                        m = keep
                    cand_d[q, m] = d
                    cand_r[q, m] = j
                    ncand[q] = m + 1
                    hist[q, d] += 1
                    t = _kth(hist[q], k, n_bits)
            thr[q] = t
    rows = np.empty((nq, k), np.int64)
    dist = np.empty((nq, k), np.int32)
    for q in range(nq):
        m = ncand[q]
        order = np.argsort(cand_d[q, :m] * np.int64(n) + cand_r[q, :m])  # by distance, ties by row
        for i in range(k):
            rows[q, i] = cand_r[q, order[i]]
            dist[q, i] = cand_d[q, order[i]]
    return rows, dist


def hamming_topk(codes: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest codes of each query: ``(rows int64 (nq, k), distances int32 (nq, k))``.

    ``codes`` are packed uint8 codes (n, n_bytes), as FAISS and
    :class:`hardneg.index.HammingIndex` store them (zero-padded to whole 64-bit
    words here), or their :func:`code_planes` (made once, to skip the copy per call);
    ``queries`` (nq, n_bytes) packed uint8. Rows nearest first, ties by row, as
    FAISS's exhaustive search returns them.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.packbits(np.eye(8, dtype=bool), axis=1)  # 8 one-byte codes, one bit each
    >>> rows, dist = hamming_topk(codes, np.packbits(np.eye(8, dtype=bool)[[2]], axis=1), 3)
    >>> rows.tolist(), dist.tolist()  # itself first, then the rest at distance 2, ties by row
    ([[2, 0, 1]], [[0, 2, 2]])
    """
    planes = code_planes(codes)
    w, n = planes.shape
    queries = np.atleast_2d(np.asarray(queries, np.uint8))
    if queries.ndim != 2 or not 8 * (w - 1) < queries.shape[1] <= 8 * w:
        raise ValueError(f"queries: expected packed codes of {8 * w} bytes at most, got shape {queries.shape}")
    queries = _pad(queries)
    if not 1 <= k <= n:
        raise ValueError(f"k: expected 1 to {n}, got {k}")
    return _scan(planes, queries.view(np.uint64).reshape(-1, w), int(k), 64 * w)


def code_planes(codes: np.ndarray) -> np.ndarray:
    """Packed uint8 codes (n, n_bytes) as uint64 word planes (n_bytes / 8, n): what
    :func:`hamming_topk` scans (make them once and pass them as ``codes`` to skip the copy)."""
    if codes.dtype == np.uint64 and codes.ndim == 2 and codes.flags.c_contiguous:
        return codes
    codes = np.ascontiguousarray(codes, np.uint8)
    if codes.ndim != 2 or codes.shape[1] == 0:
        raise ValueError(f"codes: expected packed uint8 codes (n, n_bytes), got shape {codes.shape}")
    codes = _pad(codes)
    return np.ascontiguousarray(codes.view(np.uint64).reshape(len(codes), -1).T)


def _pad(codes: np.ndarray) -> np.ndarray:
    """Zero bytes up to a multiple of 8 (zeros on both sides change no distance), C-contiguous."""
    extra = -codes.shape[1] % 8
    if extra:
        codes = np.concatenate([codes, np.zeros((len(codes), extra), np.uint8)], axis=1)
    return np.ascontiguousarray(codes)
