"""The documentation site builds strictly and every page works in a real browser.

Builds the site with ``mkdocs build --strict`` (the hook regenerates every
results table and figure from benchmarks/results/*.json), serves it over HTTP
and opens every page in headless Chromium: each has a title, every image loads
(naturalWidth > 0), every internal link points at a file the build produced,
and each method page's screenshot is not blank.
"""

import functools
import http.server
import io
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

if MKDOCS is None:
    pytest.skip("mkdocs is not installed (pip install -e '.[docs]'): docs site test skipped", allow_module_level=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([MKDOCS, "build", "--strict", "-q", "-d", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return out


def test_site_builds_with_every_method_and_benchmark_page(site):
    for page in ("methods/concept", "methods/hashing", "methods/solis", "methods/esvm", "methods/zeroshot",
                 "api/store", "getting-started", "own-images", "store", "service", "scaling"):
        assert (site / page / "index.html").is_file(), page
    scripts = [p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_") and p.stem != "report"]
    for s in scripts:
        assert (site / "generated" / "benchmarks" / s / "index.html").is_file(), f"no benchmark page for {s}.py"
    # figures are produced from the result files, not copied
    assert list((site / "generated" / "figures").glob("*.png"))


def _pages(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site).parent) for p in site.rglob("index.html"))


def test_every_page_in_a_browser(site):
    pytest.importorskip("selenium", reason="selenium is not installed: browser test skipped")
    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        pytest.skip("chromium / chromedriver not found (Debian: apt-get install chromium chromium-driver)")
    from PIL import Image
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                f"--user-data-dir={site.parent / 'chrome-profile'}", "--window-size=1200,900"):
        opts.add_argument(arg)
    try:
        driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    except Exception as exc:  # noqa: BLE001 - a browser that cannot start here is a skip, not a failure
        server.shutdown()
        pytest.skip(f"chromium could not start: {str(exc).splitlines()[0]}")
    problems = []
    try:
        for page in _pages(site):
            url = urljoin(base, "" if page == "." else page + "/")
            driver.get(url)
            if not driver.title.strip():
                problems.append(f"{page}: no title")
            images = driver.execute_script(
                "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0])")
            problems += [f"{page}: image {src} does not load" for src, ok in images if not ok]
            hrefs = driver.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
            for href in set(hrefs):
                u = urlparse(href)
                if u.scheme != "http" or u.netloc != urlparse(base).netloc:
                    continue
                target = site / u.path.lstrip("/")
                if not (target.is_file() or (target / "index.html").is_file()):
                    problems.append(f"{page}: broken link {u.path}")
            if page.startswith("methods/"):
                shot = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("L")
                lo, hi = shot.getextrema()
                if hi - lo < 50:
                    problems.append(f"{page}: the screenshot is blank")
    finally:
        driver.quit()
        server.shutdown()
    assert not problems, "\n".join(problems[:30])
