"""Every equation the code cites names its paper: ``[Li13] Eq. (9)``, never a bare ``Eq. (9)``.

hardneg implements five papers (and compares with a few baselines), so "Eq. (9)" alone is
ambiguous. ``docs/generate.py`` builds the docs' paper -> equation -> file:line table
from these citations; this test keeps them all in the one form it reads.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: the paper keys the docs' reference list (docs/index.md) defines
PAPERS = {
    "Li13",  # Negative Bootstrap + Model Compression (concept, negatives pool, svm/_hik*)
    "Cevikalp17",  # robust TSVM hashing (hashing, svm/_ramp_tsvm.py)
    "Gao17",  # SOLIS (similarity)
    "Zepeda15",  # Exemplar-SVM encoding (encoding, svm/_exemplar*)
    "Bucher16",  # zero-shot with hard negatives (zeroshot)
    "Xian18",  # zero-shot evaluation protocol (eval: per-class accuracy, GZSL harmonic mean)
    "Lampert14",  # DAP baseline
    "RomeraParedes15",  # ESZSL baseline
    "Norouzi14",  # ConSE: search by description with no training
}

#: anything that looks like an equation citation: "Eq. (9)", "Eqs. (6)-(8)", "Eq. 9", "eq (9)", "Equation 9"
ANY_CITATION = re.compile(r"\b(?:eqs?|equations?)\b\.?\s*\(?\d", re.IGNORECASE)
#: the one accepted form: a paper key, one space, "Eq." or "Eqs.", one space, "(n)"
TAGGED = re.compile(r"\[([A-Za-z]+\d*)\] Eqs?\. \(\d+[a-z]?\)")
#: (file, text) citations left as they are, each for a reason
EXEMPT = {
    # a method label that keys the recorded results/zeroshot_openclipart*.json: renaming it orphans them
    ("benchmarks/zeroshot_openclipart.py", "Bucher [1] (random, n=1, Eq. 6, redraw)"),
    ("benchmarks/zeroshot_openclipart_keywords.py", "Bucher [1] (random, n=1, Eq. 6, redraw)"),
}
#: what docs/generate.py reads (kept in step with its regex)
REPORT_REGEX = re.compile(r"(\[[A-Za-z]+\d*\]\s*)?Eqs?\.\s*\(([^)]+)\)")


def citation_problems(text: str) -> list[tuple[int, str, str]]:
    """(line number, problem, line) for every citation in ``text`` not in the tagged form."""
    problems = []
    for i, line in enumerate(text.splitlines(), 1):
        tagged_spans = []
        for m in TAGGED.finditer(line):
            tagged_spans.append((m.start(), m.end()))
            if m.group(1) not in PAPERS:
                problems.append((i, f"unknown paper key [{m.group(1)}]", line.strip()))
        for m in ANY_CITATION.finditer(line):
            if not any(a <= m.start() < b for a, b in tagged_spans):
                problems.append((i, "untagged or malformed citation (write `[Paper] Eq. (n)`)", line.strip()))
    return problems


def _python_files(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


@pytest.mark.parametrize("folder", ["hardneg", "benchmarks"])
def test_every_equation_citation_names_a_known_paper(folder):
    bad = []
    for path in _python_files(folder):
        rel = path.relative_to(ROOT).as_posix()
        for line_no, problem, line in citation_problems(path.read_text(encoding="utf-8")):
            if any(rel == f and text in line for f, text in EXEMPT):
                continue
            bad.append(f"{rel}:{line_no}: {problem}: {line[:120]}")
    assert not bad, f"{len(bad)} equation citations to fix:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "text, n_problems",
    [
        ("G_t, [Li13] Eq. (9), or lambda_t ([Li13] Eqs. (10)-(11))", 0),
        ("[Gao17] Eq. (19b) prints +", 0),
        ("the merge, Eq. (9)", 1),  # no paper
        ("the merge (Eq. 9)", 1),  # no paper, no parentheses
        ("[Li13] Eq. 9", 1),  # tagged but malformed: the docs' table would miss it
        ("see eq (9) and Equation 3", 2),
        ("[Foo99] Eq. (1)", 1),  # unknown paper
        ("Equal weights; requires 3 passes", 0),  # not a citation
    ],
)
def test_checker_catches_each_bad_form(text, n_problems):
    assert len(citation_problems(text)) == n_problems


def test_report_reads_every_tagged_citation_with_its_paper():
    """The docs' table regex (docs/generate.py) sees each tagged citation, paper included."""
    report = (ROOT / "docs" / "generate.py").read_text(encoding="utf-8")
    assert REPORT_REGEX.pattern in report, "docs/generate.py's citation regex changed: update REPORT_REGEX here"
    n = 0
    for path in _python_files("hardneg"):
        for line in path.read_text(encoding="utf-8").splitlines():
            tagged = [m.group(1) for m in TAGGED.finditer(line)]
            read = [m.group(1) for m in REPORT_REGEX.finditer(line)]
            assert len(read) == len(tagged) and all(r and r.strip()[1:-1] == t for r, t in zip(read, tagged)), line
            n += len(tagged)
    assert n > 100  # the code cites its papers' equations (about 250 citations)


def _report_module():
    """docs/generate.py (the docs generator) as a fresh module."""
    spec = importlib.util.spec_from_file_location("_docs_generate_for_citations", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_tables_list_every_citation_once():
    report = _report_module()
    n_tagged = sum(len(TAGGED.findall(p.read_text(encoding="utf-8"))) for p in _python_files("hardneg"))
    n_rows = 0
    for method in report.METHOD_CODE:
        table = report.equations(method)
        n_rows += sum(1 for line in table.splitlines() if line.strip().startswith("| [") and " | Eq. (" in line)
    assert n_rows == n_tagged


@pytest.mark.parametrize("line", ["# the merge, Eq. (9)", "# the merge, [Foo99] Eq. (9)"])
def test_docs_build_fails_on_an_untagged_citation(tmp_path, monkeypatch, line):
    report = _report_module()
    (tmp_path / "hardneg").mkdir()
    (tmp_path / "hardneg" / "mod.py").write_text(f"x = 1\n{line}\n", encoding="utf-8")
    monkeypatch.setattr(report, "ROOT", tmp_path)
    with pytest.raises(ValueError, match=r"hardneg/mod\.py:2: equation citation without a known paper key"):
        report.equations("concept")
