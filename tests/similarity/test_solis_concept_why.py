"""benchmarks/similarity_solis_concept_why.py: the per-concept diagnostics (issue 28) on small random data.

The claim the diagnostic rests on: only the anchor images' words (V+) ever get a subgradient, so S-ADA
with w1 = 0 has no non-zero weight and OASIS-diag no changed weight outside V+, whatever the parameters.
"""

import numpy as np
import pytest
import scipy.sparse as sp

why = pytest.importorskip("benchmarks.similarity_solis_concept_why")


def _data(n_words=60, per_class=260, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), per_class)
    X = sp.random(y.size, n_words, density=0.03, random_state=seed, format="csr")
    X = X + sp.csr_matrix((np.ones(y.size), (np.arange(y.size), y * 5 + rng.integers(0, 5, y.size))), shape=X.shape)
    return sp.csr_matrix(X.multiply(1 / np.sqrt(X.multiply(X).sum(axis=1)))), y


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
