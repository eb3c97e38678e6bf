"""The rank-window extra (``skip_top``): skip likely untagged positives at the top of the ranking."""

import numpy as np
import pytest

from hardneg.concept import NegativeBootstrap
from hardneg.negatives import BootstrapPoolSampler, NegativePool


def first_feature(B):
    return np.asarray(B)[:, 0].astype(float)


def pool_with_tags(n=50, n_tagged=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3)).astype(np.float32)
    tags = [["concept"] if i < n_tagged else ["other"] for i in range(n)]
    return X, tags


@pytest.mark.parametrize("skip", [0.0, 0.1, 0.25, 0.5])
def test_fixed_window_is_ranks_k_to_k_plus_n(skip):
    X, tags = pool_with_tags()
    pool = NegativePool(X, tags=tags, exclude_tags="concept")
    got = BootstrapPoolSampler(n_candidates=20, skip_top=skip).sample(pool, 5, 3, scorer=first_feature)
    cands = np.random.default_rng(3).choice(pool.allowed, size=20, replace=False)
    ranked = sorted(range(20), key=lambda j: (-X[cands[j], 0], j))
    k = int(round(skip * 20))
    assert got.n_skipped == k
    assert got.rows.tolist() == cands[ranked[k : k + 5]].tolist()


def test_window_never_runs_past_the_candidates():
    X, tags = pool_with_tags()
    pool = NegativePool(X, tags=tags, exclude_tags="concept")
    got = BootstrapPoolSampler(n_candidates=10, skip_top=0.9).sample(pool, 4, 0, scorer=first_feature)
    assert got.n_skipped == 6  # m - n: the 4 lowest-scoring candidates


def test_auto_counts_candidates_scoring_like_the_tagged_items():
    """Hand-worked: tagged items score 0.9, 0.8, 0.7, 0.6 (median 0.75); 3 candidates score >= 0.75 -> skip 6."""
    X = np.zeros((24, 2), np.float32)
    X[:4, 0] = [0.9, 0.8, 0.7, 0.6]  # tagged
    X[4:, 0] = np.r_[0.95, 0.85, 0.75, np.linspace(0.7, 0.0, 17)]  # 20 untagged candidates
    tags = [["concept"]] * 4 + [[]] * 20
    pool = NegativePool(X, tags=tags, exclude_tags="concept")
    np.testing.assert_array_equal(pool.tagged, [0, 1, 2, 3])
    got = BootstrapPoolSampler(n_candidates=20, skip_top="auto").sample(pool, 5, 0, scorer=first_feature)
    assert got.n_skipped == 6
    by_score = sorted(range(4, 24), key=lambda r: -X[r, 0])
    assert sorted(got.rows.tolist()) == sorted(by_score[6:11])


def test_auto_without_tagged_items_is_the_paper_selection():
    X, _ = pool_with_tags()
    pool = NegativePool(X)
    a = BootstrapPoolSampler(n_candidates=20, skip_top="auto").sample(pool, 5, 1, scorer=first_feature)
    b = BootstrapPoolSampler(n_candidates=20).sample(pool, 5, 1, scorer=first_feature)
    assert a.n_skipped == 0 and a.rows.tolist() == b.rows.tolist()


def test_tagged_rows_respect_the_row_restriction():
    X, tags = pool_with_tags()
    pool = NegativePool(X, tags=tags, exclude_tags="concept", rows=np.arange(5, 40))
    np.testing.assert_array_equal(pool.tagged, np.arange(5, 10))


@pytest.mark.parametrize("bad", [1.0, -0.1, "top", True, None])
def test_bad_skip_top(bad):
    X, tags = pool_with_tags()
    pool = NegativePool(X, tags=tags, exclude_tags="concept")
    with pytest.raises(ValueError, match="skip_top"):
        BootstrapPoolSampler(skip_top=bad).sample(pool, 3, 0, scorer=first_feature)
    with pytest.raises(ValueError, match="skip_top"):
        NegativeBootstrap(n_iter=2, skip_top=bad).fit(X[:5] + 1, X)


def test_auto_keeps_untagged_positives_out_of_the_negatives():
    """A common concept with half its pool items untagged: the paper's selection takes them as negatives."""
    rng = np.random.default_rng(0)
    d = 6
    shift = np.r_[1.0, 1.0, np.zeros(d - 2)]
    pos = (rng.random((15, d)) * 0.5 + shift).astype(np.float32)
    pool = rng.random((400, d)).astype(np.float32)
    is_pos = np.arange(400) % 3 == 0  # a third of the pool is the concept
    pool[is_pos] = rng.random((is_pos.sum(), d)) * 0.5 + shift
    tags = [["concept"] if p and i % 2 == 0 else [] for i, p in enumerate(is_pos)]  # half the tags missing
    share = {}
    for skip in (0.0, "auto"):
        nb = NegativeBootstrap(n_iter=4, n_bins=16, skip_top=skip, random_state=0)
        nb.fit(pos, pool, exclude_tags="concept", pool_tags=tags)
        chosen = np.concatenate([r["rows"] for r in nb.iterations_[1:]])
        share[skip] = is_pos[chosen].mean()
        assert all(r["n_skipped"] == 0 for r in nb.iterations_) == (skip == 0.0)
    assert share[0.0] > 0.5 and share["auto"] < share[0.0] / 2


# ---------------------------------------------------------------- spies (issue 36: an untagged pool)


def test_auto_counts_candidates_scoring_like_the_spies():
    """Hand-worked, no tagged items: spies score 0.9, 0.8, 0.7, 0.6 (median 0.75); 3 candidates >= 0.75 -> skip 6."""
    X = np.zeros((20, 2), np.float32)
    X[:, 0] = np.r_[0.95, 0.85, 0.75, np.linspace(0.7, 0.0, 17)]
    pool = NegativePool(X)
    got = BootstrapPoolSampler(n_candidates=20, skip_top="auto").sample(
        pool, 5, 0, scorer=first_feature, reference_scores=np.array([0.9, 0.8, 0.7, 0.6]))
    assert got.n_skipped == 6
    assert sorted(got.rows.tolist()) == list(range(6, 11))


def test_spies_and_tagged_items_are_one_reference_sample():
    """Two tagged items (1.0, 0.875) and two spies (0.625, 0.5): median 0.75, as with four tagged items."""
    X = np.zeros((22, 2), np.float32)
    X[:2, 0] = [1.0, 0.875]
    X[2:, 0] = np.r_[0.95, 0.85, 0.75, np.linspace(0.7, 0.0, 17)]
    pool = NegativePool(X, tags=[["concept"]] * 2 + [[]] * 20, exclude_tags="concept")
    got = BootstrapPoolSampler(n_candidates=20, skip_top="auto").sample(
        pool, 5, 0, scorer=first_feature, reference_scores=np.array([0.625, 0.5]))
    assert got.n_skipped == 6


def test_fixed_skip_ignores_the_spies():
    X, _ = pool_with_tags()
    pool = NegativePool(X)
    a = BootstrapPoolSampler(n_candidates=20, skip_top=0.1).sample(pool, 5, 1, scorer=first_feature,
                                                                       reference_scores=np.array([9.0]))
    assert a.n_skipped == 2


def untagged_concept(seed=0, n_pool=400, share=1 / 3, d=6, n_pos=15):
    rng = np.random.default_rng(seed)
    shift = np.r_[1.0, 1.0, np.zeros(d - 2)]
    pos = (rng.random((n_pos, d)) * 0.5 + shift).astype(np.float32)
    pool = rng.random((n_pool, d)).astype(np.float32)
    is_pos = rng.random(n_pool) < share
    pool[is_pos] = rng.random((is_pos.sum(), d)) * 0.5 + shift
    return pos, pool, is_pos


def test_untagged_pool_uses_spies_and_keeps_its_positives_out_of_the_negatives():
    """No tags at all (the user tagged only B+): "auto" estimates from spies held out of B+."""
    pos, pool, is_pos = untagged_concept()
    share = {}
    for skip in (0.0, "auto"):
        nb = NegativeBootstrap(n_iter=6, n_bins=16, skip_top=skip, random_state=0).fit(pos, pool)
        chosen = np.concatenate([r["rows"] for r in nb.iterations_[1:]])
        share[skip] = is_pos[chosen].mean()
        if skip == "auto":
            assert nb.n_spy_folds_ == 5 and nb.skipped_fraction_ > 0.2
            # from t = 2 on, each iteration scores the folds held out so far: 3 positives per fold
            assert [r["n_spies"] for r in nb.iterations_] == [0, 3, 6, 9, 12, 15]
        else:
            assert nb.n_spy_folds_ == 0 and nb.skipped_fraction_ == 0.0
    assert share[0.0] > 0.5 and share["auto"] < share[0.0] / 2


def test_each_member_trains_without_its_spy_fold(monkeypatch):
    """Member t trains on B+ without fold (t - 1) mod 5; the five folds partition B+."""
    from hardneg.concept import _ensemble

    pos, pool, _ = untagged_concept(n_pos=20)
    trained_on = []
    real = _ensemble.fit_member

    def recording(K_pp, P, N, **kw):
        trained_on.append({int(np.flatnonzero((pos == row).all(axis=1))[0]) for row in P})
        return real(K_pp, P, N, **kw)

    monkeypatch.setattr(_ensemble, "fit_member", recording)
    NegativeBootstrap(n_iter=10, n_bins=16, random_state=0).fit(pos, pool)
    held = [set(range(20)) - used for used in trained_on]
    assert [len(h) for h in held] == [4] * 10
    assert held[:5] == held[5:]
    assert set().union(*held[:5]) == set(range(20))


def test_tagged_pool_needs_no_spies():
    """Ten or more tagged pool items: every member trains on all of B+, as in the paper."""
    pos, pool, is_pos = untagged_concept()
    tags = [["concept"] if p and i % 2 == 0 else [] for i, p in enumerate(is_pos)]
    nb = NegativeBootstrap(n_iter=4, n_bins=16, random_state=0).fit(pos, pool, exclude_tags="concept", pool_tags=tags)
    assert nb.n_spy_folds_ == 0 and all(r["n_spies"] == 0 for r in nb.iterations_)
    assert nb.skipped_fraction_ > 0


def test_too_few_positives_for_spies_is_the_paper_selection():
    pos, pool, _ = untagged_concept(n_pos=4)
    a = NegativeBootstrap(n_iter=3, n_bins=16, random_state=0).fit(pos, pool)
    b = NegativeBootstrap(n_iter=3, n_bins=16, skip_top=0.0, random_state=0).fit(pos, pool)
    assert a.n_spy_folds_ == 0
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_compressed_model_records_the_estimate():
    pos, pool, _ = untagged_concept()
    nb = NegativeBootstrap(n_iter=4, n_bins=16, random_state=0).fit(pos, pool)
    meta = nb.compress().meta
    assert meta["spy_folds"] == 5 and meta["skipped_fraction"] == pytest.approx(nb.skipped_fraction_)


def _mpe_pool(n_tagged):
    """Tagged items scoring 0.01..1.00 (every 1/n_tagged), then 100 candidates: 30 hard negatives scoring 0.55,
    just above the median positive, 12 scoring like the top positives (0.95), 58 at 0.1."""
    tagged = np.arange(1, n_tagged + 1) / n_tagged
    cands = np.r_[np.full(30, 0.55), np.full(12, 0.95), np.full(58, 0.1)]
    X = np.zeros((n_tagged + 100, 2), np.float32)
    X[:, 0] = np.r_[tagged, cands]
    return NegativePool(X, tags=[["concept"]] * n_tagged + [[]] * 100, exclude_tags="concept")


def test_auto_takes_the_smallest_estimate_over_quantiles_with_many_tagged_items():
    """Hand-worked, 100 tagged items: at q = 0.5 (tau ~ 0.505) 42 candidates -> 84; at q = 0.6 (tau ~ 0.604)
    12 -> 30; q = 0.7, 0.8, 0.9 give 40, 60, 120. The estimate is 30: the 30 at 0.55 are hard negatives."""
    got = BootstrapPoolSampler(n_candidates=100, skip_top="auto").sample(_mpe_pool(100), 5, 0, scorer=first_feature)
    assert got.n_skipped == 30


def test_auto_uses_the_median_only_when_few_tagged_items_lie_above_a_higher_quantile():
    """20 tagged items: only 8 lie above the 0.6 quantile (fewer than AUTO_MIN_TAIL = 10), so the median rule: 84."""
    got = BootstrapPoolSampler(n_candidates=100, skip_top="auto").sample(_mpe_pool(20), 5, 0, scorer=first_feature)
    assert got.n_skipped == 84


def test_auto_needs_ten_candidates_above_a_higher_quantile():
    """Only 2 candidates at 0.95: the bounds at q > 0.5 rest on too few counts, so the median rule: 2 x 32 = 64."""
    X = np.zeros((200, 2), np.float32)
    X[:, 0] = np.r_[np.arange(1, 101) / 100, np.full(30, 0.55), np.full(2, 0.95), np.full(68, 0.1)]
    pool = NegativePool(X, tags=[["concept"]] * 100 + [[]] * 100, exclude_tags="concept")
    got = BootstrapPoolSampler(n_candidates=100, skip_top="auto").sample(pool, 5, 0, scorer=first_feature)
    assert got.n_skipped == 64


def test_auto_uses_the_median_only_with_spies():
    """The same 100 reference scores given as spies: their upper tail is not comparable, so 2 x 42 = 84."""
    X = np.zeros((100, 2), np.float32)
    X[:, 0] = np.r_[np.full(30, 0.55), np.full(12, 0.95), np.full(58, 0.1)]
    got = BootstrapPoolSampler(n_candidates=100, skip_top="auto").sample(
        NegativePool(X), 5, 0, scorer=first_feature, reference_scores=np.arange(1, 101) / 100)
    assert got.n_skipped == 84
