"""The negative pool's and the sampler base's contract: bounds, types, messages, store/array parity.

Written against the mutants a mutation run (mutmut over ``hardneg/negatives``) left alive:
each test pins one behaviour that a small change to ``_pool.py`` / ``_base.py`` would break.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from hardneg.negatives import BootstrapPoolSampler, NegativePool, RandomPoolSampler
from hardneg.store import FeatureStore


def _pool_data(n=12, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)).astype(np.float32)
    tags = [["cat"] if i % 3 == 0 else ["dog"] for i in range(n)]
    return X, tags


def _store(tmp_path, X, tags, *, sparse=False, chunk_rows=None):
    with FeatureStore.create(tmp_path / "s", dim=X.shape[1], sparse=sparse, chunk_rows=chunk_rows) as store:
        store.append(sp.csr_matrix(X) if sparse else X, tags=tags, ids=[f"im{i}" for i in range(len(X))])
    return FeatureStore.open(tmp_path / "s")


def test_row_bounds_are_inclusive_of_last_row_only():
    X, _ = _pool_data()
    assert NegativePool(X, rows=[0, len(X) - 1]).allowed.tolist() == [0, len(X) - 1]
    with pytest.raises(IndexError, match=r"pool_rows: out of range for a pool of 12 rows"):
        NegativePool(X, rows=[len(X)])
    with pytest.raises(IndexError, match="pool_rows: out of range"):
        NegativePool(X, rows=[-1])


def test_rows_must_be_a_flat_integer_array():
    X, _ = _pool_data()
    with pytest.raises(TypeError, match=r"pool_rows: expected a 1-D array of row indices, got shape \(1, 2\)"):
        NegativePool(X, rows=[[0, 1]])
    with pytest.raises(TypeError, match="dtype float64"):
        NegativePool(X, rows=[0.0, 1.0])
    assert NegativePool(X, rows=np.array([3, 1], dtype=np.uint8)).allowed.tolist() == [1, 3]


def test_tags_accept_none_and_bare_strings():
    X, _ = _pool_data(n=3)
    pool = NegativePool(X, tags=[None, "cat", ("dog", 7)], exclude_tags="cat")
    assert pool.allowed.tolist() == [0, 2]
    assert pool.tags_of([0, 1, 2]) == [[], ["cat"], ["dog", "7"]]
    # a bare string for exclude_tags is one tag, not its letters
    assert NegativePool(X, tags=[["c"], ["a"], ["t"]], exclude_tags="cat").allowed.tolist() == [0, 1, 2]


def test_messages_name_the_argument():
    X, tags = _pool_data()
    with pytest.raises(ValueError, match="^pool: .*negative"):
        NegativePool(-X)
    with pytest.raises(TypeError, match="^pool: expected a NegativePool, got ndarray$"):
        RandomPoolSampler().sample(X, 2)
    pool = NegativePool(X, tags=tags)
    with pytest.raises(ValueError, match="^n: "):
        RandomPoolSampler().sample(pool, 0)
    with pytest.raises(ValueError, match="^Bootstrap(Pool|Negative)Sampler: needs a scorer"):
        BootstrapPoolSampler().sample(pool, 2, 0)


def test_store_pool_refuses_separate_tags(tmp_path):
    X, tags = _pool_data()
    store = _store(tmp_path, X, tags)
    with pytest.raises(ValueError, match="^tags: a FeatureStore pool carries its own tags; do not pass tags$"):
        NegativePool(store, tags=tags)


def test_mapping_is_not_mistaken_for_a_store():
    # a dict has .items() but no iter_chunks/take: it must go through array validation
    with pytest.raises((TypeError, ValueError), match="pool"):
        NegativePool({"a": [1.0, 2.0]})

    class OnlyChunks:
        def iter_chunks(self, rows):  # pragma: no cover - never called
            yield 0, np.zeros((1, 1))

    with pytest.raises((TypeError, ValueError), match="pool"):
        NegativePool(OnlyChunks())


@pytest.mark.parametrize("sparse", [False, True])
def test_store_and_array_pools_read_the_same_rows(tmp_path, sparse):
    X, tags = _pool_data(n=40, d=5)
    X[:, 2] = 0.0  # an all-zero feature: legal, its maximum is 0
    store = _store(tmp_path, X, tags, sparse=sparse)
    a, s = NegativePool(X, tags=tags), NegativePool(store)
    rows = np.array([39, 0, 17])
    got = s.take(rows)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    np.testing.assert_array_equal(got, X[rows])
    np.testing.assert_array_equal(a.take(rows), X[rows])
    assert s.take(np.array([], dtype=np.int64)).shape == (0, 5)
    np.testing.assert_array_equal(s.feature_max(), X.max(axis=0))
    np.testing.assert_array_equal(a.feature_max(), X.max(axis=0))
    assert s.ids_of([3, 0]) == ["im3", "im0"]
    assert a.ids_of(np.array([3, 0])) == ["3", "0"]


@pytest.mark.parametrize("chunk", [1, 7, 40, 1000])
def test_iter_chunks_covers_every_row_once_in_order(tmp_path, chunk):
    X, tags = _pool_data(n=40, d=3)
    for pool in (NegativePool(X, tags=tags), NegativePool(_store(tmp_path / str(chunk), X, tags, chunk_rows=8))):
        starts, blocks = zip(*pool.iter_chunks(chunk))
        stacked = np.vstack(blocks)
        np.testing.assert_array_equal(stacked, X)
        assert starts[0] == 0 and all(isinstance(b, np.ndarray) for b in blocks)
        assert list(starts) == list(np.cumsum([0] + [len(b) for b in blocks[:-1]]))


def test_tags_of_large_request_matches_row_by_row(tmp_path):
    n = 1500  # above the one-conversion threshold
    X = np.ones((n, 2), dtype=np.float32)
    tags = [[f"t{i % 7}"] if i % 5 else [] for i in range(n)]
    store_pool = NegativePool(_store(tmp_path, X, tags))
    rows = np.arange(n)[::-1]
    assert store_pool.tags_of(rows) == [tags[i] for i in rows]
    assert store_pool.tags_of(rows[:3]) == [tags[i] for i in rows[:3]]


def test_random_sampler_never_repeats_a_row():
    X, tags = _pool_data(n=30)
    pool = NegativePool(X, tags=tags)
    for seed in range(5):
        rows = RandomPoolSampler().sample(pool, 30, seed).rows
        assert sorted(rows.tolist()) == list(range(30)) and rows.dtype == np.int64


def test_select_returning_the_wrong_count_is_caught():
    class Broken(RandomPoolSampler):
        def select(self, pool, n, rng, scorer):
            out = super().select(pool, n, rng, scorer)
            out.rows = out.rows[:-1]
            return out

    X, tags = _pool_data()
    with pytest.raises(RuntimeError, match=r"^Broken.select returned \(2,\) rows, expected \(3,\)$"):
        Broken().sample(NegativePool(X, tags=tags), 3, 0)


def test_feature_max_reads_a_store_once(tmp_path, monkeypatch):
    """feature_max is cached: a fit (and n_candidates="cv"'s fold fits on shallow copies) pay one pass."""
    import copy

    X, tags = _pool_data(n=40, d=5)
    pool = NegativePool(_store(tmp_path, X, tags, sparse=False))
    passes = []
    real = pool.iter_chunks
    monkeypatch.setattr(pool, "iter_chunks", lambda *a, **k: passes.append(1) or real(*a, **k))
    first = pool.feature_max()
    np.testing.assert_array_equal(first, X.max(axis=0))
    assert pool.feature_max() is first and copy.copy(pool).feature_max() is first
    assert len(passes) == 1 and not first.flags.writeable
