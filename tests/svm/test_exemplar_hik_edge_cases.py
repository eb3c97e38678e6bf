"""Exemplar-SVM solvers and HIK tables: behaviours found unchecked by the seed-12 mutation sample.

Each test names the mutants (mutmut 3.8.1 names, current tree) it was written for:

* ``_exemplar_sgd.x_fit_exemplar_svms_sgd__mutmut_120`` (step size ``alpha_neg * N / zz``):
  Pegasos with the data-scaled first step is exactly scale-equivariant.
* ``_exemplar_sgd.x_fit_exemplar_svms_sgd__mutmut_189`` (projection on the norm of the whole
  batch instead of each row): exemplars trained in one batch are independent problems.
* ``_exemplar.x_fit_exemplar_svms_liblinear__mutmut_47`` (``drop_duplicates`` not passed on):
  the LinearSVC reference keeps a duplicate negative when asked to.
* ``_exemplar_batch.x__solve_batch__mutmut_196`` (warning without its argument),
  ``x__solve_batch__mutmut_200`` (``break`` -> ``return``: the batch's statistics are lost)
  and ``x_fit_exemplar_svms_batch__mutmut_200`` (mean working set multiplied by n):
  ``max_rounds`` reached is logged and ``stats`` still hold the per-exemplar means.
* ``_exemplar_batch.x_fit_exemplar_svms_batch__mutmut_3`` (default ``alpha_neg`` 1.001):
  every solver minimizes the same Eq. (1) at its defaults.
* ``_exemplar_batch.x_fit_exemplar_svms_batch__mutmut_52`` (``or`` -> ``and``): a float count
  is refused and named.
* ``_hik_tables.xǁHIKExactTableǁH__mutmut_3`` (no float64 cast): H is evaluated in float64
  even for float32 points.
* ``_hik_tables.xǁHIKExactTableǁto_bins__mutmut_85`` (``/ width`` -> ``* width``): the error
  bound of Eq. (16) by hand on a grid that is not [0, 1].
* ``_linear.x_fit_linear_svm__mutmut_10`` (argument name dropped): bad ``X`` is named.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from hardneg.svm import (HIKExactTable, exemplar_objective, fit_exemplar_svms, fit_exemplar_svms_batch,
                         fit_exemplar_svms_liblinear, fit_exemplar_svms_sgd, fit_linear_svm)


def _data(n=5, N=200, d=10, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * scale, rng.normal(size=(N, d)) * scale


@pytest.mark.parametrize("c", [0.1, 10.0])
def test_sgd_is_scale_equivariant(c):
    # Eq. (1) on (cX, cZ) with lam is Eq. (1) on (X, Z) with lam / c^2, w scaled by 1 / c; the step
    # 1 / (alpha_pos ||x||^2 + alpha_neg N mean ||z||^2) and the radius make every Pegasos iterate
    # follow the same map, so the two runs agree to rounding
    X, Z = _data()
    kw = dict(alpha_pos=1.0, alpha_neg=0.05, random_state=0, max_epochs=5)
    scaled = fit_exemplar_svms_sgd(c * X, c * Z, lam=0.01, **kw)
    plain = fit_exemplar_svms_sgd(X, Z, lam=0.01 / c**2, **kw)
    np.testing.assert_allclose(scaled * c, plain, rtol=1e-9, atol=1e-12)


def test_sgd_exemplars_in_one_batch_are_independent():
    # small features: the optimal w's are a third of the Pegasos radius each, so a batch of 32
    # has a joint norm above the radius after a few steps; one epoch (25 steps of 8 negatives),
    # the same order of negatives for the batch and for each exemplar alone
    X, Z = _data(n=32, scale=0.03, seed=1)
    kw = dict(lam=0.01, alpha_pos=1.0, alpha_neg=0.01, random_state=0, max_epochs=1, minibatch=8)
    together = fit_exemplar_svms_sgd(X, Z, **kw)
    for b in (0, 7, 31):
        alone = fit_exemplar_svms_sgd(X[b : b + 1], Z, **kw)
        np.testing.assert_allclose(together[b], alone[0], rtol=1e-7, atol=1e-12)


def test_liblinear_keeps_a_duplicate_negative_when_asked():
    X, Z = _data(n=2, N=60, d=6, seed=2)
    Z[10] = X[0]  # the first exemplar also appears among the negatives
    kw = dict(lam=0.1, alpha_pos=1.0, alpha_neg=0.5)
    kept = fit_exemplar_svms_liblinear(X, Z, drop_duplicates=False, tol=1e-8, **kw)
    exact = fit_exemplar_svms_batch(X, Z, drop_duplicates=False, tol=1e-8, warm_start=None, **kw)
    f_kept = exemplar_objective(kept, X, Z, drop_duplicates=False, **kw)
    f_exact = exemplar_objective(exact, X, Z, drop_duplicates=False, **kw)
    np.testing.assert_allclose(f_kept, f_exact, rtol=1e-4)
    dropped = fit_exemplar_svms_liblinear(X, Z, drop_duplicates=True, tol=1e-8, **kw)
    # the duplicate pulls the first exemplar's w back (its own score falls); the second is untouched
    assert float(X[0] @ kept[0]) < float(X[0] @ dropped[0]) - 0.1
    np.testing.assert_allclose(kept[1], dropped[1], rtol=1e-6, atol=1e-8)


def test_max_rounds_reached_is_logged_and_stats_are_per_exemplar_means(caplog):
    X, Z = _data(n=3, N=100, d=8, seed=3)
    stats = {}
    with caplog.at_level(logging.WARNING, logger="hardneg"):
        W = fit_exemplar_svms_batch(X, Z, lam=0.01, alpha_neg=0.05, max_rounds=1, init_size=8,
                                    warm_start=None, stats=stats)
    assert W.shape == X.shape and np.isfinite(W).all()
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("max_rounds=1" in m and m.startswith("exemplar SVM: 3 exemplar(s)") for m in messages), messages
    # one round each, no violator added: each working set is the first one, the 8 largest x.z
    assert stats["rounds"] == 3
    assert stats["working"] == 8
    assert 0 < stats["support"] <= 8


def test_stats_working_set_is_a_mean_not_a_total():
    X, Z = _data(n=6, N=150, d=8, seed=4)
    stats = {}
    fit_exemplar_svms_batch(X, Z, lam=0.01, alpha_neg=0.05, warm_start=None, stats=stats)
    # means over the 6 exemplars, so neither can pass the number of negatives
    assert 1 <= stats["working"] <= Z.shape[0]
    assert 1 <= stats["support"] <= Z.shape[0]
    assert stats["rounds"] >= 6


def test_every_solver_minimizes_the_same_problem_at_its_defaults():
    X, Z = _data(n=3, N=80, d=6, seed=5)
    batch = fit_exemplar_svms(X, Z, solver="batch", tol=1e-7)
    reference = fit_exemplar_svms(X, Z, solver="liblinear", tol=1e-8)
    np.testing.assert_allclose(batch, reference, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", ["init_size", "max_add", "max_rounds", "max_epochs", "batch_size"])
def test_a_float_count_is_refused_and_named(name):
    X, Z = _data(n=2, N=20, d=4)
    with pytest.raises(ValueError, match=rf"^{name}: must be a positive integer, got 4\.0"):
        fit_exemplar_svms_batch(X, Z, **{name: 4.0})


def test_exact_table_H_is_float64_for_float32_points():
    rng = np.random.default_rng(6)
    # values a float32 holds exactly, so only the evaluation can round
    sv = (rng.random((7, 3)) * 10).astype(np.float32).astype(np.float64)
    a = rng.normal(size=7).astype(np.float32).astype(np.float64)
    table = HIKExactTable.from_support_vectors(sv, a, 0.0)
    Z = (rng.random((3, 5)) * 10).astype(np.float32)  # row i: points for dimension i
    H = table.H(Z)
    # H_i(z) = sum_j a_j min(z, sv_ji), by hand in float64 at the float32 points
    ref = np.einsum("j,jik->ik", a, np.minimum(Z.astype(np.float64)[None, :, :], sv[:, :, None]))
    assert H.dtype == np.float64
    np.testing.assert_allclose(H, ref, rtol=1e-12, atol=1e-12)


def test_bin_table_error_bound_by_hand_on_a_wide_grid():
    # one dimension, support values 0, 1, 3, 4 (grid [0, 4], width 4) and two bins [0, 2), [2, 4]:
    # the inner values 1 (|a| = 2) and 3 (|a| = 5) fall in bins 0 and 1, the heavier bin holds 5,
    # bound = width / q / 4 * 5 = 2.5
    sv = np.array([[0.0], [1.0], [3.0], [4.0]])
    a = np.array([1.0, 2.0, -5.0, 1.0])
    exact = HIKExactTable.from_support_vectors(sv, a, 0.0)
    bins = exact.to_bins(2)
    assert bins.error_bound == pytest.approx(2.5)
    z = np.linspace(0.0, 4.0, 401)[:, None]
    err = np.abs(bins.decision_function(z) - exact.decision_function(z))
    assert err.max() <= bins.error_bound + 1e-9


def test_bad_X_is_named_by_the_linear_solver():
    y = np.array([1, -1, 1])
    with pytest.raises(ValueError, match=r"^X: "):
        fit_linear_svm(np.array([[1.0, np.nan], [0.0, 1.0], [2.0, 1.0]]), y)
    with pytest.raises(ValueError, match=r"^X: needs at least 2 row"):
        fit_linear_svm(np.ones((1, 3)), np.array([1]))
