"""Model Compression tables (Eq. (11)-(16)) against exact kernel evaluation."""

import numpy as np
import pytest

from hardneg.svm import HIKBinTable, HIKExactTable, compress_hik, hik_gram, merge_hik_ensemble


def kernel_decision(X, sv, coef, b):
    return np.minimum(np.asarray(X, float)[:, None, :], np.asarray(sv, float)[None]).sum(-1) @ coef + b


def bins_reference(X, table):
    """Slow, obvious Eq. (16): interpolate H_i between grid nodes, linear outside."""
    out = []
    q = table.n_bins
    for x in np.asarray(X, float):
        s = table.intercept
        for i, z in enumerate(x):
            lo, hi = table.lo[i], table.hi[i]
            if z <= lo:
                s += table.values[i, 0] + (z - lo) * table.below[i]
            elif z >= hi:
                s += table.values[i, q] + (z - hi) * table.above[i]
            else:
                t = (z - lo) / (hi - lo) * q
                k = min(int(t), q - 1)
                s += table.values[i, k] + (t - k) * (table.values[i, k + 1] - table.values[i, k])
        out.append(s)
    return np.array(out)


def random_model(seed, M=25, d=6):
    rng = np.random.default_rng(seed)
    sv = rng.random((M, d)) * rng.integers(1, 4, d)
    sv[rng.random((M, d)) < 0.2] = 0.0  # histogram-like zeros
    return rng, sv.astype(np.float32), rng.normal(size=M), float(rng.normal())


@pytest.mark.parametrize("seed", range(5))
def test_exact_table_equals_kernel(seed):
    rng, sv, coef, b = random_model(seed)
    X = rng.random((30, sv.shape[1])) * 4
    X[:3] = 0.0  # below every support value
    X[3] = sv.max(axis=0) + 1  # above every support value
    X[4] = sv[0]  # exactly on support values
    table = compress_hik(sv, coef, b, n_bins=None)
    assert isinstance(table, HIKExactTable)
    np.testing.assert_allclose(table.decision_function(X), kernel_decision(X, sv, coef, b), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("q", [1, 5, 50])
def test_bins_within_bound_and_match_slow_reference(seed, q):
    rng, sv, coef, b = random_model(seed)
    X = (rng.random((40, sv.shape[1])) * 4).astype(np.float32)
    table = compress_hik(sv, coef, b, n_bins=q)
    fast = table.decision_function(X)
    np.testing.assert_allclose(fast, bins_reference(X, table), rtol=1e-4, atol=1e-4)
    err = np.abs(fast - kernel_decision(X, sv, coef, b)).max()
    assert err <= table.error_bound + 1e-4


def test_bins_exact_at_nodes_and_outside_range():
    rng, sv, coef, b = random_model(3)
    table = compress_hik(sv, coef, b, n_bins=8)
    d = sv.shape[1]
    nodes = table.lo[:, None] + (table.hi - table.lo)[:, None] * np.arange(9) / 8
    X = nodes.T.astype(np.float32)  # each row: node k in every dimension
    outside = np.vstack([np.zeros(d), table.hi + 2.0]).astype(np.float32)
    for Z in (X, outside):
        np.testing.assert_allclose(table.decision_function(Z), kernel_decision(Z, sv, coef, b), rtol=1e-4, atol=1e-3)


def test_bins_error_shrinks_with_q():
    rng, sv, coef, b = random_model(4, M=200, d=10)
    X = rng.random((200, 10)) * 3
    exact = kernel_decision(X, sv, coef, b)
    errs = [np.abs(compress_hik(sv, coef, b, n_bins=q).decision_function(X) - exact).max() for q in (4, 32, 256)]
    assert errs[0] > errs[1] > errs[2]


def test_constant_dimension():
    sv = np.array([[0.5, 0.0], [0.5, 1.0]], np.float32)
    coef, b = np.array([1.0, -2.0]), 0.1
    X = np.array([[0.2, 0.4], [0.5, 0.0], [0.9, 3.0]], np.float32)
    for q in (None, 3):
        np.testing.assert_allclose(compress_hik(sv, coef, b, n_bins=q).decision_function(X),
                                   kernel_decision(X, sv, coef, b), atol=1e-5)


def test_on_grid_equals_sorted_construction_and_tables_add():
    rng, sv, coef, b = random_model(5)
    d = sv.shape[1]
    lo, hi = np.zeros(d), sv.max(axis=0).astype(np.float64) + 0.5
    direct = HIKBinTable.on_grid(sv, coef, b, lo, hi, 16)
    sorted_way = compress_hik(sv, coef, b, n_bins=16, lo=lo, hi=hi)
    np.testing.assert_allclose(direct.values, sorted_way.values, atol=1e-9)
    np.testing.assert_allclose(direct.below, sorted_way.below, atol=1e-12)
    np.testing.assert_allclose(direct.above, sorted_way.above, atol=1e-12)
    # Eq. (9)/(10): the table of a weighted ensemble is the weighted sum of tables.
    _, sv2, coef2, b2 = random_model(6)
    w = [0.25, 0.75]
    combined = HIKBinTable.combine([direct, HIKBinTable.on_grid(sv2, coef2, b2, lo, hi, 16)], w)
    msv, mcoef, mb = merge_hik_ensemble([(sv, coef, b), (sv2, coef2, b2)], w)
    merged = HIKBinTable.on_grid(msv, mcoef, mb, lo, hi, 16)
    np.testing.assert_allclose(combined.values, merged.values, atol=1e-9)
    X = rng.random((10, d)) * 2
    np.testing.assert_allclose(
        kernel_decision(X, msv, mcoef, mb),
        0.25 * kernel_decision(X, sv, coef, b) + 0.75 * kernel_decision(X, sv2, coef2, b2), atol=1e-9)


def test_table_input_errors():
    _, sv, coef, b = random_model(0)
    table = compress_hik(sv, coef, b, n_bins=10)
    with pytest.raises(ValueError, match="negative"):
        table.decision_function(-np.ones((1, sv.shape[1])))
    with pytest.raises(ValueError, match="features"):
        table.decision_function(np.ones((1, sv.shape[1] + 1)))
    with pytest.raises(ValueError, match="dual_coef"):
        compress_hik(sv, coef[:-1], b)
    with pytest.raises(ValueError, match="n_bins"):
        compress_hik(sv, coef, b, n_bins=0)
    with pytest.raises(ValueError, match="same grid"):
        HIKBinTable.combine([table, compress_hik(sv, coef, b, n_bins=5)])
    assert hik_gram(sv).shape == (25, 25)


@pytest.mark.parametrize("seed, q, grid", [(0, 100, None), (1, 7, None), (2, 16, "wider"), (3, 1, None)])
def test_sort_free_bin_table_equals_the_exact_tables_bins(seed, q, grid):
    # ties (integer-valued pixels and zeros) and signed coefficients, as a concept model has them
    rng = np.random.default_rng(seed)
    sv = rng.integers(0, 8, size=(60, 5)).astype(np.float32)
    sv[:, 4] = 3.0  # one dimension where every support value is the same (zero-width grid)
    a, b = rng.normal(size=60), 0.3
    lo = hi = None
    if grid == "wider":
        lo, hi = np.full(5, -1.0), np.full(5, 10.0)
    ref = HIKExactTable.from_support_vectors(sv, a, b).to_bins(q, lo=lo, hi=hi)
    new = HIKBinTable.from_support_vectors(sv, a, b, q, lo=lo, hi=hi)
    for name in ("lo", "hi", "below", "above"):
        np.testing.assert_allclose(getattr(new, name), getattr(ref, name), rtol=1e-12, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(new.values, ref.values, rtol=1e-12, atol=1e-12)
    assert new.error_bound == pytest.approx(ref.error_bound, rel=1e-12, abs=1e-15)
    X = rng.integers(0, 10, size=(50, 5)).astype(np.float32)
    np.testing.assert_allclose(new.decision_function(X), ref.decision_function(X), rtol=1e-12, atol=1e-12)
    exact = HIKExactTable.from_support_vectors(sv, a, b).decision_function(X)
    assert np.abs(new.decision_function(X) - exact).max() <= new.error_bound + 1e-9
    with pytest.raises(ValueError, match="n_bins"):
        HIKBinTable.from_support_vectors(sv, a, b, 0)
    with pytest.raises(ValueError, match="support_vectors: needs at least 1 row"):
        HIKBinTable.from_support_vectors(sv[:0], a[:0], b, q)
