"""Nearest centroid of each packed code by Hamming distance: the list assignment of an
``IndexBinaryIVF`` (``quantizer->assign(n, x, idx)`` in FAISS), with the CPU's popcount.

The generic FAISS wheel computes Hamming distances without the popcount instruction
(no result file compares the two: the build time in docs/scaling.md is this kernel's). This kernel computes the
distances of one code to every centroid in a branch-free loop (one xor and one
hardware popcount per 64-bit word, vectorized by LLVM), then takes the first
minimum: the lowest-numbered of the nearest centroids, as FAISS's k = 1 search
returns it (``tests/index/test_ivf_build.py`` checks both against each other).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, types
from numba.extending import intrinsic

__all__ = ["nearest_centroid"]


@intrinsic
def _popcount(typingctx, x):
    sig = types.int64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return sig, codegen


_BLOCK = 256  # codes per parallel task; each task allocates its distance buffer once


@njit(cache=True, nogil=True, parallel=True)
def _nearest(codes, planes, proto):
    n, w = codes.shape
    nlist = planes.shape[1]
    out = np.empty(n, np.int64)
    for blk in prange((n + _BLOCK - 1) // _BLOCK):
        buf = np.empty(nlist, proto.dtype)  # narrow: more distances per vector register
        for i in range(blk * _BLOCK, min(n, (blk + 1) * _BLOCK)):
            x = codes[i, 0]
            p = planes[0]
            for c in range(nlist):
                buf[c] = _popcount(p[c] ^ x)
            for b in range(1, w):
                x = codes[i, b]
                p = planes[b]
                for c in range(nlist):
                    buf[c] += _popcount(p[c] ^ x)
            best = 0
            m = buf[0]
            for c in range(1, nlist):
                if buf[c] < m:
                    m = buf[c]
                    best = c
            out[i] = best
    return out


def _words(codes: np.ndarray) -> np.ndarray:
    extra = -codes.shape[1] % 8  # zero bytes on both sides change no distance
    if extra:
        codes = np.concatenate([codes, np.zeros((codes.shape[0], extra), np.uint8)], axis=1)
    return np.ascontiguousarray(codes).view(np.uint64)


def nearest_centroid(codes: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Row of the nearest centroid of each code (ties: the lowest row), int64 of shape (n,).

    Parameters
    ----------
    codes : ndarray of uint8, shape (n, n_bytes)
        Packed codes.
    centroids : ndarray of uint8, shape (nlist, n_bytes)
        Packed centroids (at least one).

    Returns
    -------
    ndarray of int64, shape (n,)
        The nearest centroid's row for each code.

    Examples
    --------
    >>> import numpy as np
    >>> c = np.array([[0], [255]], np.uint8)
    >>> nearest_centroid(np.array([[1], [254], [15]], np.uint8), c).tolist()  # 15: 4 bits from each, the first wins
    [0, 1, 0]
    """
    codes = np.ascontiguousarray(codes, np.uint8)
    centroids = np.ascontiguousarray(centroids, np.uint8)
    if codes.ndim != 2 or centroids.ndim != 2 or codes.shape[1] != centroids.shape[1] or not centroids.shape[0]:
        raise ValueError(f"codes {codes.shape} and centroids {centroids.shape}: expected (n, n_bytes) and (nlist >= 1, n_bytes)")
    if codes.shape[0] == 0:
        return np.zeros(0, np.int64)
    if 8 * codes.shape[1] > 32767:  # beyond the int16 distances of the kernel: FAISS's own search
        import faiss

        q = faiss.IndexBinaryFlat(8 * centroids.shape[1])
        q.add(centroids)
        return q.search(codes, 1)[1][:, 0].astype(np.int64)
    planes = np.ascontiguousarray(_words(centroids).T)  # word b of every centroid, contiguous: the loop vectorizes
    proto = np.empty(0, np.int8 if 8 * codes.shape[1] <= 127 else np.int16)  # the distance type: room for n_bits
    return _nearest(_words(codes), planes, proto)
