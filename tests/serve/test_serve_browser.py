"""The web page in a real headless Chromium (Selenium) against uvicorn on loopback.

Skipped, with the reason in the summary line, when selenium, chromium or
chromedriver are missing. Set ``HARDNEG_UPDATE_SCREENSHOT=1`` to also copy the
screenshot to ``docs/serve-screenshot.png`` (the README's picture).
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from _helpers import chrome_driver, serving

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

selenium = pytest.importorskip("selenium", reason="selenium is not installed: browser test skipped")
if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
    pytest.skip("chromium / chromedriver not found (Debian: apt-get install chromium chromium-driver): browser test skipped",
                allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from hardneg.serve import create_app
    from hardneg.demos.service import build_demo_store

    # the same folder as test_serve_api.py's fixture: the store and hasher are built once per session
    store, models = build_demo_store(tmp_path_factory.getbasetemp() / "serve-demo", n_bits=16, n_labeled=300)
    mine = tmp_path_factory.mktemp("browser-models")
    for f in models.iterdir():
        if f.is_file():
            shutil.copyfile(f, mine / f.name)
    app = create_app(store, models_dir=mine, concept_iterations=3, concept_positives=40)
    with serving(app) as url:
        yield url


@pytest.fixture()
def browser(tmp_path):
    driver = chrome_driver(tmp_path, CHROMIUM, DRIVER)
    yield driver
    driver.quit()


PAGE = 24


def _ids(driver):  # read in one script: the grid may be re-rendered between two element reads
    return driver.execute_script("return [...document.querySelectorAll('#grid .card')].map((c) => c.dataset.id)")


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
        dest = Path(__file__).resolve().parents[2] / "docs" / "serve-screenshot.png"
        dest.parent.mkdir(exist_ok=True)
        shutil.copyfile(tmp_path / "concept.png", dest)


def _wait_idle(driver, wait, text):
    wait.until(lambda d: text in _status(d) and not d.find_element(By.ID, "grid").get_attribute("class").count("stale"))


def test_page_browse_paging_query_preview_counts_and_errors(server, browser, tmp_path):
    """Issue 26: a browse view on first load, next / previous pages, the query shown above its
    results (the query item itself left out), counts shown as counts, a cleared grid after an error."""
    from PIL import Image

    wait = WebDriverWait(browser, 60, poll_frequency=0.1)
    browser.get(server)
    wait.until(lambda d: len(_ids(d)) == PAGE)
    assert _ids(browser) == [f"digits-{i}" for i in range(PAGE)]
    assert browser.find_element(By.ID, "page-info").text == "1–24 of 1,797"
    assert not browser.find_element(By.ID, "prev").is_enabled()
    assert "train" in browser.find_element(By.ID, "split-note").text
    assert not browser.find_element(By.ID, "extractor-status").is_displayed()
    browser.find_element(By.ID, "next").click()
    wait.until(lambda d: _ids(d)[:1] == ["digits-24"])
    assert _ids(browser) == [f"digits-{i}" for i in range(PAGE, 2 * PAGE)]
    browser.find_element(By.ID, "prev").click()
    wait.until(lambda d: _ids(d)[:1] == ["digits-0"])
    # "similar" on digits-5: the query shown above, left out of its results, and its pages
    browser.find_element(By.CSS_SELECTOR, '#grid .card[data-id="digits-5"] button.sim').click()
    _wait_idle(browser, wait, "similar to digits-5")
    first = _ids(browser)
    assert len(first) == PAGE and "digits-5" not in first
    fig = browser.find_element(By.ID, "query")
    assert fig.is_displayed() and "digits-5" in browser.find_element(By.ID, "query-img").get_attribute("src")
    timings = browser.find_element(By.ID, "timings").text
    assert "batch size 1" in timings and "batch_size" not in timings and "batch size 1000" not in timings
    browser.find_element(By.ID, "next").click()
    wait.until(lambda d: d.find_element(By.ID, "page-info").text.startswith("25–48"))
    second = _ids(browser)
    assert len(second) == PAGE and not set(second) & set(first) and "digits-5" not in second
    assert browser.find_element(By.CSS_SELECTOR, "#grid .card .meta").text.startswith("#25 ")
    # an uploaded image is shown above its results
    png = tmp_path / "q.png"
    Image.fromarray(np.full((24, 24), 200, np.uint8)).save(png)
    browser.find_element(By.ID, "file-input").send_keys(str(png))
    _wait_idle(browser, wait, "similar to q.png")
    assert browser.find_element(By.ID, "query-img").get_attribute("src").startswith("blob:")
    assert "q.png" in browser.find_element(By.ID, "query-caption").text
    # an error clears the grid, the query and the pager
    box = browser.find_element(By.ID, "tag-input")
    box.clear()
    box.send_keys("no-such-tag", Keys.ENTER)
    wait.until(lambda d: "no item is tagged" in _status(d))
    assert _ids(browser) == [] and not browser.find_element(By.ID, "query").is_displayed()
    assert not browser.find_element(By.ID, "pager").is_displayed()


def test_page_concept_from_selected_items_feedback_and_one_model_per_concept(server, browser):
    wait = WebDriverWait(browser, 60, poll_frequency=0.1)
    browser.get(server)
    wait.until(lambda d: len(_ids(d)) == PAGE)
    learn = browser.find_element(By.ID, "learn")
    assert not learn.is_enabled()
    # select three 0s in the browse view (✓) and learn a concept from them
    zeros = [c for c in browser.find_elements(By.CSS_SELECTOR, "#grid .card") if c.text.split("\n")[0].endswith(" · 0")][:3]
    assert len(zeros) == 3
    chosen = [c.get_attribute("data-id") for c in zeros]
    for c in zeros:
        c.find_element(By.CSS_SELECTOR, "button.rel").click()
    assert browser.find_element(By.ID, "n-selected").text == "3" and learn.is_enabled()
    learn.click()
    _wait_idle(browser, wait, "results from model")
    name = browser.find_element(By.ID, "model-name").text
    assert name == f"model: items-{chosen[0]}" and "trained on 3 positives" in _status(browser)
    metas = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#grid .card .meta")]
    assert sum(" · 0 · " in t for t in metas) >= 9  # new finds from 3 examples; a random page holds ~2
    # the page opens on the new finds (issue 37 item 4): the 3 examples are not among them
    assert "new finds only" in _status(browser) and not set(chosen) & set(_ids(browser))
    assert browser.find_element(By.ID, "page-info").text.endswith("of 1,794")  # the pager says how many
    # feedback: one ✗, one more ✓; the ✗ item leaves the list, the marks persist across rounds
    cards = browser.find_elements(By.CSS_SELECTOR, "#grid .card")
    rejected = next(c for c in cards if " · 0 · " not in c.text and c.get_attribute("data-id") not in chosen)
    rejected_id = rejected.get_attribute("data-id")
    rejected.find_element(By.CSS_SELECTOR, "button.notrel").click()
    kept = next(c for c in cards if " · 0 · " in c.text and c.get_attribute("data-id") not in chosen)
    kept_id = kept.get_attribute("data-id")
    kept.find_element(By.CSS_SELECTOR, "button.rel").click()
    browser.find_element(By.ID, "rerank").click()
    _wait_idle(browser, wait, "re-ranked")
    ids = _ids(browser)
    assert rejected_id not in ids and kept_id not in ids  # ✓ made it a training example: not a new find
    browser.find_element(By.ID, "show-examples").click()  # show them, marked [example]
    wait.until(lambda d: kept_id in _ids(d) and "examples are marked" in _status(d) and "stale" not in
               d.find_element(By.ID, "grid").get_attribute("class"))
    card = browser.find_element(By.CSS_SELECTOR, f'#grid .card[data-id="{kept_id}"]')
    assert {"rel", "example"} <= set(card.get_attribute("class").split()) and "[example]" in card.text
    assert card.find_element(By.CSS_SELECTOR, "button.rel").get_attribute("aria-pressed") == "true"
    assert browser.find_element(By.ID, "n-marked").text == "5"
    browser.find_element(By.ID, "next").click()  # later pages leave it out too
    wait.until(lambda d: d.find_element(By.ID, "page-info").text.startswith("25–48"))
    assert rejected_id not in _ids(browser)
    # the same tag twice: one model, replaced
    for _ in range(2):
        box = browser.find_element(By.ID, "tag-input")
        box.clear()
        box.send_keys("4", Keys.ENTER)
        _wait_idle(browser, wait, "concept “4”")
    names = [li.get_attribute("data-name") for li in browser.find_elements(By.CSS_SELECTOR, "#models-list li")]
    assert names.count("4") == 1 and "4-2" not in names
    # a model from a tag: its 40 tagged positives are [example]s, not the user's ✓ marks
    assert browser.find_element(By.ID, "n-marked").text == "0"
    browser.find_element(By.CSS_SELECTOR, '#models-list button[aria-label="search with model 4"]').click()
    _wait_idle(browser, wait, "model “4”")
    assert browser.find_element(By.ID, "n-marked").text == "0"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#grid .card.example")) > 0
    # reopening the model learnt from marks shows those marks (4 ✓ and 1 ✗), not an unmarked grid
    browser.find_element(By.CSS_SELECTOR, f'#models-list button[aria-label="search with model items-{chosen[0]}"]').click()
    _wait_idle(browser, wait, f"model “items-{chosen[0]}”")
    assert browser.find_element(By.ID, "n-marked").text == "5" and browser.find_element(By.ID, "n-selected").text == "4"
    card = browser.find_element(By.CSS_SELECTOR, f'#grid .card[data-id="{kept_id}"]')
    assert "rel" in card.get_attribute("class").split() and rejected_id not in _ids(browser)


def test_page_rerank_stays_on_its_page(server, browser):
    """Issue 37 item 13: re-ranking from page 2 showed page 1."""
    wait = WebDriverWait(browser, 60, poll_frequency=0.1)
    browser.get(server)
    wait.until(lambda d: len(_ids(d)) == PAGE)
    box = browser.find_element(By.ID, "tag-input")
    box.send_keys("7", Keys.ENTER)
    _wait_idle(browser, wait, "results from model")
    browser.find_element(By.ID, "next").click()
    wait.until(lambda d: d.find_element(By.ID, "page-info").text.startswith("25–48 of "))
    browser.find_elements(By.CSS_SELECTOR, "#grid .card button.notrel")[0].click()
    browser.find_element(By.ID, "rerank").click()
    _wait_idle(browser, wait, "re-ranked")
    assert browser.find_element(By.ID, "page-info").text.startswith("25–48 of ")
    assert browser.find_element(By.CSS_SELECTOR, "#grid .card .meta").text.startswith("#25 ")


def test_transparent_item_thumbnail_is_drawn_on_a_light_background(browser, tmp_path):
    """Issue 37 item 2: black line art on a transparent PNG was a black square on the page."""
    import io

    from PIL import Image

    from hardneg.serve import create_app
    from hardneg.store import FeatureStore

    art = np.zeros((64, 64, 4), np.uint8)
    art[30:34, 8:56, 3] = 255  # a black bar, opaque; the rest transparent black
    Image.fromarray(art, "RGBA").save(tmp_path / "bar.png")
    with FeatureStore.create(tmp_path / "s.store", dim=2) as s:
        s.append(np.eye(2, dtype=np.float32), ids=["bar.png", "other"], paths=[str(tmp_path / "bar.png"), None])
    with serving(create_app(tmp_path / "s.store")) as url:
        browser.get(url)
        wait = WebDriverWait(browser, 60, poll_frequency=0.1)
        wait.until(lambda d: d.execute_script(
            "const i = document.querySelector('#grid .card[data-id=\"bar.png\"] img'); return i && i.complete && i.naturalWidth > 0"))
        img = browser.find_element(By.CSS_SELECTOR, '#grid .card[data-id="bar.png"] img')
        shot = np.asarray(Image.open(io.BytesIO(img.screenshot_as_png)).convert("L"), np.float64)
    assert shot.mean() > 180  # mostly white: the background
    assert shot.min() < 60  # the bar is still drawn


def test_page_says_while_the_feature_extractor_loads(browser, tmp_path, monkeypatch):
    from hardneg.serve import create_app
    from hardneg.serve._images import ImageQuery
    from hardneg.store import FeatureStore

    path = tmp_path / "cnn.store"
    with FeatureStore.create(path, dim=4, attrs={"extractor": {"extractor": "cnn", "input_size": 16}}) as s:
        s.append(np.eye(4, dtype=np.float32), ids=["a", "b", "c", "d"])
    gate = threading.Event()

    class Fake:
        def transform(self, images):
            return np.ones((len(images), 4), np.float32)

    def build(self):
        assert gate.wait(60)
        return Fake()

    monkeypatch.setattr(ImageQuery, "_build", build)
    with serving(create_app(path, models_dir=tmp_path / "models")) as url:
        wait = WebDriverWait(browser, 30, poll_frequency=0.1)
        browser.get(url)
        note = browser.find_element(By.ID, "extractor-status")
        assert note.is_displayed() and "loading the feature extractor" in note.text
        gate.set()
        wait.until(lambda d: not d.find_element(By.ID, "extractor-status").is_displayed())
