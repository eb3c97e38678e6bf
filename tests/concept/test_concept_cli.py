"""``hardneg concept train`` / ``search`` end to end on a tiny store."""

import json

import numpy as np

from hardneg.cli.main import main
from hardneg.store import FeatureStore


def make_store(path):
    rng = np.random.default_rng(0)
    X = rng.random((120, 5)).astype(np.float32)
    X[:30, 0] += 2.0
    tags = [["boat"] if i < 30 else ["car"] if i < 60 else ["tree"] for i in range(120)]
    split = ["train" if i % 3 else "test" for i in range(120)]
    with FeatureStore.create(path, dim=5) as store:
        store.append(X, tags=tags, split=split, paths=[f"img{i}.png" for i in range(120)])


def test_train_and_search(tmp_path, capsys):
    make_store(tmp_path / "s")
    model = tmp_path / "boat.npz"
    rc = main(["concept", "train", str(tmp_path / "s"), "-c", "boat", "-o", str(model), "-T", "3", "--related", "ship", "--bins", "20"])
    assert rc == 0 and model.is_file()
    capsys.readouterr()
    rc = main(["concept", "search", str(model), str(tmp_path / "s"), "-k", "5", "--split", "test", "--json"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert len(res) == 5 and all(int(r["id"]) < 30 and int(r["id"]) % 3 == 0 for r in res)
    assert [r["rank"] for r in res] == [1, 2, 3, 4, 5]


def test_user_errors_are_one_line(tmp_path, capsys):
    make_store(tmp_path / "s")
    assert main(["concept", "train", str(tmp_path / "s"), "-c", "plane", "-o", str(tmp_path / "m.npz")]) == 2
    assert "no items tagged 'plane'" in capsys.readouterr().err
    (tmp_path / "bad.npz").write_bytes(b"junk")
    assert main(["concept", "search", str(tmp_path / "bad.npz"), str(tmp_path / "s")]) == 2


def test_bins_zero_saves_exact_tables(tmp_path):
    from hardneg.concept import load_concept

    make_store(tmp_path / "s")
    model = tmp_path / "boat.npz"
    assert main(["concept", "train", str(tmp_path / "s"), "-c", "boat", "-o", str(model), "-T", "2", "--bins", "0"]) == 0
    assert load_concept(model).exact


def test_related_auto_and_skip_top(tmp_path, capsys):
    rng = np.random.default_rng(1)
    X = rng.random((90, 4)).astype(np.float32)
    X[:30, 0] += 2.0
    # 'sail' always comes with 'boat' (NGD 0): excluded with --related auto
    tags = [["boat", "sail"] if i < 20 else ["sail"] if i < 25 else ["car"] for i in range(90)]
    with FeatureStore.create(tmp_path / "s", dim=4) as store:
        store.append(X, tags=tags)
    model = tmp_path / "boat.npz"
    rc = main(["concept", "train", str(tmp_path / "s"), "-c", "boat", "-o", str(model), "-T", "3", "-p", "10",
               "--related", "auto", "--skip-top", "auto", "--bins", "10"])
    out = capsys.readouterr().out
    assert rc == 0 and model.is_file()
    assert "related tags excluded from the negatives: sail" in out
    assert "sail (" not in out.split("most frequent tags")[-1]  # never among the selected negatives
    assert main(["concept", "train", str(tmp_path / "s"), "-c", "boat", "-o", str(model), "--skip-top", "1.5"]) == 2
    assert "--skip-top" in capsys.readouterr().err


def test_candidates_cv_or_a_number(tmp_path, capsys, monkeypatch):
    """--candidates cv chooses m per concept (n_candidates="cv"); anything but 'cv' or a whole number >= 1 is an error."""
    from hardneg.cli import concept as cli_concept

    make_store(tmp_path / "s")
    model = tmp_path / "boat.npz"
    built = []
    real = cli_concept._estimator

    def spy(*a, **k):
        built.append(real(*a, **k))
        return built[-1]

    monkeypatch.setattr(cli_concept, "_estimator", spy)
    assert main(["concept", "train", str(tmp_path / "s"), "-c", "boat", "-o", str(model), "-T", "3", "--candidates", "cv"]) == 0
    assert main(["concept", "train", str(tmp_path / "s"), "-c", "boat", "-o", str(model), "-T", "3", "--candidates", "40"]) == 0
    assert built[0].n_candidates == "cv" and built[0].cv_results_["factor"] in (3, 10)
    assert built[1].n_candidates == 40 and built[1].iterations_[-1]["n_candidates"] == 40
    capsys.readouterr()
    for bad in ("many", "0", "-3", "2.5"):
        assert main(["concept", "train", str(tmp_path / "s"), "-c", "boat", "-o", str(model), "--candidates", bad]) == 2
        err = capsys.readouterr().err
        assert "--candidates must be" in err and "'cv'" in err and "n_candidates" not in err


def test_search_new_leaves_out_the_training_positives(tmp_path, capsys):
    """Issue 37 item 4: the model records its training positives; --new shows only what it found besides them."""
    make_store(tmp_path / "s")
    model = tmp_path / "boat.npz"
    assert main(["concept", "train", str(tmp_path / "s"), "-c", "boat", "-o", str(model), "-T", "3", "-p", "10", "--bins", "20"]) == 0
    from hardneg.concept import load_concept

    trained = set(load_concept(model).meta["positive_ids"])
    assert len(trained) == 10
    capsys.readouterr()
    assert main(["concept", "search", str(model), str(tmp_path / "s"), "-k", "15", "--json"]) == 0
    out, err = capsys.readouterr()
    everything = json.loads(out)
    n = len(trained & {r["id"] for r in everything})
    assert n and f"note: {n} of these 15 are the model's own training examples" in err  # ranked near the top, and said
    assert main(["concept", "search", str(model), str(tmp_path / "s"), "-k", "15", "--new", "--json"]) == 0
    new = json.loads(capsys.readouterr().out)
    assert len(new) == 15 and not trained & {r["id"] for r in new}
    assert [r["rank"] for r in new] == list(range(1, 16))
    assert main(["concept", "search", str(model), str(tmp_path / "s"), "-k", "25", "--json"]) == 0
    top25 = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in new] == [r["id"] for r in top25 if r["id"] not in trained][:15]  # same order, trained ones out
