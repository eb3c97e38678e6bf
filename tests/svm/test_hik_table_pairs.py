"""The q-bin HIK scoring kernel ([Li13] Eq. (13)/(16)) reads one (value, slope) pair per
dimension; its scores must equal, bit for bit, those of the previous kernel that read the
two neighbouring nodes (``a + f * (b - a)``), and the per-dimension terms of ``H``."""

from __future__ import annotations

import numpy as np
import pytest

from hardneg.svm import compress_hik
from hardneg.svm._hik_tables import _score_bins_two_reads


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


def _old(table, X):
    lo, inv, V = table._pack()
    out = np.empty(X.shape[0])
    _score_bins_two_reads(X, lo, inv, V, table.n_bins, out)
    return out + table.intercept


@pytest.mark.parametrize("seed, d, q", [(0, 1, 1), (1, 2, 3), (2, 7, 100), (3, 64, 100), (4, 33, 255), (5, 16, 7)])
def test_pairs_kernel_equals_the_two_read_kernel_bit_for_bit(seed, d, q):
    rng = np.random.default_rng(seed)
    sv, coef, b = _model(rng, d, flat_dims=(0,) if d > 2 else ())
    table = compress_hik(sv, coef, b, n_bins=q)
    X = _inputs(rng, table, 200)
    new = table.decision_function(X)
    assert np.array_equal(new, _old(table, X))
    # and float64 rows (quantized in float64 by both kernels)
    X64 = X.astype(np.float64) * (1 + 1e-9)
    assert np.array_equal(table.decision_function(X64, check=False), _old(table, X64))


def test_pairs_kernel_sums_the_terms_of_H_in_the_codes_order():
    rng = np.random.default_rng(7)
    d = 11
    sv, coef, b = _model(rng, d)
    table = compress_hik(sv, coef, b, n_bins=50)
    X = _inputs(rng, table, 60)
    terms = table.H(X.T).astype(np.float64)  # (d, n) float32 terms of _eval_bins
    # two chains, even and odd dimensions, as _score_codes sums them
    even = np.zeros(X.shape[0])
    odd = np.zeros(X.shape[0])
    for i in range(d):
        if i % 2 == 0:
            even += terms[i]
        else:
            odd += terms[i]
    assert np.array_equal(table.decision_function(X), (even + odd) + table.intercept)


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
