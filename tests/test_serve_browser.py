"""The web page in a real headless Chromium (Selenium) against uvicorn on loopback.

Skipped, with the reason in the summary line, when selenium, chromium or
chromedriver are missing. Set ``HARDNEG_UPDATE_SCREENSHOT=1`` to also copy the
screenshot to ``docs/serve-screenshot.png`` (the README's picture).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    import uvicorn

    from hardneg.serve import create_app
    from hardneg.serve.demo import build_demo_store

    # the same folder as test_serve_api.py's fixture: the store and hasher are built once per session
    store, models = build_demo_store(tmp_path_factory.getbasetemp() / "serve-demo", n_bits=16, n_labeled=300)
    mine = tmp_path_factory.mktemp("browser-models")
    for f in models.iterdir():
        if f.is_file():
            shutil.copyfile(f, mine / f.name)
    app = create_app(store, models_dir=mine, concept_iterations=3, concept_positives=40)
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    th = threading.Thread(target=srv.run, daemon=True)
    th.start()
    t0 = time.time()
    while not srv.started:
        assert time.time() - t0 < 30 and th.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/"
    srv.should_exit = True
    th.join(10)


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


def _ids(driver):
    return [c.get_attribute("data-id") for c in driver.find_elements(By.CSS_SELECTOR, "#grid .card")]


def _status(driver):
    return driver.find_element(By.ID, "status").text


def test_page_search_feedback_and_query_by_example(server, browser, tmp_path):
    from PIL import Image

    from hardneg.datasets import load_digits

    wait = WebDriverWait(browser, 60, poll_frequency=0.1)
    browser.get(server)
    assert "hardneg search" in browser.title
    # tag search, typed and submitted by keyboard
    box = browser.find_element(By.ID, "tag-input")
    box.send_keys("3", Keys.ENTER)
    wait.until(lambda d: "results from model" in _status(d))
    first = _ids(browser)
    assert len(first) == 24
    assert "ms" in browser.find_element(By.ID, "timings").text
    labels = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#grid .card .meta")]
    assert sum(" · 3 · " in t for t in labels) >= 20
    # mark two results not relevant: one by mouse, one by keyboard (focus + Enter)
    cards = browser.find_elements(By.CSS_SELECTOR, "#grid .card")
    cards[0].find_element(By.CSS_SELECTOR, "button.notrel").click()
    btn = cards[1].find_element(By.CSS_SELECTOR, "button.notrel")
    browser.execute_script("arguments[0].focus()", btn)
    btn.send_keys(Keys.ENTER)
    assert btn.get_attribute("aria-pressed") == "true"
    assert browser.find_element(By.ID, "n-marked").text == "2"
    rerank = browser.find_element(By.ID, "rerank")
    assert rerank.is_enabled()
    rerank.click()
    wait.until(lambda d: "re-ranked" in _status(d))
    second = _ids(browser)
    assert len(second) == 24 and second != first
    assert first[0] not in second[:2] and first[1] not in second[:2]
    # the saved-models list shows the model
    wait.until(lambda d: "3" in [li.get_attribute("data-name") for li in d.find_elements(By.CSS_SELECTOR, "#models-list li")])
    browser.save_screenshot(str(tmp_path / "concept.png"))
    # query by example: an uploaded image, through the drop zone's file input
    d = load_digits()
    png = tmp_path / "query.png"
    Image.fromarray(np.kron((d.X[10].reshape(8, 8) / 16 * 255).astype(np.uint8), np.ones((6, 6), np.uint8))).save(png)
    browser.find_element(By.ID, "file-input").send_keys(str(png))
    wait.until(lambda d: "similar to query.png" in _status(d))
    qbe = _ids(browser)
    assert len(qbe) == 24
    metas = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#grid .card .meta")]
    assert sum(" · 0 · " in t for t in metas) >= 12
    # and by a stored item ("similar" on a result)
    browser.find_elements(By.CSS_SELECTOR, "#grid .card button.sim")[3].click()
    wait.until(lambda d: "similar to digits-" in _status(d))
    shot = tmp_path / "serve-screenshot.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    if os.environ.get("HARDNEG_UPDATE_SCREENSHOT"):
        # the README's picture: the concept grid after feedback
        dest = Path(__file__).resolve().parents[1] / "docs" / "serve-screenshot.png"
        dest.parent.mkdir(exist_ok=True)
        shutil.copyfile(tmp_path / "concept.png", dest)
