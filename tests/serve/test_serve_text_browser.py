"""The page's text box (search by description, issue 26) in a real headless Chromium.

Skipped, with the reason in the summary line, when selenium, chromium or chromedriver are
missing. The store's tags are described by a stand-in for their WordNet glosses, embedded
by a keyword embedder instead of MiniLM (as tests/serve/test_serve_text_api.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import threading
import time

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

selenium = pytest.importorskip("selenium", reason="selenium is not installed: browser test skipped")
if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
    pytest.skip("chromium / chromedriver not found (Debian: apt-get install chromium chromium-driver): browser test skipped",
                allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

KEYWORDS = ["striped", "horse", "feline", "whiskers", "feathers", "wings", "fins", "water", "wheels", "engine"]
GLOSSES = {"zebra": "a striped horse", "cat": "a feline with whiskers", "bird": "an animal with feathers and wings",
           "fish": "it has fins and lives in water", "car": "a machine with wheels and an engine"}


def fake_embed(texts, cache=True):
    out = np.zeros((len(texts), 384), np.float32)
    for i, t in enumerate(texts):
        words = re.findall(r"[a-z]+", str(t).lower())
        out[i, : len(KEYWORDS)] = [words.count(w) for w in KEYWORDS]
        out[i, 383] = 0.1
        out[i] /= np.linalg.norm(out[i])
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _serving(app):
    import uvicorn

    port = _free_port()
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


@pytest.fixture()
def server(tmp_path):
    from hardneg.serve import create_app
    from hardneg.store import FeatureStore
    from hardneg.zeroshot import _descriptions

    rng = np.random.default_rng(0)
    names = list(GLOSSES)
    D = fake_embed(list(GLOSSES.values()))[:, : len(KEYWORDS)]
    y = np.repeat(np.arange(len(names)), 30)
    X = D[y] @ rng.normal(size=(len(KEYWORDS), 16)) + 0.05 * rng.normal(size=(y.size, 16))
    with FeatureStore.create(tmp_path / "s", dim=16) as store:
        store.append((X - X.min()).astype(np.float32), tags=[[names[c]] for c in y], paths=[f"img{i}.png" for i in range(y.size)])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_descriptions, "embed_texts", fake_embed)
        mp.setattr(_descriptions, "wordnet_gloss", lambda name, wordnet=None: GLOSSES.get(name))
        mp.setattr("hardneg.concept._related.load_wordnet", lambda *a, **k: None)
        with _serving(create_app(tmp_path / "s", models_dir=tmp_path / "models")) as url:
            yield url


@pytest.fixture()
def browser(tmp_path):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                f"--user-data-dir={tmp_path / 'chrome-profile'}", "--window-size=1366,900"):
        opts.add_argument(arg)
    try:
        driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    except Exception as exc:  # noqa: BLE001 - a browser that cannot start here is a skip, not a failure
        pytest.skip(f"chromium could not start: {str(exc).splitlines()[0]}")
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _cards(driver):  # read in one script: the grid may be re-rendered between two element reads
    return driver.execute_script(
        "return [...document.querySelectorAll('#grid .card')].map((c) => [c.dataset.id, c.querySelector('.meta').textContent])")


def _status(driver):
    return driver.find_element(By.ID, "status").text


def test_text_box_ranks_the_described_class_with_paging(server, browser):
    wait = WebDriverWait(browser, 120, poll_frequency=0.1)
    browser.get(server)
    wait.until(lambda d: len(_cards(d)) == 24)  # browsing the store first
    box = browser.find_element(By.ID, "text-input")
    box.send_keys("something with wings and feathers", Keys.ENTER)
    wait.until(lambda d: "text “something with wings and feathers”: 24 results (text)" in _status(d))
    first = _cards(browser)
    assert len(first) == 24 and all(" · score " in meta for _, meta in first)
    # the store's ids are row numbers; rows 60..89 are the birds
    assert all(60 <= int(i) < 90 for i, _ in first)
    browser.find_element(By.ID, "next").click()
    wait.until(lambda d: d.find_element(By.ID, "page-info").text.startswith("25–"))
    second = _cards(browser)
    assert {i for i, _ in second}.isdisjoint(i for i, _ in first)
    assert sum(60 <= int(i) < 90 for i, _ in second) == 6  # the last 6 birds open page 2
    assert second[0][1].startswith("#25 ")
    browser.find_element(By.ID, "prev").click()
    wait.until(lambda d: [i for i, _ in _cards(d)] == [i for i, _ in first])
    # an empty box does nothing; the error of a failed search shows in the status line
    box.clear()
    box.send_keys(Keys.ENTER)
    assert "text “something with wings and feathers”" in _status(browser)
