"""Search by description learned from per-item captions: CaptionKNN and the text index's ``captions`` methods (issue 38).

MiniLM is replaced by the keyword embedder of ``_helpers``; ConSE by the 4-class toy head of
``test_conse``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import fake_text_models
from test_conse import make_conse_store, toy_conse  # noqa: F401 - the fixture is used by name

from hardneg.store import FeatureStore
from hardneg.zeroshot._captions import CaptionKNN
from hardneg.zeroshot import _text_index
from hardneg.zeroshot._text_index import AUTO_WITH_DESCRIBED_TAGS, AUTO_WITH_TAGS, build_text_index, item_captions, open_text_index, resolve_method


def reference_transform(X, train, C, k, tau, self_rows):
    """The definition, one image at a time: softmax over the k most similar captioned images (itself left out)."""
    mu = train.mean(0)
    T = train - mu
    T = T / np.linalg.norm(T, axis=1, keepdims=True)
    Cc = C - C.mean(0)
    out = []
    for x, own in zip(X, self_rows):
        z = (x - mu) / np.linalg.norm(x - mu)
        s = T @ z
        cand = [j for j in np.argsort(-s, kind="stable") if j != own][:k]
        w = np.exp((s[cand] - s[cand].max()) / tau)
        f = (w / w.sum()) @ Cc[cand]
        out.append(f / np.linalg.norm(f))
    return np.array(out)


@pytest.mark.parametrize("k, tau", [(1, 0.05), (3, 0.05), (5, 1.0)])
def test_transform_matches_the_definition(k, tau):
    rng = np.random.default_rng(0)
    train, C, X = rng.normal(size=(12, 6)), rng.normal(size=(12, 4)), rng.normal(size=(5, 6))
    model = CaptionKNN(n_neighbors=k, temperature=tau, chunk_rows=2).fit(train, C)
    np.testing.assert_allclose(model.transform(X), reference_transform(X, train, C, k, tau, [-1] * 5), rtol=1e-4, atol=1e-5)
    # the captioned images themselves, each left out of its own neighbours
    own = np.arange(12)
    np.testing.assert_allclose(model.transform(train, self_rows=own), reference_transform(train, train, C, k, tau, own),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kwargs, fit_args, message", [
    ({"n_neighbors": 0}, None, "n_neighbors"),
    ({"temperature": 0.0}, None, "temperature"),
    ({}, (np.ones((3, 2)), np.ones((2, 4))), "one caption row per image row"),
    ({}, (np.ones((1, 2)), np.ones((1, 4))), "at least 2 captioned images"),
    ({}, (np.full((3, 2), np.nan), np.ones((3, 4))), "finite"),
])
def test_bad_parameters_and_inputs(kwargs, fit_args, message):
    X, C = fit_args if fit_args is not None else (np.eye(3), np.eye(3))
    with pytest.raises(ValueError, match=message):
        CaptionKNN(**kwargs).fit(X, C)


def test_bad_self_rows():
    model = CaptionKNN(n_neighbors=1).fit(np.eye(3), np.eye(3))
    with pytest.raises(ValueError, match="self_rows"):
        model.transform(np.eye(3), self_rows=[0, 1, 5])
    with pytest.raises(ValueError, match=r"X: expected shape \(n, 3\)"):
        model.transform(np.eye(2))


def test_item_captions_are_the_tags_in_words():
    assert item_captions([["hot_air_balloons", "sky"], [], None, ["a", "a"]]) == ["hot air balloons, sky", None, None, "a"]


def test_words_of_captions_find_untagged_items(tmp_path, toy_conse):  # noqa: F811 - the fixture
    """Half of the cats are captioned 'whiskers', half of the cars 'wheels engine': the other halves, untagged,
    are found by those words, and the ranking follows the text."""
    names = {0: ["whiskers"], 1: ["wheels", "engine"]}
    y = np.repeat(np.arange(4), 10)
    tags = [names.get(c, []) if i % 10 < 5 else [] for i, c in enumerate(y)]
    make_conse_store(tmp_path / "s", tags=tags)
    store = FeatureStore.open(tmp_path / "s")
    index = build_text_index(store, method="captions")
    assert index.info["n_captioned"] == 10
    untagged = np.array([not t for t in tags])
    for text, cls in (("whiskers", 0), ("wheels", 1)):
        res = index.search(text, k=10, rows=np.nonzero(untagged & (y < 2))[0])
        assert (y[res.rows[:5]] == cls).all()
    cats, cars = index.search("whiskers", k=10), index.search("wheels and an engine", k=10)
    assert not np.array_equal(cats.rows, cars.rows)


def test_what_auto_stands_for(tmp_path, toy_conse, monkeypatch):  # noqa: F811 - the fixture
    """Described tags: conse+eszsl+captions; tags with no description: conse+captions; fewer than two tagged items: conse."""
    y = np.repeat(np.arange(4), 10)
    make_conse_store(tmp_path / "s", tags=[["cat"] if c == 0 else ["car"] if c == 1 else [] for c in y])
    store = FeatureStore.open(tmp_path / "s")
    monkeypatch.setattr(_text_index, "_usable_tags", lambda store, descriptions, min_items=2: None)
    assert resolve_method(store) == AUTO_WITH_DESCRIBED_TAGS == "conse+eszsl+captions"
    monkeypatch.setattr(_text_index, "_usable_tags", lambda store, descriptions, min_items=2: "no WordNet noun")
    assert resolve_method(store) == AUTO_WITH_TAGS == "conse+captions"
    make_conse_store(tmp_path / "one", tags=[["cat"]] + [[]] * 39)
    assert resolve_method(FeatureStore.open(tmp_path / "one")) == "conse"


def test_auto_on_a_tagged_store_is_cached_and_ranks_by_text(tmp_path, toy_conse):  # noqa: F811 - the fixture
    names = ["cat", "car", "bird", "fish"]
    y = make_conse_store(tmp_path / "s", tags=[[names[c]] if i % 2 else [] for i, c in enumerate(np.repeat(np.arange(4), 10))])
    store = FeatureStore.open(tmp_path / "s")
    index, built = open_text_index(store)
    assert built and index.method == resolve_method(store) and index.method in (AUTO_WITH_DESCRIBED_TAGS, AUTO_WITH_TAGS)
    assert (y[index.search("feathers and wings", k=5).rows] == 2).all()
    again, built = open_text_index(FeatureStore.open(tmp_path / "s"))
    assert not built and np.array_equal(again.vectors, index.vectors)


def test_a_store_with_one_tagged_item_falls_back_to_conse(tmp_path, monkeypatch, toy_conse):  # noqa: F811 - the fixture
    fake_text_models(monkeypatch)
    make_conse_store(tmp_path / "s", tags=[["cat"]] + [[]] * 39)
    store = FeatureStore.open(tmp_path / "s")
    assert resolve_method(store) == "conse"
    with pytest.raises(ValueError, match="tag at least two items"):
        build_text_index(store, method="captions")


def test_cli_on_a_tagged_store_says_which_index_ranked(tmp_path, toy_conse, capsys):  # noqa: F811 - the fixture
    import json

    from hardneg.cli.main import main

    names = ["cat", "car", "bird", "fish"]
    y = make_conse_store(tmp_path / "s", tags=[[names[c]] if i % 2 else [] for i, c in enumerate(np.repeat(np.arange(4), 10))])
    assert main(["concept", "search", "auto", str(tmp_path / "s"), "--text", "fins and water", "-k", "5", "--json"]) == 0
    out = capsys.readouterr()
    said = " ".join(out.err.split())  # rich wraps the line
    assert said.startswith("built text index: ConSE [Norouzi14] + ")
    assert ("ESZSL + captions of the tagged items' neighbours, trained on 4 described classes" in said
            if resolve_method(FeatureStore.open(tmp_path / "s")) == AUTO_WITH_DESCRIBED_TAGS else "+ captions of the" in said)
    rows = [int(r["id"].removeprefix("img").removesuffix(".png")) for r in json.loads(out.out)]
    assert (y[rows] == 3).all()
