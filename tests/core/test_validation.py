"""Input checks: conversion and the errors users see."""

import numpy as np
import pytest
import scipy.sparse as sp

from hardneg._validation import check_k, check_matrix, check_random_state


def test_converts_once_to_float32_c_contiguous():
    X = check_matrix(np.asfortranarray(np.ones((3, 2), dtype=np.float64)))
    assert X.dtype == np.float32 and X.flags.c_contiguous
    S = check_matrix(sp.coo_matrix(np.eye(3)), accept_sparse=True)
    assert sp.isspmatrix_csr(S) and S.dtype == np.float32


@pytest.mark.parametrize(
    "X, kwargs, exc, message",
    [
        (np.array([[1.0, np.nan]]), {}, ValueError, "NaN"),
        (np.array([[1.0, np.inf]]), {}, ValueError, "NaN or infinity"),
        (np.ones(3), {}, ValueError, "2-D"),
        (np.ones((0, 3)), {}, ValueError, "at least 1"),
        (np.ones((2, 3)), {"n_features": 4}, ValueError, "expecting 4 features"),
        (np.array([[1.0, -0.5]]), {"non_negative": True}, ValueError, "negative"),
        (sp.eye(3), {}, TypeError, "sparse"),
        (np.array([["a"]]), {}, TypeError, "numeric"),
        (sp.csr_matrix(np.array([[0, -1.0]])), {"accept_sparse": True, "non_negative": True}, ValueError, "negative"),
    ],
)
def test_bad_input(X, kwargs, exc, message):
    with pytest.raises(exc, match=message):
        check_matrix(X, "X", **kwargs)


def test_k_and_random_state():
    assert check_k(3, 5) == 3
    with pytest.raises(ValueError, match="larger than the collection"):
        check_k(6, 5)
    with pytest.raises(TypeError):
        check_k(2.5, 5)
    a, b = check_random_state(7).random(3), check_random_state(7).random(3)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError):
        check_random_state("seed")


@pytest.mark.parametrize(
    "X, exc, message",
    [
        # the phrases scikit-learn's estimator checks look for, each on one line naming the argument
        (np.ones((3, 2)) + 1j, ValueError, "X: Complex data not supported"),
        (np.ones(3), ValueError, "Reshape your data"),
        (np.ones((12, 0)), ValueError, r"0 feature\(s\) \(shape=\(12, 0\)\) while a minimum of 1 is required"),
        (np.array([[1.0, {"a": 1}]], dtype=object), TypeError, "X: .*argument must be a string or a .*number"),
        (np.array([[1.0, -0.5]]), ValueError, "Negative values in data"),
    ],
)
def test_messages_scikit_learn_recognizes(X, exc, message):
    with pytest.raises(exc, match=message) as info:
        check_matrix(X, "X", non_negative=True)
    assert "\n" not in str(info.value)


def test_object_and_list_input_is_converted():
    X = check_matrix(np.array([[1, 2.5]], dtype=object))
    assert X.dtype == np.float32 and X.tolist() == [[1.0, 2.5]]
    assert check_matrix([[1, 2], [3, 4]]).dtype == np.float32


def test_too_large_for_float32_is_refused():
    with pytest.raises(ValueError, match="infinity"):
        check_matrix(np.array([[1e39]]))


def test_sparse_input_is_not_rewritten_in_place():
    S = sp.csr_matrix((np.array([1.0, 2.0], np.float32), np.array([0, 0]), np.array([0, 2])), shape=(1, 2))
    out = check_matrix(S, accept_sparse=True)
    assert out.toarray().tolist() == [[3.0, 0.0]]
    assert S.nnz == 2  # the caller's duplicates are still there


def test_binary_target():
    from sklearn.exceptions import DataConversionWarning

    from hardneg._validation import check_binary_target
    from hardneg.svm import LinearSVM

    est = LinearSVM()
    y, classes = check_binary_target(est, ["b", "a", "b"], 3)
    assert classes.tolist() == ["a", "b"]
    with pytest.warns(DataConversionWarning, match="column-vector"):
        y, _ = check_binary_target(est, np.array([[0], [1]]), 2)
    assert y.shape == (2,)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        check_binary_target(est, [0.5, 1.7, 2.2], 3)
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        check_binary_target(est, [0, 1, 2], 3)
    with pytest.raises(ValueError, match=r"needs 2 classes.*1 class"):
        check_binary_target(est, [1, 1], 2)
    with pytest.raises(ValueError, match="y contains NaN"):
        check_binary_target(est, [0.0, np.nan], 2)
    with pytest.raises(ValueError, match="requires y to be passed"):
        check_binary_target(est, None, 2)
    with pytest.raises(ValueError, match="2 labels for 3 samples"):
        check_binary_target(est, [0, 1], 3)


def test_validate_X_records_features_and_names():
    pd = pytest.importorskip("pandas")
    from sklearn.exceptions import NotFittedError

    from hardneg._validation import validate_X
    from hardneg.svm import LinearSVM

    est = LinearSVM()
    with pytest.raises(NotFittedError):
        validate_X(est, np.ones((2, 3)), reset=False)
    X = validate_X(est, pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}), reset=True)
    assert X.dtype == np.float32 and est.n_features_in_ == 2 and est.feature_names_in_.tolist() == ["a", "b"]
    with pytest.raises(ValueError, match="X has 3 features, but LinearSVM is expecting 2 features as input"):
        validate_X(est, np.ones((2, 3)), reset=False)


def test_check_memory(monkeypatch):
    import hardneg._validation as validation

    monkeypatch.setattr(validation, "available_memory", lambda: 2 * 1024**3)
    validation.check_memory(1024**3, "small work")
    with pytest.raises(ValueError, match=r"big work needs about 3\.0 GB of memory but only 2\.0 GB is available; lower n"):
        validation.check_memory(3 * 1024**3, "big work", hint="lower n")
    monkeypatch.setattr(validation, "available_memory", lambda: None)  # unknown: nothing is refused
    validation.check_memory(1e18, "any work")
