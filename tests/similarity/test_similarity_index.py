"""Inverted index with learned weights (= brute force) and the `hardneg similarity` commands."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import typer
from typer.testing import CliRunner

from hardneg._persist import ModelFileError
from hardneg.cli.similarity import app as similarity_app
from hardneg.index import InvertedIndex
from hardneg.similarity import OasisFull, SolisADA, TfidfCosine, load_similarity, random_triplets
from hardneg.store import FeatureStore


def _data(seed=0, n=60, m=50):
    rng = np.random.default_rng(seed)
    D = np.round(rng.random((n, m)) * 4) * (rng.random((n, m)) < 0.15)  # integer counts: many tied scores
    y = np.arange(n) % 3
    D[y == 0, :3] += 1
    D[y == 1, 3:6] += 1
    return sp.csr_matrix(D.astype(np.float32)), y


def _brute_force(model, Q, X, k):
    S = model.similarity(Q, X)
    rows = np.array([np.lexsort((np.arange(len(s)), -s))[:k] for s in S])
    return rows, np.take_along_axis(S, rows, axis=1)


@pytest.mark.parametrize("kind", ["solis", "tfidf"])
def test_inverted_index_equals_brute_force(tmp_path, kind):
    X, y = _data()
    if kind == "solis":
        model = SolisADA(lam=0.02, eta=0.5).fit(X, triplets=random_triplets(y, 400, random_state=0))
        assert 0 < model.sparsity_ < 1
    else:
        model = TfidfCosine().fit(X)
    index = InvertedIndex.from_model(model)
    for lo in range(0, X.shape[0], 25):  # built in chunks
        index.add(X[lo : lo + 25], ids=[f"i{r}" for r in range(lo, min(lo + 25, X.shape[0]))])
    assert index.postings.shape == (X.shape[0], int(np.count_nonzero(model.index_weights())))
    rows, scores = index.rank(X[:10], k=15)
    b_rows, b_scores = _brute_force(model, X[:10], X, 15)
    np.testing.assert_allclose(scores, b_scores, atol=1e-5)
    np.testing.assert_array_equal(rows, b_rows)
    loaded = InvertedIndex.load(index.save(tmp_path / "inv.npz"))
    res = loaded.search(X[:10], k=15)
    ids, s2 = res.ids, res.scores
    np.testing.assert_array_equal(ids, np.char.add("i", b_rows.astype(str)))
    np.testing.assert_allclose(s2, scores)


def test_sparse_weights_shrink_the_posting_lists():
    X, _ = _data()
    w = np.ones(X.shape[1])
    w[::2] = 0
    dense, sparse = InvertedIndex(np.ones(X.shape[1])), InvertedIndex(w)
    dense.add(X)
    sparse.add(X)
    assert sparse.n_postings == X[:, 1::2].nnz < dense.n_postings == X.nnz


def test_rank_fills_with_zero_score_ties_in_row_order():
    # 3 of 8 items share a word with the query; k = 6 asks for 3 zero-score items too: the lowest rows,
    # after the scored ones (best first, equal scores by row)
    X = sp.csr_matrix(np.array([[0, 1.0], [1, 0], [0, 1.0], [0, 2.0], [1, 0], [1, 0], [0, 1.0], [1, 0]]))
    index = InvertedIndex(np.array([0.0, 1.0]), idf=None, l2=False)
    index.add(X)
    rows, scores = index.rank(sp.csr_matrix(np.array([[0, 1.0]])), 6)
    assert rows.tolist() == [[3, 0, 2, 6, 1, 4]]
    np.testing.assert_allclose(scores, [[2, 1, 1, 1, 0, 0]])


def test_inverted_index_bad_input(tmp_path):
    X, _ = _data()
    index = InvertedIndex(np.ones(X.shape[1]))
    with pytest.raises(ValueError, match="empty"):
        index.rank(X[:1], 1)
    index.add(X)
    with pytest.raises(ValueError, match="larger than the collection"):
        index.rank(X[:1], X.shape[0] + 1)
    with pytest.raises(ValueError, match="51 features"):
        index.rank(sp.hstack([X, X[:, :1]]).tocsr(), 2)
    for got, want in zip(index.rank(X[:1].toarray(), 2), index.rank(X[:1], 2)):  # a dense query is converted to CSR
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match="full-matrix"):
        InvertedIndex.from_model(OasisFull().fit(X, triplets=[[0, 3, 1]]))
    path = index.save(tmp_path / "inv.npz")
    with pytest.raises(ModelFileError):
        load_similarity(path)


# ---------------------------------------------------------------- CLI
def _cli():
    root = typer.Typer()

    @root.callback()
    def _root():
        pass

    root.add_typer(similarity_app, name="similarity")
    return root


def test_cli_train_index_search(tmp_path):
    X, y = np.asarray(_data(n=120)[0].todense()), np.arange(120) % 3
    store_path = tmp_path / "bow.store"
    with FeatureStore.create(store_path, dim=X.shape[1], sparse=True) as store:
        store.append(sp.csr_matrix(X), labels=y, ids=[f"img{i}" for i in range(120)])
    runner, cli = CliRunner(), _cli()
    model_path, index_path = tmp_path / "m.npz", tmp_path / "inv.npz"
    res = runner.invoke(cli, ["similarity", "train", str(store_path), "-o", str(model_path), "--n-positives", "4", "--n-negatives", "20", "--lam", "0.001"])
    assert res.exit_code == 0, res.output
    model = load_similarity(model_path)
    assert isinstance(model, SolisADA) and model.input_l2_ and model.n_triplets_seen_ == 3 * 4 * 3 * 20
    res = runner.invoke(cli, ["similarity", "index", str(model_path), str(store_path), "-o", str(index_path), "--chunk-rows", "50"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["similarity", "search", str(index_path), "--store", str(store_path), "-q", "img0", "-k", "3"])
    assert res.exit_code == 0, res.output
    index = InvertedIndex.load(index_path)
    expected = index.ids[_brute_force(model, sp.csr_matrix(X[:1]), sp.csr_matrix(X), 3)[0][0]]
    for item in expected:
        assert item in res.output
    res = runner.invoke(cli, ["similarity", "search", str(index_path), "--store", str(store_path), "-q", "nope"])
    assert res.exit_code != 0
    # issue 37: after an item is removed, the index built before is refused, naming the rebuild
    from hardneg.store._edit import remove_items

    remove_items(store_path, ["img5"])
    res = runner.invoke(cli, ["similarity", "search", str(index_path), "--store", str(store_path), "-q", "img0"])
    assert res.exit_code != 0 and "earlier state" in str(res.exception or res.output)


@pytest.mark.parametrize("solver, param, expected", [("ada", "eta", 0.25), ("tg", "eta", 0.25), ("da", "gamma", 4.0)])
def test_cli_eta_reaches_every_solver(tmp_path, solver, param, expected):
    X, y = np.asarray(_data(n=60)[0].todense()), np.arange(60) % 3
    with FeatureStore.create(tmp_path / "bow.store", dim=X.shape[1], sparse=True) as store:
        store.append(sp.csr_matrix(X), labels=y)
    res = CliRunner().invoke(_cli(), ["similarity", "train", str(tmp_path / "bow.store"), "-o", str(tmp_path / "m.npz"), "--solver", solver,
                                      "--eta", "0.25", "--n-positives", "3", "--n-negatives", "5"])
    assert res.exit_code == 0, res.output
    assert load_similarity(tmp_path / "m.npz").get_params()[param] == pytest.approx(expected)  # S-DA: γ = 1/η


def test_cli_refuses_dense_store(tmp_path):
    with FeatureStore.create(tmp_path / "d.store", dim=4) as store:
        store.append(np.eye(4), labels=[0, 0, 1, 1])
    res = CliRunner().invoke(_cli(), ["similarity", "train", str(tmp_path / "d.store"), "-o", str(tmp_path / "m.npz")])
    assert res.exit_code != 0 and "dense layout" in str(res.exception)
    assert not (tmp_path / "m.npz").exists()
