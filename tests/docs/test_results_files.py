"""Every file in benchmarks/results/ is read by a page and says what produced it.

A result file earns its place by being read: the one named after its script
(``hash_ties.json`` for benchmarks/hash_ties.py) is the headline of that script's
generated benchmark page; any other is named by the hand-written docs
(docs/**/*.md, README.md), by the docs generator (docs/generate.py: by name, or
drawn in one of its figures, which glob their files by prefix), by the README's
headline block (benchmarks/readme_figures.py), or by the module docstring of a
benchmark script (shown on that script's generated page). A file that no page
reads is history: delete it. Names may be written as the docs write them:
``concept_missing_tags_fashion-mnist-{cnn,dsift1024}_3seeds.json``,
``concept_untagged_fashion_study0/1.json``, ``serve_load_issue29_before.json`` /
``_after.json``.

Every file also records ``command`` and ``commit`` (what
benchmarks/_common.write_results writes), so a figure in the docs can be traced to
the run that produced it. The files written before that was recorded and too slow
to rerun here are listed below with the reason; rerunning one removes it from the list.
"""

import ast
import fnmatch
import importlib.util
import json
import re
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"

#: result files allowed without the command and commit that produced them, each with the reason. Empty: every
#: file has both. Rerunning one through write_results takes it off this list
#: (test_the_allow_lists_hold_only_files_that_still_need_them).
NO_PROVENANCE: dict[str, str] = {}


def _result_files() -> list[Path]:
    return sorted(p for p in RESULTS.iterdir() if p.is_file() and not p.name.endswith(".tmp"))


def _reader_texts() -> dict[str, str]:
    """Every text that reads result files, by where it is."""
    texts = {}
    for path in [ROOT / "README.md", ROOT / "docs" / "generate.py", ROOT / "benchmarks" / "readme_figures.py",
                 *(ROOT / "docs").rglob("*.md")]:
        if "generated" not in path.relative_to(ROOT).parts:
            texts[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        if not path.name.startswith("_"):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            texts[f"{path.relative_to(ROOT).as_posix()} (docstring)"] = doc
    return texts


NAME = re.compile(r"[\w.{},/*-]*\.(?:json|html)")


def _expand(name: str) -> list[str]:
    """``a-{x,y}_b.json`` -> a-x_b.json, a-y_b.json; ``a_study0/1.json`` -> a_study0.json, a_study1.json."""
    m = re.search(r"\{([^{}]*)\}", name)
    if m:
        return [e for alt in m.group(1).split(",") for e in _expand(name[:m.start()] + alt + name[m.end():])]
    m = re.search(r"(\d+)((?:/\d+)+)(?=\.\w+$)", name)
    if m:
        return [name[:m.start()] + d + name[m.end():] for d in [m.group(1), *m.group(2).split("/")[1:]]]
    return [name]


def referenced_names(text: str) -> set[str]:
    """The result file names a text mentions, as file names (``x.json``), with the docs' shorthands expanded:
    braces, ``0/1`` and a ``_suffix.json`` after a full name (``a_before.json`` / ``_after.json``)."""
    names, previous = set(), None
    for m in NAME.finditer(text):
        raw = m.group(0).split("/")[-1] if not re.search(r"\d/\d", m.group(0)) else m.group(0).rsplit("results/", 1)[-1]
        if raw.startswith("_") and previous:
            stem, suffix = raw.rsplit(".", 1)
            raw = previous.rsplit("_", stem.count("_"))[0] + stem + "." + suffix
        for name in _expand(raw):
            names.add(name)
            previous = name.rsplit(".", 1)[0]
    # names written without their extension (readme_figures.py and generate.py load by stem)
    names |= {f"{s}.json" for s in re.findall(r"""["'`]([a-z][\w.-]*)["'`]""", text)}
    return names


def generated_sources() -> set[str]:
    """The result files docs/generate.py's figures draw and its method-page tables cite (both glob some files by
    prefix and skip a file without their data), found by running them without saving a PNG."""
    pytest.importorskip("matplotlib", reason="matplotlib (the docs extra) draws the figures")
    spec = importlib.util.spec_from_file_location("_docs_generate_for_results", ROOT / "docs" / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)

    class _Unsaved(generate.Writer):
        def figure(self, rel, fig):
            import matplotlib.pyplot as plt

            plt.close(fig)

    with tempfile.TemporaryDirectory() as tmp:
        writer = _Unsaved(Path(tmp))
        sources, texts = set(), []
        for fn in generate.FIGURES.values():
            try:
                made = fn(writer)
            except Exception:  # noqa: BLE001 - a figure without data is skipped on the site too
                continue
            sources |= {f"{s}.json" for _, source, _ in made for s in source.split(", ")}
        texts += [p.read_text(encoding="utf-8") for p in writer.written if p.suffix == ".md"]
    texts += list(generate.page_tables().values())
    texts += [fn(writer) for fn in generate.TABLES.values()]
    return sources | {n for text in texts for n in referenced_names(text)}


def unread(files: list[Path], texts: dict[str, str], scripts: set[str] = frozenset(),
           drawn: set[str] = frozenset()) -> list[str]:
    named = set().union(*(referenced_names(t) for t in texts.values())) | set(drawn)
    # a page's wildcard (`similarity_solis_concept_why_*.json`) names its files; the generator's own globs do
    # not (what they find is in `drawn`: a figure or table skips a file without its data), nor a bare *.json
    patterns = [n for where, text in texts.items() if where != "docs/generate.py"
                for n in referenced_names(text) if "*" in n and not n.startswith("*")]
    return [p.name for p in files if p.name not in named and p.stem not in scripts
            and not any(fnmatch.fnmatch(p.name, pat) for pat in patterns)]


def _missing_provenance(path: Path) -> list[str]:
    if path.suffix != ".json":  # a figure page: the words, in a comment or a caption
        text = path.read_text(encoding="utf-8", errors="replace")
        return [k for k in ("command", "commit") if k not in text]
    data = json.loads(path.read_text(encoding="utf-8"))
    return [k for k in ("command", "commit") if not (isinstance(data, dict) and data.get(k))]


def test_every_result_file_is_read_by_a_page():
    files = _result_files()
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_")}
    orphans = unread(files, _reader_texts(), scripts, generated_sources())
    assert not orphans, ("result files that no page, README block, docs generator or benchmark docstring reads "
                         f"(delete them, or cite them where their numbers are used): {orphans}")


def test_every_result_file_records_its_command_and_commit():
    missing = {p.name: m for p in _result_files()
               if (m := _missing_provenance(p)) and p.stem not in NO_PROVENANCE}
    assert not missing, ("result files without the command and commit that produced them (rerun their benchmark: "
                         f"benchmarks/_common.write_results records both): {missing}")


def test_the_allow_lists_hold_only_files_that_still_need_them():
    # a rerun (or a deletion) must take the file off the list, so the list never hides a new gap
    by_stem = {p.stem: p for p in _result_files()}
    stale = [s for s in NO_PROVENANCE if s not in by_stem or not _missing_provenance(by_stem[s])]
    assert not stale, f"allow-listed but deleted or now recorded: remove them from the list: {stale}"


@pytest.mark.parametrize("text, expected", [
    ("`concept_missing_tags_fashion-mnist-{cnn,dsift1024}_3seeds.json`",
     {"concept_missing_tags_fashion-mnist-cnn_3seeds.json", "concept_missing_tags_fashion-mnist-dsift1024_3seeds.json"}),
    ("(`concept_untagged_{fashion,openclipart}_study0/1.json`,",
     {f"concept_untagged_{d}_study{i}.json" for d in ("fashion", "openclipart") for i in (0, 1)}),
    ("`serve_load_issue29_before.json` /\n`_after.json`: exact", {"serve_load_issue29_before.json", "serve_load_issue29_after.json"}),
    ("``concept_openclipart_grid_T10.json`` / ``_T25.json``",
     {"concept_openclipart_grid_T10.json", "concept_openclipart_grid_T25.json"}),
    ('_load("concept_quality")', {"concept_quality.json"}),
    ("`benchmarks/results/hashing_speed.json`", {"hashing_speed.json"}),
    ("(`similarity_solis_concept_why_*.json`)", {"similarity_solis_concept_why_*.json"}),
])
def test_names_are_found_as_the_docs_write_them(text, expected):
    assert expected <= referenced_names(text)


def test_an_unread_file_is_reported(tmp_path):
    files = [tmp_path / n for n in ("kept.json", "old_run2.json", "esvm_retrieval_x.json", "hash_ties.json")]
    texts = {"docs/a.md": "see `kept.json`", "docs/b.md": "the `esvm_*_x.json` files"}
    assert unread(files, texts, {"hash_ties"}) == ["old_run2.json"]
    assert unread(files, {}, set(), {"kept.json", "esvm_retrieval_x.json", "hash_ties.json"}) == ["old_run2.json"]


def test_a_partial_run_keeps_other_studies_under_their_own_provenance(tmp_path):
    # hashing_retrieval.py --only ... and serve_load.py --skip-concept rewrite some studies of a result file; the
    # others must keep the command and commit that measured them, also across two partial runs in a row
    from benchmarks._common import keep_earlier_studies

    path, keys = tmp_path / "r.json", ("retrieval", "full_training")
    path.write_text(json.dumps({"command": ["a"], "commit": "c1", "retrieval": 1, "full_training": 2}))
    first = {"retrieval": 3}
    keep_earlier_studies(path, keys, first)
    assert first["earlier_runs"] == [{"command": ["a"], "commit": "c1", "studies": {"full_training": 2}}]
    path.write_text(json.dumps({"command": ["b"], "commit": "c2", **first}))
    second: dict = {}
    keep_earlier_studies(path, keys, second)
    assert second["earlier_runs"] == [{"command": ["b"], "commit": "c2", "studies": {"retrieval": 3}},
                                      {"command": ["a"], "commit": "c1", "studies": {"full_training": 2}}]
    keep_earlier_studies(tmp_path / "missing.json", keys, third := {"retrieval": 4})
    assert third == {"retrieval": 4}


def test_a_kept_study_is_shown_with_the_run_that_measured_it(tmp_path):
    # serve_load.py --skip-load / --skip-concept: the page tables read the kept study, with that run's args and commit
    from benchmarks._common import keep_earlier_studies
    from docs.generate import study_run

    path = tmp_path / "serve_load.json"
    path.write_text(json.dumps({"command": ["a"], "commit": "c1", "args": {"clients": 32}, "loadavg_start": [0.5],
                                "load": {"runs": 1}, "concept": {"x": 1}}))
    new = {"command": ["b"], "commit": "c2", "args": {"clients": 8}, "concept": {"x": 2}}
    keep_earlier_studies(path, ("load",), new)
    run = study_run(new, "load")
    assert run == {"command": ["a"], "commit": "c1", "args": {"clients": 32}, "loadavg_start": [0.5],
                   "load": {"runs": 1}}
    assert study_run(new, "concept") is new
    assert study_run(new, "recall") is None
