"""benchmarks/similarity_solis_concept_why.py: the per-concept diagnostics (issue 28) on small random data.

The claim the diagnostic rests on: only the anchor images' words (V+) ever get a subgradient, so S-ADA
with w1 = 0 has no non-zero weight and OASIS-diag no changed weight outside V+, whatever the parameters.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from _helpers import sparse_class_rows

why = pytest.importorskip("benchmarks.similarity_solis_concept_why")


def _data(n_words=60, per_class=260, seed=0):
    return sparse_class_rows(n_words, per_class, density=0.03, seed=seed)


def test_mass_on_is_the_share_of_the_squared_norm():
    X = sp.csr_matrix(np.array([[3.0, 4.0, 0.0], [0.0, 1.0, 1.0]]))
    mask = np.array([True, False, False])
    assert why.mass_on(X, np.array([0, 1]), mask) == pytest.approx((9 / 25 + 0.0) / 2)


def test_no_weight_moves_outside_the_anchor_words():
    X, y = _data()
    rows = why.study(X, y, X.shape[1], lam=1e-6, eta=1.0, C=10.0, val_draws=1, n_queries=5, passes=2)
    assert len(rows) == 3
    for r in rows:
        assert r["|V+|"] < X.shape[1]  # some words are outside V+, so the check below can fail
        assert r["S-ADA non-zero outside V+"] == 0 and r["OASIS-diag changed outside V+"] == 0
        assert 0 < r["S-ADA non-zero words"] <= r["|V+|"] and 0 < r["OASIS-diag changed words"] <= r["|V+|"]
        assert 0 < r["query mass on V+ %"] <= 100
        assert r["S-ADA violated"] <= 7 * 6 * 500
        # λ = 0 keeps every touched word: its positive and negative weights split the V+ words that moved
        assert 0 < r["S-ADA λ=0 positive words"] and r["S-ADA λ=0 positive words"] + r["S-ADA λ=0 negative words"] <= r["|V+|"]
        assert r["S-ADA λ=0 positive words"] + r["S-ADA λ=0 negative words"] >= r["S-ADA non-zero words"]
        assert 0 <= r["S-ADA λ=0, negative weights set to 0 mAP"] <= 100


def test_w1_one_zeroes_the_unseen_words_once_eta_lam_reaches_delta_over_t():
    # the docstring's claim: outside V+ the weight is soft(1, η t λ / δ), zero iff η λ >= δ / t
    from hardneg.similarity import SolisADA

    X, y = _data()
    t, _, _, _ = why.concept_split(y, 0, np.random.default_rng(0), 7, 500, 5, None)
    vplus = np.zeros(X.shape[1], bool)
    vplus[X[np.unique(t[:, 0])].indices] = True
    n, delta, eta = len(t), 1e-2, 0.1
    above = SolisADA(lam=1.01 * delta / (n * eta), eta=eta, delta=delta, w_init=1.0).fit(X, triplets=t).w_
    below = SolisADA(lam=0.5 * delta / (n * eta), eta=eta, delta=delta, w_init=1.0).fit(X, triplets=t).w_
    assert not vplus.all()
    assert np.all(above[~vplus] == 0.0)
    assert np.allclose(below[~vplus], 0.5)  # soft(1, 0.5)


def test_w1_one_grid_has_a_row_per_pair():
    X, y = _data()
    rows = why.w1_one_grid(X, y, (1e-6, 1e-2), (0.1, 1.0), 1, 5)
    assert [(r["λ"], r["η"]) for r in rows] == [(1e-6, 0.1), (1e-6, 1.0), (1e-2, 0.1), (1e-2, 1.0)]
    assert all(0 <= r["val mAP %"] <= 100 and 0 <= r["sparsity %"] <= 100 for r in rows)
