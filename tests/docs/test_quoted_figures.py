"""Figures quoted in the docs' prose (``{{ NAME/KEY… | FORMAT }}``) are read from the result files at build time
(docs/generate.py's quote_figures, applied by docs/hooks.py's on_page_markdown)."""

import json
from pathlib import Path

import pytest

from docs import generate

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "docs" / "methods").glob("*.md"))


@pytest.fixture
def results(tmp_path, monkeypatch):
    (tmp_path / "speed.json").write_text(json.dumps({
        "command": ["python", "benchmarks/speed.py"], "commit": "0123456789abcdef",
        "training": {"T50_s": 0.39172, "ratio over X@w": {"cpu_min": 6.8389}},
        "rows": [{"feature": "dsift", "gain": 0.0312}, {"feature": "cnn", "gain": 0.0291}], "n": 200000,
        "methods": {"nb[auto]": 0.5, "m=3|B+|": 0.25, "a/b": 2}}))
    monkeypatch.setattr(generate, "RESULTS", tmp_path)
    return tmp_path


def test_a_quoted_figure_reads_its_result_file(results):
    text, names = generate.quote_figures(
        "training takes {{ speed/training/T50_s | .2f }} s, {{ speed/training/ratio over X@w/cpu_min | .1f }}× "
        "X @ w; CNN gains {{ 100 * [speed/rows/feature=cnn/gain] | .1f }} points, {{ speed/rows/0/gain | .1% }} for "
        "dense SIFT, {{ 100 * ([speed/rows/0/gain] - [speed/rows/1/gain]) | +.1f }} more, on {{ speed/n | , }} rows "
        "({{ [speed/n] / 1000 | .0f }}k)")
    assert text == ("training takes 0.39 s, 6.8× X @ w; CNN gains 2.9 points, 3.1% for dense SIFT, +0.2 more, on "
                    "200,000 rows (200k)")
    assert generate.quote_figures("{{ 100 * ([speed/rows/1/gain] - [speed/rows/0/gain]) | +.1f }}")[0] == "\u22120.2"


def test_a_star_path_feeds_mean_min_max_count(results):
    text, names = generate.quote_figures("{{ 1000 * mean([speed/rows/*/gain]) | .2f }} ({{ min([speed/rows/*/gain]) }}–"
                                         "{{ max([speed/rows/*/gain]) }}, {{ count([speed/rows/*/gain]) }} rows)")
    assert text == "30.15 (0.0291–0.0312, 2 rows)" and names == ["speed"]
    with pytest.raises(ValueError, match="takes a path with"):
        generate.quote_figures("{{ max([speed/n]) }}")
    assert names == ["speed"]
    closing = generate.quoted_sources(names)
    assert "benchmarks/results/speed.json" in closing and "`0123456789ab`" in closing


def test_a_key_with_slash_pipe_or_brackets_goes_in_backticks(results):
    text, _ = generate.quote_figures("{{ speed/methods/`nb[auto]` }}, {{ [speed/methods/`m=3|B+|`] * 4 | .1f }}, "
                                     "{{ speed/methods/`a/b` }}, {{ speed/methods/`m=3|B+|` | .2f }}")
    assert text == "0.5, 1.0, 2, 0.25"


def test_text_without_quotes_is_unchanged(results):
    assert generate.quote_figures("a {b} c {{ not a path }} d") == ("a {b} c {{ not a path }} d", [])


def test_a_quote_runs_arithmetic_only(results):
    with pytest.raises(ValueError, match="not a quotable expression"):
        generate.quote_figures("{{ __import__('os') or [speed/n] }}")


@pytest.mark.parametrize("quote, missing", [
    ("{{ speed/training/T20_s }}", "'T20_s'"),
    ("{{ speed/rows/feature=pixels/gain }}", "'feature=pixels'"),
    ("{{ speed/rows/7/gain }}", "'7'"),
    ("{{ gone/x }}", "gone.json"),
])
def test_a_quote_that_no_longer_resolves_is_an_error_naming_it(results, quote, missing):
    with pytest.raises(KeyError, match=missing):
        generate.quote_figures(quote)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_a_page_quotes_resolves(page):
    generate.quote_figures(page.read_text(encoding="utf-8"))


def test_quotes_in_code_are_shown_as_written(results):
    page = ("`` {{ speed/n | , }} `` and `{{ gone/x }}` stay; {{ speed/n | , }} is read\n"
            "```\n{{ gone/y }}\n```\n"
            "{{ speed/methods/`nb[auto]` }}")
    text, names = generate.quote_figures(page)
    assert text == ("`` {{ speed/n | , }} `` and `{{ gone/x }}` stay; 200,000 is read\n"
                    "```\n{{ gone/y }}\n```\n0.5")
    assert names == ["speed"]
