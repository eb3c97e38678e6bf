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
        (np.ones((2, 3)), {"n_features": 4}, ValueError, "expects 4"),
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
