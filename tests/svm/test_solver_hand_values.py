"""Solvers and models pinned against hand-worked values and references.

Each test covers a behaviour that a mutation run (mutmut over ``svm/``, ``concept/``,
``hashing/``) showed the suite did not check: a sign or constant could change and
every other test stayed green.
"""

from __future__ import annotations

import numpy as np
import pytest

from hardneg.concept import NegativeBootstrap, load_concept, search
from hardneg.hashing import PQHasher, SKLSHHasher
from hardneg.svm import HIKSVC, exemplar_objective, fit_exemplar_svms_batch, fit_exemplar_svms_liblinear, fit_exemplar_svms_sgd
from hardneg.svm._exemplar_sgd import _objective
from hardneg.svm._hik import fit_hik_svm_gram, hik_gram


def _separable(seed=0, n=3, N=400, d=20):
    """Exemplars far from the negatives' mean: the optimum is well below the zero solution."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(N, d)) - 1.0
    X = rng.normal(size=(n, d)) + 1.0
    return X, Z


def test_sgd_internal_objective_is_eq1():
    X, Z = _separable()
    W = np.random.default_rng(1).normal(size=X.shape) * 0.1
    keep = np.ones((X.shape[0], Z.shape[0]), dtype=bool)
    kw = dict(lam=0.05, alpha_pos=1.0, alpha_neg=0.01)
    ref = exemplar_objective(W, X, Z, drop_duplicates=False, **kw)
    np.testing.assert_allclose(_objective(W, X, Z, keep, kw["lam"], kw["alpha_pos"], kw["alpha_neg"]), ref, rtol=1e-10)
    # hand-worked single case: w = 0 costs alpha_pos + alpha_neg * N
    np.testing.assert_allclose(exemplar_objective(np.zeros_like(X), X, Z, **kw), 1.0 + 0.01 * Z.shape[0])


def test_sgd_closes_most_of_the_gap_to_the_optimum():
    X, Z = _separable()
    kw = dict(lam=0.01, alpha_pos=1.0, alpha_neg=0.01)
    opt = exemplar_objective(fit_exemplar_svms_batch(X, Z, tol=1e-8, **kw), X, Z, **kw)
    zero = exemplar_objective(np.zeros_like(X), X, Z, **kw)
    assert np.all(opt < 0.5 * zero)  # the test is only meaningful when the optimum is far from w = 0
    f = exemplar_objective(fit_exemplar_svms_sgd(X, Z, random_state=0, max_epochs=60, minibatch=40, **kw), X, Z, **kw)
    gap = (f - opt) / (zero - opt)
    assert np.all(gap >= -1e-9) and np.all(gap < 0.05), gap


def test_all_negatives_excluded_gives_the_closed_form():
    # every negative duplicates an exemplar -> no negative term; Eq. (1) reduces to
    # lam/2 |w|^2 + alpha_pos max(0, 1 - w.x), minimised at w = min(alpha_pos/lam, 1/|x|^2) x
    x = np.array([[3.0, 4.0]])  # |x|^2 = 25
    Z = np.repeat(x, 5, axis=0)
    for lam, alpha_pos, expect in ((0.01, 1.0, 1 / 25), (100.0, 1.0, 1 / 100)):
        kw = dict(lam=lam, alpha_pos=alpha_pos, alpha_neg=0.1)
        for W in (fit_exemplar_svms_liblinear(x, Z, **kw), fit_exemplar_svms_batch(x, Z, tol=1e-10, **kw)):
            np.testing.assert_allclose(W, expect * x, rtol=1e-6)


def test_liblinear_reports_progress_per_exemplar():
    X, Z = _separable(n=4, N=50)
    seen = []
    fit_exemplar_svms_liblinear(X, Z, lam=0.01, alpha_pos=1.0, alpha_neg=0.01, progress=seen.append)
    assert seen == [1, 1, 1, 1]


def test_hik_svc_uses_its_C():
    rng = np.random.default_rng(0)
    X = rng.random((40, 5))
    y = (X[:, 0] + 0.3 * rng.random(40) > 0.6).astype(int)
    for C in (0.01, 100.0):
        clf = HIKSVC(C=C).fit(X, y)
        support, coef, b = fit_hik_svm_gram(hik_gram(X), np.where(y == 1, 1.0, -1.0), C=C)
        ref = hik_gram(X, X[support]) @ coef + b
        np.testing.assert_allclose(clf.decision_function(X), ref, rtol=1e-6, atol=1e-8)
    assert not np.allclose(HIKSVC(C=0.01).fit(X, y).decision_function(X), HIKSVC(C=100.0).fit(X, y).decision_function(X))
    assert HIKSVC().fit(X, y).decision_function(np.empty((0, 5))).shape == (0,)


def test_compressed_concept_keeps_its_error_bound_through_a_file(tmp_path):
    rng = np.random.default_rng(0)
    model = NegativeBootstrap(n_iter=3, skip_top=0, random_state=0).fit(rng.random((10, 4)) + 0.5, rng.random((200, 4)))
    compressed = model.compress(n_bins=20)
    bound = compressed.table.error_bound
    assert np.isfinite(bound) and bound > 0
    compressed.save(tmp_path / "c.npz")
    assert load_concept(tmp_path / "c.npz").table.error_bound == pytest.approx(bound, rel=1e-12)


def test_search_subset_may_include_row_zero_and_names_rows():
    class Sum:
        def decision_function(self, X):
            return X.sum(axis=1)

    data = np.arange(12.0).reshape(6, 2)
    res = search(Sum(), data, k=2, rows=[0, 1, 2])
    assert res.rows.tolist() == [2, 1] and res.ids == ["2", "1"] and res.scores.dtype == np.float64
    with pytest.raises(IndexError, match="rows: out of range for a collection of 6 items"):
        search(Sum(), data, k=1, rows=[6])


def test_sklsh_codes_follow_raginsky_lazebnik():
    # h(x) = sgn(cos(w.x + b) + t) with hand-set w, b, t
    h = SKLSHHasher(n_bits=2, random_state=0).fit(np.random.default_rng(0).random((50, 2)))
    h.projections_ = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    h.phases_ = np.array([0.0, np.pi / 2], dtype=np.float32)
    h.thresholds_ = np.array([-0.5, 0.25], dtype=np.float32)
    x = np.array([[np.pi / 3, 0.0]])  # cos(pi/3) - 0.5 = 0 (edge), cos(pi/2) + 0.25 = 0.25
    np.testing.assert_allclose(h.embed(x), [[np.cos(np.pi / 3) - 0.5, np.cos(np.pi / 2) + 0.25]], atol=1e-6)


def test_pq_trains_with_exactly_one_row_per_centroid():
    X = np.random.default_rng(0).random((16, 8)).astype(np.float32)
    PQHasher(n_bits=8, subquantizer_bits=4).fit(X)  # 16 rows = 2**4 centroids: enough
    with pytest.warns(UserWarning, match="15 rows, fewer than the 16 centroids"):  # one row short: 15 centroids, said so
        assert PQHasher(n_bits=8, subquantizer_bits=4).fit(X[:15]).n_centroids_ == 15


def test_merged_tables_keep_a_true_error_bound():
    from hardneg.svm import HIKBinTable, compress_hik, merge_hik_ensemble

    rng = np.random.default_rng(3)
    members = [(rng.random((15, 4)).astype(np.float32), rng.normal(size=15), float(rng.normal())) for _ in range(2)]
    lo, hi = np.zeros(4), np.ones(4)
    tables = [compress_hik(*m, n_bins=8, lo=lo, hi=hi) for m in members]
    combined = HIKBinTable.combine(tables, weights=[1.0, 3.0])
    assert combined.error_bound == pytest.approx(0.25 * tables[0].error_bound + 0.75 * tables[1].error_bound)
    sv, coef, b = merge_hik_ensemble(members, weights=[1.0, 3.0])
    X = rng.random((200, 4))
    exact = hik_gram(X, sv) @ coef + b
    assert np.all(np.abs(combined.decision_function(X) - exact) <= combined.error_bound + 1e-6)
    for bad in ([1.0, -1.0], [0.0, 0.0], [1.0]):
        with pytest.raises(ValueError, match="weights: need 2 non-negative weights with a positive sum"):
            merge_hik_ensemble(members, weights=bad)
        with pytest.raises(ValueError, match="weights: need 2 non-negative weights with a positive sum"):
            HIKBinTable.combine(tables, weights=bad)
