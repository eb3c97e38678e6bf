"""Negative samplers: parameter validation, exact messages and the "auto" window's reference sample.

Written against mutants of ``hardneg/negatives/_pool_bootstrap.py`` and ``_pool.py`` that the other
tests left alive.
"""

from __future__ import annotations

import numpy as np
import pytest

from hardneg.negatives import BootstrapPoolSampler, NegativePool, RandomPoolSampler
from hardneg.negatives._pool_bootstrap import check_skip_top


def first(B):
    return np.asarray(B, float)[:, 0]


def test_check_skip_top_values_and_message():
    assert check_skip_top("auto") == "auto"
    assert check_skip_top(0) == 0.0 and isinstance(check_skip_top(0), float)
    assert check_skip_top(0.5) == 0.5
    assert check_skip_top(np.float32(0.25)) == 0.25
    for bad in ("top", 1, 1.0, -0.01, True, None, [0.1]):
        with pytest.raises(ValueError, match=r"^skip_top: expected 'auto' or a fraction in \[0, 1\), got "):
            check_skip_top(bad)
    with pytest.raises(ValueError, match="got 'top'$"):
        check_skip_top("top")


def test_bootstrap_parameters_are_validated_when_sampling():
    pool = NegativePool(np.arange(40, dtype=float).reshape(20, 2))
    with pytest.raises(ValueError, match="^n_candidates: "):
        BootstrapPoolSampler(n_candidates=0).sample(pool, 2, 0, scorer=first)
    with pytest.raises(ValueError, match="^chunk_rows: "):
        BootstrapPoolSampler(chunk_rows=0).sample(pool, 2, 0, scorer=first)
    s = BootstrapPoolSampler()
    assert s.n_candidates is None and s.chunk_rows == 8192 and s.skip_top == 0.0
    assert BootstrapPoolSampler.needs_scorer and not RandomPoolSampler.needs_scorer


def test_candidates_at_least_n_and_at_most_the_pool():
    pool = NegativePool(np.arange(40, dtype=float).reshape(20, 2))
    got = BootstrapPoolSampler(n_candidates=2).sample(pool, 5, 0, scorer=first)
    assert got.n_candidates == 5 and got.rows.size == 5  # m below n is raised to n
    got = BootstrapPoolSampler(n_candidates=500).sample(pool, 5, 0, scorer=first)
    assert got.n_candidates == 20
    assert sorted(got.rows.tolist()) == [15, 16, 17, 18, 19]  # every row a candidate: the top five
    got = BootstrapPoolSampler().sample(pool, 1, 0, scorer=first)
    assert got.n_candidates == 10  # default m = 10 n
    assert got.scores.dtype == np.float64 and got.rows.dtype == np.int64


def test_scores_are_read_in_chunks_and_flattened():
    pool = NegativePool(np.arange(40, dtype=float).reshape(20, 2))
    sizes = []

    def scorer(B):
        sizes.append(len(B))
        return first(B)[:, None]  # a column: flattened by the sampler

    got = BootstrapPoolSampler(n_candidates=20, chunk_rows=6).sample(pool, 3, 0, scorer=scorer)
    assert sizes == [6, 6, 6, 2]
    assert got.rows.tolist() == [19, 18, 17] and got.scores.tolist() == [38.0, 36.0, 34.0]


def test_auto_window_uses_at_most_m_tagged_items_as_reference():
    # 30 tagged items (scores 100..129) against 10 candidates: the reference is a sample of 10 of them
    X = np.r_[np.arange(20.0), 100.0 + np.arange(30.0)][:, None] * np.ones((1, 2))
    tags = [[] for _ in range(20)] + [["c"] for _ in range(30)]
    pool = NegativePool(X, tags=tags, exclude_tags="c")
    assert pool.tagged.tolist() == list(range(20, 50))
    seen = []

    def scorer(B):
        seen.append(first(B).copy())
        return first(B)

    got = BootstrapPoolSampler(n_candidates=10, skip_top="auto").sample(pool, 2, 0, scorer=scorer)
    ref = seen[1]
    assert ref.size == 10 and np.all(ref >= 100)  # m tagged items, no more
    assert np.all(np.diff(ref) > 0)  # drawn, then kept in row order
    assert got.n_skipped == 0  # no candidate scores like the tagged items
    # the same with the tagged items scoring lowest: every candidate scores >= tau, skip capped at m - n
    low = NegativePool(np.r_[100.0 + np.arange(20.0), np.arange(30.0)][:, None] * np.ones((1, 2)),
                       tags=tags, exclude_tags="c")
    got = BootstrapPoolSampler(n_candidates=10, skip_top="auto").sample(low, 2, 0, scorer=first)
    assert got.n_skipped == 8


def test_auto_window_counts_twice_the_candidates_at_or_above_the_median():
    # candidates 0..9 (all allowed rows); tagged items score 7, 8, 9 -> median 8; candidates >= 8: {8, 9}
    X = np.r_[np.arange(10.0), [7.0, 8.0, 9.0]][:, None]
    tags = [[] for _ in range(10)] + [["c"]] * 3
    pool = NegativePool(X, tags=tags, exclude_tags="c")
    got = BootstrapPoolSampler(n_candidates=10, skip_top="auto").sample(pool, 2, 0, scorer=first)
    assert got.n_skipped == 4
    assert sorted(got.rows.tolist()) == [4, 5]


def test_fraction_window_rounds():
    pool = NegativePool(np.arange(20.0)[:, None])
    got = BootstrapPoolSampler(n_candidates=20, skip_top=0.126).sample(pool, 2, 0, scorer=first)
    assert got.n_skipped == 3  # round(0.126 * 20) = round(2.52)
    assert got.rows.tolist() == [16, 15]


def test_pool_feature_max_and_chunks():
    X = np.array([[0.0, 2.0], [3.0, 1.0], [1.0, 5.0]])
    pool = NegativePool(X)
    np.testing.assert_array_equal(pool.feature_max(), [3.0, 5.0])
    chunks = list(pool.iter_chunks(rows=2))
    assert [lo for lo, _ in chunks] == [0, 2]
    np.testing.assert_array_equal(np.vstack([b for _, b in chunks]), X)
    assert pool.ids_of([2, 0]) == ["2", "0"]
    assert pool.tags_of([1]) == [[]]
    assert pool.take([2, 0]).tolist() == [[1.0, 5.0], [0.0, 2.0]]
    assert pool.n_allowed == 3 and pool.tagged.size == 0 and pool.exclude_tags == []
    assert not pool.is_store and pool.n_rows == 3 and pool.dim == 2


def test_pool_exclusion_sorted_and_rows_restrict_tagged():
    X = np.ones((6, 2))
    tags = [["b"], ["a"], [], ["a", "b"], ["x"], ["b"]]
    pool = NegativePool(X, tags=tags, exclude_tags=["b", "a", "b"], rows=[0, 1, 2, 4])
    assert pool.exclude_tags == ["a", "b"]
    assert pool.allowed.tolist() == [2, 4]
    assert pool.tagged.tolist() == [0, 1]  # tagged rows outside `rows` are not counted
    with pytest.raises(ValueError, match=r"^pool: no rows left to sample negatives from after excluding tags \['x'\]"):
        NegativePool(X[4:5], tags=[["x"]], exclude_tags="x")
    with pytest.raises(ValueError, match="^pool_tags: has 2 entries for 6 pool rows$"):
        NegativePool(X, tags=tags[:2])
    # no tags at all: nothing is excluded
    assert NegativePool(X, exclude_tags="a").allowed.tolist() == list(range(6))
