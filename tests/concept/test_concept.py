"""Negative Bootstrap, its baselines, compression, persistence and search."""

import doctest
import importlib

import numpy as np
import pytest
from sklearn.base import clone

from hardneg._persist import ModelFileError
from hardneg.concept import (AsymmetricBagging, CompressedConcept, NegativeBootstrap, PooledClassifier,
                             PositiveSampling, RandomSampling, load_concept, search)
from hardneg.store import FeatureStore

ESTIMATORS = [
    NegativeBootstrap(n_iter=4, n_bins=20),
    NegativeBootstrap(n_iter=3, n_bins=20, compressed_training=False, weights=[1.0, 2.0, 3.0]),
    AsymmetricBagging(n_iter=3, n_bins=20),
    RandomSampling(n_iter=3, n_bins=20),
    PositiveSampling(n_iter=3, n_bins=20),
    PooledClassifier(max_negatives=80, n_bins=20),
]


def kernel(X, Y):
    return np.minimum(np.asarray(X, float)[:, None, :], np.asarray(Y, float)[None]).sum(-1)


def toy(seed=0, n_pos=12, n_pool=150, d=6):
    rng = np.random.default_rng(seed)
    pos = rng.random((n_pos, d)) * 0.5 + np.r_[1.0, np.zeros(d - 1)]
    pool = rng.random((n_pool, d))
    tags = [["concept"] if i % 10 == 0 else ["near"] if i % 10 == 1 else ["other"] for i in range(n_pool)]
    pool[::10] += np.r_[1.0, np.zeros(d - 1)]  # tagged items look like positives
    return rng, pos.astype(np.float32), pool.astype(np.float32), tags


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_estimators_deterministic_exact_and_compressed(est):
    rng, pos, pool, tags = toy()
    a = clone(est).set_params(random_state=3).fit(pos, pool, exclude_tags="concept", pool_tags=tags)
    b = clone(est).set_params(random_state=3).fit(pos, pool, exclude_tags="concept", pool_tags=tags)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    assert [r["rows"] for r in a.iterations_] == [r["rows"] for r in b.iterations_]
    # No negative ever carries the excluded tag.
    assert all("concept" not in t for r in a.iterations_ for tags_ in r["tags"] for t in tags_)
    X = np.vstack([pool, pos, np.zeros((1, pool.shape[1])), pool.max(0)[None] + 1]).astype(np.float32)
    exact = a.decision_function(X)
    # The merged expansion equals the weighted average of the meta classifiers, Eq. (9)/(10).
    members = [kernel(X, a.support_vectors_[s]) @ c + b_ for s, c, b_ in
               zip(a.member_support_, a.member_dual_coef_, a.member_intercept_)]
    if a._average:
        np.testing.assert_allclose(exact, np.average(members, axis=0, weights=a.weights_), atol=1e-4)
    else:
        np.testing.assert_allclose(exact, members[-1], atol=1e-4)
    staged = list(a.staged_decision_function(X))
    assert len(staged) == len(a.iterations_)
    np.testing.assert_allclose(staged[-1], exact, atol=1e-4)
    np.testing.assert_allclose(a.compress(None).decision_function(X), exact, atol=1e-4)
    approx = a.compress(n_bins=20)
    assert np.abs(approx.decision_function(X) - exact).max() <= approx.table.error_bound + 1e-4


def test_bootstrap_selection_matches_slow_reference():
    """Iteration 2 of Table I replayed by hand with the exact G_1."""
    rng, pos, pool, tags = toy(1)
    nb = NegativeBootstrap(n_iter=2, n_candidates=40, compressed_training=False, skip_top=0.0, random_state=5)
    nb.fit(pos, pool, exclude_tags="concept", pool_tags=tags)
    allowed = np.array([i for i in range(len(pool)) if i % 10 != 0])
    r = np.random.default_rng(5)
    first = r.choice(allowed, size=len(pos), replace=False)
    assert nb.iterations_[0]["rows"] == first.tolist()
    cands = r.choice(allowed, size=40, replace=False)
    s, c, b = nb.member_support_[0], nb.member_dual_coef_[0], nb.member_intercept_[0]
    scores = kernel(pool[cands], nb.support_vectors_[s]) @ c + b
    order = sorted(range(40), key=lambda j: (-scores[j], j))[: len(pos)]
    assert nb.iterations_[1]["rows"] == cands[order].tolist()


def test_relevant_negatives_are_found():
    rng, pos, pool, tags = toy(2, n_pool=400)
    nb = NegativeBootstrap(n_iter=5, random_state=0).fit(pos, pool, exclude_tags="concept", pool_tags=tags)
    # Candidates are scored by G_{t-1}: chosen negatives score higher than random ones.
    chosen = np.concatenate([r["rows"] for r in nb.iterations_[1:]])
    assert nb.decision_function(pool[chosen]).mean() > nb.decision_function(pool).mean()
    counts = nb.negative_tag_counts()
    assert len(counts) == 5 and all(tag != "concept" for it in counts for tag, _ in it)


def test_store_pool_gives_same_model_as_array(tmp_path):
    rng, pos, pool, tags = toy(3)
    with FeatureStore.create(tmp_path / "pool", dim=pool.shape[1]) as store:
        store.append(pool[:70], tags=tags[:70])
        store.append(pool[70:], tags=tags[70:])
    store = FeatureStore.open(tmp_path / "pool")
    a = NegativeBootstrap(n_iter=3, n_bins=16, random_state=1).fit(pos, pool, exclude_tags="concept", pool_tags=tags)
    b = NegativeBootstrap(n_iter=3, n_bins=16, random_state=1).fit(pos, store, exclude_tags="concept")
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_)
    assert b.iterations_[0]["ids"] == [str(r) for r in b.iterations_[0]["rows"]]
    # concept search over the store equals a brute-force ranking
    model = a.compress(n_bins=16)
    res = search(model, store, k=7, chunk_rows=33)
    scores = model.decision_function(pool)
    ref = sorted(range(len(pool)), key=lambda i: (-scores[i], i))[:7]
    assert res.rows.tolist() == ref and res.ids == [str(i) for i in ref]
    np.testing.assert_allclose(res.scores, scores[ref])
    sub = search(model, pool, k=3, rows=np.arange(50, 100))
    assert set(sub.rows.tolist()) <= set(range(50, 100))
    with pytest.raises(ValueError, match="larger"):
        search(model, pool, k=1000)


def test_save_load_roundtrip_and_errors(tmp_path):
    rng, pos, pool, tags = toy(4)
    nb = NegativeBootstrap(n_iter=3, n_bins=25, random_state=0).fit(pos, pool)
    for q in (25, None):
        path = nb.save(tmp_path / f"m{q}.npz", n_bins=q)
        loaded = load_concept(path)
        assert isinstance(loaded, CompressedConcept) and loaded.exact == (q is None)
        np.testing.assert_allclose(loaded.decision_function(pool), nb.compress(q).decision_function(pool))
        assert loaded.meta["estimator"] == "NegativeBootstrap"
    (tmp_path / "bad.npz").write_bytes(b"not a model")
    with pytest.raises(ModelFileError):
        load_concept(tmp_path / "bad.npz")
    with pytest.raises(ModelFileError):
        load_concept(tmp_path / "missing.npz")
    with pytest.raises(ValueError, match="features"):
        loaded.decision_function(np.ones((2, 3)))


def test_input_errors():
    rng, pos, pool, tags = toy(5)
    with pytest.raises(ValueError, match="negative"):
        NegativeBootstrap(n_iter=2).fit(-pos, pool)
    with pytest.raises(ValueError, match="negative"):
        NegativeBootstrap(n_iter=2).fit(pos, -pool)
    with pytest.raises(ValueError, match="at least 1"):
        NegativeBootstrap(n_iter=2).fit(pos[:0], pool)
    with pytest.raises(ValueError, match="features"):
        NegativeBootstrap(n_iter=2).fit(pos, pool[:, :3])
    with pytest.raises(ValueError, match="weights"):
        NegativeBootstrap(n_iter=2, weights=[1.0]).fit(pos, pool)
    with pytest.raises(ValueError, match="no rows left"):
        NegativeBootstrap(n_iter=2).fit(pos, pool, exclude_tags=["concept", "near", "other"], pool_tags=tags)
    nb = NegativeBootstrap(n_iter=2, random_state=0).fit(pos, pool)
    with pytest.raises(ValueError, match="negative"):
        nb.decision_function(-pool)
    with pytest.raises(ValueError, match="features"):
        nb.decision_function(pool[:, :2])


def test_weights_eq10_select_members():
    rng, pos, pool, tags = toy(6)
    ab = AsymmetricBagging(n_iter=3, weights=[0.0, 1.0, 0.0], random_state=0).fit(pos, pool)
    s, c, b = ab.member_support_[1], ab.member_dual_coef_[1], ab.member_intercept_[1]
    np.testing.assert_allclose(ab.decision_function(pool), kernel(pool, ab.support_vectors_[s]) @ c + b, atol=1e-4)
    ps = PositiveSampling(n_iter=2, positive_fraction=0.5, random_state=0).fit(pos, pool)
    assert ps.n_negatives_ == 6
    pc = PooledClassifier(random_state=0).fit(pos, pool)
    assert pc.n_negatives_ == len(pool) and len(pc.member_support_) == 1


def test_search_refuses_bad_rows_and_models():
    rng, pos, pool, tags = toy(7)
    model = NegativeBootstrap(n_iter=2, n_bins=8, random_state=0).fit(pos, pool)
    # 1.7 would silently become row 1.
    with pytest.raises(TypeError, match="rows: expected a 1-D array of integer"):
        search(model, pool, k=1, rows=[1.7, 3.0])
    with pytest.raises(TypeError, match="rows"):
        search(model, pool, k=1, rows=[[1, 2]])
    with pytest.raises(IndexError, match="rows"):
        search(model, pool, k=1, rows=[-1])
    with pytest.raises(TypeError, match="decision_function"):
        search(object(), pool, k=1)
    # The fitted estimator itself is a valid model for search.
    assert search(model, pool, k=2, rows=np.array([4, 5, 6])).rows.size == 2


@pytest.mark.parametrize("name", ["hardneg.concept", "hardneg.concept._negative_bootstrap",
                                  "hardneg.concept._baselines", "hardneg.concept._search",
                                  "hardneg.concept._compressed", "hardneg.concept._related",
                                  "hardneg.negatives", "hardneg.negatives._pool_bootstrap", "hardneg.negatives._pool"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
