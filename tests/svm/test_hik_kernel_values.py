"""HIK kernel, HIK SVM and compression tables: exact values of small cases, bounds and messages.

Written against mutants of ``hardneg/svm/_hik.py`` and ``_hik_tables.py`` that the other tests
left alive. Every value here is worked by hand or by the plain definition
K(x, x') = sum_i min(x(i), x'(i)) (Li et al. 2013, Eq. (1)) and H_i of Eq. (14).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC

from hardneg.svm import HIKBinTable, HIKExactTable, HIKSVC, compress_hik, fit_hik_svm_gram, hik_gram, merge_hik_ensemble


def _kernel(X, Y):
    return np.minimum(np.asarray(X, float)[:, None, :], np.asarray(Y, float)[None]).sum(-1)


def test_gram_hand_worked_rectangular_and_empty():
    X = np.array([[1.0, 2.0, 0.0], [3.0, 0.0, 1.0]])
    Y = np.array([[2.0, 2.0, 2.0], [0.5, 5.0, 0.0], [0.0, 0.0, 0.0]])
    K = hik_gram(X, Y)
    assert K.dtype == np.float32 and K.shape == (2, 3)
    np.testing.assert_array_equal(K, [[3.0, 2.5, 0.0], [3.0, 0.5, 0.0]])
    assert hik_gram(np.zeros((0, 3)), Y).shape == (0, 3)
    assert hik_gram(X, np.zeros((0, 3))).shape == (2, 0)
    assert hik_gram(np.zeros((0, 3))).shape == (0, 0)
    with pytest.raises(ValueError, match="features"):
        hik_gram(X, Y[:, :2])
    with pytest.raises(ValueError, match="negative"):
        hik_gram(X, -Y)


def test_gram_symmetric_equals_explicit_and_reference():
    rng = np.random.default_rng(0)
    X = rng.random((7, 5)).astype(np.float32)
    np.testing.assert_allclose(hik_gram(X), _kernel(X, X), rtol=1e-6)
    np.testing.assert_array_equal(hik_gram(X), hik_gram(X, X))
    np.testing.assert_array_equal(hik_gram(X, check=False), hik_gram(X))


def test_fit_gram_accepts_minus_one_labels_and_signs_coefficients():
    X = np.array([[0.0, 1.0], [0.1, 0.9], [1.0, 0.0], [0.9, 0.2]])
    K = _kernel(X, X)
    a = fit_hik_svm_gram(K, [1, 1, 0, 0])
    b = fit_hik_svm_gram(K, [1, 1, -1, -1])
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_allclose(a[1], b[1])
    support, coef, intercept = a
    ref = SVC(kernel="precomputed", C=1.0).fit(K, [1, 1, 0, 0])
    np.testing.assert_allclose(K[:, support] @ coef + intercept, ref.decision_function(K), atol=1e-9)
    # a positive decision value means "positive"
    assert (K[:2][:, support] @ coef + intercept > 0).all() and (K[2:][:, support] @ coef + intercept < 0).all()
    assert support.dtype == np.int64 and coef.dtype == np.float64 and isinstance(intercept, float)
    with pytest.raises(ValueError, match="^y: an SVM needs both positive and negative training rows"):
        fit_hik_svm_gram(K, [0, 0, 0, 0])


def test_fit_gram_passes_C_and_class_weight():
    rng = np.random.default_rng(1)
    X = rng.random((30, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=30) > 0.5).astype(int)
    K = _kernel(X, X)
    for C, cw in ((0.1, None), (10.0, None), (1.0, "balanced"), (1.0, {0: 1.0, 1: 5.0})):
        support, coef, b = fit_hik_svm_gram(K, y, C=C, class_weight=cw)
        ref = SVC(kernel="precomputed", C=C, class_weight=cw).fit(K, y)
        np.testing.assert_allclose(K[:, support] @ coef + b, ref.decision_function(K), atol=1e-8)


def test_hiksvc_class_weight_dict_is_keyed_by_user_labels():
    rng = np.random.default_rng(2)
    X = rng.random((40, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0.5, "cat", "dog")
    clf = HIKSVC(class_weight={"cat": 10.0, "dog": 1.0}).fit(X, y)
    y01 = (y == "dog").astype(int)  # classes_ = [cat, dog]: dog is the internal positive
    ref = SVC(kernel="precomputed", C=1.0, class_weight={0: 10.0, 1: 1.0}).fit(_kernel(X, X), y01)
    np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(_kernel(X, X)), atol=1e-6)
    assert clf.support_vectors_.shape == (clf.support_.size, 3)
    np.testing.assert_array_equal(clf.support_vectors_, X[clf.support_].astype(np.float32))
    np.testing.assert_array_equal(clf.predict(X), np.where(clf.decision_function(X) > 0, "dog", "cat"))


def test_exact_table_H_hand_worked():
    # one dimension, support values 1 and 3 with coefficients 2 and -1:
    # H(z) = 2 min(z, 1) - min(z, 3)
    t = HIKExactTable.from_support_vectors(np.array([[3.0], [1.0]]), np.array([-1.0, 2.0]), 0.5)
    Z = np.array([[0.0, 0.5, 1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_allclose(t.H(Z), [[0.0, 0.5, 1.0, 0.0, -1.0, -1.0]])
    np.testing.assert_allclose(t.values, [[1.0, 3.0]])
    np.testing.assert_allclose(t.prefix, [[0.0, 2.0, -1.0]])  # cumulative a*v over sorted values
    np.testing.assert_allclose(t.suffix, [[1.0, -1.0, 0.0]])  # suffix sums of a
    assert t.n_features == 1 and t.intercept == 0.5
    np.testing.assert_allclose(t.decision_function(Z.T), [0.5, 1.0, 1.5, 0.5, -0.5, -0.5])


def test_exact_table_shape_checks():
    with pytest.raises(ValueError, match="inconsistent shapes"):
        HIKExactTable(np.zeros((2, 3)), np.zeros((2, 4)), np.zeros((2, 3)), 0.0)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        HIKExactTable(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 4)), 0.0)
    HIKExactTable(np.zeros((2, 3)), np.zeros((2, 4)), np.zeros((2, 4)), 0.0)
    with pytest.raises(ValueError, match="^dual_coef / intercept: contain NaN or infinity"):
        compress_hik(np.ones((2, 2)), [1.0, np.nan], 0.0)
    with pytest.raises(ValueError, match="NaN or infinity"):
        compress_hik(np.ones((2, 2)), [1.0, 1.0], np.inf)
    with pytest.raises(ValueError, match=r"^dual_coef: has 1 entries for 2 support vectors"):
        compress_hik(np.ones((2, 2)), [1.0], 0.0)


def test_to_bins_hand_worked_values_slopes_and_bound():
    # H(z) = 2 min(z, 1) - min(z, 3) on the grid [1, 3] with q = 2: nodes 1, 2, 3
    t = HIKExactTable.from_support_vectors(np.array([[3.0], [1.0]]), np.array([-1.0, 2.0]), 0.0)
    b = t.to_bins(2)
    np.testing.assert_allclose(b.lo, [1.0])
    np.testing.assert_allclose(b.hi, [3.0])
    np.testing.assert_allclose(b.values, [[1.0, 0.0, -1.0]])
    assert b.below.tolist() == [1.0]  # slope under the lowest support value: sum of all a
    assert b.above.tolist() == [0.0]  # above the highest: constant
    assert b.n_bins == 2 and b.n_features == 1
    assert b.error_bound == 0.0  # no support value strictly inside a bin: linear pieces are exact
    # a support value inside a bin: bound = delta / 4 * |a| of that bin
    t2 = HIKExactTable.from_support_vectors(np.array([[0.0], [1.0], [4.0]]), np.array([1.0, -2.0, 1.0]), 0.0)
    b2 = t2.to_bins(2)  # grid 0, 2, 4; the value 1 with |a| = 2 lies in bin 0 of width 2
    assert b2.error_bound == pytest.approx(2.0 / 4.0 * 2.0)
    z = np.array([[1.0]], np.float32)
    exact = t2.decision_function(z)[0]
    assert abs(b2.decision_function(z)[0] - exact) == pytest.approx(b2.error_bound)  # the bound is tight there


def test_to_bins_with_given_grid_and_errors():
    t = HIKExactTable.from_support_vectors(np.array([[3.0], [1.0]]), np.array([-1.0, 2.0]), 0.0)
    b = t.to_bins(4, lo=[0.0], hi=[4.0])
    np.testing.assert_allclose(b.values, [[0.0, 1.0, 0.0, -1.0, -1.0]])
    # slopes outside a grid that is wider than the support values
    np.testing.assert_allclose(b.below, [1.0])
    np.testing.assert_allclose(b.above, [0.0])
    b_in = t.to_bins(2, lo=[2.0], hi=[2.5])  # grid strictly between the two support values
    np.testing.assert_allclose(b_in.below, [-1.0])  # only the value 3 is >= z below 2
    np.testing.assert_allclose(b_in.above, [-1.0])
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ValueError, match="^n_bins: expected an integer >= 1"):
            t.to_bins(bad)
    with pytest.raises(ValueError, match=r"^lo/hi: need two arrays of shape \(1,\) with lo <= hi"):
        t.to_bins(2, lo=[3.0], hi=[1.0])
    with pytest.raises(ValueError, match="lo/hi"):
        t.to_bins(2, lo=[0.0, 0.0], hi=[1.0, 1.0])
    assert t.to_bins(np.int64(3)).n_bins == 3


def test_bin_table_constructor_checks():
    v = np.zeros((2, 3))
    z = np.zeros(2)
    with pytest.raises(ValueError, match="^values: need at least 2 grid nodes per dimension"):
        HIKBinTable(z, z, np.zeros((2, 1)), z, z, 0.0)
    for name in ("lo", "hi", "below", "above"):
        args = {"lo": z, "hi": z, "below": z, "above": z}
        args[name] = np.zeros(3)
        with pytest.raises(ValueError, match=rf"^{name}: expected shape \(2,\), got \(3,\)"):
            HIKBinTable(args["lo"], args["hi"], v, args["below"], args["above"], 0.0)
    with pytest.raises(ValueError, match="^lo/hi: every lo must be <= hi"):
        HIKBinTable(np.ones(2), z, v, z, z, 0.0)
    t = HIKBinTable(z, np.ones(2), v, z, z, 1.5)
    assert np.isnan(t.error_bound) and t.intercept == 1.5
    np.testing.assert_allclose(t.decision_function(np.ones((3, 2))), 1.5)


def test_bin_table_scores_hand_worked():
    # one dimension, grid [1, 3], q = 2, H at nodes (1, 0, -1), slope 1 below, 0 above, intercept 0.25
    t = HIKBinTable([1.0], [3.0], [[1.0, 0.0, -1.0]], [1.0], [0.0], 0.25)
    X = np.array([[0.0], [0.5], [1.0], [1.5], [2.0], [2.5], [3.0], [5.0]], np.float32)
    np.testing.assert_allclose(t.decision_function(X), np.array([0.0, 0.5, 1.0, 0.5, 0.0, -0.5, -1.0, -1.0]) + 0.25,
                               atol=1e-6)
    # slope above the grid is used too
    t2 = HIKBinTable([1.0], [3.0], [[1.0, 0.0, -1.0]], [1.0], [2.0], 0.0)
    assert t2.decision_function(np.array([[4.0]], np.float32))[0] == pytest.approx(1.0)
    # a zero-width dimension is constant inside, linear outside
    t3 = HIKBinTable([2.0], [2.0], [[3.0, 3.0]], [1.5], [0.5], 0.0)
    np.testing.assert_allclose(t3.decision_function(np.array([[0.0], [2.0], [4.0]], np.float32)), [0.0, 3.0, 4.0])
    assert t.decision_function(np.zeros((0, 1), np.float32)).shape == (0,)


def test_on_grid_checks_and_hand_worked():
    sv = np.array([[3.0], [1.0]])
    a = np.array([-1.0, 2.0])
    t = HIKBinTable.on_grid(sv, a, 0.5, [0.0], [4.0], 4)
    np.testing.assert_allclose(t.values, [[0.0, 1.0, 0.0, -1.0, -1.0]])
    np.testing.assert_allclose(t.below, [1.0])
    np.testing.assert_allclose(t.above, [0.0])
    assert t.intercept == 0.5
    with pytest.raises(ValueError, match=r"^lo/hi: need two arrays of shape \(1,\) with lo <= hi"):
        HIKBinTable.on_grid(sv, a, 0.0, [1.0], [0.0], 4)
    with pytest.raises(ValueError, match="lo/hi"):
        HIKBinTable.on_grid(sv, a, 0.0, [0.0, 0.0], [1.0, 1.0], 4)


def test_merge_ensemble_hand_worked_and_errors():
    m1 = (np.array([[1.0, 0.0]]), np.array([2.0]), 1.0)
    m2 = (np.array([[0.0, 1.0], [1.0, 1.0]]), np.array([1.0, -1.0]), -1.0)
    sv, coef, b = merge_hik_ensemble([m1, m2])
    assert sv.shape == (3, 2) and sv.dtype == np.float32
    np.testing.assert_allclose(coef, [1.0, 0.5, -0.5])
    assert b == 0.0
    sv, coef, b = merge_hik_ensemble([m1, m2], weights=[3.0, 1.0])
    np.testing.assert_allclose(coef, [1.5, 0.25, -0.25])
    assert b == pytest.approx(0.5)
    sv, coef, b = merge_hik_ensemble([m1, m2], weights=[0.0, 2.0])  # a zero weight drops a member
    np.testing.assert_allclose(coef, [0.0, 1.0, -1.0])
    with pytest.raises(ValueError, match="^members: need at least one meta classifier"):
        merge_hik_ensemble([])
    for w in ([1.0], [1.0, -0.5], [0.0, 0.0]):
        with pytest.raises(ValueError, match="^weights: need 2 non-negative weights with a positive sum"):
            merge_hik_ensemble([m1, m2], weights=w)


def test_combine_weights_errors_and_bound():
    sv = np.array([[3.0], [1.0]])
    a = np.array([-1.0, 2.0])
    t1 = compress_hik(sv, a, 1.0, n_bins=2, lo=[0.0], hi=[4.0])
    t2 = compress_hik(sv, -a, -1.0, n_bins=2, lo=[0.0], hi=[4.0])
    c = HIKBinTable.combine([t1, t2], [3.0, 1.0])
    np.testing.assert_allclose(c.values, 0.5 * t1.values)
    np.testing.assert_allclose(c.below, 0.5 * t1.below)
    np.testing.assert_allclose(c.above, 0.5 * t1.above)
    assert c.intercept == pytest.approx(0.5)
    assert c.error_bound == pytest.approx(0.75 * t1.error_bound + 0.25 * t2.error_bound)
    u = HIKBinTable.combine([t1, t2])
    np.testing.assert_allclose(u.values, 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="^tables: need at least one table"):
        HIKBinTable.combine([])
    for w in ([1.0], [1.0, -1.0], [0.0, 0.0]):
        with pytest.raises(ValueError, match="^weights: need 2 non-negative weights"):
            HIKBinTable.combine([t1, t2], w)
    other = compress_hik(sv, a, 0.0, n_bins=2, lo=[0.0], hi=[5.0])
    assert not t1.same_grid(other) and t1.same_grid(t2)
    assert not t1.same_grid(compress_hik(sv, a, 0.0, n_bins=3, lo=[0.0], hi=[4.0]))
    assert not t1.same_grid(compress_hik(sv, a, 0.0, n_bins=2, lo=[0.5], hi=[4.0]))
    with pytest.raises(ValueError, match="same grid"):
        HIKBinTable.combine([t1, other])


def test_compress_hik_returns_exact_or_bins():
    sv = np.array([[3.0], [1.0]])
    a = np.array([-1.0, 2.0])
    assert isinstance(compress_hik(sv, a, 0.0, n_bins=None), HIKExactTable)
    b = compress_hik(sv, a, 0.0)
    assert isinstance(b, HIKBinTable) and b.n_bins == 100
