"""Small exact contracts of the hashers, from survivors of a mutation run.

Normalized Cuts keeps an unequal split when the eigenvector gives one, SKLSH's
embedding is Raginsky & Lazebnik's cos(w·x + b) + t, a two-class TSVM hashing
model saves and loads, its bits-mode file records no ITQ size, and bad input is
named.
"""

from __future__ import annotations

import numpy as np
import pytest

from hardneg.hashing import PQHasher, SKLSHHasher, TSVMHashing
from hardneg.hashing._hierarchy import normalized_cut


def test_normalized_cut_keeps_an_unequal_split():
    # three tightly linked classes against five: the median fallback would cut 4 / 4
    n, small = 8, [0, 1, 2]
    rng = np.random.default_rng(0)
    W = rng.uniform(0.005, 0.02, (n, n))  # weak links across, uneven links within: the eigenvector varies
    side = np.isin(np.arange(n), small)
    W[np.ix_(side, side)] = rng.uniform(0.5, 1.0, (3, 3))
    W[np.ix_(~side, ~side)] = rng.uniform(0.5, 1.0, (5, 5))
    W = (W + W.T) / 2
    np.fill_diagonal(W, 0)
    m = normalized_cut(W)
    assert sorted(np.flatnonzero(m).tolist()) in (small, sorted(set(range(n)) - set(small)))


def test_sklsh_embedding_is_cosine_of_projection_plus_phase():
    X = np.random.default_rng(0).random((20, 5)).astype(np.float32)
    h = SKLSHHasher(n_bits=16, random_state=0).fit(X)
    want = np.cos(X @ h.projections_ + h.phases_) + h.thresholds_
    np.testing.assert_allclose(h.embed(X), want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(want, np.cos(X @ h.projections_ - h.phases_) + h.thresholds_, atol=1e-3)


def test_two_class_tsvm_hashing_saves_loads_and_records_no_itq_size(tmp_path):
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(30, 4)) - 2, rng.normal(size=(30, 4)) + 2])
    y = np.repeat([0, 1], 30)
    model = TSVMHashing(n_bits=4, C=1.0, random_state=0).fit(X, y)
    assert "itq_features" not in model._meta()
    model.save(tmp_path / "h.npz")
    again = TSVMHashing.load(tmp_path / "h.npz")
    np.testing.assert_array_equal(again.transform(X), model.transform(X))


def test_bad_unlabeled_input_and_too_few_pq_rows_are_named():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(40, 4)), np.repeat([0, 1, 2, 3], 10)
    with pytest.raises(ValueError, match="X_unlabeled"):
        TSVMHashing(n_bits=8, C=1.0, random_state=0).fit(X, y, X_unlabeled=np.zeros((5, 3)))
    with pytest.warns(UserWarning, match=r"at least 256 rows, or subquantizer_bits <= 5 for 40 rows"):
        PQHasher(n_bits=16, subquantizer_bits=8, random_state=0).fit(X)
