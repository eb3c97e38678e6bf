"""HIK Gram matrix and HIK SVM against slow references."""

import numpy as np
import pytest
from sklearn.svm import SVC

from hardneg.svm import HIKSVC, fit_hik_svm_gram, hik_gram


def gram_reference(X, Y):
    return np.array([[sum(min(a, b) for a, b in zip(x, y)) for y in Y] for x in X])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gram_matches_reference(seed):
    rng = np.random.default_rng(seed)
    X, Y = rng.random((7, 5)), rng.random((4, 5))
    np.testing.assert_allclose(hik_gram(X, Y), gram_reference(X, Y), rtol=1e-5)
    np.testing.assert_allclose(hik_gram(X), gram_reference(X, X), rtol=1e-5)


def test_gram_large_block_uses_same_values():
    rng = np.random.default_rng(0)
    X = rng.random((300, 200)).astype(np.float32)  # big enough for the threaded kernel
    K = hik_gram(X, X[:70])
    ref = np.minimum(X[:, None, :], X[None, :70, :]).sum(-1)
    np.testing.assert_allclose(K, ref, rtol=1e-4)
    np.testing.assert_allclose(hik_gram(X)[:, :70], ref, rtol=1e-4)


def test_gram_hand_worked():
    assert hik_gram([[1.0, 2.0], [3.0, 0.0]]).tolist() == [[3.0, 1.0], [1.0, 3.0]]
    assert hik_gram(np.zeros((0, 3))).shape == (0, 0)


def test_negative_and_nan_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="negative"):
        hik_gram([[1.0, -0.5]])
    with pytest.raises(ValueError, match="NaN"):
        hik_gram([[1.0, np.nan]])
    with pytest.raises(ValueError, match="features"):
        hik_gram(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="negative"):
        HIKSVC().fit([[1.0, -1.0], [0.0, 1.0]], [0, 1])


@pytest.mark.parametrize("seed", [0, 7])
def test_hiksvc_equals_svc_on_reference_gram(seed):
    rng = np.random.default_rng(seed)
    X = rng.random((40, 6))
    y = np.where(X[:, 0] + 0.3 * rng.random(40) > 0.6, "cat", "dog")
    clf = HIKSVC(C=1.0).fit(X, y)
    ref = SVC(kernel="precomputed", C=1.0).fit(gram_reference(X, X), y)
    Z = rng.random((10, 6)) * 1.5
    np.testing.assert_allclose(clf.decision_function(Z), ref.decision_function(gram_reference(Z, X)), atol=1e-4)
    assert (clf.predict(Z) == ref.predict(gram_reference(Z, X))).all()
    # dual_coef_ / intercept_ reproduce the decision function as a kernel expansion.
    manual = gram_reference(Z, clf.support_vectors_) @ clf.dual_coef_ + clf.intercept_
    np.testing.assert_allclose(manual, clf.decision_function(Z), atol=1e-4)


def test_fit_gram_sign_convention_and_errors():
    X = np.array([[0.0, 1.0], [0.1, 0.9], [1.0, 0.0], [0.9, 0.1]])
    support, coef, b = fit_hik_svm_gram(hik_gram(X), [1, 1, 0, 0])
    dec = hik_gram(X, X[support]) @ coef + b
    assert (dec[:2] > 0).all() and (dec[2:] < 0).all()
    with pytest.raises(ValueError, match="both"):
        fit_hik_svm_gram(hik_gram(X), [1, 1, 1, 1])
    with pytest.raises(ValueError, match="binary"):
        HIKSVC().fit(X, [0, 1, 2, 2])
