"""One CLI dialect: walk the whole ``hardneg`` command tree and check its conventions.

A flag has one meaning everywhere; every result command offers --json, --csv
and --html; every store-wide command offers --workers and --scheduler; models
come before the data they run on; help fits 80 columns.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer

from hardneg.cli.main import LAZY_COMMANDS, LAZY_GROUPS, app, load_command, main

# commands that print results (rankings or figures)
RESULT_COMMANDS = {
    "knn", "concept search", "concept eval", "hash search", "hash eval", "similarity search", "esvm search", "zsl eval",
}
# commands that take a STORE argument and scan every row of it
STORE_WIDE = {
    "knn", "concept search", "concept eval", "hash index", "hash eval", "esvm encode", "esvm search", "extract images",
}
# store-wide but not (yet) distributed, with the reason
NOT_DISTRIBUTED = {
    "similarity index": "InvertedIndex.from_store builds the postings in one process; no Dask map-reduce yet",
}
# positional names that are models (come first) and data (come after)
MODELS = {"model_path", "encoder_path", "model"}
DATA = {"store_path", "index_path", "data", "store"}
# flags every command shares, defined once in hardneg/cli/_options.py: same help everywhere
SHARED_HELP = {"--json", "--csv", "--html", "--workers", "--scheduler"}


def _walk(cmd, path=()):
    if hasattr(cmd, "list_commands"):  # a group (typer vendors click: duck typing)
        # click's contract for lazily loaded subcommands: list the names, then get_command
        # loads each (the root's command groups are imported only here, issue 29)
        ctx = typer.Context(cmd, info_name=path[-1] if path else "hardneg")
        for name in cmd.list_commands(ctx):
            yield from _walk(cmd.get_command(ctx, name), (*path, name))
    else:
        yield " ".join(path), cmd


def _commands():
    return dict(_walk(typer.main.get_command(app)))


def _options(cmd):
    for p in cmd.params:
        if getattr(p, "param_type_name", "") == "option" and not getattr(p, "hidden", False):
            yield p


def test_the_tree_is_walked():
    cmds = _commands()
    assert {"knn", "concept train", "esvm train", "hash search", "store info"} <= set(cmds)
    assert "esvm fit" in cmds and cmds["esvm fit"].hidden  # the deprecated alias
    tops = {name.split()[0] for name in cmds}
    assert set(LAZY_COMMANDS) | set(LAZY_GROUPS) | {"demo"} == tops  # every lazily registered group was loaded


def test_lazy_help_lines_are_the_modules():
    """`hardneg --help` lists the registry's help lines: the same text as with every module imported."""
    for name in [*LAZY_COMMANDS, *LAZY_GROUPS]:
        own = load_command(name).help
        assert own.split("\n\n")[0] == {**LAZY_COMMANDS, **LAZY_GROUPS}[name][2], f"hardneg {name}: update its line in hardneg/cli/main.py"
    root = typer.main.get_command(app)
    lazy_help = root.get_help(typer.Context(root, info_name="hardneg"))
    assert all(root.commands.loaded(name) is None for name in LAZY_GROUPS)  # listing loaded nothing
    for name in root.list_commands(typer.Context(root)):
        root.commands[name]
    assert root.get_help(typer.Context(root, info_name="hardneg")) == lazy_help
    assert "store       Inspect FeatureStores" in lazy_help


def test_lazy_group_errors_as_before(capsys):
    assert main(["stroe"]) == 2
    assert "No such command 'stroe'. Did you mean 'store'?" in capsys.readouterr().err
    assert main(["store", "infoo"]) == 2
    assert "Did you mean 'info'? (see 'hardneg store --help')" in capsys.readouterr().err
    assert main(["store"]) == 2  # a group run bare shows its help
    assert "Commands:\n  info " in capsys.readouterr().err


def test_one_meaning_per_flag():
    meaning: dict[str, set[str]] = {}
    shared_help: dict[str, set[str]] = {}
    for _, cmd in _commands().items():
        for p in _options(cmd):
            for flag in (*p.opts, *p.secondary_opts):
                meaning.setdefault(flag, set()).add(p.name)
                if flag in SHARED_HELP:
                    shared_help.setdefault(flag, set()).add(p.help)
    clashes = {f: names for f, names in meaning.items() if len(names) > 1}
    assert not clashes, f"flags with more than one meaning: {clashes}"
    differing = {f: h for f, h in shared_help.items() if len(h) > 1}
    assert not differing, f"shared flags not defined once (hardneg/cli/_options.py): {differing}"
    # one-letter flags that must keep their one meaning
    assert meaning["-k"] == {"k"} and meaning["-q"] == {"query_id"} and meaning["-o"] == {"out"}
    for paper_symbol in ("-m", "-s"):
        assert paper_symbol not in meaning, f"{paper_symbol}: paper symbols have long names only"


def test_result_commands_have_every_format():
    cmds = _commands()
    for name in sorted(RESULT_COMMANDS):
        flags = {f for p in _options(cmds[name]) for f in p.opts}
        missing = {"--json", "--csv", "--html"} - flags
        assert not missing, f"hardneg {name}: missing {sorted(missing)}"


def test_store_wide_commands_scale_out():
    cmds = _commands()
    for name, cmd in cmds.items():
        args = [p.name for p in cmd.params if getattr(p, "param_type_name", "") == "argument"]
        if "store_path" in args and name not in STORE_WIDE | set(NOT_DISTRIBUTED) and not name.startswith(("store ", "hash train", "concept train", "esvm train", "esvm fit", "similarity train")):
            pytest.fail(f"hardneg {name}: takes a STORE; list it in STORE_WIDE (and give it --workers) or among the trainers")
    for name in sorted(STORE_WIDE):
        flags = {f for p in _options(cmds[name]) for f in p.opts}
        assert {"--workers", "--scheduler"} <= flags, f"hardneg {name}: store-wide without --workers/--scheduler"


def test_models_come_before_data():
    for name, cmd in _commands().items():
        args = [p.name for p in cmd.params if getattr(p, "param_type_name", "") == "argument"]
        models = [i for i, a in enumerate(args) if a in MODELS]
        data = [i for i, a in enumerate(args) if a in DATA]
        if models and data:
            assert max(models) < min(data), f"hardneg {name}: positional order {args}, expected MODEL before STORE/INDEX/DATA"


@pytest.mark.parametrize("columns", ["80", "200"])
def test_help_fits_80_columns(columns, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", columns)
    for name, cmd in _commands().items():
        if getattr(cmd, "hidden", False):
            continue
        assert main([*name.split(), "--help"]) == 0
        out = capsys.readouterr().out
        long = [line for line in out.splitlines() if len(line) > 80]
        assert not long, f"hardneg {name} --help: lines over 80 columns: {long}"
        assert "…" not in out, f"hardneg {name} --help: text cut off"
        assert out.count("-k,") + out.count(" -k ") <= 1


def test_concept_default_shared_by_cli_and_service():
    from hardneg.cli.concept import _DEFAULT_T
    from hardneg.concept import DEFAULT_N_ITER
    from hardneg.serve._concept import ConceptSpec
    from hardneg.serve._state import Settings

    assert _DEFAULT_T == DEFAULT_N_ITER == ConceptSpec.__dataclass_fields__["n_iter"].default
    assert Settings.__dataclass_fields__["concept_iterations"].default == DEFAULT_N_ITER


def test_esvm_fit_is_a_deprecated_alias(capsys, tmp_path):
    import numpy as np

    from hardneg.store import FeatureStore

    assert main(["esvm", "fit", "--help"]) == 0
    assert "Usage" in capsys.readouterr().out
    st = FeatureStore.create(tmp_path / "s", 6)
    st.append(np.random.default_rng(0).random((150, 6), dtype=np.float32), ids=[f"x{i}" for i in range(150)])
    assert main(["esvm", "fit", str(tmp_path / "s"), "-o", str(tmp_path / "e.npz"), "--min-negatives", "100"]) == 0
    assert "'esvm fit' is deprecated; use 'esvm train'" in capsys.readouterr().err
    assert (tmp_path / "e.npz").is_file()


def test_help_does_not_import_the_heavy_libraries():
    code = ("import sys; from hardneg.cli.main import main; main(['--help']); "
            "print(sorted(m for m in ('numpy', 'faiss', 'torch', 'pyarrow', 'rich.table', 'sklearn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "COLUMNS": "80"},
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_csv_and_json_outputs(tmp_path, capsys):
    import csv
    import io
    import json

    import numpy as np

    from hardneg.store import FeatureStore

    rng = np.random.default_rng(0)
    st = FeatureStore.create(tmp_path / "s", 8)
    st.append(rng.random((30, 8), dtype=np.float32), ids=[f"é{i}" for i in range(30)], tags=[["ça"]] * 30)
    assert main(["knn", str(tmp_path / "s"), "-q", "é3", "-k", "4", "--json"]) == 0
    out = capsys.readouterr().out
    assert "é" in out and "\\u00e9" not in out  # UTF-8, not escaped
    rows = json.loads(out)
    assert main(["knn", str(tmp_path / "s"), "-q", "é3", "-k", "4", "--csv", "-"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["id"] for r in table] == [r["id"] for r in rows] and table[0]["tags"] == "ça"
    assert main(["knn", str(tmp_path / "s"), "-q", "é3", "-k", "4", "--csv", str(tmp_path / "r.csv"),
                 "--html", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.csv").read_text(encoding="utf-8").startswith("query,rank,id")
    assert (tmp_path / "r.html").is_file()
    assert main(["knn", str(tmp_path / "s"), "-q", "é3", "--json", "--csv", "-"]) == 2


def test_the_writer_takes_a_topk_or_rows(capsys):
    import numpy as np

    from hardneg import TopK
    from hardneg.cli._results import as_rows, emit_results

    t = TopK(rows=np.array([[0, 1]]), scores=np.array([[0.9, 0.5]]), k=2, n_scanned=2, ids=np.array([["a", "b"]]), metric="ip")
    rows = as_rows(t)
    assert [r["id"] for r in rows] == ["a", "b"] and rows[0]["score"] == 0.9
    assert as_rows({"ap": 0.5}) == [{"ap": 0.5}] and as_rows(rows) == rows
    emit_results(t, title="t", csv_out="-")
    assert capsys.readouterr().out.splitlines()[:2] == ["query,rank,id,row,score", "0,1,a,0,0.9"]
    emit_results({"ap": 0.5, "name": "ü"}, title="t", as_json=True, figures=True)
    assert capsys.readouterr().out.strip() == '{\n "ap": 0.5,\n "name": "ü"\n}'
