"""Negative pools and samplers against slow references."""

import numpy as np
import pytest

from hardneg.negatives import BootstrapPoolSampler, NegativePool, RandomPoolSampler
from hardneg.store import FeatureStore


def make_pool(seed=0, n=60, d=4):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)).astype(np.float32)
    tags = [["cat"] if i % 5 == 0 else ["dog", "pet"] if i % 5 == 1 else [] for i in range(n)]
    return X, tags


def test_pool_excludes_tags_and_restricts_rows():
    X, tags = make_pool()
    pool = NegativePool(X, tags=tags, exclude_tags=["cat", "pet"], rows=np.arange(30))
    assert set(pool.allowed.tolist()) == {i for i in range(30) if i % 5 not in (0, 1)}
    with pytest.raises(ValueError, match="no rows left"):
        NegativePool(X[:2], tags=[["a"], ["a"]], exclude_tags="a")
    with pytest.raises(ValueError, match="negative"):
        NegativePool(-X)
    with pytest.raises(ValueError, match="pool_tags"):
        NegativePool(X, tags=tags[:3])


@pytest.mark.parametrize("tags", [
    [["cat"], ["dog"], None, ["dog", "cat"], [], ("pet",)],  # lists of str, None, a tuple: converted by Arrow
    [["cat"], "dog", None, ["dog", "cat"], [], ("pet",)],  # one str for a row: that tag, not its letters
    [["cat"], ["dog"], None, ["dog", 7], ["a", None], ("pet",)],  # a number and a None inside a row: str() of each
])
def test_pool_tags_of_every_form_match_the_per_row_reference(tags):
    # reference: each row's tags as a list of str (None: none; one str: that tag), excluded if any is wanted
    norm = [[] if t is None else [t] if isinstance(t, str) else [str(x) for x in t] for t in tags]
    for wanted in (["cat"], ["dog", "7"], ["None"], ["pet", "nothing"]):
        pool = NegativePool(np.ones((len(tags), 2)), tags=iter(tags), exclude_tags=wanted)
        excluded = [i for i, t in enumerate(norm) if set(t) & set(wanted)]
        assert pool.tagged.tolist() == excluded
        assert pool.allowed.tolist() == [i for i in range(len(tags)) if i not in excluded]
        assert pool.tags_of(np.arange(len(tags))[::-1]) == norm[::-1]


def test_store_pool_equals_array_pool(tmp_path):
    X, tags = make_pool()
    with FeatureStore.create(tmp_path / "s", dim=X.shape[1]) as store:
        store.append(X[:25], tags=tags[:25])
        store.append(X[25:], tags=tags[25:])
    store = FeatureStore.open(tmp_path / "s")
    a = NegativePool(X, tags=tags, exclude_tags=["cat"])
    s = NegativePool(store, exclude_tags=["cat"])
    np.testing.assert_array_equal(a.allowed, s.allowed)
    rows = np.array([7, 2, 41])
    np.testing.assert_array_equal(a.take(rows), s.take(rows))
    assert a.tags_of(rows) == s.tags_of(rows)
    np.testing.assert_array_equal(a.feature_max(), s.feature_max())
    ra = RandomPoolSampler().sample(a, 5, 3).rows
    rs = RandomPoolSampler().sample(s, 5, 3).rows
    np.testing.assert_array_equal(ra, rs)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_sampler_distinct_allowed_deterministic(seed):
    X, tags = make_pool(seed)
    pool = NegativePool(X, tags=tags, exclude_tags="cat")
    rows = RandomPoolSampler().sample(pool, 20, seed).rows
    assert len(set(rows.tolist())) == 20 and np.isin(rows, pool.allowed).all()
    np.testing.assert_array_equal(rows, RandomPoolSampler().sample(pool, 20, seed).rows)


def bootstrap_reference(pool_X, allowed, n, m, seed, w):
    """Slow Table I steps 5-7: draw m candidates, score one at a time, keep the n best."""
    rng = np.random.default_rng(seed)
    cands = rng.choice(allowed, size=m, replace=False)
    scored = []
    for order, r in enumerate(cands):
        score = sum(min(a, b) * c for a, b, c in zip(pool_X[r], np.ones_like(w), w))
        scored.append((-score, order, int(r)))
    scored.sort()
    return [r for _, _, r in scored[:n]]


@pytest.mark.parametrize("seed", range(5))
def test_bootstrap_selection_equals_slow_reference(seed):
    X, tags = make_pool(seed, n=80)
    pool = NegativePool(X, tags=tags, exclude_tags=["cat"])
    w = np.random.default_rng(seed + 100).normal(size=X.shape[1])
    scorer = lambda B: np.minimum(B, 1.0) @ w  # a stand-in ensemble score
    got = BootstrapPoolSampler(n_candidates=30, chunk_rows=7).sample(pool, 6, seed, scorer=scorer)
    assert got.rows.tolist() == bootstrap_reference(X, pool.allowed, 6, 30, seed, w)
    assert np.all(np.diff(got.scores) <= 0) and got.n_candidates == 30


def test_bootstrap_ties_and_caps():
    X = np.ones((10, 2), np.float32)
    pool = NegativePool(X)
    got = BootstrapPoolSampler().sample(pool, 3, 0, scorer=lambda B: np.zeros(len(B)))
    # default m = 10 n, capped at the pool: every row is a candidate; ties keep draw order
    cands = np.random.default_rng(0).choice(pool.allowed, size=10, replace=False)
    assert got.rows.tolist() == cands[:3].tolist()


def test_sampler_errors():
    X, _ = make_pool()
    pool = NegativePool(X)
    with pytest.raises(ValueError, match="only 60"):
        RandomPoolSampler().sample(pool, 61)
    with pytest.raises(ValueError, match="scorer"):
        BootstrapPoolSampler().sample(pool, 3)
    with pytest.raises(TypeError, match="NegativePool"):
        RandomPoolSampler().sample(X, 3)
    with pytest.raises(ValueError, match=">= 1"):
        RandomPoolSampler().sample(pool, 0)
