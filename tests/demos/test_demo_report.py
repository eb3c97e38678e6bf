"""The demo's HTML report says what it shows (issue 27): the console's hashing and kNN
results as tables, figures titled with the concept and setting, integer iteration
ticks, single-point series drawn as a marked line."""

import html
import re
import xml.etree.ElementTree as ET

import pytest
from rich.console import Console

from hardneg.demos.digits import retrieval_tables, run_demo
from hardneg.report import svg_line_chart

SVG = "{http://www.w3.org/2000/svg}"


def _svgs(page: str) -> list[ET.Element]:
    return [ET.fromstring(s) for s in re.findall(r"<svg.*?</svg>", page, flags=re.S)]


def _xticks(svg: ET.Element) -> list[str]:
    return [t.text for t in svg.iter(f"{SVG}text") if t.get("class") == "xtick"]


def _series(svg: ET.Element) -> dict:
    return {g.get("data-name"): g for g in svg.iter(f"{SVG}g") if g.get("class") == "series"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The whole demo at its smallest settings (T = 2, 8-bit codes): about 10 s."""
    out = tmp_path_factory.mktemp("demo")
    console = Console(record=True, width=250)
    summary = run_demo(out, n_iter=2, n_bits=8, console=console)
    page = (out / "concept_report.html").read_text(encoding="utf-8")
    return summary, console.export_text(), page


def test_report_holds_the_hashing_and_knn_tables_the_console_shows(demo):
    summary, text, page = demo
    hashing, knn = summary["hashing"], summary["euclidean_knn"]
    tables = retrieval_tables(hashing, knn)
    assert len(tables) == 1  # the method and its baseline in one table
    for t in tables:  # one section each: its heading, then a table with the same cells
        section = page.split(f"<h2>{html.escape(t['title'])}</h2>", 1)
        assert len(section) == 2, t["title"]
        table = section[1].split("</table>", 1)[0]
        for cell in [*t["header"], *[c for row in t["rows"] for c in row]]:
            assert f"<td>{html.escape(cell)}</td>" in table or f"<th>{html.escape(cell)}</th>" in table
            assert cell in text  # the console shows the same string
        assert " ".join(t["title"].split()) in " ".join(text.split())
    # the numbers are the run's, formatted as the console formats them
    for value in (hashing["mAP@100"], hashing["mAP"], knn["mAP@100"], knn["mAP"]):
        assert f"{value:.4f}" in text and f"<td>{value:.4f}</td>" in page
    assert "8-bit codes" in page and f"{knn['n_queries']} test queries" in page
    assert f"Model Compression of the concept 'digit {summary['concept_search']['featured_concept']}'" in text


def test_demo_figure_names_concept_and_setting(demo):
    summary, _, page = demo
    (svg,) = _svgs(page)
    title = svg.find(f"{SVG}title").text
    assert "Concept 'digit 3' (sklearn digits)" in title and "iteration" in title
    caption = re.search(r"<figcaption>(.*?)</figcaption>", page, flags=re.S).group(1)
    assert "digit 3" in caption and "T = 2" in caption
    assert summary["concept_search"]["featured_concept"] == "3"
    assert not re.search(r"<h2>[^<]*\(Fig\. \d\)</h2>", page)  # no bare figure numbers as the only label
    assert _xticks(svg) == ["1", "2"]  # T = 2 iterations: ticks at 1 and 2, no 1.25 / 1.5
    single = [g for g in _series(svg).values() if len(g.findall(f"{SVG}circle")) and g.find(f"{SVG}polyline") is None]
    assert single and "pooled (class-weighted)" in _series(svg)
    for g in single:  # the pooled classifier has no iterations: a dashed level line with markers
        assert g.find(f"{SVG}line").get("stroke-dasharray")


def test_single_point_series_is_a_marked_line_not_a_lone_dot():
    svg = ET.fromstring(svg_line_chart({"bootstrap": [(1, 0.5), (2, 0.6), (3, 0.7)], "pooled": [(1, 0.55)]},
                                       title="t", integer_x=True))
    plot = svg.find(f"{SVG}rect")
    width = float(plot.get("width"))
    pooled = _series(svg)["pooled"]
    lines = [ln for ln in pooled.findall(f"{SVG}line") if float(ln.get("x2")) - float(ln.get("x1")) >= width]
    assert lines, "a single point must be drawn across the plot, not as a dot"
    assert len([c for c in pooled.findall(f"{SVG}circle") if float(c.get("r")) >= 3]) >= 2  # markers on it
    multi = _series(svg)["bootstrap"]  # a curve keeps a marker on every point
    assert multi.find(f"{SVG}polyline") is not None and len(multi.findall(f"{SVG}circle")) >= 3


@pytest.mark.parametrize("xs, expected", [([1, 2, 3], ["1", "2", "3"]), (list(range(1, 11)), [str(t) for t in range(1, 11)]),
                                          (list(range(1, 31)), [str(t) for t in range(1, 31, 3)]),
                                          ([1], ["1"])])
def test_iteration_axis_has_integer_ticks(xs, expected):
    svg = ET.fromstring(svg_line_chart({"a": [(x, 0.1 * x) for x in xs]}, integer_x=True))
    assert _xticks(svg) == expected
    # without integer_x the axis is continuous (e.g. a threshold), ticks may fall between
    assert "1.5" in _xticks(ET.fromstring(svg_line_chart({"a": [(1, 0.1), (3, 0.3)]})))


def test_chart_title_is_shown_and_escaped():
    svg = svg_line_chart({"a": [(1, 0.5), (2, 0.6)]}, title="Concept 'digit 3' <x>: AP")
    tree = ET.fromstring(svg)
    assert tree.find(f"{SVG}title").text == "Concept 'digit 3' <x>: AP"
    assert [t.text for t in tree.iter(f"{SVG}text") if t.get("class") == "chart-title"] == ["Concept 'digit 3' <x>: AP"]
