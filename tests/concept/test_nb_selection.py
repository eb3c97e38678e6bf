"""Issue 28: Negative Bootstrap's negative selection on real-collection failure modes, and
TSVM hashing's C* default."""

from __future__ import annotations

import numpy as np
import pytest

from hardneg.hashing import TSVMHashing
from hardneg.hashing import _tsvm_hashing


# ---------------------------------------------------------------- TSVM hashing: C* default


def test_tsvm_hashing_c_star_default_is_a_quarter_of_C(monkeypatch):
    """The docstring says C_star=None means C / 4 ([Cevikalp17]: C = 20, C* = 5); every node gets it."""
    assert _tsvm_hashing.C_STAR_RATIO == 0.25
    assert "C / 4" in TSVMHashing.__doc__
    seen = []
    real = _tsvm_hashing.RampTSVM

    class Spy(real):
        def fit(self, X, y, X_unlabeled=None, **kw):
            seen.append(self.C_star)
            return super().fit(X, y, X_unlabeled=X_unlabeled, **kw)

    monkeypatch.setattr(_tsvm_hashing, "RampTSVM", Spy)
    rng = np.random.default_rng(0)
    X = rng.random((60, 5)) + np.repeat(np.eye(3, 5), 20, axis=0)
    y = np.repeat(np.arange(3), 20)
    h = TSVMHashing(n_bits=4, C=2.0, max_iter=2, random_state=0).fit(X, y, X_unlabeled=rng.random((40, 5)))
    assert h.C_star_ == pytest.approx(0.5)
    assert seen and all(c == pytest.approx(0.5) for c in seen)
    seen.clear()
    h = TSVMHashing(n_bits=4, C=2.0, C_star=2.0, max_iter=2, random_state=0).fit(X, y, X_unlabeled=rng.random((40, 5)))
    assert h.C_star_ == 2.0 and all(c == 2.0 for c in seen)


# ---------------------------------------------------------------- NB: near-duplicates of positives


def _copies_problem(seed=0):
    """Positives high on feature 0; the pool holds 10 exact copies of positives (untagged: another
    folder's copy) and 300 negatives, a few of them close to the positives."""
    rng = np.random.default_rng(seed)
    pos = rng.random((20, 6)) * 0.5
    pos[:, 0] += 2.0
    neg = rng.random((300, 6))
    pool = np.vstack([pos[:10], neg]).astype(np.float32)
    return pos.astype(np.float32), pool


def test_pool_exclude_near_duplicates_drops_copies_only():
    from hardneg.negatives import NegativePool

    pos, X = _copies_problem()
    pool = NegativePool(X)
    dropped = pool.exclude_near_duplicates(pos, 0.999)
    assert dropped.tolist() == list(range(10))
    assert not np.isin(np.arange(10), pool.allowed).any() and pool.n_allowed == 300
    with pytest.raises(ValueError, match="min_cosine"):
        NegativePool(X).exclude_near_duplicates(pos, 0.0)
    with pytest.raises(ValueError, match="references"):
        NegativePool(X).exclude_near_duplicates(pos[:, :3], 0.9)
    with pytest.raises(ValueError, match="every pool row"):
        NegativePool(X[:5]).exclude_near_duplicates(pos, 0.9)


def test_nb_near_duplicate_guard_keeps_copies_of_positives_out_of_the_negatives():
    from hardneg.concept import NegativeBootstrap

    pos, X = _copies_problem()
    picked = {}
    for guard in (None, 0.99):
        nb = NegativeBootstrap(n_iter=4, n_candidates=300, skip_top=0.0, near_duplicate=guard, random_state=0)
        nb.fit(pos, X)
        rows = np.concatenate([it["rows"] for it in nb.iterations_[1:]])
        picked[guard] = int(np.isin(rows, np.arange(10)).sum())
        assert nb.n_near_duplicates_ == (0 if guard is None else 10)
    assert picked[None] > 0  # the paper's selection takes the copies: they score highest
    assert picked[0.99] == 0


def test_nb_near_duplicate_parameter_default_and_validation():
    from sklearn.base import clone

    from hardneg.concept import NegativeBootstrap
    from hardneg.concept._negative_bootstrap import NEAR_DUPLICATE

    assert NegativeBootstrap().near_duplicate == NEAR_DUPLICATE
    assert f"default={NEAR_DUPLICATE}" in NegativeBootstrap.__doc__
    assert clone(NegativeBootstrap(near_duplicate=0.9)).near_duplicate == 0.9
    pos, X = _copies_problem()
    with pytest.raises(ValueError, match="near_duplicate"):
        NegativeBootstrap(near_duplicate=1.5).fit(pos, X)


# ---------------------------------------------------------------- NB: n_candidates="cv"


def _pos_pool(seed=0, n_pos=30, n_pool=800, d=8):
    rng = np.random.default_rng(seed)
    return rng.random((n_pos, d)) + 0.3, rng.random((n_pool, d))


def test_cv_model_is_the_fit_with_the_chosen_m():
    """n_candidates="cv" only picks m: the model equals a fit with m = factor x |B+| and the same seed."""
    from hardneg.concept import NegativeBootstrap
    from hardneg.concept import _negative_bootstrap as nb_mod

    pos, pool = _pos_pool()
    cv = NegativeBootstrap(n_iter=6, n_candidates="cv", random_state=3).fit(pos, pool)
    res = cv.cv_results_
    assert res["factor"] in nb_mod.CV_FACTORS and res["n_folds"] == nb_mod.CV_FOLDS
    assert all(len(v) == nb_mod.CV_FOLDS and all(0 <= a <= 1 for a in v) for v in res["ap"].values())
    mean = {f: np.mean(v) for f, v in res["ap"].items()}
    assert mean[res["factor"]] == max(mean.values())
    assert cv.iterations_[-1]["n_candidates"] == res["factor"] * len(pos)
    fixed = NegativeBootstrap(n_iter=6, n_candidates=res["factor"] * len(pos), random_state=3).fit(pos, pool)
    assert np.array_equal(cv.dual_coef_, fixed.dual_coef_) and np.array_equal(cv.support_vectors_, fixed.support_vectors_)
    assert NegativeBootstrap(n_iter=2, random_state=0).fit(pos, pool).cv_results_ is None


def test_cv_holds_out_one_fold_of_positives_and_fresh_pool_rows_per_fold(monkeypatch):
    """Each fold model trains on B+ minus one fold and on a pool without that fold's held-out rows;
    the held-out rows of different folds are disjoint, and they are scored, never sampled."""
    from hardneg.concept import NegativeBootstrap
    from hardneg.concept import _ensemble
    from hardneg.concept import _negative_bootstrap as nb_mod

    calls = []
    real = _ensemble.HIKEnsembleConcept._fit

    def spy(self, P, pool, progress):
        calls.append((P.shape[0], pool.allowed.copy(), int(self.n_iter)))
        return real(self, P, pool, progress)

    monkeypatch.setattr(_ensemble.HIKEnsembleConcept, "_fit", spy)
    pos, pool = _pos_pool(n_pos=31)
    m = NegativeBootstrap(n_iter=12, n_candidates="cv", random_state=0).fit(pos, pool)
    folds, final = calls[:-1], calls[-1]
    assert len(folds) == nb_mod.CV_FOLDS * len(nb_mod.CV_FACTORS)
    assert final[0] == 31 and final[2] == 12 and final[1].size == len(pool)
    assert sorted({n for n, _, _ in folds}) == [20, 21]  # 31 positives in folds of 11, 10, 10
    assert all(t == nb_mod.CV_ITER for _, _, t in folds)
    held = [np.setdiff1d(np.arange(len(pool)), allowed) for _, allowed, _ in folds[:: len(nb_mod.CV_FACTORS)]]
    n_val = min(nb_mod.CV_NEGATIVES, len(pool) // (nb_mod.CV_FOLDS + 1))
    assert all(h.size == n_val for h in held)
    assert np.unique(np.concatenate(held)).size == n_val * nb_mod.CV_FOLDS
    assert m.cv_results_["n_folds"] == nb_mod.CV_FOLDS


def test_cv_keeps_the_default_with_too_few_positives_and_rejects_other_strings():
    from hardneg.concept import NegativeBootstrap
    from hardneg.concept import _negative_bootstrap as nb_mod

    pos, pool = _pos_pool(n_pos=2 * nb_mod.CV_FOLDS - 1)
    m = NegativeBootstrap(n_iter=3, n_candidates="cv", random_state=0).fit(pos, pool)
    assert m.cv_results_ == {"factor": max(nb_mod.CV_FACTORS), "ap": {}, "n_folds": 0}
    assert m.iterations_[-1]["n_candidates"] == max(nb_mod.CV_FACTORS) * len(pos)
    with pytest.raises(ValueError, match="n_candidates"):
        NegativeBootstrap(n_candidates="auto").fit(pos, pool)


def test_cv_picks_the_factor_whose_fold_models_rank_held_out_positives_best(monkeypatch):
    """The choice follows the fold APs; a tie goes to the larger factor (the default's)."""
    from hardneg.concept import NegativeBootstrap
    from hardneg.concept import _negative_bootstrap as nb_mod

    pos, pool = _pos_pool()
    scored = []  # the factor of the fold model that was trained last, hence scored next
    real = NegativeBootstrap._pool_sampler

    def spy(self, n_neg):
        sampler = real(self, n_neg)
        scored.append(sampler.n_candidates // n_neg)  # a fold model's m = factor x its |B-|
        return sampler

    monkeypatch.setattr(NegativeBootstrap, "_pool_sampler", spy)
    for favoured, expected in [(3, 3), (10, 10), (None, 10)]:
        ap = {f: 0.9 if f == favoured else 0.5 for f in nb_mod.CV_FACTORS}
        monkeypatch.setattr(nb_mod, "average_precision", lambda y, s, ap=ap: ap[scored[-1]])
        m = NegativeBootstrap(n_iter=3, n_candidates="cv", random_state=0).fit(pos, pool)
        assert m.cv_results_["factor"] == expected
        assert m.cv_results_["ap"] == {f: [ap[f]] * nb_mod.CV_FOLDS for f in nb_mod.CV_FACTORS}
