"""The scikit-learn contract of the concept-search estimators (issue 10).

Both call forms of ``fit`` (scikit-learn's ``fit(X, y)`` and the paper's
``fit(positives, pool)``), the estimator checks, ``GridSearchCV`` scored by
average precision, and the errors for bad input.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone, is_classifier
from sklearn.exceptions import DataConversionWarning, NotFittedError
from sklearn.metrics import average_precision_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

import hardneg.concept._ensemble as ensemble
from hardneg.concept import AsymmetricBagging, NegativeBootstrap, PooledClassifier, PositiveSampling, RandomSampling

# scikit-learn's estimator checks for these estimators run in tests/test_common.py (every estimator, one table).


def data(seed=0, n_pos=12, n_pool=90, d=5):
    """Positives shifted in feature 0, a uniform pool, tags marking look-alikes."""
    rng = np.random.default_rng(seed)
    pos = rng.random((n_pos, d)) * 0.6
    pos[:, 0] += 0.7
    pool = rng.random((n_pool, d))
    pool[::9, 0] += 0.7  # look like positives: tagged with the concept, never negatives
    tags = [["concept"] if i % 9 == 0 else ["other"] for i in range(n_pool)]
    return pos.astype(np.float32), pool.astype(np.float32), tags


FORMS = [
    NegativeBootstrap(n_iter=3, n_bins=10, n_candidates=30),
    RandomSampling(n_iter=3, n_bins=10),
    AsymmetricBagging(n_iter=3, n_bins=10, n_negatives=20),
    PositiveSampling(n_iter=3, n_bins=10),
    PooledClassifier(max_negatives=50, n_bins=10),
]


@pytest.mark.parametrize("est", FORMS, ids=lambda e: type(e).__name__)
def test_both_fit_forms_give_the_same_model(est):
    pos, pool, tags = data()
    X = np.vstack([pos, pool])
    y = np.r_[np.ones(len(pos), dtype=int), np.zeros(len(pool), dtype=int)]
    kw = dict(exclude_tags="concept")
    old = clone(est).set_params(random_state=7).fit(pos, pool, pool_tags=tags, **kw)
    by_keyword = clone(est).set_params(random_state=7).fit(pos, pool=pool, pool_tags=tags, **kw)
    new = clone(est).set_params(random_state=7).fit(X, y, pool_tags=[[]] * len(pos) + tags, **kw)
    for other in (by_keyword, new):
        np.testing.assert_array_equal(other.support_vectors_, old.support_vectors_)
        np.testing.assert_array_equal(other.dual_coef_, old.dual_coef_)
        assert other.intercept_ == old.intercept_
        np.testing.assert_array_equal(other.decision_function(X), old.decision_function(X))
    # Rows index the pool in the paper's form and X in fit(X, y).
    assert [r["rows"] for r in by_keyword.iterations_] == [r["rows"] for r in old.iterations_]
    assert [r["rows"] for r in new.iterations_] == [[i + len(pos) for i in r["rows"]] for r in old.iterations_]
    assert all("concept" not in t for r in new.iterations_ for ts in r["tags"] for t in ts)
    assert old.classes_.tolist() == new.classes_.tolist() == [0, 1]
    np.testing.assert_array_equal(new.predict(X), (new.decision_function(X) > 0).astype(int))


def test_labels_any_binary_encoding_greater_label_is_positive():
    pos, pool, _ = data(1)
    X = np.vstack([pos, pool])
    ref = NegativeBootstrap(n_iter=2, n_bins=8, random_state=0).fit(pos, pool)
    for y in (np.r_[np.ones(len(pos)), -np.ones(len(pool))],
              np.r_[np.ones(len(pos), dtype=bool), np.zeros(len(pool), dtype=bool)],
              np.array(["yes"] * len(pos) + ["no"] * len(pool), dtype=object)):
        m = NegativeBootstrap(n_iter=2, n_bins=8, random_state=0).fit(X, y)
        np.testing.assert_array_equal(m.dual_coef_, ref.dual_coef_)
        assert m.classes_[1] == y[0]
        assert set(m.predict(X).tolist()) <= set(y.tolist())
        assert m.score(X, y) == average_precision_score(y == y[0], m.decision_function(X))


def test_column_vector_y_is_labels_but_one_column_array_with_one_feature_x_is_a_pool():
    pos, pool, _ = data(2)
    X = np.vstack([pos, pool])
    y = np.r_[np.ones(len(pos)), np.zeros(len(pool))]
    a = RandomSampling(n_iter=2, n_bins=8, random_state=0).fit(X, y)
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        b = RandomSampling(n_iter=2, n_bins=8, random_state=0).fit(X, y[:, None])
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    # With one feature an (n, 1) array is a valid pool, so it is one.
    c = RandomSampling(n_iter=2, n_bins=8, random_state=0).fit(pos[:, :1], pool[:, :1])
    assert c.n_features_in_ == 1 and len(c.iterations_[0]["rows"]) == len(pos)


def test_grid_search_picks_by_average_precision():
    # Half the pool is "bright" (large in every feature but the concept's): a
    # meta classifier trained on one positive and one random negative ranks those
    # above the positives; one trained on all of B+ and as many negatives does not.
    rng = np.random.default_rng(0)
    pos = rng.random((20, 6)) * 0.5 + 0.5
    pos[:, 0] += 0.2
    pool = rng.random((100, 6))
    pool[:50, 1:] += 1.0
    pool[:50, 0] *= 0.5
    X = np.vstack([pos, pool]).astype(np.float32)
    y = np.r_[np.ones(len(pos), dtype=int), np.zeros(len(pool), dtype=int)]
    est = PositiveSampling(n_iter=2, n_bins=8, random_state=0)
    assert is_classifier(est)  # so GridSearchCV splits stratified: every fold keeps positives
    grid = {"positive_fraction": [0.05, 1.0]}
    gs = GridSearchCV(est, grid, cv=3).fit(X, y)
    assert gs.best_params_ == {"positive_fraction": 1.0}
    scores = gs.cv_results_["mean_test_score"]
    assert scores[1] > scores[0] + 0.1
    # The default score is the average precision of the decision values, fold by fold.
    for i, frac in enumerate(grid["positive_fraction"]):
        manual = []
        for train, test in StratifiedKFold(3).split(X, y):
            m = clone(est).set_params(positive_fraction=frac).fit(X[train], y[train])
            manual.append(average_precision_score(y[test], m.decision_function(X[test])))
        assert scores[i] == pytest.approx(np.mean(manual))
    assert gs.best_estimator_.score(X, y) == average_precision_score(y, gs.best_estimator_.decision_function(X))


def test_cross_validation_routes_pool_tags(monkeypatch):
    pos, pool, tags = data(4)
    X = np.vstack([pos, pool])
    y = np.r_[np.ones(len(pos), dtype=int), np.zeros(len(pool), dtype=int)]
    # one tag per row naming it, so each fold's tags can be matched to its training rows
    all_tags = [[f"row{i}"] + (["concept"] if i < len(pos) else list(t)) for i, t in enumerate([[]] * len(pos) + tags)]
    seen = []
    real = ensemble.HIKEnsembleConcept._make_pool

    def spy(self, data, pool_tags, exclude_tags, related_tags, rows):
        seen.append(sorted(int(t[0][3:]) for t in pool_tags))
        return real(self, data, pool_tags, exclude_tags, related_tags, rows)

    monkeypatch.setattr(ensemble.HIKEnsembleConcept, "_make_pool", spy)
    s = cross_val_score(NegativeBootstrap(n_iter=2, n_bins=8, random_state=0), X, y, cv=3,
                        params={"pool_tags": all_tags, "exclude_tags": ["concept"]})
    assert s.shape == (3,) and np.all((s > 0) & (s <= 1))
    folds = [sorted(train.tolist()) for train, _ in StratifiedKFold(3).split(X, y)]
    assert seen == folds  # each fit got exactly its training rows' tags, in row order


# ---------------------------------------------------------------- bad input
def test_bad_labels():
    pos, pool, _ = data(5)
    X = np.vstack([pos, pool])
    n = len(X)
    est = NegativeBootstrap(n_iter=2, n_bins=8, random_state=0)
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        est.fit(X, np.arange(n) % 3)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        est.fit(X, np.linspace(0, 1, n))
    with pytest.raises(ValueError, match="no positives"):
        est.fit(X, np.zeros(n))
    with pytest.raises(ValueError, match="no unlabeled pool rows"):
        est.fit(X, np.ones(n))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        est.fit(X, np.r_[1, np.zeros(n - 2)])
    with pytest.raises(ValueError, match="requires y to be passed"):
        est.fit(X)
    with pytest.raises(TypeError, match="either y"):
        est.fit(pos, np.ones(len(pos)), pool=pool)
    with pytest.raises(ValueError, match="pool_rows"):
        est.fit(X, np.r_[np.ones(len(pos)), np.zeros(len(pool))], pool_rows=np.arange(3))


def test_bad_features():
    pos, pool, _ = data(6)
    X = np.vstack([pos, pool])
    y = np.r_[np.ones(len(pos)), np.zeros(len(pool))]
    est = RandomSampling(n_iter=2, n_bins=8, random_state=0)
    for bad, message in ((np.nan, "NaN"), (np.inf, "infinity")):
        Xb = X.copy()
        Xb[3, 1] = bad
        with pytest.raises(ValueError, match=message):
            est.fit(Xb, y)
        with pytest.raises(ValueError, match=message):
            est.fit(Xb[: len(pos)], pool)
    with pytest.raises(ValueError, match="Negative values in data passed to X.*non-negative"):
        est.fit(X - 0.5, y)
    with pytest.raises(ValueError, match="Negative values in data passed to positives"):
        est.fit(pos - 0.5, pool)
    with pytest.raises(ValueError, match="Complex data not supported"):
        est.fit(X + 1j, y)
    with pytest.raises(TypeError, match="dense data is required"):
        est.fit(sp.csr_matrix(X), y)
    fitted = clone(est).fit(X, y)
    with pytest.raises(ValueError, match="Negative values"):
        fitted.decision_function(X - 0.5)
    with pytest.raises(ValueError, match="X has 3 features, but RandomSampling is expecting 5 features"):
        fitted.predict(X[:, :3])
    with pytest.raises(ValueError, match="not seen in fit"):
        fitted.score(X, np.full(len(X), 7))


@pytest.mark.parametrize("method", ["decision_function", "predict", "staged_decision_function", "compress"])
def test_not_fitted(method):
    est = NegativeBootstrap(n_iter=2)
    with pytest.raises(NotFittedError):
        out = getattr(est, method)(np.ones((2, 3))) if method != "compress" else est.compress()
        list(out)  # staged_decision_function is a generator


@pytest.mark.parametrize("params", [
    {"n_iter": 0}, {"n_iter": 10**6}, {"n_iter": 2.5}, {"n_bins": 0}, {"n_bins": 10**6},
    {"n_negatives": 0}, {"n_negatives": 10**9}, {"n_candidates": 0}, {"C": 0.0}, {"C": -1.0},
    {"weights": "bogus"}, {"compressed_training": "yes"}, {"random_state": "seed"},
])
def test_parameter_bounds(params):
    pos, pool, _ = data(7)
    with pytest.raises(ValueError, match=next(iter(params))):
        NegativeBootstrap(**params).fit(pos, pool)


@pytest.mark.parametrize("est", [PositiveSampling(positive_fraction=0.0), PositiveSampling(positive_fraction=1.5),
                                 PooledClassifier(max_negatives=0), PooledClassifier(class_weight="auto"),
                                 PooledClassifier(class_weight={5: 1.0}), NegativeBootstrap(C=np.inf)])
def test_baseline_parameter_errors(est):
    pos, pool, _ = data(8)
    with pytest.raises(ValueError, match="positive_fraction|max_negatives|class_weight|C"):
        est.fit(pos, pool)


def test_training_set_size_is_bounded(monkeypatch):
    pos, pool, _ = data(9)
    monkeypatch.setattr(ensemble, "MAX_TRAIN_ROWS", 20)
    with pytest.raises(ValueError, match="12 positives \\+ 15 negatives .* exceed the 20 training rows"):
        NegativeBootstrap(n_iter=2, n_negatives=15).fit(pos, pool)
    monkeypatch.setattr(ensemble, "MAX_TRAIN_ROWS", 10)
    with pytest.raises(ValueError, match="positives: 12 rows, more than the 10"):
        NegativeBootstrap(n_iter=2).fit(pos, pool)
    model = NegativeBootstrap(n_iter=2, n_bins=8, random_state=0)
    monkeypatch.setattr(ensemble, "MAX_TRAIN_ROWS", 10**6)
    model.fit(pos, pool)
    with pytest.raises(ValueError, match="n_bins"):
        model.compress(n_bins=ensemble.MAX_BINS + 1)


def test_class_weight_dict_uses_the_user_labels():
    pos, pool, _ = data(10)
    X = np.vstack([pos, pool])
    y = np.array(["pos"] * len(pos) + ["bg"] * len(pool))  # classes_ = ["bg", "pos"]
    a = PooledClassifier(class_weight={"pos": 3.0, "bg": 0.5}, random_state=0).fit(X, y)
    b = PooledClassifier(class_weight={1: 3.0, 0: 0.5}, random_state=0).fit(pos, pool)
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_)
