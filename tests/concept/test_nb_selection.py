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
    assert f"default {NEAR_DUPLICATE}" in NegativeBootstrap.__doc__
    assert clone(NegativeBootstrap(near_duplicate=0.9)).near_duplicate == 0.9
    pos, X = _copies_problem()
    with pytest.raises(ValueError, match="near_duplicate"):
        NegativeBootstrap(near_duplicate=1.5).fit(pos, X)
