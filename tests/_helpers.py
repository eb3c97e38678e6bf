"""Helpers shared by test files in several folders (``from _helpers import fake_embed``).

``tests/conftest.py`` puts ``tests/`` on ``sys.path``. Nothing heavy is imported
here at module level (uvicorn, selenium, the CLI): a test module that needs one
helper pays only for what that helper uses.

- :func:`run_cli`: the ``hardneg`` command in this process, with its exit code and
  captured output; :func:`assert_one_line_error` checks a user error's output.
- :func:`write_xlsa17`: a small synthetic xlsa17 zero-shot folder.
- :func:`zeroshot_toy`: features that are a linear image of their class's attributes.
- Search by description without MiniLM or WordNet: :data:`KEYWORDS`,
  :data:`GLOSSES`, :func:`fake_embed` (a keyword embedder),
  :func:`fake_text_models` (patches the embedder and WordNet),
  :func:`text_class_data` / :func:`make_text_store` (features that are a noisy
  linear image of their class's description).
- The service in a real server for browser tests: :func:`free_port`,
  :func:`serving` (uvicorn in a thread), :func:`chrome_driver`.
- :func:`load_script`: a ``benchmarks/`` script as a module, from its file.
- :func:`sparse_class_rows`: l2-normalized sparse bag-of-words rows, three classes
  with their own words (the SOLIS benchmark tests).
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_script(stem: str, as_name: str | None = None):
    """``benchmarks/<stem>.py`` loaded as a fresh module (the folder need not be importable)."""
    spec = importlib.util.spec_from_file_location(as_name or f"_bench_{stem}", ROOT / "benchmarks" / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sparse_class_rows(n_words: int, per_class: int, density: float, seed: int = 0):
    """``(X, y)``: random sparse rows of three classes, each class with 5 words of its own
    (one per row), l2-normalized (CSR)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), per_class)
    X = sp.random(y.size, n_words, density=density, random_state=seed, format="csr")
    X = X + sp.csr_matrix((np.ones(y.size), (np.arange(y.size), y * 5 + rng.integers(0, 5, y.size))), shape=X.shape)
    return sp.csr_matrix(X.multiply(1 / np.sqrt(X.multiply(X).sum(axis=1)))), y


# ----------------------------------------------------------------------------- the CLI
def run_cli(capsys, *argv):
    """``(exit code, stdout, stderr)`` of ``hardneg ARGV...`` run in this process (arguments made strings)."""
    from hardneg.cli.main import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(result, *fragments):
    """``result`` of :func:`run_cli` is a user error: exit code 2, one line holding every fragment, no traceback."""
    code, _, err = result
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# ----------------------------------------------------------------------------- zero-shot data
def write_xlsa17(folder, seed=0):
    """A synthetic xlsa17 folder (``res101.mat`` + ``att_splits.mat``): 8 classes of 20 rows, 6 attributes,
    16-d features; classes 0-5 seen (90 trainval rows in shuffled order, the rest test), 6-7 unseen."""
    import scipy.io

    rng = np.random.default_rng(seed)
    C, a, d, per = 8, 6, 16, 20
    att = 3.0 * rng.random((C, a))
    y = np.repeat(np.arange(C), per)
    X = att[y] @ rng.normal(size=(a, d)) + 0.05 * rng.normal(size=(y.size, d))
    seen_rows = np.flatnonzero(y < 6)
    rng.shuffle(seen_rows)
    trainval, test_seen = seen_rows[:90], seen_rows[90:]
    unseen = np.flatnonzero(y >= 6)
    folder.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(folder / "res101.mat", {"features": X.T, "labels": (y + 1)[:, None]})
    scipy.io.savemat(folder / "att_splits.mat", {
        "att": att.T, "trainval_loc": trainval[:, None] + 1, "test_seen_loc": test_seen[:, None] + 1,
        "test_unseen_loc": unseen[:, None] + 1,
        "allclasses_names": np.array([[f"c{i}"] for i in range(C)], dtype=object)})


# ----------------------------------------------------------------------------- search by description
KEYWORDS = ["striped", "horse", "feline", "whiskers", "feathers", "wings", "fins", "water", "wheels", "engine"]
# class -> description (the stand-in for its WordNet gloss)
GLOSSES = {
    "zebra": "a striped horse",
    "cat": "a feline with whiskers",
    "bird": "an animal with feathers and wings",
    "fish": "it has fins and lives in water",
    "car": "a machine with wheels and an engine",
}


def fake_embed(texts, cache=True, quantized=False):
    """Keyword counts, unit norm, padded to MiniLM's 384 dimensions (deterministic): MiniLM's stand-in."""
    out = np.zeros((len(texts), 384), np.float32)
    for i, t in enumerate(texts):
        words = re.findall(r"[a-z]+", str(t).lower())
        out[i, : len(KEYWORDS)] = [words.count(w) for w in KEYWORDS]
        out[i, 383] = 0.1  # never the zero vector
        out[i] /= np.linalg.norm(out[i])
    return out


def fake_text_models(monkeypatch) -> None:
    """:func:`fake_embed` for MiniLM and :data:`GLOSSES` for WordNet (``monkeypatch``: a pytest MonkeyPatch)."""
    from hardneg.zeroshot import _descriptions

    monkeypatch.setattr(_descriptions, "embed_texts", fake_embed)
    monkeypatch.setattr(_descriptions, "wordnet_gloss", lambda name, wordnet=None: GLOSSES.get(name))
    monkeypatch.setattr("hardneg.concept._related.load_wordnet", lambda *a, **k: None)


def text_class_data(n_per_class=30, seed=0, texts=GLOSSES):
    """``(X, y)``: images of the classes of ``texts``, features a noisy linear image of each class's description."""
    rng = np.random.default_rng(seed)
    D = fake_embed(list(texts.values()))[:, : len(KEYWORDS)]
    y = np.repeat(np.arange(len(texts)), n_per_class)
    X = D[y] @ rng.normal(size=(len(KEYWORDS), 16)) + 0.05 * rng.normal(size=(y.size, 16))
    return (X - X.min()).astype(np.float32), y  # non-negative, as CNN features (and concept training) are


def make_text_store(path, seed=0):
    """A store of :func:`text_class_data` tagged with the class names (paths ``img<i>.png``); returns ``y``."""
    from hardneg.store import FeatureStore

    X, y = text_class_data(seed=seed)
    names = list(GLOSSES)
    with FeatureStore.create(path, dim=X.shape[1]) as store:
        store.append(X, tags=[[names[c]] for c in y], paths=[f"img{i}.png" for i in range(len(y))])
    return y


# ----------------------------------------------------------------------------- a real server and browser
def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(app):
    """The app under uvicorn on a free loopback port, in a thread; yields its URL."""
    import uvicorn

    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    th = threading.Thread(target=srv.run, daemon=True)
    th.start()
    t0 = time.time()
    while not srv.started:
        assert time.time() - t0 < 30 and th.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        srv.should_exit = True
        th.join(10)


def chrome_driver(tmp_path, chromium: str, driver: str):
    """A headless Chromium driven by Selenium (profile under ``tmp_path``); skips the test if it cannot start."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                f"--user-data-dir={tmp_path / 'chrome-profile'}", "--window-size=1366,900"):
        opts.add_argument(arg)
    try:
        browser = webdriver.Chrome(service=Service(driver), options=opts)
    except Exception as exc:  # noqa: BLE001 - a browser that cannot start here is a skip, not a failure
        pytest.skip(f"chromium could not start: {str(exc).splitlines()[0]}")
    browser.set_page_load_timeout(30)
    return browser


# ------------------------------------------------------------------ corrupt files
def flipped_byte_copies(raw: bytes, dest, n: int, seed: int):
    """Write ``raw`` to ``dest`` ``n`` times, each with one byte flipped at a seeded random
    position (XOR 1-255), yielding after each write: the body of every flipped-bytes test."""
    rng = np.random.default_rng(seed)
    for pos, flip in zip(rng.integers(0, len(raw), n), rng.integers(1, 256, n)):
        bad = bytearray(raw)
        bad[pos] ^= flip
        dest.write_bytes(bytes(bad))
        yield


def zeroshot_toy(n_classes=8, per_class=25, n_attr=6, d=16, seed=0):
    """Class attribute vectors mapped linearly to features, little noise: separable, and
    zero-shot transferable. Returns ``(X, y, attrs)``."""
    rng = np.random.default_rng(seed)
    attrs = 3.0 * rng.random((n_classes, n_attr))
    y = np.repeat(np.arange(n_classes), per_class)
    X = attrs[y] @ rng.normal(size=(n_attr, d)) + 0.05 * rng.normal(size=(y.size, d))
    return X.astype(np.float32), y, attrs
