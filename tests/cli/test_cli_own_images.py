"""Issue 11 from the command line: tags and splits, progress lines, result columns,
query exclusion, --json / --html, query by image file, knn, evaluation."""

import io
import json
import logging
import shutil

import numpy as np
import pytest

pytest.importorskip("cv2")
pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from hardneg.cli import _console  # noqa: E402
from _helpers import run_cli as run  # noqa: E402
from hardneg.cli.main import app, main  # noqa: E402
from hardneg.store import FeatureStore  # noqa: E402

DSIFT = ["--features", "dsift", "--n-words", "24", "--step", "8"]


def _image(kind: str, rng) -> Image.Image:
    yy, xx = np.mgrid[0:48, 0:48]
    f, ph = rng.uniform(0.25, 0.4), rng.uniform(0, 6.28)
    img = np.sin(np.hypot(xx - 24, yy - 24) * f + ph) if kind == "rings" else np.sin(xx * f + ph)
    img = (img + 1) * 110 + rng.normal(0, 8, img.shape)
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).convert("RGB")


@pytest.fixture(autouse=True)
def knn_registered():
    from hardneg.cli.knn import knn

    added = not any(c.name == "knn" for c in app.registered_commands)
    if added:
        app.command("knn")(knn)
    yield
    if added:
        app.registered_commands[:] = [c for c in app.registered_commands if c.name != "knn"]


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    root = tmp_path_factory.mktemp("own")
    rng = np.random.default_rng(0)
    for kind in ("rings", "stripes"):
        (root / "photos" / kind).mkdir(parents=True)
        for i in range(6):
            _image(kind, rng).save(root / "photos" / kind / f"{i}.png")
    _image("rings", rng).save(root / "query.png")
    return root


@pytest.fixture(scope="module")
def store(photos):
    path = photos / "s.store"
    assert main(["extract", "images", str(photos / "photos"), "-o", str(path), *DSIFT, "--tags-from-folders", "--labels-from-folders"]) == 0
    return path


def _copy(store, tmp_path):
    dst = store.parent / f"{tmp_path.name}.store"  # beside the original: its image paths stay valid
    shutil.copytree(store, dst)
    return dst


# ---------------------------------------------------------------------------- tags and splits at extraction


def test_extract_tags_and_labels(store):
    s = FeatureStore.open(store)
    assert s.select(tags="rings").size == 6 and s.select(tags="stripes").size == 6
    assert s.attrs["class_names"] == ["rings", "stripes"]
    assert s.labels().tolist() == [0] * 6 + [1] * 6
    assert s.attrs["image_paths"] == "relative-to-store"
    assert s.items.column("path")[0].as_py() == "../photos/rings/0.png"  # relative to the store folder


def test_extract_tags_csv_and_labels_csv(photos, tmp_path, capsys):
    (tmp_path / "t.csv").write_text("id,tags\nrings/0.png,round;favourite\nstripes/1.png,lines\n")
    (tmp_path / "l.csv").write_text("rings/0.png,circle\nstripes/1.png,bar\n")
    out = tmp_path / "c.store"
    code, _, err = run(capsys, "extract", "images", photos / "photos", "-o", out, *DSIFT, "--tags-csv", tmp_path / "t.csv",
                       "--labels-csv", tmp_path / "l.csv")
    assert code == 0, err
    s = FeatureStore.open(out)
    assert s.select(tags="favourite").tolist() == [0] and s.select(tags="lines").tolist() == [7]
    assert s.attrs["class_names"] == ["bar", "circle"] and s.labels()[[0, 7, 3]].tolist() == [1, 0, -1]
    (tmp_path / "bad.csv").write_text("nosuch.png,x\n")
    code, _, err = run(capsys, "extract", "images", photos / "photos", "-o", tmp_path / "d.store", *DSIFT, "--tags-csv", tmp_path / "bad.csv")
    assert code == 2 and "nosuch.png" in err and "rings/0.png" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d.store").exists()  # refused before any work


def test_resume_with_other_settings_names_the_setting(store, capsys):
    code, _, err = run(capsys, "extract", "images", store.parent / "photos", "-o", store, "--features", "dsift", "--n-words", "24", "--step", "6")
    assert code == 2
    assert "descriptor.step: stored 8, asked 6" in err and "n_words" not in err


# ---------------------------------------------------------------------------- store tag / store split


def test_store_tag_by_id_folder_csv_labels(store, tmp_path, capsys):
    s = _copy(store, tmp_path)
    assert run(capsys, "store", "tag", s, "--add", "fav", "--id", "rings/1.png", "--id", "stripes/2.png")[0] == 0
    assert FeatureStore.open(s).select(tags="fav").tolist() == [1, 8]
    assert run(capsys, "store", "tag", s, "--add", "round", "--folder", "rings")[0] == 0  # by id prefix
    assert FeatureStore.open(s).select(tags="round").size == 6
    assert run(capsys, "store", "tag", s, "--add", "lined", "--folder", store.parent / "photos" / "stripes")[0] == 0  # by image folder
    assert FeatureStore.open(s).select(tags="lined").tolist() == list(range(6, 12))
    (tmp_path / "t.csv").write_text("rings/3.png,a;b\n")
    assert run(capsys, "store", "tag", s, "--from-csv", tmp_path / "t.csv")[0] == 0
    assert FeatureStore.open(s).items.column("tags")[3].as_py() == ["rings", "round", "a", "b"]
    assert run(capsys, "store", "tag", s, "--from-csv", tmp_path / "t.csv", "--remove-csv")[0] == 0
    code, out, _ = run(capsys, "store", "tag", s, "--remove", "fav")
    assert code == 0 and "2 item(s) changed" in out and FeatureStore.open(s).select(tags="fav").size == 0
    assert run(capsys, "store", "tag", s, "--remove", "rings", "--remove", "stripes")[0] == 0
    assert run(capsys, "store", "tag", s, "--from-labels")[0] == 0
    assert FeatureStore.open(s).select(tags="stripes").size == 6
    assert FeatureStore.open(s).verify().ok
    # user errors: one line, exit 2, store unchanged
    before = FeatureStore.open(s).items.to_pylist()
    for argv in (["--add", "x"], ["--add", "x", "--id", "nope.png"], ["--add", "x", "--folder", "nofolder"], []):
        code, _, err = run(capsys, "store", "tag", s, *argv)
        assert code == 2 and len(err.strip().splitlines()) == 1, (argv, err)
    assert FeatureStore.open(s).items.to_pylist() == before


def test_store_split_random_stratified_and_csv(store, tmp_path, capsys):
    s = _copy(store, tmp_path)
    code, out, _ = run(capsys, "store", "split", s, "--test-fraction", "0.34", "--seed", "3")
    assert code == 0 and "test (4)" in out and "train (8)" in out
    first = FeatureStore.open(s).items.column("split").to_pylist()
    labels = FeatureStore.open(s).labels()
    assert sum(1 for sp, lab in zip(first, labels) if sp == "test" and lab == 0) == 2  # stratified: 2 of each class
    code, _, err = run(capsys, "store", "split", s)
    assert code == 2 and "already has a split" in err and "--overwrite" in err
    assert run(capsys, "store", "split", s, "--test-fraction", "0.34", "--seed", "3", "--overwrite")[0] == 0
    assert FeatureStore.open(s).items.column("split").to_pylist() == first  # seeded: the same assignment
    (tmp_path / "sp.csv").write_text("id,split\nrings/0.png,val\n")
    assert run(capsys, "store", "split", s, "--from-csv", tmp_path / "sp.csv")[0] == 0
    assert FeatureStore.open(s).select(split="val").tolist() == [0]
    code, _, err = run(capsys, "store", "split", s, "--test-fraction", "1.5")
    assert code == 2 and "--test-fraction" in err


# ---------------------------------------------------------------------------- concept train / search / eval


def test_concept_without_splits_uses_all_rows_and_no_items_error(store, tmp_path, capsys):
    model = tmp_path / "rings.npz"
    code, _, err = run(capsys, "concept", "train", store, "-c", "rings", "-o", model, "-T", "2")
    assert code == 0, err  # the store has no split: all rows
    code, _, err = run(capsys, "concept", "train", store, "-c", "cats", "-o", tmp_path / "m.npz", "-T", "2")
    assert code == 2 and "no items tagged 'cats'" in err and "rings (6)" in err and "stripes (6)" in err and "no splits" in err
    code, _, err = run(capsys, "concept", "train", store, "-c", "rings", "--split", "train", "-o", tmp_path / "m.npz")
    assert code == 2 and "no splits" in err

    code, out, _ = run(capsys, "concept", "search", model, store, "-k", "4", "--json", "--html", tmp_path / "sheet.html")
    res = json.loads(out)
    assert [r["rank"] for r in res] == [1, 2, 3, 4]
    assert all(r["label"] == "rings" and r["tags"] == ["rings"] and r["relevant"] for r in res)
    assert all(r["path"].endswith(r["id"]) and (store.parent / "photos" / r["id"]).samefile(r["path"]) for r in res)
    sheet = (tmp_path / "sheet.html").read_text()
    assert sheet.count("<img") == 4 and sheet.count('class="cell hit"') == 4 and "#1 " in sheet

    code, out, _ = run(capsys, "concept", "eval", model, store, "--json", "-k", "6")
    fig = json.loads(out)
    assert fig["n_items"] == 12 and fig["n_relevant"] == 6 and fig["split"] is None
    # the figures are those of hardneg.eval on the model's own scores
    from hardneg.concept import load_concept
    from hardneg.eval import average_precision

    m = load_concept(model)
    X = FeatureStore.open(store).to_numpy()
    rel = np.arange(12) < 6
    assert fig["ap"] == pytest.approx(average_precision(rel, m.decision_function(X)))
    assert fig["p@6"] == pytest.approx(rel[np.argsort(-m.decision_function(X), kind="stable")][:6].mean())
    code, out, _ = run(capsys, "concept", "eval", model, store, "--label", "stripes", "--json")
    assert code == 0 and json.loads(out)["n_relevant"] == 6


# ---------------------------------------------------------------------------- hashing and knn


def test_hash_search_query_left_out_and_by_image(store, tmp_path, capsys):
    s = _copy(store, tmp_path)
    assert run(capsys, "store", "split", s, "--test-fraction", "0.34")[0] == 0
    code, out, _ = run(capsys, "hash", "train", s, "--method", "lsh", "-b", "16", "-o", tmp_path / "h.npz")
    assert code == 0 and "split 'train': 8 rows" in out  # the test split is left out by default
    assert run(capsys, "hash", "index", tmp_path / "h.npz", s, "-o", tmp_path / "h.idx")[0] == 0
    code, out, _ = run(capsys, "hash", "search", tmp_path / "h.npz", tmp_path / "h.idx", "-q", "rings/0.png", "-k", "3", "--json")
    res = json.loads(out)
    assert len(res) == 3 and "rings/0.png" not in [r["id"] for r in res]
    assert {"label", "tags", "path", "distance", "relevant"} <= set(res[0])
    code, out, _ = run(capsys, "hash", "search", tmp_path / "h.npz", tmp_path / "h.idx", "-q", "rings/0.png", "-k", "3", "--json", "--keep-query")
    assert json.loads(out)[0] == {**json.loads(out)[0], "id": "rings/0.png", "distance": 0}
    # an image file that is in the store is found at distance 0: extracted with the store's own settings
    img = store.parent / "photos" / "stripes" / "2.png"
    code, out, err = run(capsys, "hash", "search", tmp_path / "h.npz", tmp_path / "h.idx", "--query-image", img, "-k", "2", "--json",
                         "--html", tmp_path / "q.html")
    assert code == 0, err
    res = json.loads(out)
    assert res[0]["distance"] == 0 and "stripes/2.png" in [r["id"] for r in res if r["distance"] == 0]
    assert (tmp_path / "q.html").read_text().count("<img") == 3  # the query and 2 results
    code, out, _ = run(capsys, "hash", "eval", tmp_path / "h.npz", s, "-k", "4", "--json")
    fig = json.loads(out)
    assert fig["queries"] == 4 and fig["database"] == 8 and 0 <= fig["map@4"] <= 1
    assert fig["precision_recall_by_radius"][-1]["recall"] == pytest.approx(1.0)


def test_knn_exact_matches_brute_force_and_hnsw(store, capsys):
    X = FeatureStore.open(store).to_numpy().astype(np.float64)
    ids = FeatureStore.open(store).ids().tolist()
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    want = [ids[j] for j in np.argsort(-(Xn @ Xn[7]), kind="stable") if j != 7][:4]
    code, out, _ = run(capsys, "knn", store, "-q", ids[7], "-k", "4", "--json")
    res = json.loads(out)
    assert [r["id"] for r in res] == want
    assert [r["score"] for r in res] == pytest.approx(sorted((Xn @ Xn[7])[[ids.index(i) for i in want]], reverse=True), abs=1e-5)
    code, out, _ = run(capsys, "knn", store, "-q", ids[7], "-k", "4", "--json", "--metric", "l2")
    d = np.linalg.norm(X - X[7], axis=1)
    assert [r["distance"] for r in json.loads(out)] == pytest.approx(np.sort(d[np.arange(12) != 7])[:4], abs=1e-4)
    code, out, _ = run(capsys, "knn", store, "-q", ids[7], "-k", "4", "--json", "--index", "hnsw")
    assert [r["id"] for r in json.loads(out)] == want  # 12 items: the graph search is exact here
    code, out, err = run(capsys, "knn", store, "--query-image", store.parent / "photos" / "rings" / "4.png", "-k", "1", "--json")
    assert code == 0, err
    assert json.loads(out)[0]["id"] == "rings/4.png" and json.loads(out)[0]["score"] == pytest.approx(1.0, abs=1e-5)
    code, _, err = run(capsys, "knn", store, "-k", "2")
    assert code == 2 and "--query-image" in err


def test_paths_resolve_after_moving_store_and_images(store, tmp_path, capsys):
    shutil.copytree(store.parent / "photos", tmp_path / "moved" / "photos")
    shutil.copytree(store, tmp_path / "moved" / "s.store")
    code, out, _ = run(capsys, "knn", tmp_path / "moved" / "s.store", "-q", "rings/0.png", "-k", "1", "--json")
    assert (tmp_path / "moved" / "photos").resolve() in __import__("pathlib").Path(json.loads(out)[0]["path"]).resolve().parents


# ---------------------------------------------------------------------------- progress and logging


def test_progress_log_lines():
    now = [0.0]
    buf = io.StringIO()
    log = _console.ProgressLog("extracting cnn", 300, 10.0, stream=buf, clock=lambda: now[0])
    for _ in range(32):
        now[0] += 1.0
        log.advance(5)  # 5 per second
    log.finish()
    lines = buf.getvalue().splitlines()
    assert lines[0] == "extracting cnn: 50/300 (17%), 5/s, ETA 50s"
    assert len(lines) == 4 and lines[-1] == "extracting cnn: 160/300 (53%), 5/s, ETA 28s"  # 3 ticks + the final line
    log.finish()
    assert len(buf.getvalue().splitlines()) == 4  # nothing new: no repeated line
    buf = io.StringIO()
    log = _console.ProgressLog("scan", None, 0.0, stream=buf, clock=lambda: now[0])
    log.advance(10)
    assert "scan: 10" in buf.getvalue() and "elapsed" in buf.getvalue()


def test_progress_written_when_not_a_terminal(store, capsys, monkeypatch):
    monkeypatch.setenv("HARDNEG_PROGRESS_SECONDS", "0")
    code, _, err = run(capsys, "knn", store, "-q", "rings/0.png", "-k", "1", "--json")
    assert code == 0 and "indexing (exact, cosine): 12/12 (100%)" in err


def test_faiss_loader_info_kept_out_of_v():
    _console.setup_logging(1)
    assert not logging.getLogger("faiss.loader").isEnabledFor(logging.INFO)
    assert logging.getLogger("hardneg").isEnabledFor(logging.INFO)
    _console.setup_logging(2)
    assert logging.getLogger("faiss.loader").isEnabledFor(logging.DEBUG)
    _console.setup_logging(0)
