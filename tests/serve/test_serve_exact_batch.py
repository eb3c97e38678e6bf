"""Exact Hamming queries batched into one multi-query scan (hardneg issue 29).

The scan (hardneg.serve._exact_scan) is checked against an obvious reference and
FAISS's flat search; the service's HammingMode answers a batch exactly as one by
one; the micro-batcher serves concurrent exact queries in one call and never
keeps a lone query waiting for a batch that does not fill.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from hardneg.index import HammingIndex
from hardneg.serve import _batch
from hardneg.serve._batch import MicroBatcher
from hardneg.serve._exact_scan import code_planes, hamming_topk
from hardneg.serve._modes import HammingMode


def reference_topk(codes, queries, k):
    """Slow and obvious: every distance, sorted by (distance, row)."""
    bits = np.unpackbits(codes, axis=1).astype(np.int64)
    rows, dist = [], []
    for q in np.unpackbits(queries, axis=1).astype(np.int64):
        d = np.abs(bits - q).sum(axis=1)
        order = np.lexsort((np.arange(len(d)), d))[:k]
        rows.append(order)
        dist.append(d[order])
    return np.array(rows), np.array(dist)


def tied_codes(n, n_bytes, seed):
    """Random codes with many exact duplicates and near duplicates (ties at every distance)."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 256, (n, n_bytes), dtype=np.uint8)
    codes[::5] = codes[1]
    codes[2::7, 0] = codes[1, 0] ^ 1
    return codes


@pytest.mark.parametrize("n_bytes", [2, 8, 12, 16])
@pytest.mark.parametrize("k", [1, 10, 150])
def test_scan_matches_reference_and_faiss(n_bytes, k):
    codes = tied_codes(9000, n_bytes, seed=n_bytes + k)  # > one 4096-code block
    queries = np.concatenate([codes[[1, 3, 8999]], np.random.default_rng(1).integers(0, 256, (3, n_bytes), np.uint8)])
    rows, dist = hamming_topk(codes, queries, k)
    ref_rows, ref_dist = reference_topk(codes, queries, k)
    np.testing.assert_array_equal(dist, ref_dist)
    np.testing.assert_array_equal(rows, ref_rows)
    index = HammingIndex(8 * n_bytes)
    index.add(codes, ids=[str(i) for i in range(len(codes))])
    f_rows, f_dist = index.rank(queries, k)
    np.testing.assert_array_equal(dist, f_dist)
    np.testing.assert_array_equal(rows, f_rows)


def test_scan_compacts_when_nearer_codes_keep_coming():
    # each code is nearer to the query than the one before: every code is accepted, so the
    # candidate buffer (2k + 64) fills and is compacted many times
    n, k = 3000, 5
    q = np.zeros((1, 8), np.uint8)
    bits = np.zeros((n, 64), bool)
    for i in range(n):
        bits[i, : 64 - (64 * i) // n] = True
    codes = np.packbits(bits, axis=1)
    rows, dist = hamming_topk(code_planes(codes), q, k)
    ref_rows, ref_dist = reference_topk(codes, q, k)
    np.testing.assert_array_equal(rows, ref_rows)
    np.testing.assert_array_equal(dist, ref_dist)


def test_scan_rejects_bad_input():
    codes = np.zeros((10, 8), np.uint8)
    with pytest.raises(ValueError, match="queries"):
        hamming_topk(codes, np.zeros((1, 16), np.uint8), 3)
    with pytest.raises(ValueError, match="k"):
        hamming_topk(codes, np.zeros((1, 8), np.uint8), 11)


class BytesHasher:
    """A stand-in hasher whose features are already the packed code bytes."""

    n_features_in_ = 8

    def transform(self, X):
        return np.asarray(X).astype(np.uint8)


@pytest.fixture(scope="module")
def mode():
    codes = tied_codes(6000, 8, seed=3)
    index = HammingIndex(64)
    index.add(codes, ids=[str(i) for i in range(len(codes))])
    rows = np.random.default_rng(0).permutation(len(codes))  # index order != store order
    return HammingMode(BytesHasher(), index, rows), codes, rows


def test_mode_batch_equals_one_by_one_and_faiss(mode):
    m, codes, rows = mode
    X = codes[[1, 5, 17, 4000, 5999, 2]].astype(np.float32)
    batch = m.search(X, 24, exact=True)
    for i, x in enumerate(X):
        one = m.rank(x, 24)
        np.testing.assert_array_equal(batch.rows[i], one.rows)
        np.testing.assert_array_equal(batch.scores[i], one.scores)
    f_rows, f_dist = m.exact_index().rank(codes[[1, 5, 17, 4000, 5999, 2]], 24)
    np.testing.assert_array_equal(batch.rows, rows[f_rows])
    np.testing.assert_array_equal(batch.scores, -f_dist)


def test_concurrent_exact_queries_share_one_scan(mode):
    m, codes, _ = mode
    X = codes[[1, 5, 17, 4000, 5999, 2, 3, 8]].astype(np.float32)
    calls = []

    def run(key, xs):
        calls.append(len(xs))
        res = m.search(np.stack(xs), key, exact=True)
        return [(res.rows[i], res.scores[i]) for i in range(len(xs))]

    # a window far longer than the test: only a full batch (max_batch queries) can end it early
    b = MicroBatcher(run, window_s=3600, max_batch=len(X))

    async def main():
        try:
            return await asyncio.wait_for(asyncio.gather(*(b.submit(24, x) for x in X)), 60)
        finally:
            b.close()

    out = asyncio.run(main())
    assert calls == [len(X)]  # one call of run
    for x, ((r, s), info) in zip(X, out):
        one = m.rank(x, 24)
        assert info["batch_size"] == len(X)
        np.testing.assert_array_equal(r, one.rows)
        np.testing.assert_array_equal(s, one.scores)


def test_lone_query_waits_one_window_at_most(monkeypatch, mode):
    """Mocked clock: the batcher's window wait returns at once (as if the window had passed);
    a lone query must then be searched alone, after one window, not wait for more queries."""
    m, codes, _ = mode
    window = 3600.0
    waits = []
    real_wait_for = asyncio.wait_for

    async def fake_wait_for(aw, timeout):
        if timeout == window:
            waits.append(timeout)
            timeout = 0
        return await real_wait_for(aw, timeout)

    monkeypatch.setattr(_batch.asyncio, "wait_for", fake_wait_for)
    calls = []

    def run(key, xs):
        calls.append(len(xs))
        return [m.rank(x, key) for x in xs]

    b = MicroBatcher(run, window_s=window, max_batch=64)

    async def main():
        try:
            return await real_wait_for(b.submit(24, codes[7].astype(np.float32)), 60)
        finally:
            b.close()

    res, info = asyncio.run(main())
    assert waits == [window]  # one window, then searched
    assert info["batch_size"] == 1 and calls == [1]
    np.testing.assert_array_equal(res.rows, m.rank(codes[7].astype(np.float32), 24).rows)
