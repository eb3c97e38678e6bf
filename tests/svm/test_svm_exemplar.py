"""Exemplar-SVM solvers (Eq. (1)) against a reference solver's objective."""

import numpy as np
import pytest
from scipy.optimize import minimize

from hardneg.svm import (
    exemplar_objective,
    fit_exemplar_svms,
    fit_exemplar_svms_batch,
    fit_exemplar_svms_liblinear,
    fit_exemplar_svms_sgd,
)

PARAMS = [
    dict(lam=0.1, alpha_pos=1.0, alpha_neg=0.01),
    dict(lam=0.01, alpha_pos=1.0, alpha_neg=0.001),
    dict(lam=1.0, alpha_pos=1.0, alpha_neg=1.0),
    dict(lam=1e-3, alpha_pos=2.0, alpha_neg=1e-4),
]


def _data(seed, n=4, N=300, d=12):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(N, d))


@pytest.mark.parametrize("kw", PARAMS)
def test_batch_solver_matches_liblinear_objective(kw):
    X, Z = _data(0)
    stats = {}
    W = fit_exemplar_svms_batch(X, Z, tol=1e-7, init_size=8, max_add=32, stats=stats, **kw)
    ref = fit_exemplar_svms_liblinear(X, Z, **kw)
    f, f_ref = exemplar_objective(W, X, Z, **kw), exemplar_objective(ref, X, Z, **kw)
    np.testing.assert_allclose(f, f_ref, rtol=1e-4)
    assert stats["rounds"] > X.shape[0]  # the working sets really grew by mining


def test_batch_solver_matches_a_generic_optimizer_on_tiny_data():
    # a reference that is not liblinear: Eq. (1) as a smooth QP in (w, slacks) by SLSQP
    X, Z = _data(1, n=1, N=25, d=3)
    kw = dict(lam=0.5, alpha_pos=1.0, alpha_neg=0.2)
    d, N = 3, 25

    def obj(v):
        w, xi = v[:d], v[d:]
        return 0.5 * kw["lam"] * w @ w + kw["alpha_pos"] * xi[0] + kw["alpha_neg"] * xi[1:].sum()

    cons = [
        {"type": "ineq", "fun": lambda v: v[d] - (1 - X[0] @ v[:d])},
        {"type": "ineq", "fun": lambda v: v[d + 1 :] - (1 + Z @ v[:d])},
        {"type": "ineq", "fun": lambda v: v[d:]},
    ]
    res = minimize(obj, np.r_[np.zeros(d), np.ones(N + 1) * 2], constraints=cons, method="SLSQP", options={"ftol": 1e-12, "maxiter": 500})
    W = fit_exemplar_svms_batch(X, Z, tol=1e-9, **kw)
    f = exemplar_objective(W, X, Z, **kw)[0]
    assert f == pytest.approx(res.fun, rel=1e-4)


def test_batch_solver_float32_and_batches_give_the_same_result():
    X, Z = _data(2, n=7)
    kw = dict(lam=0.01, alpha_pos=1.0, alpha_neg=0.01)
    a = fit_exemplar_svms_batch(X, Z, tol=1e-6, batch_size=3, **kw)
    b = fit_exemplar_svms_batch(X, Z, tol=1e-6, batch_size=100, **kw)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
    c = fit_exemplar_svms_batch(X.astype(np.float32), Z.astype(np.float32), tol=1e-4, **kw)
    assert c.dtype == np.float32
    fa, fc = exemplar_objective(a, X, Z, **kw), exemplar_objective(c, X, Z, **kw)
    np.testing.assert_allclose(fc, fa, rtol=1e-3)


def test_sgd_approaches_the_optimum_and_is_deterministic():
    X, Z = _data(3)
    kw = dict(lam=0.01, alpha_pos=1.0, alpha_neg=0.01)
    opt = exemplar_objective(fit_exemplar_svms_batch(X, Z, tol=1e-7, **kw), X, Z, **kw)
    a = fit_exemplar_svms_sgd(X, Z, random_state=0, max_epochs=60, **kw)
    b = fit_exemplar_svms_sgd(X, Z, random_state=0, max_epochs=60, **kw)
    np.testing.assert_array_equal(a, b)
    f = exemplar_objective(a, X, Z, **kw)
    assert np.all(f >= opt * (1 - 1e-6)) and np.all(f < 1.1 * opt)


def test_exclusions_leave_out_own_row_and_duplicates():
    X, Z = _data(4, n=3, N=200, d=40)
    Z[5] = X[0]  # a negative identical to exemplar 0
    kw = dict(lam=0.01, alpha_pos=1.0, alpha_neg=0.01)
    W = fit_exemplar_svms_batch(X, Z, tol=1e-7, **kw)
    ref = fit_exemplar_svms_liblinear(X, Z, **kw)
    np.testing.assert_allclose(exemplar_objective(W, X, Z, **kw), exemplar_objective(ref, X, Z, **kw), rtol=1e-4)
    assert X[0] @ W[0] > 0.99  # the duplicate did not drag the exemplar below its margin
    # leaving one given row out: the same as deleting it from the pool
    ex = np.array([7, -1, 9])
    W2 = fit_exemplar_svms_batch(X, Z, exclude=ex, tol=1e-8, **kw)
    W3 = fit_exemplar_svms_batch(X[:1], np.delete(Z, 7, axis=0), tol=1e-8, **kw)
    np.testing.assert_allclose(W2[0], W3[0], rtol=1e-5, atol=1e-7)


def test_each_exemplar_scores_above_every_negative_on_separable_data():
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(60, 100))  # fewer points than dimensions: always separable through the origin
    X = rng.normal(size=(5, 100))
    for solver in ("batch", "sgd", "liblinear"):
        W = fit_exemplar_svms(X, Z, solver=solver, lam=0.01, alpha_pos=1.0, alpha_neg=0.01, random_state=0)
        assert np.all(np.einsum("ij,ij->i", W, X) > (Z @ W.T).max(axis=0)), solver


@pytest.mark.parametrize(
    "args, match",
    [
        (dict(X=np.zeros((1, 3)), Z=np.ones((5, 3))), "all zeros"),
        (dict(X=np.full((1, 3), np.nan), Z=np.ones((5, 3))), "NaN"),
        (dict(X=np.ones((1, 3)), Z=np.ones((5, 4))), "3 features but the negatives Z have 4"),
        (dict(X=np.ones((1, 3)), Z=np.ones((5, 3)), lam=0.0), "lam"),
        (dict(X=np.ones((1, 3)), Z=np.ones((5, 3)), exclude=[9]), "exclude"),
    ],
)
def test_bad_input_is_one_clear_error(args, match):
    with pytest.raises(ValueError, match=match):
        fit_exemplar_svms_batch(**args)


def test_unknown_solver():
    with pytest.raises(ValueError, match="solver"):
        fit_exemplar_svms(np.ones((1, 2)), np.ones((3, 2)), solver="cvx")


def test_batch_solver_warm_start_gives_the_cold_start_result_with_many_bound_negatives():
    # N large enough for the subsample warm start (two levels); tiny alpha_neg: many negatives at the bound
    rng = np.random.default_rng(3)
    Z = np.abs(rng.normal(size=(9000, 24)))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    X = np.abs(rng.normal(size=(3, 24)))
    kw = dict(lam=0.1, alpha_pos=1.0, alpha_neg=1e-3)
    warm = fit_exemplar_svms_batch(X, Z, tol=1e-8, **kw)
    cold = fit_exemplar_svms_batch(X, Z, tol=1e-8, warm_start=None, **kw)
    np.testing.assert_allclose(warm, cold, atol=1e-5)
    # KKT over all negatives: slack > 0 only at the bound, the bound only where slack >= 0
    slack = 1.0 + warm @ Z.T
    assert (slack > 0.0).sum() > 100
    fw = exemplar_objective(warm, X, Z, **kw)
    fc = exemplar_objective(cold, X, Z, **kw)
    np.testing.assert_allclose(fw, fc, rtol=1e-7)


def test_threads_solve_the_same_problem_and_each_count_is_deterministic():
    # cold start and warm start (N >= 2,400: one subsample level); 9 exemplars over 2 threads: uneven parts
    rng = np.random.default_rng(8)
    Z = np.abs(rng.normal(size=(2600, 16)))
    X = np.abs(rng.normal(size=(9, 16)))
    kw = dict(lam=0.1, alpha_pos=1.0, alpha_neg=1e-3)
    one = fit_exemplar_svms_batch(X, Z, tol=1e-8, n_threads=1, batch_size=4, **kw)
    two = fit_exemplar_svms_batch(X, Z, tol=1e-8, n_threads=2, batch_size=4, **kw)
    np.testing.assert_array_equal(two, fit_exemplar_svms_batch(X, Z, tol=1e-8, n_threads=2, batch_size=4, **kw))
    np.testing.assert_allclose(exemplar_objective(two, X, Z, **kw), exemplar_objective(one, X, Z, **kw), rtol=1e-7)
    np.testing.assert_allclose(two, one, atol=1e-5)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_n_threads_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="^n_threads: must be a positive integer or None"):
        fit_exemplar_svms_batch(np.ones((1, 3)), np.ones((5, 3)), n_threads=bad)


def test_working_set_gram_grows_to_the_product_of_its_rows():
    from hardneg.svm import _exemplar_qp as qp

    rng = np.random.default_rng(9)
    Z = rng.normal(size=(30, 7))
    x = rng.normal(size=7)
    old = np.array([3, 11, 20, 25])
    H = np.vstack([x, -Z[old]])
    keep = np.array([0, 2, 4])  # row 0 (the exemplar) and working rows 11 and 25
    new = np.array([5, 29])
    grown = qp.grow_gram(H @ H.T, keep, x, Z, old[keep[1:] - 1], new)
    H2 = np.vstack([x, -Z[[11, 25, 5, 29]]])
    np.testing.assert_allclose(grown, H2 @ H2.T, rtol=1e-12)


def test_when_every_negative_violates_the_solution_is_the_closed_form():
    # Features in a narrow positive cone (like pooled CNN features) with a small total negative weight
    # T = alpha_neg N / lam: every negative ends at the bound, beta puts x on its margin (x.w = 1), so
    # w = beta x - s with s = (alpha_neg / lam) sum(z) and beta = (1 + x.s) / ||x||^2, derived by hand.
    rng = np.random.default_rng(11)
    Z = 1.0 + 0.2 * np.abs(rng.normal(size=(3000, 20)))
    X = 1.0 + 0.2 * np.abs(rng.normal(size=(5, 20)))
    lam, T = 0.1, 2.0
    kw = dict(lam=lam, alpha_pos=1.0, alpha_neg=T * lam / Z.shape[0])
    W = fit_exemplar_svms_batch(X, Z, tol=1e-9, **kw)
    s = (kw["alpha_neg"] / lam) * Z.sum(axis=0)
    beta = (1.0 + X @ s) / np.einsum("ij,ij->i", X, X)
    assert np.all(beta < kw["alpha_pos"] / lam)  # the positive is not at its bound
    closed = beta[:, None] * X - s
    assert (1.0 + closed @ Z.T).min() > 0  # the closed form's KKT conditions: every negative violates
    np.testing.assert_allclose(W, closed, rtol=1e-7, atol=1e-9)


def test_bound_sum_from_either_side_equals_the_masked_sum():
    from hardneg.svm import _exemplar_qp as qp

    rng = np.random.default_rng(12)
    Z = rng.normal(size=(50, 4))
    total = Z.sum(axis=0)
    for frac in (0.05, 0.5, 0.95):
        upper = rng.random(50) < frac
        np.testing.assert_allclose(qp.bound_sum(Z, upper, total), Z[upper].sum(axis=0), rtol=1e-12, atol=1e-12)
