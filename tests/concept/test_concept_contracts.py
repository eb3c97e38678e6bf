"""Contracts of the concept learners that mutation-testing survivors showed unpinned."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from hardneg.concept import NegativeBootstrap, PooledClassifier
from hardneg.concept._negative_bootstrap import SPY_FOLDS, SPY_MIN_TAGGED
from hardneg.concept._search import score_rows
from hardneg.store import FeatureStore


def _data(seed=0, n=160, d=6):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)).astype(np.float32)
    X[:40] += 0.15  # the positives sit a little apart: rankings are imperfect
    y = np.r_[np.ones(40, int), np.zeros(n - 40, int)]
    return X, y


def test_class_weight_reaches_the_svm():
    # 40 positives against 120 pool rows with a small C: "balanced" (the default) weighs the positives up
    X, y = _data()
    balanced = PooledClassifier(C=0.01, random_state=0).fit(X, y)
    plain = PooledClassifier(C=0.01, class_weight=None, random_state=0).fit(X, y)
    by_hand = PooledClassifier(C=0.01, class_weight={0: 1.0, 1: 2.0}, random_state=0).fit(X, y)
    assert np.abs(plain.dual_coef_).max() <= 0.01 + 1e-9
    assert np.abs(by_hand.dual_coef_).max() > 0.01 + 1e-9  # a positive's bound is C x its weight
    assert not np.allclose(balanced.decision_function(X), plain.decision_function(X))


def test_score_honours_sample_weight():
    X, y = _data(1)
    nb = NegativeBootstrap(n_iter=2, random_state=0).fit(X, y)
    w = np.random.default_rng(3).random(y.size)
    expected = average_precision_score(y == 1, nb.decision_function(X), sample_weight=w)
    assert nb.score(X, y, sample_weight=w) == pytest.approx(expected)
    assert nb.score(X, y, sample_weight=w) != pytest.approx(nb.score(X, y))


@pytest.mark.parametrize("n_tagged, spies", [(SPY_MIN_TAGGED - 1, SPY_FOLDS), (SPY_MIN_TAGGED, 0)])
def test_spies_only_when_the_pool_has_fewer_tagged_items_than_the_minimum(n_tagged, spies):
    X, _ = _data(2)
    tags = [["c"] if i < n_tagged else [] for i in range(120)]
    nb = NegativeBootstrap(n_iter=3, random_state=0).fit(X[:20], X[40:], pool_tags=tags, exclude_tags=["c"])
    assert nb.n_spy_folds_ == spies


def test_score_rows_refuses_unsorted_rows_with_the_rule(tmp_path):
    with FeatureStore.create(tmp_path / "s", dim=2, chunk_rows=2) as st:
        st.append(np.arange(10.0).reshape(5, 2))

    class Sum:
        n_features_in_ = 2

        def decision_function(self, X):
            return X.sum(axis=1)

    for rows in ([3, 1], [1, 1], [0, 5]):
        with pytest.raises(ValueError, match=r"rows: expected sorted unique row positions in 0\.\.4"):
            score_rows(Sum(), st, rows)
