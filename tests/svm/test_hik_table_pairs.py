"""The q-bin HIK scoring kernel ([Li13] Eq. (13)/(16)) reads one (value, slope) pair per
dimension and sums in four chains (dimension i into chain i % 4). Its terms must equal, bit
for bit, those of ``H`` (which reads the two neighbouring nodes, ``a + f * (b - a)``), summed
in that order, as the uint8 codes scan sums its table entries; and its scores must stay
within rounding of the previous kernel (two reads, two chains)."""

from __future__ import annotations

import numpy as np
import pytest

from hardneg.svm import compress_hik
from hardneg.svm._hik_tables import score_codes

_score_bins_two_reads = pytest.importorskip("benchmarks.concept_speed")._score_bins_two_reads  # the previous kernel


def _model(rng, d, M=40, flat_dims=()):
    sv = (rng.gamma(0.4, size=(M, d)) * rng.integers(1, 5, d)).astype(np.float32)
    sv[rng.random((M, d)) < 0.3] = 0.0
    for i in flat_dims:
        sv[:, i] = 0.25  # zero-width grid: the pseudo-grid of _pack
    return sv, rng.normal(size=M), float(rng.normal())


def _inputs(rng, table, n):
    d = table.n_features
    X = rng.gamma(0.4, size=(n, d)) * (table.hi + 1e-3)
    X[rng.random((n, d)) < 0.4] = 0.0  # histogram zeros
    X[0] = table.lo  # on node 0
    X[1] = table.hi  # on node q
    X[2] = table.hi * 50 + 3  # far above: the clamp to the virtual node q + 1
    X[3] = table.lo + (table.hi - table.lo) * 0.37
    return X.astype(np.float32)


def _four_chains(terms):
    """Sum rows of ``terms`` (d, n) as the kernels do: chain i % 4, then (s0 + s1) + (s2 + s3)."""
    chains = [np.zeros(terms.shape[1]) for _ in range(4)]
    for i in range(terms.shape[0]):
        chains[i % 4] += terms[i]
    return (chains[0] + chains[1]) + (chains[2] + chains[3])


def _old(table, X):
    lo, inv, V = table._pack()
    out = np.empty(X.shape[0])
    _score_bins_two_reads(X, lo, inv, V, table.n_bins, out)
    return out + table.intercept


@pytest.mark.parametrize("seed, d, q", [(0, 1, 1), (1, 2, 3), (2, 7, 100), (3, 64, 100), (4, 33, 255), (5, 16, 7),
                                         (6, 6, 50), (9, 3, 20)])
def test_kernel_sums_the_terms_of_H_in_the_codes_order_bit_for_bit(seed, d, q):
    rng = np.random.default_rng(seed)
    sv, coef, b = _model(rng, d, flat_dims=(0,) if d > 2 else ())
    table = compress_hik(sv, coef, b, n_bins=q)
    X = _inputs(rng, table, 200)
    terms = table.H(X.T).astype(np.float64)  # (d, n): float32 terms read from the two nodes
    got = table.decision_function(X)
    assert np.array_equal(got, _four_chains(terms) + table.intercept)
    # the previous kernel (two chains): the same terms, another order
    np.testing.assert_allclose(got, _old(table, X), rtol=0, atol=1e-12 * (np.abs(terms).sum(axis=0).max() + abs(b)))
    # float64 rows are quantized in float64 by both kernels
    X64 = X.astype(np.float64) * (1 + 1e-9)
    np.testing.assert_allclose(table.decision_function(X64, check=False), _old(table, X64), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 8, 11])
def test_codes_scan_sums_in_the_kernel_order(d):
    rng = np.random.default_rng(d)
    codes = rng.integers(0, 9, size=(30, d), dtype=np.uint8)
    T = (rng.normal(size=(d, 9)) * 10.0 ** rng.integers(-6, 6, size=(d, 1))).astype(np.float32)  # mixed scales: order shows
    terms = np.take_along_axis(T, codes.T.astype(np.int64), axis=1).astype(np.float64)
    assert np.array_equal(score_codes(codes, T), _four_chains(terms))


def test_packed_slopes_are_the_float32_differences_of_the_nodes():
    rng = np.random.default_rng(8)
    sv, coef, b = _model(rng, 5, flat_dims=(2,))
    table = compress_hik(sv, coef, b, n_bins=20)
    _, _, V = table._pack()
    P, off = table._pack_pairs()
    assert P.dtype == np.complex64 and P.shape == V.shape
    assert np.array_equal(P.real, V)
    assert np.array_equal(P.imag[:, :-1], np.float32(V[:, 1:]) - np.float32(V[:, :-1]))
    assert np.array_equal(off, np.arange(5) * V.shape[1])
