"""Own images, round 2 (issue 26): truthful contact sheets, tied Hamming distances, errors
in the user's words, exact install hints, progress that counts this run's work only."""

import io
import logging
import pathlib
import re
import sys

import numpy as np
import pytest

from hardneg._extras import install_hint
from hardneg.cli import _console, _results
from hardneg.report._contact import contact_sheet, relevance_marks
from hardneg.store import FeatureStore, StoreError

ROOT = pathlib.Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- progress


def test_resumed_progress_rate_counts_this_runs_work_only():
    now = [0.0]
    buf = io.StringIO()
    log = _console.ProgressLog("extracting cnn", 2000, 10.0, stream=buf, clock=lambda: now[0])
    log.advance(1700)  # what a resumed run found already done, reported at once
    for _ in range(30):
        now[0] += 1.0
        log.advance(10)  # this run: 10 images a second
    lines = buf.getvalue().splitlines()
    assert lines[0] == "extracting cnn: 1,800/2,000 (90%), 10/s, ETA 20s"
    assert lines[-1] == "extracting cnn: 2,000/2,000 (100%), 10/s, done in 30s"


def test_library_status_records_show_during_a_task(monkeypatch, capsys):
    monkeypatch.setattr(_console.err_console, "real", lambda: type("C", (), {"is_terminal": False})())
    with _console.task_progress("extracting dsift", 10) as advance:
        logging.getLogger("hardneg.status").info("learning the codebook from %s images", "1,000")
        advance(10)
    assert "extracting dsift: learning the codebook from 1,000 images" in capsys.readouterr().err
    assert logging.getLogger("hardneg.status").propagate  # restored after the task


# ---------------------------------------------------------------------------- install hints


def test_install_hint_from_a_checkout_venv_and_elsewhere(tmp_path):
    (tmp_path / "hardneg").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / ".venv").mkdir()
    assert install_hint("bow", package_dir=tmp_path / "hardneg", prefix=str(tmp_path / ".venv")) == ".venv/bin/pip install -e '.[bow]'"
    assert install_hint("bow", package_dir=tmp_path / "hardneg", prefix="/usr") == "pip install 'hardneg[bow]'"
    (tmp_path / "pyproject.toml").unlink()
    assert install_hint("cnn", package_dir=tmp_path / "hardneg", prefix=str(tmp_path / ".venv")) == "pip install 'hardneg[cnn]'"


def test_every_missing_extra_hint_goes_through_install_hint():
    literal = re.compile(r"pip install '?hardneg\[")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "hardneg").rglob("*.py")
                 if p.name != "_extras.py" and literal.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_module_extras_name_real_extras():
    import tomllib

    from hardneg._extras import MODULE_EXTRAS

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(MODULE_EXTRAS.values()) <= set(extras)


def test_missing_extra_is_one_line_with_the_install_command(tmp_path, monkeypatch, capsys):
    """Issue 37 item 7: a missing optional module (here the service's uvicorn) and missing WordNet
    files are one line, exit 2, with what to install -- not a traceback."""
    from hardneg.cli.main import main
    from hardneg.exceptions import WordNetUnavailable
    from hardneg.store import FeatureStore

    with FeatureStore.create(tmp_path / "s.store", dim=2) as s:
        s.append(np.eye(2, dtype=np.float32))
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # "import uvicorn" raises ModuleNotFoundError
    assert main(["serve", str(tmp_path / "s.store")]) == 2
    err = capsys.readouterr().err
    assert "uvicorn is not installed" in err and "[serve]" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1

    from hardneg.cli._console import error_line, is_user_error

    exc = WordNetUnavailable("no WordNet database")
    assert is_user_error(exc) and error_line(exc) == "no WordNet database"


def test_dense_sift_hint_names_the_command_that_works_here(monkeypatch):
    import builtins

    from hardneg.features import _dsift

    real_import = builtins.__import__

    def no_cv2(name, *args, **kwargs):
        if name == "cv2":
            raise ImportError("no cv2")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cv2)
    with pytest.raises(ImportError) as err:
        _dsift._require_cv2()
    assert install_hint("bow") in str(err.value)


def test_makefile_demo_installs_what_the_walkthrough_runs():
    text = (ROOT / "Makefile").read_text()
    demo = text.split("$(VENV)/.installed-demo: pyproject.toml", 1)[1].split("\n\n", 1)[0]
    assert '"torch==2.13.0"' in demo and '.[data,bow,cnn]' in demo
    assert demo.index("torch==2.13.0") < demo.index(".[data,bow,cnn]")


# ---------------------------------------------------------------------------- errors in the user's words


def test_no_such_store(tmp_path):
    with pytest.raises(StoreError, match=r"^no such store: .*nope\.store"):
        FeatureStore.open(tmp_path / "nope.store")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match="is not a FeatureStore"):
        FeatureStore.open(tmp_path / "empty")


def test_not_an_image_file(tmp_path):
    from hardneg._imaging import ImageReadError, open_image

    (tmp_path / "notes.jpg").write_text("hello")
    with pytest.raises(ImageReadError, match=r"notes\.jpg: not an image file.*PNG, JPEG"):
        open_image(tmp_path / "notes.jpg")


def test_mixed_feature_kinds_said_in_words():
    from hardneg.features._extract import mixed_settings_message

    cnn = {"extractor": "cnn", "model": "efficientnet-lite0-imagenet", "input_size": 224}
    bow = {"extractor": "bow", "n_words": 1024, "descriptor": {"step": 8}}
    msg = mixed_settings_message("plus.store", cnn, bow, 1280)
    assert msg.startswith("plus.store holds CNN features (EfficientNet-Lite0, 1280-d), not dense-SIFT bag-of-words features (1024 words) (--features dsift)")
    assert "extract into a new store" in msg and "--overwrite" in msg and "{" not in msg
    msg = mixed_settings_message("p.store", bow, {**bow, "n_words": 64}, 1024)
    assert "n_words: stored 1024, asked 64" in msg and "{" not in msg


def test_one_warning_per_unreadable_file(tmp_path, caplog):
    cv2 = pytest.importorskip("cv2")
    from PIL import Image

    from hardneg.features import BagOfWords, DenseSift, extract_to_store

    rng = np.random.default_rng(0)
    for k in range(4):
        Image.fromarray(cv2.GaussianBlur(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8), (5, 5), 1.0)).save(tmp_path / f"{k}.png")
    (tmp_path / "bad.png").write_text("not an image")
    with caplog.at_level(logging.INFO):
        s = extract_to_store(tmp_path, tmp_path / "s.store", BagOfWords(DenseSift(step=8, bin_sizes=(4,)), n_words=4, random_state=0))
    assert s.n_failed == 1
    about_bad = [r for r in caplog.records if r.levelno >= logging.WARNING and "bad.png" in r.getMessage()]
    assert len(about_bad) == 1
    assert any("learning the codebook" in r.getMessage() for r in caplog.records if r.name == "hardneg.status")


def test_codebook_learning_says_how_far_it_is(tmp_path, caplog, monkeypatch):
    """Issue 37 item 10: 7 minutes of learning the codebook showed one line; now reading,
    describing and k-means each say where they are (throttled; here every call)."""
    pytest.importorskip("cv2")
    from PIL import Image

    from hardneg.features import BagOfWords, DenseSift, _extract, extract_to_store

    monkeypatch.setattr(_extract, "STATUS_SECONDS", 0.0)
    rng = np.random.default_rng(0)
    for k in range(30):
        Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(tmp_path / f"{k}.png")
    with caplog.at_level(logging.INFO, logger="hardneg.status"):
        extract_to_store(tmp_path, tmp_path / "s.store", BagOfWords(DenseSift(step=8, bin_sizes=(4,)), n_words=4, random_state=0))
    said = [r.getMessage() for r in caplog.records if r.name == "hardneg.status"]
    assert "learning the codebook: read 29 of 30 sample images" in said
    assert "learning the codebook: described 25 of 30 images" in said
    assert any(m.startswith("learning the codebook: k-means of ") for m in said)


# ---------------------------------------------------------------------------- contact sheets tell the truth


@pytest.fixture
def mugs(tmp_path):
    path = tmp_path / "m.store"
    with FeatureStore.create(path, dim=2) as store:
        store.append(np.ones((8, 2)), ids=[f"i{k}" for k in range(8)],
                     tags=[["mug"], ["mug"], ["mug"], [], [], ["kitchen"], [], []])
    return FeatureStore.open(path)


def test_untagged_results_are_not_judged_misses(mugs):
    rows = np.arange(8)
    marks = relevance_marks(mugs, rows, concept="mug")
    assert marks == [True, True, True, None, None, None, None, None]  # nothing says the others are not mugs
    assert relevance_marks(mugs, rows, tag="mug") == [True] * 3 + [False] * 5  # the user vouches for the tag
    assert relevance_marks(mugs, rows, concept="teapot") is None


def test_folder_tags_judge_items_of_other_folders(tmp_path):
    """Issue 37 item 9: in the 'fruit' sheet a food/desserts item is a miss (the store's folders say
    so); an untagged item, an item with a CSV tag, or one whose folder tags were edited away stays
    not judged; a concept that is not a folder judges nothing by folder."""
    path = tmp_path / "f.store"
    ids = ["food/fruit/apple.png", "food/desserts/cake.png", "food/x.png", "loose.png", "food/desserts/pie.png",
           "plants/tree.png"]
    with FeatureStore.create(path, dim=2) as store:
        store.append(np.ones((6, 2)), ids=ids, tags=[["food", "fruit"], ["food", "desserts"], ["food"], [], ["sweet"], ["plants"]])
    store = FeatureStore.open(path)
    assert relevance_marks(store, np.arange(6), concept="fruit")[5] is False  # another branch
    # food/x.png sits above the fruit folder: maybe fruit nobody sorted, not judged
    assert relevance_marks(store, np.arange(5), concept="fruit") == [True, False, None, None, None]
    assert relevance_marks(store, np.arange(5), concept="sweet") == [None, None, None, None, True]


def test_labels_judge_hits_and_misses(tmp_path):
    path = tmp_path / "l.store"
    with FeatureStore.create(path, dim=2, attrs={"class_names": ["cup", "plate"]}) as store:
        store.append(np.ones((4, 2)), labels=[0, 1, -1, 0])
    store = FeatureStore.open(path)
    assert relevance_marks(store, np.arange(4), label="cup") == [True, False, None, True]
    assert relevance_marks(store, np.arange(4), concept="cup") == [True, False, None, True]
    with pytest.raises(ValueError, match="not a class"):
        relevance_marks(store, np.arange(4), label="bowl")


def test_sheet_draws_unknown_neutral_and_counts_honestly(tmp_path, mugs, caplog):
    marks = relevance_marks(mugs, np.arange(8), concept="mug")
    results = [{"rank": k + 1, "id": f"i{k}", "path": str(tmp_path / "gone" / f"{k}.png"), "score": 1.0, "relevant": m}
               for k, m in enumerate(marks)]
    with caplog.at_level(logging.WARNING):
        out = contact_sheet(tmp_path / "s.html", title="t", groups=[{"name": "concept mug", "results": results}])
    html = out.read_text()
    assert "3 hits, 0 misses, 5 not judged" in html and "3 hits of 8" not in html
    assert html.count(" miss") == html.count("0 misses")  # no red frame
    missing = [r for r in caplog.records if "no longer exist" in r.getMessage()]
    assert len(missing) == 1 and "hardneg store relocate" in missing[0].getMessage()  # once, with what to do


# ---------------------------------------------------------------------------- ties in Hamming search


def test_all_tied_distances_say_so(capsys):
    from hardneg.cli.hash import _warn_ties

    _warn_ties(np.zeros((2, 5), np.int32), 16)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "same Hamming distance" in err and "--bits 64" in err
    _warn_ties(np.array([[0, 1, 3, 3, 4]]), 64)
    assert capsys.readouterr().err == ""


def test_readme_suggests_a_code_length_that_separates():
    readme = (ROOT / "README.md").read_text()
    assert "--bits 16" not in readme


# ---------------------------------------------------------------------------- result tables at 80 columns


def _table_at(width, results, monkeypatch, **kw):
    import io

    from rich.console import Console


    buf = io.StringIO()
    monkeypatch.setattr(_console.console, "_console", Console(width=width, file=buf, color_system=None))
    _results.print_results(results, title="t", score="score", as_json=False, **kw)
    return buf.getvalue()


def test_result_table_at_80_columns_keeps_one_line_per_result(monkeypatch, tmp_path):
    """Issue 37 item 12: the absolute path repeated in every row folded ids and paths into
    4-6-line cells. The shared folder is said once; a path that is the id is not repeated."""
    root = tmp_path / "a" / "rather" / "long" / "home" / "folder" / "with" / "the" / "photos"
    ids = [f"animals/birds/eagle_{k:04d}.png" for k in range(5)]
    results = [{"rank": k + 1, "id": i, "score": 0.9 - k / 10, "label": None, "tags": ["animals", "birds"],
                "path": str(root / i)} for k, i in enumerate(ids)]
    out = _table_at(80, results, monkeypatch)
    for i in ids:
        assert sum(i in line for line in out.splitlines()) == 1, out
    # long tags fold in their own column; nothing is cropped at the right edge
    many = [dict(results[0], tags=["food", "beverages", "alcohol", "wine"], id="food/beverages/alcohol/ontologia_del_vino_01.png")]
    wide = _table_at(80, many, monkeypatch)
    table = [line for line in wide.splitlines() if line[:1] in "┏┃┡│└"]
    assert max(len(line) for line in table) <= 80 and "alcohol" in wide and "wine" in wide
    assert f"imagefiles:{root}/<id>" in "".join(out.split("\n")).replace(" ", "")
    assert "path" not in out.splitlines()[1]  # the header has no path column: each path is its id
    # paths that are not the ids: shown relative to the shared folder
    moved = [dict(r, id=f"item{k}") for k, r in enumerate(results)]
    out = _table_at(300, moved, monkeypatch)
    assert f"image files under {root / 'animals' / 'birds'}" in out and out.count(str(root)) == 1
    assert "│ eagle_0003.png" in out
    assert _table_at(80, [], monkeypatch)  # no results: still a table


def test_csv_to_stdout_escapes_control_characters(capsys, tmp_path):
    """Issue 39 item 13: `--csv -` printed a raw ESC of an id (stores made before ids were checked)."""
    from hardneg.cli._results import write_csv

    rows = [{"id": "a\x1b[31mb", "score": 1.0}]
    write_csv(rows, "-")
    out = capsys.readouterr().out
    assert "\x1b" not in out and "a\\x1b[31mb" in out
    write_csv(rows, str(tmp_path / "r.csv"))  # a file keeps the data
    assert "\x1b" in (tmp_path / "r.csv").read_text()
