"""Items' file names as captions in the text index (an extra): the words of a name, when a store's
names are used, and what they add to a query's score (hand-worked, then on a toy ConSE store)."""

from __future__ import annotations

import numpy as np
import pytest
from test_conse import EXTRACTOR, toy_conse  # noqa: F401 - a fixture (usefixtures)

from hardneg._persist import ModelFileError, save_model
from hardneg.store import FeatureStore
from hardneg.zeroshot import _text_index
from hardneg.zeroshot._file_names import MIN_NAMED_SHARE, item_name_texts, name_text, named_share


@pytest.mark.parametrize("name, words", [
    ("/photos/animals/turkey_on_platter_01.png", "turkey on platter"),   # folders never count
    ("C:\\clips\\RedSportsCar.JPG", "red sports car"),                   # camelCase, Windows separators
    ("hot-air.balloon-2004.svg.png", "hot air balloon"),                 # an inner extension is a generic word
    ("café_au_lait.jpg", "café au lait"),
    ("IMG_20230514_123456.jpg", None), ("DSC01234.JPG", None), ("PXL_20210101_000000.jpg", None),
    ("3fa9c1d2e4b5.png", None), ("550e8400-e29b-41d4-a716-446655440000.jpg", None),  # hashes and UUIDs
    ("screenshot 2024-01-01 copy.png", None), ("ox.png", None), ("", None), (None, None),
])
def test_the_words_of_a_file_name(name, words):
    assert name_text(name) == words


def test_named_share():
    assert named_share([]) == 0.0 and named_share(["a cat", None, "dog", None]) == 0.5
    assert named_share(["item"] * 4) == 0.0  # item-0001.png, item-0002.png, ...: one word for every item


def test_scores_add_the_name_cosine_to_the_raw_query_by_hand():
    V = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], np.float32)
    N = np.array([[0.0, 1.0], [0.0, 0.0], [1.0, 0.0]], np.float32)  # item b has no name with words: a zero row
    offset = np.array([0.0, 0.5], np.float32)
    index = _text_index.TextIndex(V, ["a", "b", "c"], "conse", info={"names_weight": 1.0}, query_offset=offset, names=N)
    q = np.array([0.6, 0.8], np.float32)
    q_off = (q - offset) / np.linalg.norm(q - offset)  # ConSE's offset is for its own vectors, not the names'
    np.testing.assert_allclose(index.scores(q, feedback=False), V @ q_off + N @ q, rtol=1e-6)
    np.testing.assert_allclose(index.scores(q, names=False), V @ q_off, rtol=1e-6)
    with pytest.raises(ValueError, match="names: expected one 2-d row per item"):
        _text_index.TextIndex(V, ["a", "b", "c"], "conse", names=N[:2])


def _named_store(path, names):
    """Items whose features are all alike (the toy ConSE head cannot tell them apart): only their names can."""
    X = np.full((len(names), 1280), 0.1, np.float32) + np.random.default_rng(0).random((len(names), 1280)).astype(np.float32) * 1e-3
    with FeatureStore.create(path, dim=1280, attrs={"extractor": dict(EXTRACTOR)}) as store:
        store.append(X, paths=names)
    return FeatureStore.open(path)


@pytest.mark.usefixtures("toy_conse")
def test_file_names_rank_an_untagged_store_and_round_trip(tmp_path):
    names = [f"whiskers_{i}.png" for i in range(10)] + [f"fins_and_water_{i}.png" for i in range(10)] + \
            [f"IMG_{i:04d}.jpg" for i in range(10)]
    store = _named_store(tmp_path / "s", names)
    assert item_name_texts(store)[:2] == ["whiskers", "whiskers"] and item_name_texts(store)[-1] is None
    index = _text_index.build_text_index(store, method="conse")
    assert index.names is not None and index.info["named_share"] == pytest.approx(20 / 30)
    assert sorted(index.search("whiskers", k=10).rows.tolist()) == list(range(10))
    assert sorted(index.search("fins and water", k=10).rows.tolist()) == list(range(10, 20))
    assert sorted(index.search("whiskers", k=10, names=False).rows.tolist()) != list(range(10))
    index.save(tmp_path / "i.npz")
    back = _text_index.TextIndex.load(tmp_path / "i.npz")
    np.testing.assert_array_equal(back.names, index.names)
    assert back.search("whiskers", k=10).ids == index.search("whiskers", k=10).ids
    # the papers' version and file_names=False have no name rows; the cache keeps them apart
    assert _text_index.build_text_index(store, method="conse", extras=False).names is None
    assert _text_index.build_text_index(store, method="conse", file_names=False).names is None
    assert _text_index.text_index_file(store)[0] != _text_index.text_index_file(store, file_names=False)[0]
    # a damaged file: name rows that do not match the vectors
    arrays = {"ids": back.ids, "vectors": back.vectors, "names": back.names[:, :5]}
    save_model(tmp_path / "bad.npz", _text_index._KIND, _text_index._VERSION, arrays, {"method": "conse", "key": "", "info": {}})
    with pytest.raises(ModelFileError, match="name rows of the wrong size"):
        _text_index.TextIndex.load(tmp_path / "bad.npz")


@pytest.mark.usefixtures("toy_conse")
def test_a_store_of_camera_names_gets_no_name_captions(tmp_path):
    n_named = int(MIN_NAMED_SHARE * 10) - 1  # just under the share
    names = [f"{('whiskers', 'fins_and_water')[i % 2]}_{i}.png" for i in range(n_named)] + \
            [f"DSC{i:05d}.JPG" for i in range(10 - n_named)]
    index = _text_index.build_text_index(_named_store(tmp_path / "s", names), method="conse")
    assert index.names is None and index.info["named_share"] == pytest.approx(n_named / 10)


@pytest.mark.usefixtures("toy_conse")
def test_the_cli_says_when_file_names_rank(tmp_path, capsys):
    from hardneg.cli.main import main

    names = [f"whiskers_{i}.png" for i in range(10)] + [f"fins_and_water_{i}.png" for i in range(10)] + \
            [f"IMG_{i:04d}.jpg" for i in range(10)]
    _named_store(tmp_path / "s", names).close()
    assert main(["concept", "search", "auto", str(tmp_path / "s"), "--text", "fins and water", "-k", "10", "--json"]) == 0
    out = capsys.readouterr()
    assert "+ the file names of 67% of the items" in " ".join(out.err.split())  # the console wraps long lines
    import json

    assert {r["path"].rsplit("/", 1)[-1].split("_")[0] for r in json.loads(out.out)} == {"fins"}


@pytest.mark.usefixtures("toy_conse")
def test_auto_on_a_named_store_is_conse_with_the_names_tags_or_not(tmp_path, monkeypatch):
    from hardneg.zeroshot import _file_names

    names = [f"whiskers_{i}.png" for i in range(10)] + [f"fins_and_water_{i}.png" for i in range(10)]
    X = np.full((20, 1280), 0.1, np.float32)
    tags = [["cat"]] * 10 + [["fish"]] * 10
    with FeatureStore.create(tmp_path / "s", dim=1280, attrs={"extractor": dict(EXTRACTOR)}) as store:
        store.append(X, paths=names, tags=tags)
    store = FeatureStore.open(tmp_path / "s")
    assert _text_index.resolve_method(store) == _text_index.AUTO_WITH_NAMES == "conse"
    assert _text_index.resolve_method(store, file_names=False) == _text_index.AUTO_WITH_DESCRIBED_TAGS
    # the share is read from evenly spaced items: rows 0, 6, 12 and 19 of 20
    monkeypatch.setattr(_file_names, "SAMPLE_ITEMS", 4)
    seen = []
    real = _file_names.item_name_texts
    monkeypatch.setattr(_file_names, "item_name_texts", lambda st, rows=None: seen.append(rows) or real(st, rows))
    assert _file_names.store_named_share(store) == 1.0 and seen[0].tolist() == [0, 6, 12, 19]


@pytest.mark.usefixtures("toy_conse")
def test_names_are_embedded_as_index_texts_and_queries_as_queries(tmp_path, monkeypatch):
    """The names an index keeps go to the float graph without the disk cache; a query to the int8 graph."""
    from _helpers import fake_embed

    from hardneg.zeroshot import _descriptions

    calls = []
    monkeypatch.setattr(_descriptions, "embed_texts",
                        lambda texts, cache=True, quantized=False: calls.append((list(texts), cache, quantized)) or fake_embed(texts))
    store = _named_store(tmp_path / "s", [f"whiskers_{i}.png" for i in range(5)] + [f"fins_{i}.png" for i in range(5)])
    index = _text_index.build_text_index(store, method="conse")
    assert (["fins", "whiskers"], False, False) in calls  # each distinct name once, float graph, no cache file
    index.search("whiskers", k=3)
    assert calls[-1] == (["whiskers"], False, True)
