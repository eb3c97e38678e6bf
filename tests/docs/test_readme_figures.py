"""The README's headline figures are what the result files say (benchmarks/readme_figures.py)."""

from pathlib import Path

import pytest
from _helpers import load_script

ROOT = Path(__file__).resolve().parents[2]


def _script():
    return load_script("readme_figures")


def test_readme_block_matches_results():
    figures = _script()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = figures.render()
    assert block in readme, "README.md's headline figures are stale: run python benchmarks/readme_figures.py --write"


def test_every_row_names_a_result_file_with_its_provenance():
    figures = _script()
    for row in figures.ROWS:
        job, measured, baseline, files = row()
        assert job and measured and baseline
        names = [part.strip(" `") for part in files.split(",")]
        for name in names:
            stem = name.split(".json")[0]
            data = figures.load(stem)
            assert data.get("command") and data.get("commit"), f"{stem}.json records no command line / commit"


def test_check_mode_catches_an_edited_figure(tmp_path, monkeypatch):
    figures = _script()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = figures.render()
    edited = tmp_path / "README.md"
    # change one digit inside the generated block
    first_digit = next(i for i, ch in enumerate(block) if ch.isdigit() and i > len(figures.BEGIN))
    wrong = block[:first_digit] + str((int(block[first_digit]) + 1) % 10) + block[first_digit + 1:]
    edited.write_text(readme.replace(block, wrong), encoding="utf-8")
    monkeypatch.setattr(figures, "README", edited)
    assert figures.main(["--check"]) == 1
    edited.write_text(readme, encoding="utf-8")
    assert figures.main(["--check"]) == 0


def test_missing_block_is_one_clear_error(tmp_path, monkeypatch):
    figures = _script()
    bare = tmp_path / "README.md"
    bare.write_text("# no block here\n", encoding="utf-8")
    monkeypatch.setattr(figures, "README", bare)
    with pytest.raises(SystemExit, match="no headline-figures block"):
        figures.main(["--check"])
