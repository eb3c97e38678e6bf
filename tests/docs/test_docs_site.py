"""The documentation site builds strictly and every page works in a real browser.

Builds the site with ``mkdocs build --strict`` (the hook regenerates every
results table and figure from benchmarks/results/*.json), serves it over HTTP
and checks every page: each has a title, every image decodes, every internal
link points at a file the build produced. A sample of pages (home, every method
page, the first page of each section) opens in headless Chromium with the same
checks on the rendered page (naturalWidth > 0), and each method page's
screenshot is not blank. No page shows a raw Sphinx role (``:func:`x```) or a raw
plain-text formula (``G_{T+1}``, ``lambda_t``) outside code, and the maths is
typeset by a MathJax the site serves itself (no CDN: the site works offline).
"""

import functools
import html.parser
import http.server
import io
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

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
    scripts = [p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_") and p.stem != "readme_figures"]
    for s in scripts:
        assert (site / "generated" / "benchmarks" / s / "index.html").is_file(), f"no benchmark page for {s}.py"
    # figures are produced from the result files, not copied
    assert list((site / "generated" / "figures").glob("*.png"))
    # the home page shows the README's generated headline table
    assert "baseline in the same run" in (site / "index.html").read_text(encoding="utf-8")


def _pages(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site).parent) for p in site.rglob("index.html"))


class _PageParser(html.parser.HTMLParser):
    """The title, image sources and link targets of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.title, self.images, self.links, self._in_title = "", [], [], False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "title":
            self._in_title = True
        elif tag == "img" and a.get("src"):
            self.images.append(a["src"])
        elif tag == "a" and a.get("href"):
            self.links.append(a["href"])

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def _target(site: Path, page: str, ref: str) -> Path | None:
    """The file an internal reference of ``page`` points at, or None for an external one."""
    u = urlparse(urljoin(f"http://site/{'' if page == '.' else page + '/'}", ref))
    if u.netloc != "site":
        return None
    return site / unquote(u.path).lstrip("/")


def _page_problems(site: Path, page: str) -> list[str]:
    """What is wrong with one built page: no title, an image that does not decode, a broken internal link."""
    from PIL import Image

    parser = _PageParser()
    parser.feed((site / page / "index.html").read_text(encoding="utf-8"))
    problems = [] if parser.title.strip() else [f"{page}: no title"]
    for src in parser.images:
        target = _target(site, page, src)
        if target is None:
            continue
        try:
            with Image.open(target) as im:
                im.verify()  # the file exists and decodes, as naturalWidth > 0 says in a browser
        except (OSError, SyntaxError):
            problems.append(f"{page}: image {src} does not load")
    for href in sorted(set(parser.links)):
        target = _target(site, page, href)
        if target is not None and not (target.is_file() or (target / "index.html").is_file()):
            problems.append(f"{page}: broken link {href}")
    return problems


def test_every_page_has_a_title_loading_images_and_no_broken_link(site):
    # Every page, parsed; the browser test below opens a sample, since a page costs ~1 s there.
    problems = [msg for page in _pages(site) for msg in _page_problems(site, page)]
    assert not problems, "\n".join(problems[:30])


def test_page_checker_catches_a_missing_title_a_broken_link_and_a_broken_image(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text(
        '<a href="../b/">b</a><a href="https://example.org/">ext</a><a href="#top">top</a><img src="x.png">')
    (tmp_path / "a" / "x.png").write_bytes(b"not a png")
    assert _page_problems(tmp_path, "a") == ["a: no title", "a: image x.png does not load", "a: broken link ../b/"]
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "index.html").write_text("<title>B</title>")
    from PIL import Image

    Image.new("L", (2, 2)).save(tmp_path / "a" / "x.png")
    assert _page_problems(tmp_path, "a") == ["a: no title"]


#: a docstring role as Sphinx writes it, left verbatim by mkdocstrings (docs/hooks.py turns them into links)
RAW_ROLE = re.compile(r":(?:py:)?(?:meth|func|class|mod|data|attr|exc|obj|const):")
#: TeX-ish maths written as plain text: a braced sub/superscript anywhere, or a one-letter (or Greek-named)
#: symbol with a short subscript (G_T, g_t, lambda_t), not an identifier such as fit_s or ap_at_k
RAW_MATHS = re.compile(r"_\{|\^\{|(?<![\w.\\/-])(?:[A-Za-z]|lambda|alpha|delta|gamma|tau|eta|sigma)_[A-Za-z0-9]{1,3}(?![\w])")


class _TextParser(html.parser.HTMLParser):
    """The page's prose: text outside code, preformatted blocks, links, headings, scripts and typeset maths."""

    SKIP = {"code", "pre", "script", "style", "a", "h1", "h2", "h3", "h4", "h5", "h6", "kbd", "title"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script" and a.get("src"):
            self.scripts.append(a["src"])
        if tag == "link" and a.get("rel") == "stylesheet" and a.get("href"):
            self.styles.append(a["href"])
        if tag in self.SKIP or "arithmatex" in (a.get("class") or ""):
            self.stack.append(tag)
        elif self.stack and tag == self.stack[-1]:
            self.stack.append(tag)  # nested span/div inside a skipped one

    def handle_endtag(self, tag):
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_data(self, data):
        if not self.stack:
            self.text.append(data)


def _prose_problems(site: Path, page: str) -> list[str]:
    """Raw roles anywhere on a page, raw maths in its prose (generated benchmark pages hold data tables whose
    column names are not maths, so only their roles count)."""
    text = (site / page / "index.html").read_text(encoding="utf-8")
    problems = [f"{page}: raw Sphinx role {m.group(0)} in ...{text[max(0, m.start() - 60):m.end() + 40]!r}"
                for m in RAW_ROLE.finditer(text)]
    if not page.startswith("generated/benchmarks"):
        parser = _TextParser()
        parser.feed(text)
        for chunk in parser.text:
            for m in RAW_MATHS.finditer(chunk):
                problems.append(f"{page}: raw maths {chunk[max(0, m.start() - 40):m.end() + 40]!r}")
    return problems


def test_no_raw_sphinx_role_or_raw_maths_on_any_page(site):
    problems = [msg for page in _pages(site) for msg in _prose_problems(site, page)]
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:30])


def test_prose_checker_catches_a_raw_role_and_raw_maths(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "index.html").write_text(
        "<p>see :func:<code>x</code>; G_{T+1} = T/(T+1) G_T and lambda_t, not fit_s or ap_at_k</p>"
        '<p><code>g_{t}</code> <span class="arithmatex">\\(g_t\\)</span> <a href="#">G_T</a></p>')
    problems = _prose_problems(tmp_path, "p")
    assert len(problems) == 4 and "role :func:" in problems[0], problems
    assert ["G_{" in problems[1], "G_T" in problems[2], "lambda_t" in problems[3]] == [True] * 3, problems


def test_maths_and_every_script_and_stylesheet_are_served_by_the_site(site):
    # offline: no page loads a script or stylesheet from another host (a CDN), and each one it names exists
    assert (site / "assets" / "mathjax" / "tex-svg.js").stat().st_size > 1_000_000, "MathJax not copied into the site"
    typeset = 0
    problems = []
    for page in _pages(site):
        text = (site / page / "index.html").read_text(encoding="utf-8")
        parser = _TextParser()
        parser.feed(text)
        for ref in parser.scripts + parser.styles:
            target = _target(site, page, ref)
            if target is None:
                problems.append(f"{page}: {ref} is loaded from another host")
            elif not target.is_file():
                problems.append(f"{page}: {ref} is missing")
        if 'class="arithmatex"' in text:
            typeset += 1
            if not any(s.endswith("assets/mathjax/tex-svg.js") for s in parser.scripts):
                problems.append(f"{page}: has maths but does not load the site's MathJax")
    assert not problems, "\n".join(problems[:30])
    assert typeset >= 5, f"only {typeset} pages have typeset maths: the method pages' formulas are no longer marked up"


def _browser_sample(pages: list[str]) -> list[str]:
    """The pages opened in Chromium: the home page, every method page, and the first page of
    every other section (each kind of page the theme renders: hand-written, API, generated)."""
    chosen, sections = [], set()
    for page in pages:
        section = page.split("/")[0]
        if page == "." or page.startswith("methods/") or section not in sections:
            chosen.append(page)
        sections.add(section)
    return chosen


def test_sample_pages_in_a_browser(site):
    pytest.importorskip("selenium", reason="selenium is not installed: browser test skipped")
    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        pytest.skip("chromium / chromedriver not found (Debian: apt-get install chromium chromium-driver)")
    from _helpers import chrome_driver
    from PIL import Image
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chrome_driver(site.parent, CHROMIUM, DRIVER)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    problems = []
    try:
        for page in _browser_sample(_pages(site)):
            url = urljoin(base, "" if page == "." else page + "/")
            driver.get(url)
            try:  # a loaded machine may hand back the page before its <title> is parsed
                WebDriverWait(driver, 20).until(lambda d: d.title.strip())
            except TimeoutException:
                pass
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
            if driver.execute_script("return document.querySelectorAll('.arithmatex').length"):
                try:  # MathJax typesets after load: every marked-up formula becomes an SVG, none an error
                    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
                        "return document.querySelectorAll('.arithmatex mjx-container').length"
                        " >= document.querySelectorAll('.arithmatex').length"))
                except TimeoutException:
                    problems.append(f"{page}: MathJax did not typeset the page's formulas")
                if driver.execute_script("return document.querySelectorAll('mjx-merror, [data-mjx-error]').length"):
                    problems.append(f"{page}: MathJax could not parse a formula")
            if page.startswith("methods/"):
                shot = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("L")
                lo, hi = shot.getextrema()
                if hi - lo < 50:
                    problems.append(f"{page}: the screenshot is blank")
    finally:
        driver.quit()
        server.shutdown()
    assert not problems, "\n".join(problems[:30])
