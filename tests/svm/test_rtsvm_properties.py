"""RampTSVM's bookkeeping: convergence flag, step scale, objective path, input names.

Each test pins one behaviour a mutation run found unchecked: ``converged_``
needs two CCCP rounds with the same betas, ``lambda0`` scales the steps (its
default is |L| + |U|), ``objective_path_`` is Eq. (4) with the chosen loss, and
a bad unlabeled matrix is named in the error.
"""

from __future__ import annotations

import numpy as np
import pytest

from hardneg.svm import RampTSVM


def _separable(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(np.arange(n) % 2 == 0, 1, -1)
    X[:, 0] += 4.0 * y  # far apart: no labeled sample ever has y f < s
    return X, y


def _objective_by_hand(X, y, U, w, b, C, C_star, s, loss):
    f = X @ w + b
    hinge = np.maximum(0, 1 - y * f)
    lab = hinge if loss == "hinge" else hinge - np.maximum(0, s - y * f)
    unl = 0.0
    if U.shape[0]:
        g = U @ w + b
        unl = sum(np.maximum(0, 1 - z) - np.maximum(0, s - z) for z in (g, -g)).sum()
    return 0.5 * w @ w + C * lab.sum() + C_star * unl


def test_convergence_needs_two_rounds_with_the_same_betas():
    X, y = _separable()
    one = RampTSVM(max_iter=1, tol=10.0, random_state=0).fit(X, y)
    assert one.n_iter_ == 1 and not one.converged_  # one round cannot show that beta is stable
    many = RampTSVM(max_iter=6, tol=10.0, random_state=0).fit(X, y)
    assert many.converged_ and many.n_iter_ == 2  # all betas stay 0 here: stop at the second round
    strict = RampTSVM(max_iter=3, tol=0.0, random_state=0, n_epochs=1).fit(X, y)
    assert not strict.converged_ and strict.n_iter_ == 3  # w still moves: no convergence claimed


def test_lambda0_scales_the_steps_and_defaults_to_the_sample_count():
    X, y = _separable(seed=1)
    U = np.random.default_rng(2).normal(size=(30, 3))
    kw = dict(max_iter=2, n_epochs=2, random_state=0)
    default = RampTSVM(**kw).fit(X, y, X_unlabeled=U)
    explicit = RampTSVM(lambda0=float(len(X) + len(U)), **kw).fit(X, y, X_unlabeled=U)
    np.testing.assert_array_equal(default.coef_, explicit.coef_)
    assert default.intercept_ == explicit.intercept_
    small = RampTSVM(lambda0=1e-3, **kw).fit(X, y, X_unlabeled=U)
    assert np.linalg.norm(small.coef_ - default.coef_) > 1e-3 * np.linalg.norm(default.coef_)


@pytest.mark.parametrize("loss", ["ramp", "hinge"])
def test_objective_path_ends_at_eq4_of_the_returned_solution(loss):
    X, y = _separable(seed=3)
    X[:4, 0] *= -1  # four labeled samples on the wrong side: the two losses differ on them
    U = np.random.default_rng(4).normal(size=(25, 3))
    clf = RampTSVM(C=2.0, C_star=0.5, s=-0.3, loss=loss, max_iter=3, random_state=0).fit(X, y, X_unlabeled=U)
    yy = np.where(y == clf.classes_[1], 1.0, -1.0)
    want = _objective_by_hand(X, yy, U, clf.coef_, clf.intercept_, 2.0, 0.5, -0.3, loss)
    assert clf.objective_path_.shape == (clf.n_iter_ + 1,)
    assert clf.objective_path_[-1] == pytest.approx(want, rel=1e-6)
    other = "hinge" if loss == "ramp" else "ramp"
    assert _objective_by_hand(X, yy, U, clf.coef_, clf.intercept_, 2.0, 0.5, -0.3, other) != pytest.approx(want, rel=1e-6)


def test_a_bad_unlabeled_matrix_is_named():
    X, y = _separable()
    with pytest.raises(ValueError, match="X_unlabeled"):
        RampTSVM().fit(X, y, X_unlabeled=np.zeros((5, 4)))
    with pytest.raises(ValueError, match="X_unlabeled"):
        RampTSVM().fit(X, y, X_unlabeled=np.full((5, 3), np.nan))
