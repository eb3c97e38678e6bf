"""Contracts of the compressed concept scorer and of the training that produces it.

Pinned here (each one a behaviour a user relies on, left open by the other tests):

- ``CompressedConcept.decision_function_bins`` of an exact (``n_bins=None``) model agrees with
  ``decision_function`` of the original features within ``bins_error_bound``;
- ``bins_error_bound`` gives a dimension the model is constant in (a zero-width table) no share:
  the bound equals the bound of the same table and grid without that dimension;
- error messages name the argument: ``X``, ``grid``, ``fit(X, y)``;
- the scores recorded per iteration (``iterations_[t]["scores"]``) are those of the
  lambda-weighted ensemble G_{t-1} ([Li13] Eq. (10)), and training divides by no zero
  slope of its tables;
- ``NegativeBootstrap``'s defaults are the documented ones;
- ``refine`` after a fit that failed says the estimator is not fitted.
"""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from hardneg.concept import CompressedConcept, NegativeBootstrap
from hardneg.store import BinGrid
from hardneg.svm import HIKBinTable


def _data(seed=0, n_pos=8, n_pool=60, d=4):
    rng = np.random.default_rng(seed)
    P = (rng.random((n_pos, d)) + 0.3).astype(np.float32)
    pool = rng.random((n_pool, d)).astype(np.float32)
    return P, pool


def test_exact_model_scores_codes_within_the_bins_error_bound():
    P, pool = _data()
    model = NegativeBootstrap(n_iter=2, random_state=0).fit(P, pool).compress(n_bins=None)
    assert model.exact
    X = np.vstack([P, pool])
    grid = BinGrid(np.zeros(X.shape[1]), X.max(axis=0), 16)
    by_codes = model.decision_function_bins(grid.quantize(X), grid)
    exact = model.decision_function(X)
    assert by_codes.shape == exact.shape and np.isfinite(by_codes).all()
    assert np.abs(by_codes - exact).max() <= model.bins_error_bound(grid) + 1e-5
    # and equal to the scores of the node values the codes stand for
    np.testing.assert_allclose(by_codes, model.decision_function(grid.dequantize(grid.quantize(X))), rtol=1e-9, atol=1e-9)


def test_bins_error_bound_ignores_a_dimension_the_model_is_constant_in():
    P, pool = _data(1)
    P[:, 2] = 0.5
    pool[:, 2] = 0.5  # every support value equal: a zero-width table dimension
    model = NegativeBootstrap(n_iter=2, random_state=0).fit(P, pool).compress(n_bins=20)
    t = model.table
    assert t.lo[2] == t.hi[2] == 0.5
    keep = [0, 1, 3]
    without = CompressedConcept(HIKBinTable(t.lo[keep], t.hi[keep], t.values[keep], t.below[keep], t.above[keep],
                                            t.intercept))
    hi = np.array([1.5, 1.5, 1.0, 1.5])  # the grid still spans values of dimension 2
    grid = BinGrid(np.zeros(4), hi, 10)
    bound = model.bins_error_bound(grid)
    assert bound > 0
    assert bound == pytest.approx(without.bins_error_bound(BinGrid(np.zeros(3), hi[keep], 10)), rel=1e-9, abs=1e-9)
    # H_2 is constant (an SVM's coefficients sum to 0), so moving x_2 within the grid moves no score
    X = np.tile(np.r_[0.4, 0.6, 0.0, 0.8].astype(np.float32), (2, 1))
    X[1, 2] = 1.0
    s = model.decision_function(X)
    assert s[0] == pytest.approx(s[1], abs=1e-5)


def test_errors_name_the_argument():
    P, pool = _data(2)
    nb = NegativeBootstrap(n_iter=1, random_state=0)
    model = nb.fit(P, pool).compress(n_bins=10)
    with pytest.raises(ValueError, match=r"^X has 5 features"):
        model.decision_function(np.ones((2, 5), np.float32))
    with pytest.raises(ValueError, match=r"^grid: has 5 dimensions, the model 4"):
        model.decision_function_bins(np.zeros((2, 4), np.uint8), BinGrid(np.zeros(5), np.ones(5), 10))
    X, y = np.vstack([P, pool]), np.r_[np.ones(len(P), int), np.zeros(len(pool), int)]
    with pytest.raises(ValueError, match=r"^pool_rows: .*in fit\(X, y\) the rows"):
        NegativeBootstrap(n_iter=1).fit(X, y, pool_rows=np.arange(5))


def test_negative_bootstrap_defaults_are_the_documented_ones():
    assert NegativeBootstrap().get_params() == {
        "n_iter": 50, "n_candidates": None, "n_bins": 100, "C": 1.0, "weights": None, "n_negatives": None,
        "compressed_training": True, "skip_top": "auto", "near_duplicate": None, "random_state": None,
    }


def test_training_scores_are_the_lambda_weighted_ensemble():
    # [Li13] Eq. (10): iteration 3 scores its candidates with G_2 = (l1 g1 + l2 g2) / (l1 + l2),
    # compressed on a fine grid, so the recorded scores match the exact staged G_2 closely
    P, pool = _data(3, n_pool=80)
    nb = NegativeBootstrap(n_iter=3, weights=[1.0, 3.0, 2.0], n_bins=2000, skip_top=0.0, random_state=0).fit(P, pool)
    rec = nb.iterations_[2]
    X = pool[rec["rows"]]
    G1, G2, _ = nb.staged_decision_function(X)
    np.testing.assert_allclose(rec["scores"], G2, rtol=0, atol=2e-3)
    assert np.abs(G2 - G1).max() > 0.1  # g2 differs from g1, so the weights matter


def test_training_divides_by_no_zero_slope():
    # with a tiny C every dual coefficient sits at +-C: they sum to exactly 0, so each table's slope
    # below the grid is exactly 0; training must not divide by it
    P, pool = _data(4, n_pos=6, n_pool=80)
    with np.errstate(divide="raise", invalid="raise"):
        nb = NegativeBootstrap(n_iter=3, C=2.0**-10, skip_top=0.0, random_state=0).fit(P, pool)
    assert np.all(np.abs(nb.member_dual_coef_[0]) == 2.0**-10) and nb.member_dual_coef_[0].sum() == 0.0
    assert all(np.isfinite(r["scores"]).all() for r in nb.iterations_[1:])


def test_refine_after_a_failed_fit_is_not_fitted():
    P, pool = _data(5)
    nb = NegativeBootstrap(n_iter=1, random_state=0)
    with pytest.raises(ValueError, match="^pool: has 3 features"):
        nb.fit(P, pool[:, :3])  # refused after the positives were checked
    with pytest.raises(NotFittedError):
        nb.refine(P, pool[:4])
