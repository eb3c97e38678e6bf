"""ConSE ([Norouzi14]) and the store's text index (issue 38 items 2-3, issue 39 item 6).

ConSE's head and ImageNet class texts are replaced by a 4-class toy head over 1280-d
features and MiniLM by the keyword embedder of ``_helpers`` (fast, no extra needed).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _helpers import fake_embed, fake_text_models, make_text_store

import hardneg
from hardneg.cli.main import main
from hardneg.store import FeatureStore
from hardneg.zeroshot import ConSE, _conse, _text_index
from hardneg.zeroshot._text_index import open_text_index, resolve_method

TOY_TEXTS = ["cat: a feline with whiskers", "car: a machine with wheels and an engine",
             "bird: an animal with feathers and wings", "fish: it has fins and lives in water"]
EXTRACTOR = {"extractor": "cnn", "model": "efficientnet-lite0-imagenet", "input_size": 224, "l2_normalize": False}


# ----------------------------------------------------------------------------- Eq. (1)-(3) by hand


def hand_model(n_top):
    # identity head on 3 features: the logits are x itself
    S = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 4.0]])  # class 2's embedding has norm 5: fit makes it unit
    return ConSE(n_top=n_top, head=(np.eye(3), np.zeros(3)), class_embeddings=S).fit()


def test_semantic_vector_is_eq2_by_hand():
    x = np.log([[0.5, 0.3, 0.2]])  # softmax(x) = (0.5, 0.3, 0.2): Eq. (1)
    np.testing.assert_allclose(hand_model(1).predict_proba(x), [[0.5, 0.3, 0.2]], rtol=1e-6)
    s = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    # T = 2: classes 0 and 1, weights 0.5 / 0.8 and 0.3 / 0.8
    np.testing.assert_allclose(hand_model(2).transform(x), [0.625 * s[0] + 0.375 * s[1]], rtol=1e-6)
    # T = 3: all three, Z = 1
    np.testing.assert_allclose(hand_model(3).transform(x), [0.5 * s[0] + 0.3 * s[1] + 0.2 * s[2]], rtol=1e-6)
    # T = 1: the top class's embedding alone
    np.testing.assert_allclose(hand_model(1).transform(x), [s[0]], rtol=1e-6)


def test_eq3_cosine_and_prediction():
    m = hand_model(2)
    x = np.log([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    cands = np.array([[1.0, 0.0], [0.0, 2.0]])
    f = m.transform(x)
    want = (f / np.linalg.norm(f, axis=1, keepdims=True)) @ (cands / np.linalg.norm(cands, axis=1, keepdims=True)).T
    np.testing.assert_allclose(m.decision_function(x, class_attributes=cands), want, rtol=1e-6)
    assert m.predict(x, class_attributes={"a": cands[0], "b": cands[1]}).tolist() == ["a", "b"]


def test_save_load_round_trip(tmp_path):
    m = hand_model(2)
    m.save(tmp_path / "conse.npz")
    back = hardneg.load(tmp_path / "conse.npz")
    x = np.log([[0.5, 0.3, 0.2]])
    assert isinstance(back, ConSE) and back.n_top == 2
    np.testing.assert_array_equal(back.transform(x), m.transform(x))


def test_class_prior_by_hand(tmp_path):
    """The extra: p(y|x) / p̄(y)^a before the top T; p̄ the mean p over the X given to fit."""
    S = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    X = np.log([[0.6, 0.3, 0.1], [0.7, 0.1, 0.2]])  # class 0 is the most probable for both items
    m = ConSE(n_top=1, head=(np.eye(3), np.zeros(3)), class_embeddings=S, prior_power=1.0).fit(X)
    prior = np.array([0.65, 0.2, 0.15])
    np.testing.assert_allclose(m.class_prior_, prior, rtol=1e-6)
    # item 0: 0.6/0.65 < 0.3/0.2 -> class 1; item 1: 0.2/0.15 > 0.7/0.65 -> class 2
    np.testing.assert_allclose(m.transform(X), [S[1], S[2]], rtol=1e-6)
    half = ConSE(n_top=2, head=(np.eye(3), np.zeros(3)), class_embeddings=S, prior_power=0.5).fit(X)
    r = np.array([0.6, 0.3, 0.1]) / np.sqrt(prior)  # item 0, T = 2: classes 1 and 0
    want = (r[1] * S[1] + r[0] * S[0]) / (r[0] + r[1])
    np.testing.assert_allclose(half.transform(X[:1]), [want], rtol=1e-5)
    # prior_power 0 is the paper's Eq. (2) whatever fit saw
    plain = ConSE(n_top=1, head=(np.eye(3), np.zeros(3)), class_embeddings=S).fit(X)
    np.testing.assert_allclose(plain.transform(X), [S[0], S[0]], rtol=1e-6)
    with pytest.raises(ValueError, match="pass the collection to fit"):
        ConSE(n_top=1, head=(np.eye(3), np.zeros(3)), class_embeddings=S, prior_power=1.0).fit()
    # chunked: add_prior gives the same prior as fit(X)
    chunked = ConSE(n_top=1, head=(np.eye(3), np.zeros(3)), class_embeddings=S, prior_power=1.0).fit(X[:1])
    chunked.add_prior(chunked.predict_proba(X).sum(axis=0), 2)
    np.testing.assert_allclose(chunked.class_prior_, prior, rtol=1e-6)
    m.save(tmp_path / "prior.npz")
    back = hardneg.load(tmp_path / "prior.npz")
    assert back.prior_power == 1.0
    np.testing.assert_array_equal(back.transform(X), m.transform(X))


@pytest.mark.parametrize("kwargs, message", [
    ({"n_top": 0}, "n_top"),
    ({"prior_power": -1.0}, "prior_power"),
    ({"head": (np.eye(3), np.zeros(2))}, "head: expected W"),
    ({"head": (np.eye(3), np.zeros(3)), "class_embeddings": np.eye(2)}, "class_embeddings: expected one row per class"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ConSE(**kwargs).fit()


def test_bad_X_is_one_line():
    with pytest.raises(ValueError, match=r"X: expected shape \(n, 3\)"):
        hand_model(2).transform(np.zeros((2, 4)))


# ----------------------------------------------------------------------------- a toy ConSE store


@pytest.fixture
def toy_conse(monkeypatch):
    """A 4-class 'ImageNet head' over 1280-d features (class c fires on feature c) and the keyword embedder."""
    fake_text_models(monkeypatch)
    W = np.zeros((4, 1280), np.float32)
    W[np.arange(4), np.arange(4)] = 3.0
    monkeypatch.setattr(_conse, "imagenet_head", lambda: (W, np.zeros(4, np.float32)))
    monkeypatch.setattr(_conse, "imagenet_classes", lambda class_text="lemma_definition": ([f"n{i}" for i in range(4)], TOY_TEXTS))


def make_conse_store(path, tags=None, attrs=EXTRACTOR):
    """40 items: 10 per toy class (cat, car, bird, fish), feature c high for class c."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 10)
    X = rng.random((40, 1280)).astype(np.float32) * 0.1
    X[np.arange(40), y] += 2.0
    with FeatureStore.create(path, dim=1280, attrs={"extractor": dict(attrs)}) as store:
        store.append(X, paths=[f"img{i}.png" for i in range(40)], tags=tags)
    return y


def test_ranking_depends_on_the_text(tmp_path, toy_conse):
    y = make_conse_store(tmp_path / "s")
    store = FeatureStore.open(tmp_path / "s")
    assert resolve_method(store) == "conse"  # no tags: no training
    index, built = open_text_index(store)
    assert built and index.method == "conse"
    cats = index.search("whiskers", k=10)
    cars = index.search("wheels and an engine", k=10)
    assert (y[cats.rows] == 0).all() and (y[cars.rows] == 1).all()
    assert not np.array_equal(cats.rows, cars.rows)


def test_feedback_is_the_z_scored_sum_by_hand():
    """Pseudo-relevance feedback: z(text score) + w * z(cosine with the mean of the best items' feedback rows)."""
    V = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.2, 0.8]], np.float32)
    F = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]], np.float16)
    index = _text_index.TextIndex(V, ["a", "b", "c", "d"], "conse", info={"feedback_top": 10, "feedback_weight": 2.0}, feedback=F)
    # 4 rows: the feedback averages max(1, min(10, 4 // 100)) = 1 best item
    q = np.array([1.0, 0.0], np.float32)
    s0 = V @ q                                       # best: item a, whose feedback row is (1, 0)
    s1 = F.astype(np.float32) @ np.array([1.0, 0.0], np.float32)
    z = lambda v: (v - v.mean()) / v.std()           # noqa: E731
    np.testing.assert_allclose(index.scores(q), z(s0) + 2.0 * z(s1), rtol=1e-5)
    np.testing.assert_array_equal(index.scores(q, feedback=False), s0)
    # item d is far from the text but looks like the best item: the feedback ranks it second
    assert index.search(q, k=4).ids == ["a", "d", "b", "c"]
    assert index.search(q, k=4, feedback=False).ids == ["a", "b", "d", "c"]
    # restricted rows: the best item is taken among them (b, whose feedback row is (0, 1)), z over them
    idx = np.array([1, 2, 3])
    s1b = F.astype(np.float32) @ np.array([0.0, 1.0], np.float32)
    got = index.scores(q, rows=idx)[idx]
    np.testing.assert_allclose(got, (s0[idx] - s0[idx].mean()) / s0[idx].std() + 2.0 * z(s1b[idx]), rtol=1e-5)


def test_index_extras_round_trip_and_change_the_ranking(tmp_path, toy_conse):
    y = make_conse_store(tmp_path / "s")
    store = FeatureStore.open(tmp_path / "s")
    index = _text_index.build_text_index(store, method="conse")
    paper = _text_index.build_text_index(store, method="conse", extras=False)
    assert index.feedback is not None and index.feedback.shape[0] == 40 and index.query_offset is not None
    assert paper.feedback is None and paper.query_offset is None
    assert index.info["feedback_top"] == _text_index.FEEDBACK_TOP
    index.save(tmp_path / "i.npz")
    back = _text_index.TextIndex.load(tmp_path / "i.npz")
    np.testing.assert_array_equal(back.feedback, index.feedback)
    np.testing.assert_array_equal(back.query_offset, index.query_offset)
    assert back.search("whiskers", k=10).ids == index.search("whiskers", k=10).ids
    for idx in (index, paper):
        assert (y[idx.search("whiskers", k=10).rows] == 0).all()
        assert (y[idx.search("fins and water", k=10).rows] == 3).all()


def test_second_query_reads_the_cache(tmp_path, toy_conse, monkeypatch):
    make_conse_store(tmp_path / "s")
    store = FeatureStore.open(tmp_path / "s")
    before = _text_index.BUILDS["n"]
    _, built = open_text_index(store)
    assert built and _text_index.BUILDS["n"] == before + 1
    cached = list((tmp_path / "s.models" / "text-index").glob("*.npz"))
    assert len(cached) == 1
    # the second query builds nothing (building now would fail)
    monkeypatch.setattr(_text_index, "build_text_index", lambda *a, **k: pytest.fail("rebuilt"))
    index, built = open_text_index(FeatureStore.open(tmp_path / "s"))
    assert not built and _text_index.BUILDS["n"] == before + 1 and index.method == "conse"
    # a changed store (new tags) is a new store state: a new index
    with FeatureStore.open(tmp_path / "s", mode="a") as st:
        st.append(np.full((1, 1280), 0.5, np.float32), paths=["new.png"])
    monkeypatch.undo()
    fake_text_models(monkeypatch)
    _, built = open_text_index(FeatureStore.open(tmp_path / "s"))
    assert built


def test_cli_first_query_builds_second_reads(tmp_path, toy_conse, capsys):
    make_conse_store(tmp_path / "s")
    s = str(tmp_path / "s")
    assert main(["concept", "search", "auto", s, "--text", "feathers and wings", "-k", "5", "--json"]) == 0
    out = capsys.readouterr()
    assert "built text index: ConSE [Norouzi14], no training" in out.err
    first = [r["id"] for r in json.loads(out.out)]
    before = _text_index.BUILDS["n"]
    assert main(["concept", "search", "auto", s, "--text", "fins and water", "-k", "5", "--json"]) == 0
    out = capsys.readouterr()
    assert "cached text index" in out.err and _text_index.BUILDS["n"] == before
    assert set(first).isdisjoint(r["id"] for r in json.loads(out.out))


def test_tagged_store_combines_conse_and_eszsl(tmp_path, toy_conse):
    names = ["cat", "car", "bird", "fish"]
    y = np.repeat(np.arange(4), 10)
    make_conse_store(tmp_path / "s", tags=[[names[c]] for c in y])
    store = FeatureStore.open(tmp_path / "s")
    assert resolve_method(store, "auto") in (_text_index.AUTO_WITH_DESCRIBED_TAGS, _text_index.AUTO_WITH_TAGS)
    index, _ = open_text_index(store, method="conse+eszsl")
    assert index.info["n_classes"] == 4
    assert (y[index.search("a feline with whiskers", k=10).rows] == 0).all()


def test_store_without_conse_features_gives_one_line(tmp_path, toy_conse, capsys):
    # 16-d vectors of no known extractor and no tags: nothing can rank them by text
    with FeatureStore.create(tmp_path / "s", dim=16) as st:
        st.append(np.ones((5, 16), np.float32))
    with pytest.raises(ValueError) as err:
        resolve_method(FeatureStore.open(tmp_path / "s"))
    assert "needs EfficientNet-Lite0 features" in str(err.value) and "hardneg extract images" in str(err.value)
    assert main(["concept", "search", "auto", str(tmp_path / "s"), "--text", "wings", "--method", "conse"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ConSE" in err and "--features cnn" in err
    # normalised features: the head cannot apply
    make_conse_store(tmp_path / "n", attrs={**EXTRACTOR, "l2_normalize": True})
    with pytest.raises(ValueError, match="before normalisation"):
        resolve_method(FeatureStore.open(tmp_path / "n"), "conse")


def test_numeric_descriptions_refused_before_training(tmp_path, toy_conse, capsys, monkeypatch):
    make_text_store(tmp_path / "s")
    csv = tmp_path / "a.csv"
    csv.write_text("class,stripes,legs\nzebra,1,4\ncat,0,4\n")
    monkeypatch.setattr("hardneg.zeroshot._text_search.fit_text_search", lambda *a, **k: pytest.fail("trained"))
    for method in ("auto", "bucher16", "eszsl"):
        assert main(["concept", "search", "auto", str(tmp_path / "s"), "--text", "wings", "--descriptions", str(csv),
                     "--method", method]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "numeric attribute vectors" in err and "'class,text'" in err
    # a text CSV that describes none of the store's tags
    other = tmp_path / "o.csv"
    other.write_text("class,text\nship,a boat\nplane,it flies\n")
    assert main(["concept", "search", "auto", str(tmp_path / "s"), "--text", "wings", "--descriptions", str(other)]) == 2
    assert "describes 0 of the store's tags" in capsys.readouterr().err


def test_diverged_training_gives_advice_the_user_can_follow(tmp_path, toy_conse, capsys, monkeypatch):
    from hardneg.zeroshot import TrainingDivergedError

    make_text_store(tmp_path / "s")

    def diverge(*a, **k):
        raise TrainingDivergedError("training diverged at epoch 2; lower lr")

    monkeypatch.setattr("hardneg.zeroshot._text_search.fit_text_search", diverge)
    assert main(["concept", "search", "auto", str(tmp_path / "s"), "--text", "wings", "--method", "bucher16"]) == 2
    err = capsys.readouterr().err
    assert "diverged" in err and "lr" not in err.replace("--method", "") and "--method auto" in err


def test_fake_embed_is_unit_norm():  # the stand-in the tests rely on
    assert np.allclose(np.linalg.norm(fake_embed(TOY_TEXTS), axis=1), 1.0)


@pytest.mark.slow
def test_onnx_query_embedding_matches_sentence_transformers():
    """The fast query path (ONNX Runtime) against its reference, the sentence-transformers model."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("all_minilm_l6_v2")
    from hardneg.zeroshot._minilm_onnx import embed_onnx
    from hardneg.zeroshot._protocols import _model_path, _sentence_model

    texts = ["a striped animal with four legs", "Hot-air balloon!", "zebra " * 400]  # the last one is truncated at 256 tokens
    got = embed_onnx(texts, _model_path(), _sentence_model)
    assert got is not None, "the ONNX graph could not be exported or loaded"
    want = _sentence_model().encode(texts, normalize_embeddings=True, show_progress_bar=False)
    np.testing.assert_allclose(got, want, atol=1e-4)
    # the int8 graph of one-off queries: close to the float graph, and not the float graph itself
    quick = embed_onnx(texts, _model_path(), _sentence_model, quantized=True)
    cos = (quick * want).sum(axis=1)
    assert cos.min() >= 0.98 and not np.allclose(quick, want, atol=1e-4)
    assert np.argmax(quick[:2] @ want[:2].T, axis=1).tolist() == [0, 1]


def test_the_exported_graph_is_remembered_so_a_query_reads_no_package_versions(tmp_path, monkeypatch):
    from hardneg.zeroshot import _minilm_onnx

    monkeypatch.setenv("HARDNEG_CACHE", str(tmp_path / "cache"))
    model_dir = tmp_path / "minilm"
    model_dir.mkdir()
    (model_dir / "model.safetensors").write_bytes(b"weights")
    first = _minilm_onnx._onnx_path(model_dir)  # nothing remembered: the key reads the versions
    first.parent.mkdir(parents=True)
    first.write_bytes(b"graph")
    _minilm_onnx._remember(first, model_dir)
    monkeypatch.setattr("hardneg.features._cnn._package_version", lambda name: pytest.fail("read a version"))
    assert _minilm_onnx._onnx_path(model_dir) == first
    # other weights: the note does not apply
    (model_dir / "model.safetensors").write_bytes(b"other weights")
    monkeypatch.undo()
    monkeypatch.setenv("HARDNEG_CACHE", str(tmp_path / "cache"))
    assert _minilm_onnx._onnx_path(model_dir) != first
