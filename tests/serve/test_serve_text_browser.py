"""The page's text box (search by description, issue 26) in a real headless Chromium.

Skipped, with the reason in the summary line, when selenium, chromium or chromedriver are
missing. The store's tags are described by a stand-in for their WordNet glosses, embedded
by a keyword embedder instead of MiniLM (as tests/serve/test_serve_text_api.py).
"""

from __future__ import annotations

import os
import shutil

import pytest
from _helpers import chrome_driver, fake_text_models, make_text_store, serving

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

selenium = pytest.importorskip("selenium", reason="selenium is not installed: browser test skipped")
if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
    pytest.skip("chromium / chromedriver not found (Debian: apt-get install chromium chromium-driver): browser test skipped",
                allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture()
def server(tmp_path):
    from hardneg.serve import create_app

    make_text_store(tmp_path / "s")
    with pytest.MonkeyPatch.context() as mp:
        fake_text_models(mp)
        with serving(create_app(tmp_path / "s", models_dir=tmp_path / "models")) as url:
            yield url


@pytest.fixture()
def browser(tmp_path):
    driver = chrome_driver(tmp_path, CHROMIUM, DRIVER)
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
