"""SOLIS solvers and baselines: hand-worked updates, lazy = eager, ADA's closed
form against a generic solver, sparsity vs λ, samplers, bad input, persistence."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from sklearn.base import clone

from hardneg._persist import ModelFileError
from hardneg.similarity import (
    OasisDiagonal,
    OasisFull,
    SolisADA,
    SolisAFB,
    SolisDA,
    SolisTG,
    TfidfCosine,
    concept_triplets,
    load_similarity,
    random_triplets,
    triplet_loss,
)
from hardneg.store import FeatureStore

SOLVERS = {
    "tg": lambda **kw: SolisTG(lam=kw.get("lam", 0.05), eta=0.7, theta=kw.get("theta", np.inf), w_init=kw.get("w_init", 0.0)),
    "da": lambda **kw: SolisDA(lam=kw.get("lam", 0.05), gamma=0.8, rho=0.01, w_init=kw.get("w_init", 0.0)),
    "afb": lambda **kw: SolisAFB(lam=kw.get("lam", 0.05), eta=0.6, delta=0.1, w_init=kw.get("w_init", 0.0)),
    "ada": lambda **kw: SolisADA(lam=kw.get("lam", 0.05), eta=0.6, delta=0.1, w_init=kw.get("w_init", 0.0)),
}


# ---------------------------------------------------------------- eager references
def _soft(u, thr):
    return np.sign(u) * np.maximum(np.abs(u) - thr, 0.0)


def eager_fit(model, X, triplets):
    """Dense reference: every update touches every word (no laziness). S-DA / S-ADA
    with ``clock="triplets"`` ([Gao17] Alg. 2 / 4): a satisfied triplet is a zero
    subgradient that still advances t and recomputes w."""
    D = X.toarray().astype(np.float64)
    m = D.shape[1]
    w0 = float(model.w_init)
    w = np.full(m, w0)
    G = np.zeros(m)  # sum of subgradients (DA, ADA)
    Q = np.zeros(m)  # sum of squared subgradients (AFB, ADA)
    t = 0
    every = getattr(model, "clock", "updates") == "triplets"
    for a, p, n in triplets:
        v = D[a] * (D[p] - D[n])
        if 1.0 - w @ v <= 0.0:
            if not every:
                continue
            v = np.zeros(m)
        t += 1
        g = -v
        if isinstance(model, SolisTG):
            u = w - model.eta * g
            w = np.where(np.abs(u) <= model.theta, _soft(u, model.eta * model.lam), u)
        elif isinstance(model, SolisDA):
            G += g
            c = np.sqrt(t) / model.gamma
            w = _soft(w0 - c * G / t, c * (model.lam + model.gamma * model.rho / np.sqrt(t)))
        elif isinstance(model, SolisAFB):
            Q += g * g
            H = model.delta + np.sqrt(Q)
            w = _soft(w - model.eta * g / H, model.eta * model.lam / H)
        elif isinstance(model, SolisADA):
            G += g
            Q += g * g
            H = model.delta + np.sqrt(Q)
            w = _soft(w0 - model.eta * G / H, model.eta * t * model.lam / H)
    return w


def _data(seed=0, n=30, m=40, density=0.15):
    rng = np.random.default_rng(seed)
    D = rng.random((n, m)) * (rng.random((n, m)) < density)
    y = np.arange(n) % 3
    D[y == 0, :3] += 0.5
    D[y == 1, 3:6] += 0.5
    X = sp.csr_matrix(D.astype(np.float32))
    return X, y, random_triplets(y, 300, random_state=seed)


# ---------------------------------------------------------------- hand-worked examples
# rows: r0 = (1,1,0), r1 = (1,0,0), r2 = (0,1,0), r3 = (0,0,1), r4 = empty.
# Triplet (0,1,2): v = (1,-1,0); triplet (3,3,4): v = (0,0,1); both violated at w = 0,
# and the second leaves words 0 and 1 untouched, so they owe one truncation.
_HAND_X = sp.csr_matrix(np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]], np.float32))
_HAND_T = np.array([[0, 1, 2], [3, 3, 4]])


@pytest.mark.parametrize(
    "model, expected",
    [
        # w = T(0 + (1,-1,0), .1) = (.9,-.9,0); then w2 = soft(1, .1) = .9 and words 0, 1 shrink by .1
        (SolisTG(lam=0.1, eta=1.0), [0.8, -0.8, 0.9]),
        # t = 2, G = (-1, 1, -1): w = soft(-√2 G / 2, √2 * .1) = ±√2 (.5 - .1)
        (SolisDA(lam=0.1, gamma=1.0), [0.4 * np.sqrt(2), -0.4 * np.sqrt(2), 0.4 * np.sqrt(2)]),
        # step 1: H = 2, w = soft(±.5, .1) = ±.4; step 2: w2 = soft(.5, .1) = .4, words 0, 1 soft(.4, .1)
        (SolisAFB(lam=0.2, eta=1.0, delta=1.0), [0.3, -0.3, 0.4]),
        # t = 2, G = (-1, 1, -1), H = 2: w = soft(-G / 2, 2 * .2 / 2)
        (SolisADA(lam=0.2, eta=1.0, delta=1.0), [0.3, -0.3, 0.3]),
    ],
    ids=["tg", "da", "afb", "ada"],
)
def test_hand_worked_two_updates(model, expected):
    model.fit(_HAND_X, triplets=_HAND_T)
    assert model.n_updates_ == 2
    np.testing.assert_allclose(model.w_, expected, atol=1e-12)


def test_tg_theta_keeps_large_weights():
    # with theta = 0.5, a weight of 0.9 is above theta: no truncation at all
    model = SolisTG(lam=0.1, eta=1.0, theta=0.5).fit(_HAND_X, triplets=_HAND_T)
    np.testing.assert_allclose(model.w_, [1.0, -1.0, 1.0])


# ---------------------------------------------------------------- lazy = eager
@pytest.mark.parametrize("name", sorted(SOLVERS))
@pytest.mark.parametrize("w_init", [0.0, 1.0])
def test_lazy_equals_eager(name, w_init):
    X, _, t = _data()
    model = SOLVERS[name](w_init=w_init).fit(X, triplets=t)
    assert 0 < model.n_updates_ < len(t)
    np.testing.assert_allclose(model.w_, eager_fit(model, X, t), atol=1e-6)


def test_lazy_equals_eager_tg_finite_theta():
    X, _, t = _data(seed=3)
    model = SOLVERS["tg"](theta=0.3).fit(X, triplets=t)
    np.testing.assert_allclose(model.w_, eager_fit(model, X, t), atol=1e-6)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_partial_fit_in_pieces_equals_one_pass(name):
    X, _, t = _data(seed=1)
    whole = SOLVERS[name]().fit(X, triplets=t)
    pieces = SOLVERS[name]()
    for chunk in np.array_split(t, 7):
        pieces.partial_fit(X, triplets=chunk)
        _ = pieces.w_  # reading the weights in between must not change the pass
    np.testing.assert_allclose(pieces.w_, whole.w_, atol=1e-12)
    gen = SOLVERS[name]().fit(X, triplets=(c for c in np.array_split(t, 3)))  # a stream of batches
    np.testing.assert_allclose(gen.w_, whole.w_, atol=1e-12)


# ---------------------------------------------------------------- loss, sign, sparsity
@pytest.mark.parametrize("name", sorted(SOLVERS))
@pytest.mark.parametrize("w_init", [0.0, 1.0])
def test_one_update_lowers_the_loss_of_a_violated_triplet(name, w_init):
    X = sp.csr_matrix(np.array([[0.6, 0.8, 0.0], [0.6, 0.0, 0.8], [0.0, 0.8, 0.6]], np.float32))
    t = np.array([[0, 1, 2]])  # v = (0.36, -0.64, 0): margin at w = 1 is -0.28
    model = SOLVERS[name](w_init=w_init, lam=1e-3)
    before = triplet_loss(np.full(3, w_init), X, t)[0]
    assert before > 0
    after = triplet_loss(model.fit(X, triplets=t).w_, X, t)[0]
    assert after < before


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_sparsity_grows_with_lambda(name):
    X, _, t = _data(seed=2, m=60)
    sparsity = [SOLVERS[name](lam=lam).fit(X, triplets=t).sparsity_ for lam in (0.0, 0.01, 0.1, 1.0)]
    assert all(b >= a for a, b in zip(sparsity, sparsity[1:])), sparsity
    assert sparsity[-1] > sparsity[0]


def test_w_init_one_without_violations_keeps_the_dot_product():
    X = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], np.float32) * 2)
    for name in SOLVERS:
        model = SOLVERS[name](w_init=1.0, lam=0.0)
        if name == "da":
            model.set_params(rho=0.0)  # the paper's clock gives t = 1, where ρ alone would shrink w
        model = model.fit(X, triplets=[[0, 1, 2]])  # margin 4 > 1: satisfied
        assert model.n_updates_ == 0
        np.testing.assert_array_equal(model.w_, [1.0, 1.0])


def test_ada_closed_form_minimizes_eq20():
    X, _, t = _data(seed=4, m=12, density=0.4)
    model = SolisADA(lam=0.02, eta=0.5, delta=0.1, w_init=1.0).fit(X, triplets=t)
    G, Q = model._state[:2]
    steps = model._glob[0]
    gbar, H, w0 = G / steps, model.delta + np.sqrt(Q), model.w_init

    def objective(w):  # Eq. (20)
        return model.eta * gbar @ w + model.eta * model.lam * np.abs(w).sum() + (H * (w - w0) ** 2).sum() / (2 * steps)

    # the same problem, smooth in (w+, w-) >= 0, for a generic bounded solver
    m = len(gbar)

    def split(z):
        wp, wn = z[:m], z[m:]
        w = wp - wn
        f = model.eta * gbar @ w + model.eta * model.lam * (wp + wn).sum() + (H * (w - w0) ** 2).sum() / (2 * steps)
        dw = model.eta * gbar + H * (w - w0) / steps
        return f, np.concatenate([dw + model.eta * model.lam, -dw + model.eta * model.lam])

    res = scipy.optimize.minimize(split, np.zeros(2 * m), jac=True, method="L-BFGS-B", bounds=[(0, None)] * (2 * m), options={"ftol": 1e-15, "gtol": 1e-12})
    w_star = res.x[:m] - res.x[m:]
    assert 0 < model.sparsity_ < 1
    assert objective(model.w_) <= objective(w_star) + 1e-10
    np.testing.assert_allclose(model.w_, w_star, atol=1e-5)


def test_triplet_loss_matches_definition():
    X, _, t = _data()
    w = np.random.default_rng(0).normal(size=X.shape[1])
    D = X.toarray()
    expected = [max(0.0, 1 - D[a] @ (w * D[p]) + D[a] @ (w * D[n])) for a, p, n in t[:20]]
    np.testing.assert_allclose(triplet_loss(w, X, t[:20]), expected, rtol=1e-5)


# ---------------------------------------------------------------- baselines
def test_oasis_diagonal_matches_passive_aggressive_reference():
    X, _, t = _data(seed=5)
    model = OasisDiagonal(C=0.3).fit(X, triplets=t)
    D, w = X.toarray().astype(np.float64), np.ones(X.shape[1])
    for a, p, n in t:
        v = D[a] * (D[p] - D[n])
        loss = 1 - w @ v
        if loss > 0 and v @ v > 0:
            w = w + min(0.3, loss / (v @ v)) * v
    np.testing.assert_allclose(model.w_, w, atol=1e-9)


def test_oasis_full_matches_passive_aggressive_reference():
    X, _, t = _data(seed=6, m=15)
    model = OasisFull(C=0.3).fit(X, triplets=t)
    D, W = X.toarray().astype(np.float64), np.eye(X.shape[1])
    for a, p, n in t:
        V = np.outer(D[a], D[p] - D[n])
        loss = 1 - (V * W).sum()
        if loss > 0 and (V * V).sum() > 0:
            W = W + min(0.3, loss / (V * V).sum()) * V
    np.testing.assert_allclose(model.W_, W, atol=1e-5)
    np.testing.assert_allclose(model.similarity(X[:3], X), D[:3] @ W @ D.T, atol=1e-4)
    np.testing.assert_allclose(model.score_pairs(X, [[0, 1], [2, 2]]), [D[0] @ W @ D[1], D[2] @ W @ D[2]], atol=1e-4)


def test_oasis_full_refuses_a_matrix_that_does_not_fit():
    X = sp.random(3, 100_000, density=1e-4, format="csr", random_state=0, dtype=np.float32)
    with pytest.raises(ValueError, match=r"100,000 words needs 37\.3 GiB"):
        OasisFull().fit(X, triplets=[[0, 1, 2]])


def test_tfidf_cosine():
    X, _, _ = _data()
    model = TfidfCosine().fit(X)
    D = X.toarray().astype(np.float64)
    df = (D > 0).sum(axis=0)
    T = D * (np.log((1 + D.shape[0]) / (1 + df)) + 1)
    T /= np.linalg.norm(T, axis=1, keepdims=True)
    np.testing.assert_allclose(model.similarity(X[:4], X), T[:4] @ T.T, atol=1e-5)
    assert model.sparsity_ == 0.0


# ---------------------------------------------------------------- samplers
def test_concept_triplets_protocol():
    y = np.repeat(np.arange(4), 600)
    t = concept_triplets(y, random_state=0, rows=np.arange(10, 2400))
    assert t.shape == (4 * 7 * 6 * 500, 3)
    assert np.all(y[t[:, 0]] == y[t[:, 1]]) and np.all(t[:, 0] != t[:, 1]) and np.all(y[t[:, 2]] != y[t[:, 0]])
    assert t.min() >= 10
    for c in range(4):
        mine = t[y[t[:, 0]] == c]
        assert len(mine) == 21_000 and len(np.unique(mine[:, :2])) == 7 and len(np.unique(mine[:, 2])) == 500
    with pytest.raises(ValueError, match="fewer than n_positives"):
        concept_triplets(np.array([0, 0, 1, 1]), random_state=0)


def test_random_triplets_protocol():
    y = np.array([0, 0, 0, 1, 1, 2, -1])
    t = random_triplets(y, 2000, random_state=0)
    assert np.all(y[t[:, 0]] == y[t[:, 1]]) and np.all(t[:, 0] != t[:, 1]) and np.all(y[t[:, 2]] != y[t[:, 0]])
    assert not np.isin(6, t) and not np.isin(5, t[:, 0])  # unlabeled never, singleton class never as anchor
    assert set(np.unique(t[:, 2])) == {0, 1, 2, 3, 4, 5}


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_bad_input(name):
    X, _, t = _data()
    model = SOLVERS[name]()
    neg = X.copy()
    neg.data[0] = -1
    nan = X.copy()
    nan.data[0] = np.nan
    with pytest.raises(ValueError, match="negative"):
        model.fit(neg, triplets=t)
    with pytest.raises(ValueError, match="NaN"):
        model.fit(nan, triplets=t)
    with pytest.raises(ValueError, match=r"row indices must lie in \[0, 29\]"):
        model.fit(X, triplets=[[0, 1, 30]])
    with pytest.raises(ValueError, match="empty"):
        model.fit(X, triplets=np.empty((0, 3), int))
    with pytest.raises(ValueError, match="empty"):
        model.fit(X, triplets=iter([]))
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        model.fit(X, triplets=[[0, 1]])
    np.testing.assert_array_equal(clone(model).fit(X.toarray(), triplets=t).w_, clone(model).fit(X, triplets=t).w_)  # dense: CSR inside
    with pytest.raises(TypeError, match="integer"):
        model.fit(X, triplets=[[0.5, 1, 2]])
    model.fit(X, triplets=t)
    w = model.w_.copy()
    with pytest.raises(ValueError, match="41 features"):
        model.partial_fit(sp.hstack([X, X[:, :1]]).tocsr(), triplets=t)
    np.testing.assert_array_equal(model.w_, w)  # nothing changed half-way
    with pytest.raises(ValueError, match=r"^The 'lam' parameter of \w+ must be a float in the range \[0\.0, inf\)\. Got -1 instead\.$"):
        clone(model).set_params(lam=-1).fit(X, triplets=t)


def test_dense_store_is_refused_and_sparse_store_is_read(tmp_path):
    X, y, t = _data()
    with FeatureStore.create(tmp_path / "dense", dim=X.shape[1]) as store:
        store.append(X.toarray(), labels=y)
    with pytest.raises(TypeError, match="dense layout"):
        SolisADA().fit(FeatureStore.open(tmp_path / "dense"), triplets=t)
    with FeatureStore.create(tmp_path / "sparse", dim=X.shape[1], sparse=True) as store:
        store.append(X, labels=y)
    from_store = SolisADA(lam=0.01).fit(FeatureStore.open(tmp_path / "sparse"), triplets=t)
    np.testing.assert_allclose(from_store.w_, SolisADA(lam=0.01).fit(X, triplets=t).w_, atol=1e-12)
    y_store = FeatureStore.open(tmp_path / "sparse").labels()
    drawn = SolisADA(n_triplets=500, random_state=0).fit(X, y=y_store)
    assert drawn.n_triplets_seen_ == 500


# ---------------------------------------------------------------- API and persistence
def test_scoring_api():
    X, _, t = _data()
    model = SolisADA(lam=0.01).fit(X, triplets=t)
    D = X.toarray().astype(np.float64)
    np.testing.assert_allclose(model.similarity(X[:3], X[:5]), D[:3] @ np.diag(model.w_) @ D[:5].T, atol=1e-5)
    np.testing.assert_allclose(model.score_pairs(X, [[0, 1], [4, 2]]), [D[0] @ (model.w_ * D[1]), D[4] @ (model.w_ * D[2])], atol=1e-5)
    assert clone(model).get_params() == model.get_params()
    with pytest.raises(ValueError, match="not fitted"):
        SolisADA().similarity(X)


@pytest.mark.parametrize(
    "model",
    [SOLVERS["tg"](), SOLVERS["da"](), SOLVERS["afb"](), SOLVERS["ada"](w_init=1.0), OasisDiagonal(), OasisFull(), TfidfCosine()],
    ids=lambda m: type(m).__name__,
)
def test_save_load_round_trip_and_resume(tmp_path, model):
    X, _, t = _data(seed=7)
    first, rest = t[:150], t[150:]
    model.fit(X, triplets=first)
    path = model.save(tmp_path / "m.npz")
    loaded = load_similarity(path)
    assert type(loaded) is type(model) and loaded.get_params() == model.get_params()
    np.testing.assert_allclose(loaded.similarity(X[:4], X), model.similarity(X[:4], X), atol=1e-6)
    if not isinstance(model, TfidfCosine):
        loaded.partial_fit(X, triplets=rest)
        whole = clone(model).fit(X, triplets=t)
        np.testing.assert_allclose(loaded.similarity(X[:4], X), whole.similarity(X[:4], X), atol=1e-6)
    with pytest.raises(ModelFileError, match="expected"):
        (SolisTG if not isinstance(model, SolisTG) else SolisDA).load(path)


@pytest.mark.parametrize(
    "name",
    ["hardneg.similarity", "hardneg.similarity._tg", "hardneg.similarity._da", "hardneg.similarity._afb", "hardneg.similarity._ada",
     "hardneg.similarity._oasis", "hardneg.similarity._tfidf", "hardneg.index._inverted"],
)
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


# ---------------------------------------------------------------- fit(X, y=None, *, triplets=None): metric-learn's convention
ALL_MODELS = {"tg": SolisTG, "da": SolisDA, "afb": SolisAFB, "ada": SolisADA, "oasis-diag": OasisDiagonal, "oasis": OasisFull}


@pytest.mark.parametrize("name", list(ALL_MODELS))
def test_labels_as_y_draw_triplets_inside_and_triplets_are_a_keyword(name):
    # before: fit(X, triplets) took triplets in y's slot, so cross_val_score(SolisADA(), X, y) passed labels as triplets
    X, y, _ = _data()
    model = ALL_MODELS[name](n_triplets=300, random_state=4)
    drawn = clone(model).fit(X, y)
    explicit = clone(model).fit(X, triplets=random_triplets(y, 300, random_state=np.random.default_rng(4)))
    np.testing.assert_array_equal(drawn.w_, explicit.w_)  # the same sampler, sized and seeded by the parameters
    np.testing.assert_array_equal(clone(model).fit(X.toarray(), y).w_, drawn.w_)  # dense X: CSR inside
    np.testing.assert_array_equal(clone(model).fit(X, np.array(list("abc"))[y]).w_, drawn.w_)  # any labels
    with pytest.raises(ValueError, match="not both"):
        clone(model).fit(X, y, triplets=[[0, 3, 1]])
    with pytest.raises(ValueError, match="give class labels y"):
        clone(model).fit(X)
    more = clone(model).fit(X, y).partial_fit(X, y)  # partial_fit draws n_triplets more from y
    assert not np.array_equal(more.w_, drawn.w_)
    clone(model).fit(X, y).partial_fit(X, triplets=[[0, 3, 1]])


@pytest.mark.parametrize("name", ["ada", "oasis-diag"])
def test_cross_val_score_and_grid_search_run_on_labels(name):
    from sklearn.model_selection import GridSearchCV, cross_val_score

    X, y, _ = _data(n=60)
    scores = cross_val_score(ALL_MODELS[name](n_triplets=500, random_state=0), X, y, cv=3)
    assert scores.shape == (3,) and np.all((scores > 0) & (scores <= 1))
    grid = {"lam": [0.0, 1e-3]} if name == "ada" else {"C": [0.01, 0.1]}
    search = GridSearchCV(ALL_MODELS[name](n_triplets=500, random_state=0), grid, cv=3).fit(X, y)
    assert search.best_score_ > 0


def test_score_is_retrieval_map_of_the_learned_similarity():
    X = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]))
    y = np.array([0, 0, 1, 1])
    model = TfidfCosine().fit(X)  # idf equal for both words: the plain cosine
    # cosines: s01 = 1, s02 = s12 = 0.6, s23 = 0.8, s03 = s13 = 0; every query finds its class-mate first
    assert model.score(X, y) == 1.0
    y = np.array([0, 1, 0, 1])
    # query 0: relevant row 2 (0.6) behind row 1 (1.0): AP 1/2. query 1: row 3 (0.0) behind rows 0, 2: 1/3.
    # query 2: row 0 (0.6) behind row 3 (0.8) and the tied row 1 (ties rank the relevant row last): 1/3.
    # query 3: row 1 (0.0) behind row 2 (0.8) and the tied row 0: 1/3.
    assert model.score(X, y) == pytest.approx((1 / 2 + 3 * (1 / 3)) / 4)
    with pytest.raises(ValueError, match="no class has 2 rows"):
        model.score(X, np.arange(4))


@pytest.mark.parametrize("cls", [OasisFull, OasisDiagonal, SolisADA, TfidfCosine])
def test_score_pairs_refuses_rows_out_of_range_alike(cls):
    """One ``score_pairs`` for every model (issue 40): OasisFull's copy raised IndexError, not ValueError."""
    X, _, t = _data(seed=6, m=15)
    model = cls().fit(X, triplets=t)
    n = X.shape[0]
    for bad in ([[0, n]], [[-1, 0]]):
        with pytest.raises(ValueError, match=rf"row indices must lie in \[0, {n - 1}\]"):
            model.score_pairs(X, bad)
    with pytest.raises(ValueError, match=r"\(n, 2\) integer array"):
        model.score_pairs(X, [[0.5, 1.0]])
    assert model.score_pairs(X, np.empty((0, 2), int)).shape == (0,)
