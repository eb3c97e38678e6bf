"""RampTSVM's dual coordinate descent with the balancing constraint, where a centred row is all zero.

Balancing ([Cevikalp17] Eq. (8)'s constraint) centres the rows on the unlabeled mean, so an unlabeled row
equal to that mean, or the only unlabeled row, is all zero: its dual coordinate cannot move w or the
bias. The solver used to multiply its zero step by an infinite curvature and return NaN coefficients."""

import numpy as np
import pytest

from hardneg.svm import RampTSVM

XL = np.array([[0.0, 1.0], [0.0, -1.0], [1.0, 1.0], [1.0, -1.0]])
YL = np.array([1, 0, 1, 0])


@pytest.mark.parametrize("XU", [np.array([[1.0, 0.0], [3.0, 0.0], [2.0, 0.0]]),  # the middle row is the mean
                                np.array([[2.0, 0.5]])],  # a single unlabeled row
                         ids=["row-at-the-mean", "single-row"])
@pytest.mark.parametrize("C_star", [0.1, 1.0])
def test_a_centred_zero_row_leaves_the_solution_finite_and_balanced(XU, C_star):
    model = RampTSVM(solver="dcd", C_star=C_star, random_state=0).fit(XL, YL, X_unlabeled=XU)
    assert np.all(np.isfinite(model.coef_)) and np.isfinite(model.intercept_)
    # the labeled rows separate on the second feature: the hyperplane keeps them apart
    assert np.array_equal(model.predict(XL), YL)


def test_the_zero_row_changes_nothing_against_the_same_data_without_it():
    # the row at the unlabeled mean adds a zero row to the centred problem: same w, same bias
    XU = np.array([[1.0, 0.0], [3.0, 0.0]])
    with_mean_row = RampTSVM(solver="dcd", C_star=0.5, random_state=0).fit(XL, YL, X_unlabeled=np.vstack([XU, [[2.0, 0.0]]]))
    without = RampTSVM(solver="dcd", C_star=0.5, random_state=0).fit(XL, YL, X_unlabeled=XU)
    np.testing.assert_allclose(with_mean_row.coef_, without.coef_, atol=1e-6)
    np.testing.assert_allclose(with_mean_row.intercept_, without.intercept_, atol=1e-6)
