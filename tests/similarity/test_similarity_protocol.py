"""[Gao17] Section 5.3 per concept and the paper's clock: the per-concept sampler's
counts and database exclusion; a satisfied triplet advances t in S-DA / S-ADA
(Algorithms 2 and 4) and not in S-TG / S-AFB; lazy = eager under both clocks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from hardneg.similarity import SolisADA, SolisAFB, SolisDA, SolisTG, concept_protocol, load_similarity, random_triplets
from test_similarity import eager_fit

# ---------------------------------------------------------------- the per-concept sampler


@pytest.mark.parametrize("n_pos, n_neg", [(7, 500), (3, 5)])
def test_concept_protocol_counts_and_excluded_rows(n_pos, n_neg):
    y = np.repeat(np.arange(10), 600)
    y[::97] = -1  # unlabeled rows are never drawn
    t, train = concept_protocol(y, 4, n_positives=n_pos, n_negatives=n_neg, random_state=3)
    assert t.shape == (n_pos * (n_pos - 1) * n_neg, 3) and t.dtype == np.int64
    assert np.all(y[t[:, 0]] == 4) and np.all(y[t[:, 1]] == 4) and np.all(y[t[:, 2]] != 4) and np.all(y[t] >= 0)
    assert np.all(t[:, 0] != t[:, 1])
    pos, neg = np.unique(t[:, :2]), np.unique(t[:, 2])
    assert pos.size == n_pos and neg.size == n_neg
    # every ordered pair of distinct positives meets every negative exactly once
    assert np.unique(t, axis=0).shape[0] == t.shape[0]
    # the rows to leave out of the database are exactly the training images
    np.testing.assert_array_equal(train, np.union1d(pos, neg))
    db = np.setdiff1d(np.arange(y.size), train)
    assert np.intersect1d(db, np.unique(t)).size == 0
    assert db.size == y.size - n_pos - n_neg


def test_concept_protocol_respects_rows_and_refuses_small_concepts():
    y = np.repeat([0, 1, 2], 20)
    rows = np.arange(0, 60, 2)
    t, train = concept_protocol(y, 0, n_positives=3, n_negatives=4, rows=rows, random_state=0)
    assert np.all(np.isin(t, rows)) and np.all(np.isin(train, rows))
    with pytest.raises(ValueError, match="concept 0.*n_positives"):
        concept_protocol(y, 0, n_positives=11, n_negatives=4, rows=rows)
    with pytest.raises(ValueError, match="concept 7"):
        concept_protocol(y, 7, n_positives=2, n_negatives=4)


# ---------------------------------------------------------------- the paper's clock
# r0 = (1,1,0), r1 = (1,0,0), r2 = (0,1,0); (0,1,2): v = (1,-1,0), violated at w = 0;
# repeating it after one big step leaves it satisfied (margin > 1).
_X = sp.csr_matrix(np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0]], np.float32))


@pytest.mark.parametrize("cls, kw", [(SolisDA, {"gamma": 0.1}), (SolisADA, {"eta": 10.0})])
def test_a_satisfied_triplet_advances_t_in_da_and_ada(cls, kw):
    paper = cls(lam=0.0, **kw).fit(_X, triplets=[[0, 1, 2], [0, 1, 2]])
    assert paper.n_updates_ == 1 and paper.n_triplets_seen_ == 2
    assert paper._glob[0] == 2  # t counts both triplets
    updates = cls(lam=0.0, clock="updates", **kw).fit(_X, triplets=[[0, 1, 2], [0, 1, 2]])
    assert updates.n_updates_ == 1 and updates._glob[0] == 1
    if cls is SolisDA:  # the zero subgradient shrinks the average gradient: w = -G / (γ √t) moves
        np.testing.assert_allclose(paper.w_, updates.w_ / np.sqrt(2))
    # with λ > 0 the threshold grows with t (S-DA: √t λ / γ; S-ADA: η t λ / H): the weight shrinks
    with_lam = [cls(lam=0.01, clock=c, **kw).fit(_X, triplets=[[0, 1, 2], [0, 1, 2]]).w_[0] for c in ("triplets", "updates")]
    assert 0 < with_lam[0] < with_lam[1]


@pytest.mark.parametrize("cls, kw", [(SolisTG, {"eta": 10.0}), (SolisAFB, {"eta": 10.0, "delta": 1.0})])
def test_a_satisfied_triplet_does_not_advance_t_in_tg_and_afb(cls, kw):
    model = cls(lam=0.01, **kw).fit(_X, triplets=[[0, 1, 2], [0, 1, 2]])
    assert model.n_updates_ == 1 and model._glob[0] == 1
    once = cls(lam=0.01, **kw).fit(_X, triplets=[[0, 1, 2]])
    np.testing.assert_array_equal(model.w_, once.w_)  # the satisfied triplet changed nothing
    assert "clock" not in model.get_params() and model.clock == "updates"  # no parameter: t counts updates


def test_clock_is_checked():
    with pytest.raises(ValueError, match=r"^The 'clock' parameter of SolisADA must be a str among .*'triplets'.*\. Got 'violations' instead\.$"):
        SolisADA(clock="violations").fit(_X, triplets=[[0, 1, 2]])
    with pytest.raises(ValueError, match=r"^The 'clock' parameter of SolisDA must be a str among .*'updates'.*\. Got None instead\.$"):
        SolisDA(clock=None).fit(_X, triplets=[[0, 1, 2]])


def _stream(seed=0, n=30, m=40):
    rng = np.random.default_rng(seed)
    D = rng.random((n, m)) * (rng.random((n, m)) < 0.15)
    y = np.arange(n) % 3
    D[y == 0, :3] += 0.5
    D[y == 1, 3:6] += 0.5
    return sp.csr_matrix(D.astype(np.float32)), random_triplets(y, 300, random_state=seed)


@pytest.mark.parametrize("clock", ["triplets", "updates"])
@pytest.mark.parametrize("w_init", [0.0, 1.0])
@pytest.mark.parametrize(
    "make",
    [lambda c, w: SolisDA(lam=0.05, gamma=0.8, rho=0.01, w_init=w, clock=c),
     lambda c, w: SolisADA(lam=0.05, eta=0.6, delta=0.1, w_init=w, clock=c)],
    ids=["da", "ada"],
)
def test_lazy_equals_eager_under_both_clocks(make, w_init, clock):
    X, t = _stream(seed=4)
    model = make(clock, w_init).fit(X, triplets=t)
    assert 0 < model.n_updates_ < len(t)  # both kinds of triplet occur, so the clocks differ
    assert model._glob[0] == (len(t) if clock == "triplets" else model.n_updates_)
    np.testing.assert_allclose(model.w_, eager_fit(model, X, t), atol=1e-6)
    pieces = make(clock, w_init)
    for chunk in np.array_split(t, 5):
        pieces.partial_fit(X, triplets=chunk)
    np.testing.assert_allclose(pieces.w_, model.w_, atol=1e-12)


@pytest.mark.parametrize("cls", [SolisDA, SolisADA])
def test_clock_survives_save_and_load(tmp_path, cls):
    X, t = _stream(seed=5)
    for clock in ("triplets", "updates"):
        model = cls(lam=0.01, clock=clock).fit(X, triplets=t[:200])
        back = load_similarity(model.save(tmp_path / f"{clock}.npz"))
        assert back.clock == clock
        np.testing.assert_array_equal(back.w_, model.w_)
        model.partial_fit(X, triplets=t[200:])
        back.partial_fit(X, triplets=t[200:])
        np.testing.assert_allclose(back.w_, model.w_, atol=1e-12)
