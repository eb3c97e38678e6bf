"""Similarity model and inverted-index files that are damaged or forged: the
loader gives back the saved model or one-line ModelFileError, never a model
that scores NaN, never a raw numpy/scipy error."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from _helpers import flipped_byte_copies
from hardneg._persist import ModelFileError, load_model, save_model
from hardneg.index import InvertedIndex
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
)
from hardneg.similarity._base import KIND

MODELS = {
    "tg": lambda: SolisTG(lam=0.05, eta=0.7),
    "da": lambda: SolisDA(lam=0.05, gamma=0.8),
    "afb": lambda: SolisAFB(lam=0.05, eta=0.6, delta=0.1),
    "ada": lambda: SolisADA(lam=0.05, eta=0.6, delta=0.1, w_init=1.0),
    "oasis-diag": lambda: OasisDiagonal(C=0.1),
    "oasis": lambda: OasisFull(C=0.1),
    "tfidf": lambda: TfidfCosine(),
}


def _data(seed=0, n=40, m=20):
    rng = np.random.default_rng(seed)
    D = rng.random((n, m)) * (rng.random((n, m)) < 0.3)
    y = np.arange(n) % 2
    D[y == 0, :3] += 1
    return sp.csr_matrix(D.astype(np.float32)), y


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    X, y = _data()
    t = concept_triplets(y, n_positives=3, n_negatives=5, random_state=0)
    folder = tmp_path_factory.mktemp("similarity")
    out = {}
    for name, make in MODELS.items():
        model = make().fit(X, triplets=t)
        out[name] = (model, model.save(folder / f"{name}.npz"), model.similarity(X[:5], X))
    return X, out


def _one_line(exc):
    assert "\n" not in str(exc)


def _forge(path, out, edit_arrays=None, edit_meta=None, kind=KIND):
    """Edited contents with fresh checksums: what a forger writes."""
    arrays, meta = load_model(path, kind, (1,))
    if edit_arrays:
        edit_arrays(arrays)
    if edit_meta:
        edit_meta(meta)
    return save_model(out, kind, 1, arrays, meta)


@pytest.mark.parametrize("name", list(MODELS))
def test_flipped_bytes_give_the_same_model_or_a_clear_error(saved, tmp_path, name):
    X, models = saved
    _, path, expected = models[name]
    raw = path.read_bytes()
    for _ in flipped_byte_copies(raw, tmp_path / "bad.npz", 80, seed=len(name)):
        try:
            back = load_similarity(tmp_path / "bad.npz")
        except ModelFileError as exc:
            _one_line(exc)
            continue
        np.testing.assert_allclose(back.similarity(X[:5], X), expected, atol=1e-6)


def _nan(key, at=0):
    def edit(a):
        a[key] = a[key].astype(np.float64).copy()
        a[key].flat[at] = np.nan
    return edit


def _set(key, value):
    def edit(a):
        a[key] = value(a[key]) if callable(value) else value
    return edit


FORGERIES = {
    "nan weight": ("ada", _nan("w"), None),
    "huge weight": ("oasis-diag", _set("w", lambda w: w * 1e40), None),
    "nan state": ("afb", _nan("state", 3), None),
    "weights not those of the state": ("da", _set("w", lambda w: w + 0.5), None),
    "negative sum of squares": ("ada", _set("state", lambda s: np.vstack([s[:1], -s[1:2], s[2:]])), None),
    "clock row beyond the clock": ("afb", _set("state", lambda s: np.vstack([s[:2], s[2:3] + 1e6, s[3:]])), None),
    "sum of squares that disagrees with w": ("ada", _set("state", lambda s: np.vstack([s[:1], s[1:2] * 4 + 1, s[2:]])), None),
    "fractional clock": ("tg", _set("glob", lambda g: g + np.array([0.5, 0.0])), None),
    "state of the wrong shape": ("tg", _set("state", lambda s: s[:, :-1]), None),
    "w shorter than n_features": ("oasis-diag", _set("w", lambda w: w[:-1]), None),
    "non-square matrix": ("oasis", _set("W", lambda W: W[:-1]), None),
    "inf in the matrix": ("oasis", _nan("W", 5), None),
    "negative idf": ("tfidf", _set("input_idf", lambda v: -v), None),
    "missing idf": ("tfidf", lambda a: a.pop("input_idf"), None),
    "foreign array": ("ada", _set("W", np.eye(3)), None),
    "bad hyper-parameter": ("ada", None, lambda m: m["params"].update(eta=-1.0)),
    "unknown hyper-parameter": ("da", None, lambda m: m["params"].update(bogus=1)),
    "n_features a string": ("tg", None, lambda m: m.update(n_features="20")),
    "n_updates negative": ("afb", None, lambda m: m.update(n_updates=-3)),
    "unknown class": ("ada", None, lambda m: m.update({"class": "Pickle"})),
    "params a list": ("ada", None, lambda m: m.update(params=[1, 2])),
}


@pytest.mark.parametrize("case", list(FORGERIES))
def test_forged_values_are_refused(saved, tmp_path, case):
    _, models = saved
    name, edit_arrays, edit_meta = FORGERIES[case]
    forged = _forge(models[name][1], tmp_path / "forged.npz", edit_arrays, edit_meta)
    with pytest.raises(ModelFileError) as info:
        load_similarity(forged)
    _one_line(info.value)


def test_an_unforged_resave_loads(saved, tmp_path):
    X, models = saved
    _, path, expected = models["ada"]
    np.testing.assert_allclose(load_similarity(_forge(path, tmp_path / "same.npz")).similarity(X[:5], X), expected, atol=1e-9)


# ---------------------------------------------------------------------- inverted index
@pytest.fixture(scope="module")
def index_file(saved, tmp_path_factory):
    X, models = saved
    index = InvertedIndex.from_model(models["ada"][0])
    index.add(X, ids=[f"img{i}" for i in range(X.shape[0])])
    path = index.save(tmp_path_factory.mktemp("index") / "index.npz")
    res = index.search(X[:5], k=7)
    return X, path, (res.ids, res.scores)


def test_index_flipped_bytes(index_file, tmp_path):
    X, path, (ids, scores) = index_file
    raw = path.read_bytes()
    for _ in flipped_byte_copies(raw, tmp_path / "bad.npz", 150, seed=3):
        try:
            back = InvertedIndex.load(tmp_path / "bad.npz")
        except ModelFileError as exc:
            _one_line(exc)
            continue
        got = back.search(X[:5], k=7)
        got_ids, got_scores = got.ids, got.scores
        np.testing.assert_array_equal(got_ids, ids)
        np.testing.assert_allclose(got_scores, scores, atol=1e-6)


def _reverse_indptr(a):
    p = a["indptr"].copy()
    i = int(np.flatnonzero(np.diff(p) > 0)[0])
    p[i + 1] = p[i] - 1  # a decreasing step
    a["indptr"] = p


INDEX_FORGERIES = {
    "nan posting": (_nan("data", 2), None),
    "nan weight": (_nan("weights", 0), None),
    "indptr not monotone": (_reverse_indptr, None),
    "indptr not from 0": (_set("indptr", lambda p: p + 1), None),
    "row index out of range": (_set("indices", lambda i: np.where(np.arange(i.size) == 3, 10**6, i)), None),
    "negative row index": (_set("indices", lambda i: i.astype(np.int64) - 1), None),
    "indptr of the wrong length": (_set("indptr", lambda p: p[:-1]), None),
    "fewer ids than items": (_set("ids", lambda v: v[:-1]), None),
    "weights with fewer words": (_set("weights", lambda w: w[:-1]), None),
    "a weight made non-zero": (_set("weights", lambda w: np.where(w == 0, 1.0, w)), None),
    "negative idf": (lambda a: a.update(idf=-np.ones_like(a["weights"], dtype=np.float32)), None),
    "nnz disagrees": (None, lambda m: m.update(nnz=m["nnz"] + 1)),
    "n_items negative": (None, lambda m: m.update(n_items=-1)),
    "n_items a float": (None, lambda m: m.update(n_items=float(m["n_items"]))),
    "l2 a string": (None, lambda m: m.update(l2="yes")),
}


@pytest.mark.parametrize("case", list(INDEX_FORGERIES))
def test_index_forged_values_are_refused(index_file, tmp_path, case):
    _, path, _ = index_file
    edit_arrays, edit_meta = INDEX_FORGERIES[case]
    forged = _forge(path, tmp_path / "forged.npz", edit_arrays, edit_meta, kind="hardneg.InvertedIndex")
    with pytest.raises(ModelFileError) as info:
        InvertedIndex.load(forged)
    _one_line(info.value)
