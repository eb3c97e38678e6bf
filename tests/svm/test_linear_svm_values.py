"""The shared linear SVM's contract: label mapping, weights, parameters passed through, messages.

Written against mutants of ``hardneg/svm/_linear.py`` that the other tests left alive: each
test pins one behaviour a small change would break (compared with scikit-learn's LinearSVC
and SVC called directly, or with hand-worked small cases).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC, LinearSVC

from hardneg.svm import LinearSVM, fit_linear_svm
from hardneg.svm._linear import _check_sample_weight, _signed_labels


def _blobs(seed=0, n=40, d=3, shift=1.5):
    rng = np.random.default_rng(seed)
    y = np.repeat([-1, 1], n // 2)
    X = rng.normal(size=(n, d)) + shift * y[:, None] * np.eye(d)[0]
    return X.astype(np.float32), y


def test_signed_labels_larger_label_is_positive():
    np.testing.assert_array_equal(_signed_labels([-1, 1, 1, -1], 4), [-1.0, 1.0, 1.0, -1.0])
    np.testing.assert_array_equal(_signed_labels([0, 1, 1, 0], 4), [-1.0, 1.0, 1.0, -1.0])
    np.testing.assert_array_equal(_signed_labels([5, 2, 5, 2], 4), [1.0, -1.0, 1.0, -1.0])
    assert _signed_labels([-1, 1], 2).dtype == np.float64
    with pytest.raises(ValueError, match=r"^y: a binary linear SVM needs exactly 2 classes, got 3 \(\[0, 1, 2\]\)"):
        _signed_labels([0, 1, 2, 2], 4)
    with pytest.raises(ValueError, match="exactly 2 classes, got 1"):
        _signed_labels([1, 1, 1], 3)


def test_sample_weight_checks_and_messages():
    assert _check_sample_weight(None, 3) is None
    w = _check_sample_weight([1, 0, 2], 3)
    assert w.dtype == np.float64 and w.tolist() == [1.0, 0.0, 2.0]
    with pytest.raises(ValueError, match=r"^sample_weight: expected shape \(3,\), got \(2,\)"):
        _check_sample_weight([1.0, 1.0], 3)
    with pytest.raises(ValueError, match=r"expected shape \(3,\), got \(3, 1\)"):
        _check_sample_weight(np.ones((3, 1)), 3)
    with pytest.raises(ValueError, match="^sample_weight: must be finite and non-negative$"):
        _check_sample_weight([1.0, -0.5, 1.0], 3)
    with pytest.raises(ValueError, match="finite and non-negative"):
        _check_sample_weight([1.0, np.inf, 1.0], 3)
    with pytest.raises(ValueError, match="finite and non-negative"):
        _check_sample_weight([1.0, np.nan, 1.0], 3)
    with pytest.raises(ValueError, match="^sample_weight: all weights are zero"):
        _check_sample_weight([0.0, 0.0, 0.0], 3)


def test_liblinear_path_equals_linearsvc_called_directly():
    X, y = _blobs(1)
    for loss, C, scaling in (("hinge", 0.3, 1.0), ("squared_hinge", 2.0, 5.0)):
        w, b = fit_linear_svm(X, y, C=C, loss=loss, intercept_scaling=scaling, tol=1e-8, max_iter=100000,
                              random_state=0)
        ref = LinearSVC(C=C, loss=loss, dual=True, intercept_scaling=scaling, tol=1e-8, max_iter=100000,
                        random_state=0).fit(X, y)
        np.testing.assert_allclose(w, ref.coef_[0], rtol=1e-3, atol=1e-4)
        assert b == pytest.approx(ref.intercept_[0], rel=1e-3, abs=1e-4)
        assert w.dtype == np.float64 and isinstance(b, float)


def test_intercept_scaling_and_loss_change_the_solution():
    X, y = _blobs(2)
    X = X + 5.0  # far from the origin, where the regularized bias matters
    base = fit_linear_svm(X, y, C=1.0, tol=1e-8, max_iter=100000, random_state=0)
    scaled = fit_linear_svm(X, y, C=1.0, intercept_scaling=20.0, tol=1e-8, max_iter=100000, random_state=0)
    squared = fit_linear_svm(X, y, C=1.0, loss="squared_hinge", tol=1e-8, max_iter=100000, random_state=0)
    assert abs(base[1] - scaled[1]) > 0.05
    assert np.linalg.norm(base[0] - squared[0]) > 1e-3


def test_sample_weight_zero_equals_dropping_the_sample():
    X, y = _blobs(3)
    X = np.vstack([X, [[-4.0, 0.0, 0.0]]]).astype(np.float32)
    y = np.r_[y, 1]  # a mislabeled outlier
    w = np.ones(len(y))
    w[-1] = 0.0
    kw = dict(C=1.0, penalize_intercept=False, tol=1e-8, max_iter=100000)
    w0, b0 = fit_linear_svm(X, y, sample_weight=w, **kw)
    w1, b1 = fit_linear_svm(X[:-1], y[:-1], **kw)
    np.testing.assert_allclose(w0, w1, rtol=1e-4, atol=1e-5)
    assert b0 == pytest.approx(b1, abs=1e-4)
    w2, _ = fit_linear_svm(X, y, **kw)
    assert np.linalg.norm(w2 - w1) > 1e-2  # with weight 1 the outlier pulls


def test_free_bias_equals_svc_and_is_exact_off_origin():
    X = np.array([[0.0, 0.0], [0.0, 1.0], [2.0, 0.0], [2.0, 1.0]]) + 50.0
    y = [-1, -1, 1, 1]
    w, b = fit_linear_svm(X, y, C=1e6, penalize_intercept=False)
    assert 2 / np.linalg.norm(w) == pytest.approx(2.0, abs=1e-4)
    np.testing.assert_allclose(X @ w + b, [-1.0, -1.0, 1.0, 1.0], atol=1e-3)
    ref = SVC(kernel="linear", C=1e6).fit(X, y)
    np.testing.assert_allclose(w, ref.coef_[0], atol=1e-6)
    # liblinear's regularized bias is not exact there
    w_reg, _ = fit_linear_svm(X, y, C=1.0)
    assert abs(2 / np.linalg.norm(w_reg) - 2.0) > 0.1


def test_free_bias_respects_sample_weight_and_labels():
    X, y = _blobs(4)
    y01 = (y > 0).astype(int)
    a = fit_linear_svm(X, y01, C=0.5, penalize_intercept=False, tol=1e-8)
    b = fit_linear_svm(X, y, C=0.5, penalize_intercept=False, tol=1e-8)
    np.testing.assert_allclose(a[0], b[0], atol=1e-8)
    assert (np.sign(X @ a[0] + a[1]) == y).mean() > 0.9  # points to the larger label
    sw = np.where(y > 0, 3.0, 1.0)
    c = fit_linear_svm(X, y, C=0.5, sample_weight=sw, penalize_intercept=False, tol=1e-8)
    ref = SVC(kernel="linear", C=0.5, tol=1e-8).fit(X.astype(np.float64), y, sample_weight=sw)
    np.testing.assert_allclose(c[0], ref.coef_[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("C", [0.0, -1.0, np.inf, np.nan])
def test_bad_C_message(C):
    X, y = _blobs(0)
    with pytest.raises(ValueError, match="^C: must be a positive finite number"):
        fit_linear_svm(X, y, C=C)


def test_bad_loss_messages():
    X, y = _blobs(0)
    with pytest.raises(ValueError, match=r"^loss: expected one of \('hinge', 'squared_hinge'\), got 'log'"):
        fit_linear_svm(X, y, loss="log")
    with pytest.raises(ValueError, match="^loss: penalize_intercept=False supports only 'hinge', got 'squared_hinge'"):
        fit_linear_svm(X, y, loss="squared_hinge", penalize_intercept=False)


def test_estimator_passes_its_parameters_and_reports_margin():
    X, y = _blobs(5)
    clf = LinearSVM(C=0.2, loss="squared_hinge", tol=1e-7, max_iter=50000, random_state=0).fit(X, y)
    ref = LinearSVC(C=0.2, loss="squared_hinge", dual=True, tol=1e-7, max_iter=50000, random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.coef_, ref.coef_[0], rtol=1e-3, atol=1e-4)
    assert clf.margin_ == pytest.approx(2.0 / np.linalg.norm(clf.coef_))
    assert isinstance(clf.n_iter_, int) and 1 <= clf.n_iter_ <= 50000
    capped = LinearSVM(C=100.0, max_iter=1, random_state=0).fit(X, y)
    assert capped.n_iter_ == 1
    np.testing.assert_array_equal(clf.classes_, [-1, 1])
    np.testing.assert_allclose(clf.decision_function(X), X @ clf.coef_ + clf.intercept_, rtol=1e-6)


def test_estimator_sample_weight_and_sign_convention():
    X, y = _blobs(6)
    labels = np.where(y > 0, "yes", "no")
    sw = np.linspace(0.5, 2.0, len(y))
    clf = LinearSVM(C=1.0, tol=1e-8, max_iter=100000, random_state=0).fit(X, labels, sample_weight=sw)
    ref = LinearSVC(C=1.0, loss="hinge", dual=True, tol=1e-8, max_iter=100000, random_state=0).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(clf.coef_, ref.coef_[0], rtol=1e-3, atol=1e-4)
    assert clf.classes_.tolist() == ["no", "yes"]
    scores = clf.decision_function(X)
    np.testing.assert_array_equal(clf.predict(X), np.where(scores > 0, "yes", "no"))
    with pytest.raises(ValueError, match="sample_weight"):
        LinearSVM().fit(X, labels, sample_weight=np.ones(3))


def test_estimator_margin_is_infinite_for_a_zero_normal():
    X = np.zeros((4, 2), np.float32)  # all-zero rows: w = sum_i alpha_i y_i x_i stays 0
    clf = LinearSVM(C=1.0).fit(X, [0, 1, 0, 1])
    assert np.linalg.norm(clf.coef_) == 0.0
    assert clf.margin_ == np.inf
