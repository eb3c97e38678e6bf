"""Every results table and figure of the documentation, built from benchmarks/results/*.json.

Nothing on the documentation site's result pages is typed by hand: this script
reads each result file, renders its tables as Markdown (citing the command
line, commit and machine that produced it, or "not recorded" for files written
before benchmarks/_common.py::write_results recorded them), draws the figures
with matplotlib (Agg backend) and writes everything under ``docs/generated/``.
It also writes one page per benchmark script and, for each method, the table
paper -> equation -> file/function, grepped from the code's ``Eq. (n)``
citations. The MkDocs hook ``docs/hooks.py`` runs it on every build, so the
site cannot drift from the result files; ``docs/generated/`` is not committed.

A figure whose data is missing or has another shape is skipped with a note in
its place, never an error; result files this script does not know are rendered
by the generic table renderer.

Usage::

    .venv/bin/python docs/generate.py [--out docs/generated]
"""

from __future__ import annotations

import argparse
import importlib.util
import ast
import functools
import html
import json
import logging
import math
import re
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
BENCHMARKS = ROOT / "benchmarks"
logger = logging.getLogger("hardneg.docs")

# the method pages; each one's equation table lists the citations of its paper (see equations())
METHOD_CODE = {
    "concept": ["hardneg/concept", "hardneg/negatives", "hardneg/svm/_hik.py", "hardneg/svm/_hik_tables.py",
                "hardneg/store/_quantize.py", "hardneg/serve/_concept.py"],
    "hashing": ["hardneg/hashing", "hardneg/svm/_ramp_tsvm.py", "hardneg/svm/_linear.py", "hardneg/index"],
    "solis": ["hardneg/similarity"],
    "esvm": ["hardneg/encoding", "hardneg/svm/_exemplar.py", "hardneg/svm/_exemplar_batch.py",
             "hardneg/svm/_exemplar_sgd.py", "hardneg/svm/_exemplar_solvers.py", "hardneg/cli/esvm.py"],
    "zeroshot": ["hardneg/zeroshot"],
}
METHOD_PAPER = {"concept": "[Li13]", "hashing": "[Cevikalp17]", "solis": "[Gao17]", "esvm": "[Zepeda15]",
                "zeroshot": "[Bucher16]"}
META_KEYS = {"command", "commit", "dirty", "machine"}
MAX_ROWS = 60


# ----------------------------------------------------------------------------- helpers
class Writer:
    """Writes files only when their content changes (so `mkdocs serve` does not loop)."""

    def __init__(self, out: Path):
        self.out = out
        self.written: list[Path] = []

    def text(self, rel: str, content: str) -> None:
        path = self.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
        self.written.append(path)

    def figure(self, rel: str, fig) -> None:
        import io

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
        import matplotlib.pyplot as plt

        plt.close(fig)
        path = self.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = buf.getvalue()
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        self.written.append(path)


def fmt(value) -> str:
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, (int, float, str)) for v in value) and len(value) <= 8:
            return ", ".join(fmt(v) for v in value)
        return f"[{len(value)} values]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in list(value.items())[:6]) + (", …" if len(value) > 6 else "") + "}"
    return str(value).replace("|", "\\|").replace("\n", " ").replace("[", "&#91;")


def md_table(rows: list[dict], columns: list[str] | None = None) -> str:
    if columns is None:
        columns = []
        for row in rows:
            columns += [c for c in row if c not in columns]
    lines = ["| " + " | ".join(str(c).replace("|", "\\|") for c in columns) + " |", "|" + "---|" * len(columns)]
    for row in rows[:MAX_ROWS]:
        lines.append("| " + " | ".join(fmt(row.get(c)) for c in columns) + " |")
    if len(rows) > MAX_ROWS:
        lines.append(f"\n*{len(rows) - MAX_ROWS} more rows in the result file.*")
    return "\n".join(lines)


def provenance(name: str, data: dict) -> str:
    cmd = data.get("command")
    cmd_s = f"`{' '.join(map(str, cmd)) if isinstance(cmd, list) else cmd}`" if cmd else "not recorded"
    commit = data.get("commit")
    commit_s = f"`{str(commit)[:12]}`" + (" (uncommitted changes)" if data.get("dirty") else "") if commit else "not recorded"
    machine = data.get("machine")
    if isinstance(machine, dict):
        machine_s = ", ".join(f"{k} {v}" for k, v in machine.items() if v not in ("", None))
    else:
        machine_s = "not recorded"
    return (f"Result file `benchmarks/results/{name}.json` · command: {cmd_s} · commit: {commit_s} · "
            f"machine: {machine_s}")


def generic(data, depth: int = 0, title: str = "") -> list[str]:
    """Markdown for any JSON value: lists of records as tables, dicts of scalars as key/value tables."""
    out: list[str] = []
    h = "#" * min(3 + depth, 6)
    if isinstance(data, dict):
        scalars = {k: v for k, v in data.items() if k not in META_KEYS and not isinstance(v, (dict, list))
                   or (isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v) and len(v) <= 8)}
        scalars = {k: v for k, v in scalars.items() if k not in META_KEYS}
        long_text = {k: v for k, v in scalars.items() if isinstance(v, str) and len(v) > 120}
        for k, v in long_text.items():
            if k == "table" and "|" in v:
                out.append(v)  # a Markdown table the benchmark printed itself
            else:
                out.append(f"**{k}.** {fmt(v)}")
        short = {k: v for k, v in scalars.items() if k not in long_text}
        if short:
            out.append(md_table([{"key": k, "value": v} for k, v in short.items()], ["key", "value"]))
        nested = {k: v for k, v in data.items() if k not in META_KEYS and k not in scalars}
        # a dict whose values are all dicts of scalars: one table, a row per key
        if nested and all(isinstance(v, dict) and v and all(not isinstance(x, (dict, list)) for x in v.values())
                          for v in nested.values()) and len(nested) > 1:
            out.append(md_table([{"": k, **v} for k, v in nested.items()]))
            return out
        for k, v in nested.items():
            if depth >= 3:
                out.append(f"**{k}**: {fmt(v)}")
                continue
            out.append(f"{h} {k}")
            out += generic(v, depth + 1, k)
    elif isinstance(data, list):
        if data and all(isinstance(x, dict) for x in data):
            flat = [{k: v for k, v in row.items()} for row in data]
            out.append(md_table(flat))
        elif data and all(isinstance(x, list) for x in data):
            out.append(f"*{len(data)} rows of lists (raw data); see the result file.*")
        else:
            out.append(fmt(data))
    else:
        out.append(fmt(data))
    return out


# ----------------------------------------------------------------------------- figures
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _panel_grid(plt, n: int, *, ncols: int = 2, width: float = 4.4, height: float = 3.4):
    """A figure of ``n`` panels, at most ``ncols`` a row, laid out by matplotlib's constrained layout (no label
    overlaps a neighbour); the page shows it at the content width (about 9 in at 90 dpi), so a row of more than
    two panels would shrink its text below reading size. Returns the figure and the ``n`` axes in order; the
    unused cells of the last row are removed."""
    ncols = max(1, min(ncols, n))
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, layout="constrained")
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.remove()
    return fig, flat[:n]


def _legend_below(fig, axes, ncol: int = 3) -> None:
    """One legend for every panel, under the figure (the panels' curves share their labels)."""
    handles, labels = {}, {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
            labels.setdefault(lab, lab)
    if handles:
        fig.legend(list(handles.values()), list(labels), loc="outside lower center", ncol=ncol, fontsize=8, frameon=False)


def _load(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))


#: a figure quoted in a page's prose: ``{{ NAME/KEY/KEY… }}`` is result file NAME's value at the KEY path, and
#: ``{{ 100 * ([NAME/KEY…] - [NAME/KEY…]) | +.1f }}`` does arithmetic (+ - * / and numbers) on bracketed paths; after
#: the last ``|`` comes Python's format (``.2f``, ``,``, ``.1%``). In a list a KEY is a position or ``FIELD=VALUE``
#: (the first record whose FIELD reads VALUE); a ``*`` key takes every item, for ``mean``, ``min``, ``max`` or
#: ``count`` (``{{ max([NAME/rows/*/gap]) | .4f }}``). A key with ``/``, ``|`` or brackets in it goes in backticks
#: (``methods/`nb[auto]`/ap``). A negative number shows the minus sign (−). Braces around anything else, and
#: quotes inside a code span or block (the docs' examples of the syntax), are left alone.
QUOTE = re.compile(r"\{\{(?P<body>(?:`[^`]*`|[^`{}])+?)\}\}")
_QUOTE_OR_CODE = re.compile(r"\{\{|`+")
_BRACKETED = re.compile(r"\[([^\[\]]*)\]")
_PLAIN_PATH = re.compile(r"[\w-]+(?:/[^/\[\]]+)+")


def _masked(text: str) -> str:
    """``text`` with every backtick span (ticks included) blanked to ``_``, same length: the quote syntax is
    looked for in the mask, and the original is sliced at the positions found."""
    out, inside = [], False
    for ch in text:
        if ch == "`":
            inside = not inside
        out.append("_" if inside or ch == "`" else ch)
    return "".join(out)


def _arithmetic(node: ast.AST, values: dict):
    """Evaluate numbers, the bracketed paths' values and + - * / (nothing else: a page quotes, it does not run code)."""
    if isinstance(node, ast.Expression):
        return _arithmetic(node.body, values)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name) and node.id in values:
        return values[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _arithmetic(node.operand, values)
        return -v if isinstance(node.op, ast.USub) else v
    ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b}
    if isinstance(node, ast.BinOp) and type(node.op) in ops:
        return ops[type(node.op)](_arithmetic(node.left, values), _arithmetic(node.right, values))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in QUOTE_FUNCTIONS
            and len(node.args) == 1 and not node.keywords):
        items = _arithmetic(node.args[0], values)
        if not isinstance(items, list) or not items:
            raise ValueError(f"{ast.unparse(node)}: {node.func.id} takes a path with * (a non-empty list of values)")
        return QUOTE_FUNCTIONS[node.func.id](items)
    raise ValueError(f"not a quotable expression: {ast.unparse(node)}")


#: what a quote may apply to a ``*`` path's values: ``{{ max([NAME/rows/*/gap]) | .4f }}``
QUOTE_FUNCTIONS = {"mean": statistics.fmean, "min": min, "max": max, "count": len}


def quoted_value(path: str, files: dict | None = None):
    """The value at ``NAME/KEY/KEY…`` of result file NAME (see :data:`QUOTE`); KeyError naming the missing part.
    ``files`` keeps the files read, by name, for the next quotes of a page."""
    cuts = [-1] + [i for i, ch in enumerate(_masked(path)) if ch == "/"] + [len(path)]
    name, *keys = (path[lo + 1:hi].strip() for lo, hi in zip(cuts, cuts[1:]))
    keys = [k[1:-1] if len(k) > 1 and k[0] == k[-1] == "`" else k for k in keys]
    files = {} if files is None else files
    try:
        value = files[name] if name in files else files.setdefault(name, _load(name))
    except OSError as exc:
        raise KeyError(f"{path}: no result file benchmarks/results/{name}.json") from exc
    return _walk(value, keys, name, path)


def _walk(value, keys: list[str], walked: str, path: str):
    """``value`` at the ``keys`` path; a ``*`` key maps the rest of the path over every item (a list of values)."""
    for i, key in enumerate(keys):
        if key == "*" and isinstance(value, (list, dict)):
            items = value if isinstance(value, list) else list(value.values())
            return [_walk(item, keys[i + 1:], f"{walked}/*", path) for item in items]
        try:
            if isinstance(value, list):
                field, eq, wanted = key.partition("=")
                value = next(r for r in value if str(r.get(field)) == wanted) if eq else value[int(key)]
            else:
                value = value[key]
        except (KeyError, IndexError, ValueError, StopIteration, TypeError, AttributeError):
            raise KeyError(f"{path}: {walked} has no {key!r}") from None
        walked += "/" + key
    return value


def quote_figures(markdown: str) -> tuple[str, list[str]]:
    """``markdown`` with every quoted figure (:data:`QUOTE`) replaced by its value, and the result files quoted.

    A figure that does not resolve raises KeyError: a page must not quote a file or key that is gone."""
    names: list[str] = []
    files: dict = {}  # each result file read once per page

    def value(m: re.Match) -> str:
        body = m["body"]
        bar = _masked(body).rfind("|")
        expr, spec = (body[:bar].strip(), body[bar + 1:].strip()) if bar >= 0 else (body.strip(), "")
        mask = _masked(expr)
        spans = [found.span(1) for found in _BRACKETED.finditer(mask)]
        if spans:
            paths = [expr[lo:hi].strip() for lo, hi in spans]
            source = expr
            for i, (lo, hi) in reversed(list(enumerate(spans))):  # from the end: earlier positions stay valid
                source = source[:lo - 1] + f"_q{i}" + source[hi + 1:]
            v = _arithmetic(ast.parse(source, mode="eval"),
                            {f"_q{i}": quoted_value(p, files) for i, p in enumerate(paths)})
        elif _PLAIN_PATH.fullmatch(mask):
            paths, v = [expr], quoted_value(expr, files)
        else:
            return m[0]
        for p in paths:
            name = p.split("/", 1)[0].strip()
            if name not in names:
                names.append(name)
        text = format(v, spec)
        # a negative number reads with the minus sign the pages use, not a hyphen
        return "\u2212" + text[1:] if isinstance(v, (int, float)) and text.startswith("-") else text

    out, at = [], 0
    for found in _QUOTE_OR_CODE.finditer(markdown):
        if found.start() < at:  # inside a code span or quote already passed
            continue
        if found[0] == "{{":
            m = QUOTE.match(markdown, found.start())
            if m is None:
                continue
            out += [markdown[at:m.start()], value(m)]
            at = m.end()
        else:  # a code span or fence: shown as written (the docs' own examples of the syntax)
            close = markdown.find(found[0], found.end())
            while close != -1 and markdown.startswith("`", close + len(found[0])):
                close = markdown.find(found[0], close + len(found[0]) + 1)
            end = len(markdown) if close == -1 else close + len(found[0])
            out.append(markdown[at:end])
            at = end
    out.append(markdown[at:])
    return "".join(out), names


def quoted_sources(names: list[str]) -> str:
    """The closing note of a page that quotes figures: each quoted result file with its command and commit."""
    return "\n".join(["", "---", "", "*Figures quoted on this page, from result files made by a script:*", ""]
                      + [f"- {provenance(n, _load(n))}" for n in names]) + "\n"


def _named_result(make):
    """Decorate a table maker ``make(name, data)``: ``table(name)`` reads result file ``name``, and where the file is
    missing or unreadable the table is a note saying so (the site still builds)."""
    @functools.wraps(make)
    def table(name: str) -> str:
        try:
            data = _load(name)
        except (OSError, ValueError):
            return f"*No {name} result yet.*\n"
        return make(name, data)
    return table


def _from_result(name: str):
    """As :func:`_named_result`, for a maker ``make(data)`` of one fixed result file ``name``."""
    def wrap(make):
        named = _named_result(lambda _name, data: make(data))

        @functools.wraps(make)
        def table() -> str:
            return named(name)
        return table
    return wrap


def study_run(data: dict, key: str) -> dict | None:
    """The run of a result file that measured its study ``key``: the file itself, or the run kept under
    ``earlier_runs`` by a partial rerun (``benchmarks._common.keep_earlier_studies``) with the study at its top level,
    so that its provenance is that run's. None if no run holds the study."""
    if key in data:
        return data
    for run in data.get("earlier_runs", []):
        if key in run["studies"]:
            return {**{k: v for k, v in run.items() if k != "studies"}, key: run["studies"][key]}
    return None


def _files(prefix: str) -> list[str]:
    return sorted(p.stem for p in RESULTS.glob(f"{prefix}*.json"))


def fig_hashing_map_vs_bits(w: Writer) -> list[tuple[str, str, str]]:
    """mAP against code length, every hasher, one panel per data set, per hashing_retrieval*.json file."""
    plt = _plt()
    made = []
    for name in _files("hashing_retrieval"):
        rows = _load(name).get("retrieval")
        if not rows:
            continue
        sets = sorted({r["dataset"] for r in rows})
        methods = [k for k in rows[0] if k not in ("dataset", "bits") and isinstance(rows[0][k], (int, float))]
        fig, axes = _panel_grid(plt, len(sets))
        for ax, ds in zip(axes, sets):
            sub = sorted((r for r in rows if r["dataset"] == ds), key=lambda r: r["bits"])
            bits = [r["bits"] for r in sub]
            for m in methods:
                ys = [100 * r[m] if r.get(m) is not None and r[m] <= 1 else r.get(m) for r in sub]
                ax.plot(bits, ys, marker="o", label=m)
            ax.set_xscale("log", base=2)
            ax.set_xticks(bits, [str(b) for b in bits])
            ax.set_xlabel("code length (bits)")
            ax.set_ylabel("mAP (%)")
            ax.set_title(ds)
        _legend_below(fig, axes, ncol=4)
        fig.suptitle("Hashing: retrieval mAP against code length, every hasher")
        rel = f"figures/{name}_map_vs_bits.png"
        w.figure(rel, fig)
        made.append((rel, name, "Retrieval mAP (%) against code length for every hasher, one panel per data set."))
    return made


def fig_concept_ap_vs_T(w: Writer):
    """AP against iterations T for negative bootstrap vs its baselines (concept_quality.json)."""
    plt = _plt()
    data = _load("concept_quality")["results"]
    panels = []
    for feat, res in data.items():
        setting = res.get("settings", {})
        key = next((k for k in setting if "|B+|=100" in k and "noise=0.2" in k), next(iter(setting), None))
        if key is None:
            continue
        curves = _curves_over_T(setting[key])
        if curves:
            panels.append((feat, key, curves))
    if not panels:
        raise KeyError("no AP-over-T curves in concept_quality.json")
    fig, axes = _panel_grid(plt, len(panels))
    for ax, (feat, key, curves) in zip(axes, panels):
        for method, (ts, ys) in curves.items():
            if len(ts) == 1:
                ax.axhline(ys[0], ls="--", lw=1, label=f"{method} (no iterations)")
                ax.plot(ts, ys, marker="o", color=ax.lines[-1].get_color())
            else:
                ax.plot(ts, ys, marker="o", label=method)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel("iterations T")
        ax.set_ylabel("mean AP over the classes")
        ax.set_title(f"{feat}: {key}", fontsize=9)
    _legend_below(fig, axes)
    fig.suptitle("Concept search: AP against iterations T, negative bootstrap vs baselines")
    w.figure("figures/concept_quality_ap_vs_T.png", fig)
    return [("figures/concept_quality_ap_vs_T.png", "concept_quality",
             "Mean AP over the Fashion-MNIST classes (each class in turn the concept) against the number of "
             "iterations T, for negative bootstrap and its baselines; |B+| = 100 positives, 20 % tag noise.")]


def _curves_over_T(s: dict) -> dict:
    """{method: (Ts, mean APs)} from one concept_quality setting, whatever its layout."""
    curves = {}
    methods = s.get("methods")
    if isinstance(methods, dict):
        for method, res in methods.items():
            if not isinstance(res, dict):
                continue
            series = res.get("mAP_vs_T")
            if isinstance(series, dict) and series:
                pts = sorted((int(t), float(v)) for t, v in series.items() if _num(v))
            elif _num(res.get("mAP")):
                pts = [(int(s.get("T", 1)), float(res["mAP"]))]
            else:
                continue
            curves[method] = ([p[0] for p in pts], [p[1] for p in pts])
        if curves:
            return curves
    for key in ("mAP_over_T", "map_over_T", "curves", "mean_ap", "mAP"):
        block = s.get(key)
        if isinstance(block, dict):
            for method, series in block.items():
                if isinstance(series, dict):
                    pts = sorted((int(t), float(v)) for t, v in series.items() if _num(v))
                elif isinstance(series, (int, float)):
                    pts = [(int(s.get("T", 1)), float(series))]
                else:
                    continue
                if pts:
                    curves[method] = ([p[0] for p in pts], [p[1] for p in pts])
            if curves:
                return curves
    # per class: {"per_class": {cls: {method: {T: ap}}}} -> average
    per = s.get("per_class")
    if isinstance(per, dict):
        acc: dict = {}
        for cls_res in per.values():
            for method, series in cls_res.items():
                if isinstance(series, dict):
                    for t, v in series.items():
                        if _num(v):
                            acc.setdefault(method, {}).setdefault(int(t), []).append(float(v))
        for method, by_t in acc.items():
            ts = sorted(by_t)
            curves[method] = (ts, [sum(by_t[t]) / len(by_t[t]) for t in ts])
    return curves


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _pm(v) -> float | None:
    if _num(v):
        return float(v)
    m = re.match(r"\s*(-?[\d.]+)", str(v))
    return float(m.group(1)) if m else None


def fig_solis_sparsity(w: Writer):
    """SOLIS sparsity against mAP, every similarity_solis*.json file with rows."""
    plt = _plt()
    made = []
    for name in _files("similarity_solis"):
        rows = _load(name).get("rows")
        if not isinstance(rows, list) or not rows or not isinstance(rows[0], dict):
            continue
        mkey = next((k for k in rows[0] if k.lower().startswith("map")), None)
        skey = next((k for k in rows[0] if k.lower().startswith("sparsity")), None)
        if not mkey or not skey:
            continue
        fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
        groups: dict = {}
        for r in rows:
            x, y = _pm(r[skey]), _pm(r[mkey])
            if x is None or y is None:
                continue
            label = f"{r.get('method', '?')}" + (f", {r['words']} words" if "words" in r else "")
            groups.setdefault(label, []).append((x, y))
        for label, pts in groups.items():
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.set_xlabel("sparsity of the learned matrix (% zero entries)")
        ax.set_ylabel("mAP (%)")
        ax.set_title(f"SOLIS and baselines: sparsity against mAP ({name})", fontsize=9)
        ax.legend(fontsize=6, loc="best")
        rel = f"figures/{name}_sparsity_map.png"
        w.figure(rel, fig)
        made.append((rel, name, "Each learner's mAP against the share of zero entries in its similarity matrix "
                                "(TF-IDF and the diagonal baselines sit at their own sparsity)."))
    return made


def fig_esvm_weight(w: Writer):
    """E-SVM validation mAP against total negative weight (esvm_retrieval*.json sensitivity_validation)."""
    plt = _plt()
    made = []
    for name in _files("esvm_retrieval"):
        data = _load(name)
        rows = data.get("sensitivity_validation")
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
        by: dict = {}
        for r in rows:
            if _num(r.get("total_weight")) and _num(r.get("val_mAP_symmetric")):
                by.setdefault(f"λ = {r.get('lam')}, N = {r.get('n_negatives')}", []).append(
                    (r["total_weight"], r["val_mAP_symmetric"]))
        for label, pts in by.items():
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        if _num(data.get("base_val_mAP")):
            ax.axhline(data["base_val_mAP"], color="grey", ls="--", label="base features (no encoding)")
        ax.set_xscale("log")
        ax.set_xlabel("total negative weight α₋·N")
        ax.set_ylabel("validation mAP (symmetric)")
        ax.set_title(f"E-SVM encoding: validation mAP against total negative weight ({name})", fontsize=9)
        ax.legend(fontsize=7)
        rel = f"figures/{name}_weight.png"
        w.figure(rel, fig)
        made.append((rel, name, "Validation mAP of the E-SVM encoding against the total weight of the negatives, "
                                "against the raw features' mAP."))
    return made


def fig_zeroshot(w: Writer):
    """Zero-shot sampler table with error bars (zeroshot_tables*.json table1: mean ± std over runs)."""
    plt = _plt()
    made = []
    for name in _files("zeroshot_tables"):
        t1 = _load(name).get("table1")
        if not isinstance(t1, dict):
            continue
        protocols = list(t1)
        fig, axes = _panel_grid(plt, len(protocols), height=3.6)
        for ax, proto in zip(axes, protocols):
            methods = list(t1[proto])
            means = [t1[proto][m].get("mean", float("nan")) for m in methods]
            stds = [t1[proto][m].get("std", 0) or 0 for m in methods]
            ax.bar(range(len(methods)), means, yerr=stds, capsize=3, color="tab:blue")
            ax.set_xticks(range(len(methods)), methods, rotation=35, ha="right", fontsize=7)
            lo = min(m - s for m, s in zip(means, stds))
            ax.set_ylim(max(0, lo - 5), None)
            ax.set_ylabel("mean per-class accuracy (%)")
            ax.set_title(f"{proto} attributes", fontsize=9)
        fig.suptitle(f"Zero-shot: samplers and baselines, mean ± std over runs ({name})", fontsize=10)
        rel = f"figures/{name}.png"
        w.figure(rel, fig)
        made.append((rel, name, "Unseen-class accuracy of the baselines and of the hard-negative samplers, "
                                "mean ± standard deviation over runs, per attribute protocol."))
    return made


def fig_speed(w: Writer):
    """Speed ratios (ours vs baseline, same run) with min/median where the file has them."""
    plt = _plt()
    bars: list[tuple[str, float, float | None]] = []  # label, value, median or None
    notes = []
    try:
        cs = _load("concept_speed")
        sc = cs.get("scoring", {})
        ratio = sc.get("compressed_over_X@w")
        if isinstance(ratio, dict) and _num(ratio.get("cpu_min")):  # CPU time, min and median over repeats
            bars.append(("concept: compressed scan / X@w (CPU)", ratio["cpu_min"], ratio.get("cpu_median")))
        elif _num(sc.get("compressed_q100_s")) and _num(sc.get("X@w_s")):  # files written before the repeats
            bars.append(("concept: compressed scan / X@w", sc["compressed_q100_s"] / sc["X@w_s"], None))
        tr = cs.get("training", {})
        if _num(tr.get("exact_over_compressed_at_T20")):
            bars.append(("concept: exact / compressed training", tr["exact_over_compressed_at_T20"], None))
        notes.append("concept_speed")
    except (OSError, ValueError, KeyError):
        pass
    try:
        hs = _load("hashing_speed")
        if _num(hs.get("node", {}).get("ratio")):
            bars.append(("hashing: RTSVM node / LinearSVC", hs["node"]["ratio"], None))
        if _num(hs.get("encoding", {}).get("ratio")):
            bars.append(("hashing: transform / matmul", hs["encoding"]["ratio"], None))
        for r in hs.get("search", []):
            if _num(r.get("ratio_qps")):
                bars.append((f"hashing: index / FAISS q/s, {r.get('codes')} codes {r.get('bits')} bits", r["ratio_qps"], None))
        notes.append("hashing_speed")
    except (OSError, ValueError, KeyError):
        pass
    try:
        ss = _load("store_scan")
        for r in ss.get("readers", []):
            if _num(r.get("GB_per_s")):
                bars.append((f"store scan: {r['reader']} (GB/s ÷ store)", r["GB_per_s"], None))
        base = next((b[1] for b in bars if b[0].startswith("store scan: FeatureStore")), None)
        if base:
            bars = [(lbl, v / base if lbl.startswith("store scan") else v, m) for lbl, v, m in bars]
        notes.append("store_scan")
    except (OSError, ValueError, KeyError):
        pass
    if not bars:
        raise KeyError("no speed ratios found")
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(bars) + 1.2), layout="constrained")
    ax.barh(range(len(bars)), [b[1] for b in bars], color="tab:green")
    ax.set_yticks(range(len(bars)), [b[0] for b in bars], fontsize=7)
    ax.set_xscale("log")
    ax.axvline(1, color="grey", lw=1)
    ax.set_xlabel("ratio measured side by side in one run (1 = same)")
    ax.invert_yaxis()
    ax.set_title("Speed ratios: ours against the baseline in the same run", fontsize=9)
    w.figure("figures/speed_ratios.png", fig)
    return [("figures/speed_ratios.png", ", ".join(notes),
             "Speed ratios, each against a baseline timed in the same process and run (best of the repeats).")]


def fig_serve(w: Writer):
    """Service latency percentiles (serve_load.json)."""
    plt = _plt()
    load = _load("serve_load").get("load", {})
    series = []
    for label, block in (load.get("direct_baseline") or {}).items():
        if isinstance(block, dict) and _num(block.get("p50_ms")):
            series.append((f"direct {label} (no HTTP)", block))
    runs = load.get("runs")
    if isinstance(runs, list):
        for r in runs:
            if isinstance(r, dict) and _num(r.get("p50_ms")):
                series.append((f"HTTP {r.get('mode', '')} {r.get('search', '')} {r.get('clients', '')} clients".strip(), r))
    elif isinstance(runs, dict):
        for k, r in runs.items():
            if isinstance(r, dict) and _num(r.get("p50_ms")):
                series.append((f"HTTP {k}", r))
    if isinstance(load.get("cosine"), dict) and _num(load["cosine"].get("p50_ms")):
        series.append(("HTTP cosine (exact)", load["cosine"]))
    if not series:
        raise KeyError("no latency percentiles in serve_load.json")
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(series) + 1.4), layout="constrained")
    pcts = ["p50_ms", "p95_ms", "p99_ms"]
    h = 0.25
    for j, p in enumerate(pcts):
        ax.barh([i + (j - 1) * h for i in range(len(series))], [s[1].get(p, float("nan")) for s in series], h,
                label=p.replace("_ms", ""))
    ax.set_yticks(range(len(series)), [s[0] for s in series], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms)")
    ax.invert_yaxis()
    ax.legend(fontsize=7)
    ax.set_title("Search service latency percentiles (serve_load.json)", fontsize=9)
    w.figure("figures/serve_load_latency.png", fig)
    return [("figures/serve_load_latency.png", "serve_load",
             "Latency percentiles of the search service under load, against the direct (in-process) search.")]


def _solis_heldout_tables(data: dict, label: dict) -> list[str]:
    """Lines of the per-concept table with λ (every SOLIS solver, w1 = 0) and OASIS-diag's C selected on
    validation draws (similarity_solis_concept_heldout_*.json), the library defaults beside them on the
    same test draws and queries, and issue 28's check on the selected values."""
    if not data:
        return []
    sets, cells, rows_by = [], {}, {}
    for d in data.values():
        for r in d["rows"]:
            s = f"{label.get(r['data'], r['data'])} {r['words'] // 1000}K"
            if s not in sets:
                sets.append(s)
            name = r["method"] + ("" if r["w1"] == "-" else f" w1={float(r['w1']):g}") + (" (update clock)" if r["clock"] == "updates" and r["method"] in ("S-DA", "S-ADA") else "")
            setting = r.get("setting", "default")
            zero = f"; {_pm(r['sparsity %']):.1f} % zeros" if r["method"] != "TF-IDF" and _pm(r["sparsity %"]) else ""
            par = "" if r.get("param", "-") == "-" else f"; {r['param']}"
            g = d.get("c_path" if r["method"] == "OASIS-diag" else "lambda_path") or []
            if setting == "validation" and g and float(r["param"].split("=")[1]) in (min(g), max(g)):
                par += " (grid edge)"
            if r.get("η", "-") != "-":
                par += f", {r['η']}"
                eta = float(r["η"].split("=")[1])
                eta = 1 / eta if r["η"].startswith("γ") else eta  # S-DA's γ = 1/η
                if setting == "validation" and d.get("eta_path") and any(math.isclose(eta, e, rel_tol=1e-4) for e in (min(d["eta_path"]), max(d["eta_path"]))):
                    par += " (η grid edge)"
            cells[(name, setting, s)] = f"{r['mAP %']}{zero}{par} ({r['draws']})"
            rows_by[(r["method"], str(r["w1"]), r["clock"], setting, s)] = r
    sets.sort(key=lambda s: ("tree" in s, "Fashion" in s, int(s.split()[-1][:-1])))
    order = ["TF-IDF", "OASIS-diag", "S-TG w1=0", "S-DA w1=0", "S-AFB w1=0", "S-ADA w1=0", "S-ADA w1=0 (update clock)", "S-ADA w1=1"]
    first = next(iter(data.values()))
    out = ["#### λ (and η) and C chosen on validation draws (the headline)", "",
           f"Every SOLIS solver's λ (w1 = 0) from its λ path {first.get('lambda_path')}"
           + (f" crossed with its step size η from {first['eta_path']} (S-DA: γ = 1/η; ties go to the larger λ, then the smaller η)"
              if first.get("eta_path") else "")
           + f" and OASIS-diag's C from {first.get('c_path')}, each the value with the highest mean mAP on {first.get('val_draws')} validation draws "
           "(their own seeds; their queries from one half of every concept's images, the test queries from the other "
           "half; the database is the protocol's); 'validation' rows are trained with the selected value, 'default' rows "
           "with the library's, both on the same 5 test draws and queries. TF-IDF has nothing to tune. Per-concept mAP % "
           "(mean ± std over the test draws), share of zero weights, the parameter ('grid edge': the selected value is "
           "the smallest or largest tried), (draws). Sources: "
           + ", ".join(f"`benchmarks/results/{n}.json`" for n in data) + ".", "",
           "| method | setting | " + " | ".join(sets) + " |", "|---|---" + "|---" * len(sets) + "|"]
    for m in order:
        for setting in ("default", "validation"):
            if any((m, setting, s) in cells for s in sets):
                out.append(f"| {m} | {setting} | " + " | ".join(cells.get((m, setting, s), "not run") for s in sets) + " |")
    out += ["", "**Issue 28's check on the held-out choice** (S-ADA w1 = 0 ≥ OASIS-diag > TF-IDF in mean mAP, "
            "S-ADA and OASIS-diag at their validation-selected λ and C; ≥ 88 % zero weights at 10K words):", ""]
    for s in sets:
        ada, diag, tf = (rows_by.get(k) for k in (("S-ADA", "0.0", "triplets", "validation", s), ("OASIS-diag", "-", "-", "validation", s),
                                                   ("TF-IDF", "-", "-", "default", s)))
        if not (ada and diag and tf):
            out.append(f"- {s}: not all three run")
            continue
        a_, d_, t_ = (_pm(r["mAP %"]) for r in (ada, diag, tf))
        sp_ = _pm(ada["sparsity %"])
        spar = "" if "10K" not in s else f"; zeros {sp_:.1f} % {'≥' if sp_ >= 88 else '<'} 88 %"
        ok = a_ >= d_ > t_ and (not spar or sp_ >= 88)
        std = max(float(re.search(r"±\s*([\d.]+)", str(r["mAP %"])).group(1)) for r in (ada, diag))
        out.append(f"- {s}: S-ADA ({ada['param']}) {a_:.2f} {'≥' if a_ >= d_ else '<'} OASIS-diag ({diag['param']}) {d_:.2f} "
                   f"{'>' if d_ > t_ else '≤'} TF-IDF {t_:.2f} (draws: {min(ada['draws'], diag['draws'], tf['draws'])}){spar}: "
                   f"**{'met' if ok else 'not met'}**" + (" (within one std of the draws: a tie)" if abs(a_ - d_) < std else ""))
    return out + [""]


def fig_solis_concept(w: Writer):
    """[Gao17] Section 5.3 per-concept tables and the λ path (similarity_solis_concept_*.json).

    Writes ``solis_concept_tables.md`` (the headline table, w1 = 0, and the w1 = 1 extra; the
    matched-mAP table) for docs/methods/solis.md to include, and draws sparsity against mAP along
    each solver's λ path, one panel per file that has one (the paper's Figures 3-6)."""
    names = [n for n in _files("similarity_solis_concept_") if isinstance(_load(n).get("rows"), list)]
    held = [n for n in names if "selected" in _load(n)]  # λ and C chosen on validation draws: their own table
    names = [n for n in names if n not in held]
    data = {n: _load(n) for n in names}
    label = {"mnist": "MNIST", "fashion": "Fashion", "mnist-tree": "MNIST, tree codebook", "fashion-tree": "Fashion, tree codebook"}
    heldout = _solis_heldout_tables({n: _load(n) for n in held}, label)
    sets, cells, srcs = [], {}, {}
    for n, d in data.items():
        for r in d["rows"]:
            s = f"{label.get(r['data'], r['data'])} {r['words'] // 1000}K"
            if s not in sets:
                sets.append(s)
            srcs.setdefault(s, n)
            name = r["method"] + (" (update clock)" if r["method"] in ("S-DA", "S-ADA") and r["clock"] == "updates" else "")
            w1 = "-" if r["w1"] == "-" else f"{float(r['w1']):g}"
            zero = f"; {_pm(r['sparsity %']):.1f} % zeros" if r["method"] != "TF-IDF" and _pm(r["sparsity %"]) else ""
            cells[(w1, name, s)] = f"{r['mAP %']}{zero} ({r['draws']})"
    sets.sort(key=lambda s: ("tree" in s, "Fashion" in s, int(s.split()[-1][:-1])))
    order = ["TF-IDF", "OASIS-diag", "OASIS", "S-TG", "S-DA", "S-AFB", "S-ADA", "S-DA (update clock)", "S-ADA (update clock)"]
    out = heldout + (["#### Library defaults (λ = 1e-4, C = 0.1), queries from all of the concept's held-out images", ""] if heldout else [])
    out += ["Per-concept mAP % (mean ± std over the draws; the number of draws in brackets) and, for the learners, "
            "the share of exactly-zero weights. Sources: " + ", ".join(f"`benchmarks/results/{n}.json`" for n in names) + ".", ""]
    for w1, title in (("0", "**Headline: w1 = 0 (the paper's), with the baselines**"), ("1", "**Extra: w1 = 1 (start from the TF-IDF cosine)**")):
        rows = [(k, m) for k in ("-", w1) for m in order if any((k, m, s) in cells for s in sets)]
        out += [title, "", "| method | " + " | ".join(sets) + " |", "|---" * (len(sets) + 1) + "|"]
        for k, m in rows:
            out.append(f"| {m if k == '-' else m.replace(' (', f' w1={k} (') if '(' in m else f'{m} w1={k}'} | " + " | ".join(cells.get((k, m, s), "not run") for s in sets) + " |")
        out.append("")
    def _std(r):
        m = re.search(r"±\s*([\d.]+)", str(r["mAP %"]))
        return float(m.group(1)) if m else 0.0

    means = {(r["method"], str(r["w1"]), r["clock"], f"{label.get(r['data'], r['data'])} {r['words'] // 1000}K"): r
             for d in data.values() for r in d["rows"]}
    out += ["**Issue 28's check** (S-ADA w1 = 0 ≥ OASIS-diag > TF-IDF in mean mAP; ≥ 88 % zero weights at 10K words):", ""]
    for s in sets:
        ada, diag, tf = (means.get(k) for k in (("S-ADA", "0.0", "triplets", s), ("OASIS-diag", "-", "-", s), ("TF-IDF", "-", "-", s)))
        if not (ada and diag and tf):
            out.append(f"- {s}: not all three run")
            continue
        a_, d_, t_ = (_pm(r["mAP %"]) for r in (ada, diag, tf))
        ok = a_ >= d_ > t_
        sp_ = _pm(ada["sparsity %"])
        spar = "" if "10K" not in s else f"; zeros {sp_:.1f} % {'≥' if sp_ >= 88 else '<'} 88 %"
        out.append(f"- {s}: S-ADA {a_:.2f} {'≥' if a_ >= d_ else '<'} OASIS-diag {d_:.2f} {'>' if d_ > t_ else '≤'} TF-IDF {t_:.2f}"
                   f" (draws: {min(ada['draws'], diag['draws'], tf['draws'])}){spar}: **{'met' if ok and (not spar or sp_ >= 88) else 'not met'}**"
                   + (" (S-ADA and OASIS-diag within one std of the draws: a tie)" if abs(a_ - d_) < max(_std(ada), _std(diag)) else ""))
    out.append("")
    matched = [(n, r) for n, d in data.items() for r in d.get("matched_map_rows") or []]
    if matched:
        cols = [c for c in matched[0][1] if c.startswith("sparsity")]
        out += ["**Sparsity at matched mAP** (along each solver's λ path, w1 = 0, linear between neighbouring λ; "
                "'-': the path never reaches that mAP)", ""]
        for n in dict.fromkeys(n for n, _ in matched):
            rs = [r for m, r in matched if m == n]
            cols = [c for c in rs[0] if c.startswith("sparsity")]
            out += [f"`{n}.json`", "", "| method | clock | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
            out += [f"| {r['method']} | {r['clock']} | " + " | ".join("-" if r[c] is None else f"{r[c]:.1f}" for c in cols) + " |" for r in rs]
            out.append("")
    w.text("solis_concept_tables.md", "\n".join(out) + "\n" if names else "*No similarity_solis_concept_*.json result yet.*\n")
    paths = {n: d["lambda_path_rows"] for n, d in data.items() if len({r["lambda"] for r in d.get("lambda_path_rows") or []}) >= 3}
    if not paths:
        return []
    plt = _plt()
    fig, axes = _panel_grid(plt, len(paths), height=3.6)
    for ax, (n, prows) in zip(axes, paths.items()):
        curves: dict = {}
        for r in sorted(prows, key=lambda r: r["lambda"]):
            curves.setdefault(f"{r['method']} ({r['clock']} clock)", []).append((_pm(r["sparsity %"]), _pm(r["mAP %"])))
        for lab, pts in curves.items():
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=lab)
        for tf in (r for r in data[n]["rows"] if r["method"] in ("TF-IDF", "OASIS-diag")):
            ax.axhline(_pm(tf["mAP %"]), ls=":" if tf["method"] == "TF-IDF" else "--", color="grey", lw=0.8)
        ax.set_xlabel("zero weights (%)")
        ax.set_ylabel("mAP (%)")
        ax.set_title(n.replace("similarity_solis_concept_", ""), fontsize=9)
    _legend_below(fig, axes, ncol=2)
    fig.suptitle("SOLIS: sparsity against mAP along the λ path (grey: TF-IDF dotted, OASIS-diag dashed)", fontsize=10)
    w.figure("figures/similarity_solis_concept_lambda_path.png", fig)
    return [("figures/similarity_solis_concept_lambda_path.png", ", ".join(paths),
             "[Gao17] Section 5.3 per-concept protocol: sparsity against mAP along each solver's λ path "
             "(w1 = 0; each panel's λ values and draws are in its file's lambda_path_rows), as the paper's Figures 3-6.")]


def fig_text_search(w: Writer):
    """Search by description (concept_text_search*.json summary): mAP of a text query, mean ± std over splits."""
    plt = _plt()
    made = []
    for name in _files("concept_text_search"):
        summ = _load(name).get("summary")
        if not isinstance(summ, dict):
            continue
        methods = list(summ)
        fig, axes = _panel_grid(plt, 2)
        for ax, (where, title) in zip(axes, [("unseen", "over the unseen classes' images"),
                                                ("all", "over the whole collection")]):
            means = [summ[m][where]["mean"] for m in methods]
            stds = [summ[m][where]["std"] for m in methods]
            ax.bar(range(len(methods)), means, yerr=stds, capsize=3, color="tab:blue")
            ax.set_xticks(range(len(methods)), methods, rotation=20, ha="right", fontsize=8)
            ax.set_ylabel("mean AP of the category")
            ax.set_title(f"AP {title}", fontsize=9)
        fig.suptitle(f"Search by description on openclipart: the unseen category's WordNet gloss as the query ({name})",
                     fontsize=10)
        rel = f"figures/{name}.png"
        w.figure(rel, fig)
        made.append((rel, name, "Average precision of a text query (the gloss of a category never trained on) "
                                "ranking the images, mean ± std over 60/40 seen/unseen class splits."))
    return made



# ----------------------------------------------------------------------------- tables
#: method label in text_search.json -> what it is, in the table's order
TEXT_SEARCH_METHODS = {
    "conse": "ConSE [Norouzi14], T = 10, class text 'lemmas: definition' (no training; as printed, arrays)",
    "conse_lemma": "ConSE, class text 'lemmas' (the paper's label embedding)",
    "conse_T1": "ConSE, T = 1",
    "conse_T5": "ConSE, T = 5",
    "conse_T20": "ConSE, T = 20",
    "conse_both": "ConSE, both class texts (sum of the two unit vectors)",
    "conse_centered": "ConSE, the store's mean semantic vector removed",
    "eszsl": "ESZSL on the seen tags, cosine of Vᵀx (the text index's form)",
    "eszsl_raw": "ESZSL on the seen tags, its own score xᵀVq",
    "bucher16": "[Bucher16] on the seen tags (fit_text_search defaults)",
    "index_paper": "text index of the no-tags store, [Norouzi14] as printed (extras=False)",
    "index_prior": "text index, the class prior (a = 0.5) and the query offset, no feedback",
    "index_no_names": "text index, class prior, query offset and pseudo-relevance feedback, no file names (the previous default)",
    "index_default": "text index, the library's default (class prior, query offset, pseudo-relevance feedback, file names)",
    "conse+eszsl": "ConSE + ESZSL, sum of cosines (an extra)",
    "conse+bucher16": "ConSE + [Bucher16], sum of z-scores (an extra)",
    "random": "random ranking (the prevalence)",
}


def _shared_titles(data: dict) -> list[str]:
    """The no-tags title queries split by whether another category's title query is the same text."""
    import statistics
    from collections import Counter

    queries, rows = data.get("queries") or {}, [r for r in data.get("notags_rows") or [] if r["query"] == "title"]
    if not rows or "index_default" not in rows[0]:
        return []
    count = Counter(v["title"] for v in queries.values())
    out = ["By title on the store with no tags, split by whether the title is the same text as another category's "
           "title query (collection and theme names: " + ", ".join(f"'{t}' ×{n}" for t, n in count.items() if n > 1) + "):", "",
           "| title queries | n | [Norouzi14] as printed | default without the file names | default | random |",
           "|---|---|---|---|---|---|"]
    for label, keep in (("own text", lambda n: n == 1), ("shared with another category", lambda n: n > 1)):
        sel = [r for r in rows if keep(count[queries[r["category"]]["title"]])]
        if sel:
            rnd = float(statistics.fmean([r["random"] for r in sel]))
            cells = [f"{float(statistics.fmean([r[m] for r in sel])):.3f} ({float(statistics.fmean([r[m] for r in sel])) / rnd:.1f}×)"
                     for m in ("index_paper", "index_no_names", "index_default") if m in sel[0]]
            out.append(f"| {label} | {len(sel)} | " + " | ".join(cells) + f" | {rnd:.3f} |")
    return out


def _text_search_headline(data: dict) -> list[str]:
    """What the defaults reach on the held-out categories (test) and on the store with no tags, with and without
    file names that carry words."""
    idx, nt = data["index"]["summary"], data.get("notags") or {}

    def cell(summ: dict, key: str) -> str:
        if key not in summ.get("name", {}):
            return "— | —"
        r = summ["name"]["random"]
        return " | ".join(f"{summ[k][key]:.3f} ({summ[k][key] / r:.1f}×)" for k in ("name", "title"))

    rows = [("folder-tagged store (held-out categories untagged)", idx["tags/test"], "auto", "auto/no-names"),
            ("captioned store (seen items tagged with their SVG title and keywords)", idx["captions/test"], "auto", "auto/no-names"),
            ("no tags at all", nt, "index_default", "index_no_names")]
    out = ["**What the defaults reach** (test: the held-out categories; mean AP over the whole collection, × random):", "",
           "| store | file names | by name | by title |", "|---|---|---|---|"]
    for label, summ, named, unnamed in rows:
        out.append(f"| {label} | with words (used) | {cell(summ, named)} |")
        out.append(f"| {label} | without words (not used) | {cell(summ, unnamed)} |")
    out.append(f"| no tags at all, [Norouzi14] as printed | not used | {cell(nt, 'index_paper')} |")
    return out + [""]


def table_text_search(w: Writer) -> str:
    """Search by description (text_search.json): mean AP over the whole collection, by name and by title."""
    data = _load("text_search")
    summ, prot = data["summary"], data["protocol"]
    lines = [f"Held-out categories ({prot['splits']} splits, {int(100 * prot['unseen_fraction'])} % of "
             f"{prot['n_categories']} openclipart categories held out; {prot['n_items']:,} items ranked; titles from "
             f"{', '.join(prot['title_source'])}). Mean AP of the held-out category over the whole collection, "
             "mean ± sd over splits:", "",
             "| method | query: category name | query: one item's title |", "|---|---|---|"]
    idx = data.get("index") or {}
    if idx:
        lines = lines[:-2] + _text_search_headline(data)
        labels = {"conse": "ConSE [Norouzi14] (no training)", "conse+eszsl": "ConSE + ESZSL on the tags (sum of cosines)",
                  "captions": "captions of the 30 nearest tagged items (CaptionKNN, an extra)",
                  "conse+captions": "ConSE + captions (sum of cosines)", "conse+eszsl+captions": "ConSE + ESZSL + captions",
                  "auto": f"auto (= {idx['validated_choice']}, the best on validation)",
                  "auto/no-names": f"auto on a store whose file names carry no word (= {idx.get('validated_choice_unnamed')}, "
                                   "the best /no-names ranking on validation)",
                  "random": "random ranking (the prevalence)"}
        labels.update({m + suffix: labels[m] + text for m in list(labels) if "+" in m or m in ("conse", "captions")
                       for suffix, text in (("/no-feedback", ", without the feedback"), ("/no-names", ", without the file names"))})
        for key, title in (("tags/val", "Validation: a fifth of the seen categories held out as well and queried (the only figures "
                             "used to choose)"), ("tags/test", "Test: the held-out categories, store tagged by folder"),
                            ("captions/val", "Validation, store captioned (seen items tagged with their SVG title and keywords)"),
                            ("captions/test", "Test, store captioned")):
            sm = idx["summary"][key]
            r = sm["name"]["random"]
            lines += ["", f"{title}:", "", "| method | by name | × random | by title | × random |", "|---|---|---|---|---|"]
            for m in ("random", *idx["methods"], "auto", "auto/no-names"):
                if m not in sm["name"]:
                    continue
                lines.append(f"| {labels.get(m, m)} | {sm['name'][m]:.3f} | {sm['name'][m] / r:.1f} | {sm['title'][m]:.3f} | "
                             f"{sm['title'][m] / sm['title']['random']:.1f} |")
        lines += ["", "Mean validation AP (both stores, name and title): " + ", ".join(
            f"{m} {v:.3f}" for m, v in idx["validation_score"].items()) + f" → `auto` = {idx['validated_choice']}"
            + (f" on a store whose file names carry words, {idx['validated_choice_unnamed']} on one whose names carry none."
               if idx.get("validated_choice_unnamed") else ".")]
    for key, label in TEXT_SEARCH_METHODS.items():
        if key in summ["name"] and key in summ["title"]:
            n, t = summ["name"][key], summ["title"][key]
            lines.append(f"| {label} | {n['mean']:.3f} ± {n['sd']:.3f} | {t['mean']:.3f} ± {t['sd']:.3f} |")
    nt = data.get("notags") or {}
    if nt:
        lines += ["", f"A store with no tags at all (every one of the {prot['n_categories']} categories queried; no learned model "
                  "can rank it: ConSE and the items' file names):", "", "| method | by name | by title |", "|---|---|---|"]
        r = nt["name"]["random"]
        for key in ("conse", "conse_lemma", "conse_T1", "conse_T5", "conse_T20", "conse_both", "conse_centered",
                    "index_paper", "index_prior", "index_no_names", "index_default", "random"):
            if key in nt.get("name", {}):
                lines.append(f"| {TEXT_SEARCH_METHODS[key].split(' (')[0]} | {nt['name'][key]:.3f} ({nt['name'][key] / r:.1f}×) | "
                             f"{nt['title'][key]:.3f} ({nt['title'][key] / r:.1f}×) |")
        lines += ["", *_shared_titles(data)]
    tm = data.get("timing") or {}
    sources = "`benchmarks/results/text_search.json`"
    if not tm and (RESULTS / "text_search_timing.json").exists():  # written by --only-timing
        data = _load("text_search_timing")
        tm = data.get("timing") or {}
        sources += " and `benchmarks/results/text_search_timing.json`"
    if tm and "error" not in tm:
        lines += ["", f"First vs second query on a {tm['n_items']:,}-item store (in process, the sentence model loaded; "
                  "the first builds and caches the text index, the second reads it):", "",
                  "| index | first query (s) | second query (s) | first / second |", "|---|---|---|---|"]
        for key in ("conse", "conse+eszsl", "conse+captions"):
            if key in tm:
                lines.append(f"| {key} | {tm[key]['first_s']:.2f} | {tm[key]['second_s']:.3f} | {tm[key]['ratio']:.0f}× |")
        if "cli" in tm:
            c = tm["cli"]
            lines.append(f"| CLI, fresh processes, {c['method']} | {c['first_s']:.2f} | {c['second_s']:.2f} "
                         f"(third {c['third_s']:.2f}) | {c['ratio']:.0f}× |")
            if "second_cpu_s" in c:
                lines.append(f"| CLI, CPU time of the process (user + system) | {c['first_cpu_s']:.2f} | {c['second_cpu_s']:.2f} "
                             f"(third {c['third_cpu_s']:.2f}) | {c['first_cpu_s'] / c['second_cpu_s']:.0f}× |")
        if "cli_named" in tm:
            c = tm["cli_named"]
            lines.append(f"| CLI, the same store with the clip-art file names (auto: conse + file names) | {c['first_s']:.2f} | "
                         f"{c['second_s']:.2f} (third {c['third_s']:.2f}) | {c['ratio']:.0f}× |")
        if "build_names" in tm:
            b = tm["build_names"]
            lines += ["", f"Building the `{b['method']}` index of the named store in process: {b['without_s']:.1f} s without the file "
                      f"names, {b['with_s']:.1f} s with them ({b['ratio']:.1f}×; {b['distinct_names']:,} distinct names embedded "
                      f"by MiniLM, about {b['distinct_names'] / max(b['with_s'] - b['without_s'], 1e-9):,.0f} a second)."]
            if tm.get("load_average_after"):
                lines += ["", f"(Machine load average {tm['load_average_after'][0]:.1f} after the run, on "
                          f"{data.get('machine', {}).get('cpu_count', '?')} cores: wall times are those of a shared machine.)"]
    lines += ["", f"*Source: {sources}, generated by `docs/generate.py`.*", ""]
    return "\n".join(lines)


TABLES = {"text_search": table_text_search}

FIGURES = {
    "hashing_map_vs_bits": fig_hashing_map_vs_bits,
    "concept_ap_vs_T": fig_concept_ap_vs_T,
    "solis_sparsity": fig_solis_sparsity,
    "solis_concept": fig_solis_concept,
    "esvm_weight": fig_esvm_weight,
    "zeroshot": fig_zeroshot,
    "text_search": fig_text_search,
    "speed": fig_speed,
    "serve": fig_serve,
}


# ----------------------------------------------------------------------------- equations
#: every equation citation in the code is ``[Paper] Eq. (n)`` (tests/docs/test_citations.py checks the
#: form); the paper key decides the method page whose table lists it, wherever the file lies
CITATION = re.compile(r"(\[[A-Za-z]+\d*\]\s*)?Eqs?\.\s*\(([^)]+)\)")
#: papers cited beside the five methods' own (zero-shot baselines and evaluation protocol)
OTHER_PAPER_METHOD = {"[Xian18]": "zeroshot", "[Lampert14]": "zeroshot", "[RomeraParedes15]": "zeroshot", "[Norouzi14]": "zeroshot"}


def paper_method() -> dict[str, str]:
    return {**{paper: method for method, paper in METHOD_PAPER.items()}, **OTHER_PAPER_METHOD}


@functools.lru_cache(maxsize=1)
def _sources() -> tuple[tuple[Path, str, tuple[tuple[int, int, str], ...]], ...]:
    """Every hardneg module: its path, text and the (first line, last line, name) of each
    function and class, parsed once for all five methods' equation tables."""
    out = []
    for f in sorted((ROOT / "hardneg").rglob("*.py")):
        text = f.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        spans = tuple((node.lineno, node.end_lineno or node.lineno, node.name) for node in ast.walk(tree)
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
        out.append((f, text, spans))
    return tuple(out)


def _cited_line(line: str) -> str:
    """The table cell for a line that cites an equation: as text when it is whole (its formula then renders as
    maths on the site, see docs/hooks.py), as code when it is cut (a formula broken over lines, or longer than
    110 characters) so that half a formula is never typeset."""
    what = line.strip().lstrip("#*\"' ").replace("``", "").removesuffix('"""').removesuffix("'''").rstrip()
    whole = len(what) <= 110 and all(what.count(a) == what.count(b) for a, b in ("()", "{}", "[]"))
    if whole:
        return what.replace("|", "\\|")
    what = what[:110] + ("…" if len(what) > 110 else "")
    return "<code>" + html.escape(what, quote=False).replace("|", "&#124;") + "</code>"


def equations(method: str) -> str:
    rows = []
    papers = paper_method()
    for f, text, spans in _sources():
        for i, line in enumerate(text.splitlines(), 1):
            for m in CITATION.finditer(line):
                paper = (m.group(1) or "").strip()
                if not paper or paper not in papers:
                    raise ValueError(f"{f.relative_to(ROOT)}:{i}: equation citation without a known paper key "
                                     f"({paper or 'none'}; known: {', '.join(sorted(papers))}): write `[Paper] Eq. (n)`")
                if papers[paper] != method:
                    continue
                inside = [s for s in spans if s[0] <= i <= s[1]]
                where = min(inside, key=lambda s: s[1] - s[0])[2] if inside else "module"
                rows.append({"eq": m.group(2).strip(), "paper": paper,
                             "file": f.relative_to(ROOT).as_posix(), "line": i, "where": where,
                             "what": _cited_line(line)})
    if not rows:
        return "*No `Eq. (n)` citations found in the code.*\n"

    def key(r):
        m = re.match(r"(\d+)", r["eq"])
        return (r["paper"], int(m.group(1)) if m else 999, r["file"], r["line"])

    rows.sort(key=key)
    lines = ["| paper | equation | file:line | function / class | the line that cites it |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['paper']} | Eq. ({r['eq']}) | `{r['file']}:{r['line']}` | `{r['where']}` | {r['what']} |")
    lines.append("\n*Grepped from the code by `docs/generate.py` at build time.*")
    # folded (pymdownx.details): a reference table of up to ~80 rows would otherwise run a method page
    # ~4,000 px longer before its results
    papers = ", ".join(sorted({r["paper"] for r in rows}))
    body = "\n".join(("    " + line) if line else "" for line in "\n".join(lines).splitlines())
    return f'??? info "The {len(rows)} equation citations in the code ({papers}): file, line and function"\n\n{body}\n'



# ----------------------------------------------------------------------------- pages
def script_of(stem: str, scripts: list[str]) -> str | None:
    cands = [s for s in scripts if stem == s or stem.startswith(s + "_")]
    return max(cands, key=len) if cands else None


def script_doc(path: Path) -> str:
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except SyntaxError:
        doc = ""
    return doc or "*This script has no module docstring.*"


def build(out: Path) -> dict:
    """Write every generated file under ``out``; return {'benchmarks': [(title, rel page)], 'figures': {...}}."""
    w = Writer(out)
    scripts = sorted(p.stem for p in BENCHMARKS.glob("*.py") if not p.stem.startswith("_") and p.stem not in ("readme_figures",))
    results = sorted(p.stem for p in RESULTS.glob("*.json"))
    per_script: dict[str, list[str]] = {s: [] for s in scripts}
    orphans = []
    for stem in results:
        s = script_of(stem, scripts)
        (per_script[s] if s else orphans).append(stem)

    # figures, each with a snippet page-part that shows it or says why not
    fig_index: dict[str, list] = {}
    for key, fn in FIGURES.items():
        try:
            made = fn(w)
            if not made:
                raise KeyError("no result file with the data")
        except Exception as exc:  # a missing or reshaped file skips its figure, never fails the build
            logger.warning("figure %s skipped: %s", key, exc)
            w.text(f"fig_{key}.md", f"!!! note \"Figure not drawn\"\n    `{fn.__name__}` found no data to plot: {fmt(str(exc))}.\n")
            fig_index[key] = []
            continue
        parts = []
        for rel, source, caption in made:
            parts.append(f"![{caption}](/generated/{rel})\n\n*{caption} Source: `benchmarks/results/{source}.json`"
                         f" (see its benchmark page), drawn by `docs/generate.py`.*\n")
        w.text(f"fig_{key}.md", "\n".join(parts))
        fig_index[key] = made

    # tables, each a snippet a page includes (a missing result file leaves a note, never fails the build)
    for key, tfn in TABLES.items():
        try:
            w.text(f"table_{key}.md", tfn(w))
        except Exception as exc:  # noqa: BLE001
            logger.warning("table %s skipped: %s", key, exc)
            w.text(f"table_{key}.md", f"!!! note \"Table not made\"\n    `{tfn.__name__}` found no data: {fmt(str(exc))}.\n")

    # one results section per result file
    for stem in results:
        try:
            data = json.loads((RESULTS / f"{stem}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            w.text(f"results/{stem}.md", f"*`{stem}.json` could not be read: {exc}*\n")
            continue
        body = [provenance(stem, data if isinstance(data, dict) else {}), ""]
        body += generic(data)
        w.text(f"results/{stem}.md", "\n\n".join(body) + "\n")

    # one page per benchmark script
    pages = []
    figs_by_source: dict[str, list] = {}
    for made in fig_index.values():
        for rel, source, caption in made:
            for src in source.split(", "):
                figs_by_source.setdefault(src, []).append((rel, caption))
    for s in scripts:
        doc = script_doc(BENCHMARKS / f"{s}.py")
        first, _, rest = doc.partition("\n")
        lines = [f"# {s}.py", "", f"**{first.strip().replace('[', '&#91;')}**", "", "```text", rest.strip(), "```", ""]
        if not per_script[s]:
            lines.append("*No result file in `benchmarks/results/` yet: run the script to produce one.*")
        for stem in per_script[s]:
            lines += [f"## {stem}.json", ""]
            for rel, caption in figs_by_source.get(stem, []):
                lines += [f"![{caption}](/generated/{rel})", ""]
            lines.append((out / "results" / f"{stem}.md").read_text(encoding="utf-8").replace("\n### ", "\n### ")
                         .replace("\n#### ", "\n#### "))
        text = "\n".join(lines)
        text = _demote(text)
        w.text(f"benchmarks/{s}.md", text + "\n")
        pages.append((s, f"generated/benchmarks/{s}.md"))
    if orphans:
        body = ["# Other result files", "", "Result files no benchmark script's name matches.", ""]
        for stem in orphans:
            body += [f"## {stem}.json", "", (out / "results" / f"{stem}.md").read_text(encoding="utf-8")]
        w.text("benchmarks/other.md", _demote("\n".join(body)) + "\n")
        pages.append(("other result files", "generated/benchmarks/other.md"))

    for method in METHOD_CODE:
        w.text(f"equations_{method}.md", equations(method))
    w.text("headline_figures.md", headline_figures())
    for rel, text in page_tables().items():
        w.text(rel, text)

    # an index of the benchmark pages
    idx = ["| script | what it measures | result files |", "|---|---|---|"]
    for s in scripts:
        first = script_doc(BENCHMARKS / f"{s}.py").partition("\n")[0].replace("|", "\\|").replace("[", "&#91;")
        idx.append(f"| [{s}](/generated/benchmarks/{s}.md) | {first} | {len(per_script[s])} |")
    w.text("benchmarks_index.md", "\n".join(idx) + "\n")
    # remove stale generated files (a result file that was deleted)
    keep = set(w.written)
    for p in out.rglob("*"):
        if p.is_file() and p not in keep:
            p.unlink()
    return {"benchmarks": pages, "figures": fig_index}


def concept_openclipart_tables() -> str:
    """Negative Bootstrap against asymmetric bagging per concept on openclipart (issues 28, 36): the current default
    (concept_openclipart_spies.json), the mean AP table of every variant (concept_openclipart_m.json) and of n_candidates="cv" (concept_openclipart_cv.json, and with noisy
    tags concept_openclipart_noisy_cv.json), then the fresh-seed checks of the losing concepts
    (concept_openclipart_fresh.json, concept_openclipart_fresh_m3.json) and the paper's related-tag exclusion on them
    (concept_openclipart_related.json)."""
    try:
        data = _load("concept_openclipart_m")
    except OSError:
        return "*No concept_openclipart_m.json result yet.*\n"
    out = []
    try:  # the default since issue 36 (spies where the pool has no tagged items), T = 20
        out += [*_mean_ap_table(_load("concept_openclipart_spies"), "concept_openclipart_spies",
                                "The current default `[auto]` (spies where the pool holds fewer than 10 tagged items; "
                                "the mixture-proportion estimate over quantiles of the tagged items otherwise) beside the "
                                "paper's selection `[0]`, T = 20. The tables after it ran before issue 36, at T = 50."), ""]
    except OSError:
        pass
    out += _mean_ap_table(data, "concept_openclipart_m", "`+m5` / `+m3`: `n_candidates` = 5 / 3 × |B+| instead of the default "
                         "10 × |B+|; `[0]`: the paper's selection (`skip_top=0`), `[auto]`: the default.")
    for name in ("concept_openclipart_cv", "concept_openclipart_noisy_cv"):
        try:
            out += ["", *_mean_ap_table(_load(name), name, "`+mcv`: `n_candidates=\"cv\"` (m = 3 or 10 × |B-| chosen per "
                                        "concept by 3-fold validation on B+), beside the default `[auto]`.")]
        except OSError:
            pass
    extra = [
        ("concept_openclipart_fresh", "**Fresh seeds {s} for the concepts seeds 0-2 had as losers** "
         "(`benchmarks/results/concept_openclipart_fresh.json`; seeds 0-2 chose these concepts, so only new seeds "
         "test them without bias): NB − bagging, mean [paired 95 % interval]."),
        ("concept_openclipart_fresh_m3", "**Fresh seeds {s} for the concepts `+m3` left more than a point below bagging** "
         "(`benchmarks/results/concept_openclipart_fresh_m3.json`; seeds 0-5 chose them): NB − bagging, mean "
         "[paired 95 % interval]."),
        ("concept_openclipart_related", "**The paper's related-tag exclusion** (`related_tags=\"auto\"` for every "
         "method: WordNet hyponyms and tags within NGD 0.3 of the concept; `benchmarks/results/concept_openclipart_related.json`, "
         "seeds {s}, the losing concepts): NB − bagging, mean [paired 95 % interval]; tags it excluded: {related}."),
    ]
    for name, intro in extra:
        try:
            out += ["", *_paired_vs_bagging_table(_load(name), intro)]
        except OSError:
            continue
    return "\n".join(out) + "\n"


def concept_untagged_tables() -> str:
    """docs/methods/concept.md's untagged-pool tables: per data set (concept_untagged_<data>.json), mean AP of each
    method per (|B+|, share, tagged) group over concepts and seeds, the cells where the default is more than 0.5
    points below the better baseline or significantly below one (paired 95 % interval), and fit times."""
    out = []
    for data_name, title in (("fashion", "Fashion-MNIST CNN"), ("openclipart", "openclipart CNN")):
        name = f"concept_untagged_{data_name}"
        if not (RESULTS / f"{name}.json").exists():
            out.append(f"*No {name}.json result yet.*\n")
            continue
        data = _load(name)
        methods = data["methods"]
        groups = list(dict.fromkeys((r["n_pos"], str(r["share"]), r["tagged"]) for r in data["summary"]))
        out += [f"**{title}** (`benchmarks/results/{name}.json`; {data['features']}; T = {data['T']}, seeds "
                f"{data['seeds']}): mean AP over the concepts of each group; the last columns count the concepts where "
                "the default (`nb`) is more than 0.5 AP points below max(bagging, random), and where its paired 95 % "
                "interval over seeds lies below bagging or random.", "",
                "| B+ size | concept's share of the pool | share of its other members tagged | "
                + " | ".join(methods) + " | default > 0.5 below | significantly below |",
                "|---|---|---|" + "---|" * len(methods) + "---|---|"]
        for n_pos, share, tagged in groups:
            rows = [r for r in data["summary"] if (r["n_pos"], str(r["share"]), r["tagged"]) == (n_pos, share, tagged)]
            mean = {m: sum(r["mean_AP"][m] for r in rows) / len(rows) for m in methods}
            below = sum(r["mean_AP"]["nb"] < max(r["mean_AP"]["bagging"], r["mean_AP"]["random"]) - 0.005 for r in rows)
            sig = sum(any((p := r["paired"].get(f"nb-{b}")) and p["hi"] is not None and p["hi"] < 0
                          for b in ("bagging", "random")) for r in rows)
            share_txt = "natural" if share == "natural" else f"{100 * float(share):g} %"
            out.append(f"| {n_pos} | {share_txt} | {100 * tagged:g} % | " + " | ".join(f"{mean[m]:.3f}" for m in methods)
                       + f" | {below} / {len(rows)} | {sig} / {len(rows)} |")
        ratio = data.get("fit_time_vs_nb_paper", {})
        out += ["", "Fit time against NB as printed, summed over every cell: "
                + ", ".join(f"{m} {v:.2f}×" for m, v in ratio.items() if m != "nb-paper") + ".", ""]
        worst = sorted(data["summary"], key=lambda r: r["mean_AP"]["nb"] - max(r["mean_AP"]["bagging"], r["mean_AP"]["random"]))[:5]
        out += ["Largest shortfalls of the default against max(bagging, random): "
                + "; ".join(f"{r['concept']} (B+ {r['n_pos']}, share {r['share']}, tagged {100 * r['tagged']:g} %) "
                            f"{100 * (r['mean_AP']['nb'] - max(r['mean_AP']['bagging'], r['mean_AP']['random'])):+.1f} points"
                            for r in worst) + ".", ""]
    return "\n".join(out) + "\n"


def _mean_ap_table(data: dict, name: str, legend: str) -> list[str]:
    """Rows tag condition, columns method: mean AP over concepts and seeds, and for NB variants (concepts more
    than 1 AP point below bagging / concepts whose paired 95 % interval lies below 0)."""
    methods = data["methods"]
    out = [f"**All {data['summary'][0]['n_concepts']} concepts, seeds {data['summary'][0]['seeds']}** "
           f"(`benchmarks/results/{name}.json`): mean AP; concepts whose mean NB − bagging is below "
           f"−1 AP point; concepts whose paired 95 % interval of NB − bagging lies below 0. {legend}", "",
           "| condition | " + " | ".join(methods) + " |", "|---|" + "---|" * len(methods)]
    for summ in data["summary"]:
        cond = ("complete tags" if not summ["missing"] and not summ["wrong"] else f"{summ['missing']:.0%} untagged"
                + (f", {summ['wrong']:.0%} wrongly tagged" if summ["wrong"] else ""))
        paired = summ["paired_vs_bagging"]
        cells = []
        for m in methods:
            cell = f"{summ['mean_ap'][m]:.3f}"
            if m != "bagging":
                below = sum(v[m]["mean"] < -0.01 for v in paired.values())
                sig = sum(v[m]["ci95"][1] < 0 for v in paired.values())
                cell += f" ({below} / {sig})"
            cells.append(cell)
        out.append(f"| {cond} | " + " | ".join(cells) + " |")
    return out


def _paired_vs_bagging_table(data: dict, intro: str) -> list[str]:
    """Rows concept, columns (NB variant, tag condition): NB − bagging, mean [paired 95 % interval]; bold where the
    interval lies below 0."""
    seeds = data["summary"][0]["seeds"]
    related = sorted({f"{r['concept']} → {', '.join(r['related'])}" for r in data["rows"] if r.get("related")})
    nbs = [m for m in data["methods"] if m.startswith("nb")]
    conds = ["complete tags" if not s["missing"] else f"{s['missing']:.0%} untagged" for s in data["summary"]]
    out = [intro.format(s=f"{seeds[0]}-{seeds[-1]}", related="; ".join(related) or "none"), "",
           "| concept | " + " | ".join(f"{m}, {c}" for m in nbs for c in conds) + " |", "|---|" + "---|" * (len(nbs) * len(conds))]
    for concept in data["summary"][0]["paired_vs_bagging"]:
        cells = []
        for m in nbs:
            for summ in data["summary"]:
                v = summ["paired_vs_bagging"][concept][m]
                cell = f"{v['mean']:+.3f} [{v['ci95'][0]:+.3f}, {v['ci95'][1]:+.3f}]"
                cells.append(f"**{cell}**" if v["ci95"][1] < 0 else cell)
        out.append(f"| {concept} | " + " | ".join(cells) + " |")
    return out


def zeroshot_openclipart_tables() -> str:
    """Issue 38's training of [Bucher16] on openclipart (zeroshot_openclipart*.json): unseen and seen accuracy, paired
    differences against ESZSL and against the old 5-epoch setting, epochs run, fit time as a ratio to the old setting."""
    out: list[str] = []
    for name in _files("zeroshot_openclipart"):
        data = _load(name)
        if "paired_vs_old" not in data:
            continue  # a result file from before issue 38
        setup = data.get("setup", {})
        z, sa = data["zsl"], data["seen_accuracy"]
        pe, po = data["paired_vs_ESZSL"], data["paired_vs_old"]
        spe, spo = data.get("seen_paired_vs_ESZSL", {}), data.get("seen_paired_vs_old", {})
        ep, ratio = data.get("epochs_run", {}), data.get("fit_time_ratio_vs_old", {})
        dims = setup.get("params", {}).get("pca")
        out += [f"**`{name}.json`** ({setup.get('splits')} of {setup.get('splits_asked')} splits; features "
                f"{'PCA-' + str(dims) if dims else 'raw 1280-d'}; chance: unseen {setup.get('chance_zsl', float('nan')):.1f} %, "
                f"seen {setup.get('chance_seen', float('nan')):.1f} %). Paired columns: mean ± std over splits of the "
                "per-split difference, then wins/losses.", "",
                "| method | unseen acc (%) | − ESZSL | − old | seen acc (%) | seen − ESZSL | seen − old | epochs run | fit time / old (median) |",
                "|---|---|---|---|---|---|---|---|---|"]

        def pd(table, k):
            v = table.get(k)
            return f"{v['minus_mean']:+.2f} ± {v['minus_std']:.2f} ({v['wins']}/{v['losses']})" if v else "—"

        for k, v in z.items():
            e = ep.get(k)
            epochs = f"{e['mean']:.0f} ({e['min']}–{e['max']})" if e else "—"
            fit = f"{ratio[k]['median']:.1f}" if k in ratio else "—"
            out.append(f"| {k} | {v['mean']:.2f} ± {v['std']:.2f} | {pd(pe, k)} | {pd(po, k)} | "
                       f"{sa[k]['mean']:.2f} ± {sa[k]['std']:.2f} | {pd(spe, k)} | {pd(spo, k)} | {epochs} | {fit} |")
        chosen = data.get("tuned_choices", {})
        for k, picks in chosen.items():
            counts: dict[str, int] = {}
            for p in picks:
                key = ", ".join(f"{a}={b:g}" for a, b in sorted(p.items()))
                counts[key] = counts.get(key, 0) + 1
            out += ["", f"*{k}*: chosen per split on the held-out 20 % of the seen classes ({setup.get('tuned_grid')}): "
                    + "; ".join(f"{key} ×{n}" for key, n in sorted(counts.items(), key=lambda t: -t[1])) + "."]
        out += ["", f"*Setup:* old setting: {setup.get('old_setting')}; defaults: {setup.get('defaults')}. "
                f"{setup.get('tuned_grid_note', '')}. Source: `benchmarks/results/{name}.json`, "
                f"{provenance(name, data).strip()}", ""]
    return "\n".join(out) + "\n" if out else "*No zeroshot_openclipart result from issue 38 yet.*\n"


def _paired(runs, base) -> str:
    """Mean ± std of the split-by-split difference (the same unseen classes in both)."""
    import numpy as np

    d = np.asarray(runs, dtype=float) - np.asarray(base, dtype=float)
    return f"{d.mean():+.2f} ± {d.std():.2f}"


def zeroshot_offline_tables() -> str:
    """[Bucher16]'s tables on the offline protocols (zeroshot_tables_*.json): Table 1 with the paired difference to
    Bucher [1], Table 2, GZSL, the Fig. 1 summary and the training speed, one section per result file."""
    import numpy as np

    out: list[str] = []
    for name in ("zeroshot_tables_mnist", "zeroshot_tables_fashion_mnist", "zeroshot_tables_mnist_cnn",
                 "zeroshot_tables_fashion_mnist_cnn"):
        if not (RESULTS / f"{name}.json").exists():
            continue
        data = _load(name)
        t1, setup = data["table1"], data.get("setup", {})
        protocols = list(t1)
        paper = setup.get("paper_table1_aPY", {})
        tuned = {p: data["tuning"][p]["best"] for p in protocols if p in data.get("tuning", {})}
        tuned_text = "; ".join(f"{p}: " + ", ".join(f"{k} {v:g}" for k, v in b.items()) for p, b in tuned.items())
        out += [f"#### `{name}.json`", "", f"*{setup.get('data', '')}.* Tuned per protocol: {tuned_text}. "
                f"Best n (Table 2): " + ", ".join(f"{k} {v}" for k, v in data.get("best_n", {}).items()) + ".", "",
                "| method | " + " | ".join(protocols) + " | paired vs Bucher [1]: " + " / ".join(protocols) + " | paper, aP&Y |",
                "|---|" + "---|" * (len(protocols) + 2)]
        methods = list(dict.fromkeys(m for p in protocols for m in t1[p]))
        for m in methods:
            cells = [f"{t1[p][m]['mean']:.2f} ± {t1[p][m]['std']:.2f}" if m in t1[p] else "n/a (needs per-image vectors)"
                     for p in protocols]
            paired = ["-" if m not in t1[p] or m == "Bucher [1]" else _paired(t1[p][m]["runs"], t1[p]["Bucher [1]"]["runs"])
                      for p in protocols]
            out.append(f"| {m} | " + " | ".join(cells) + f" | {' / '.join(paired)} | {paper.get(m, '-')} |")
        t2 = data["table2"]
        ns = list(next(iter(t2.values())))
        out += ["", "Table 2 (accuracy vs negatives per positive n; split 0, per-image protocol):", "",
                "| sampler | " + " | ".join(f"n={n}" for n in ns) + " |", "|---|" + "---|" * len(ns)]
        out += [f"| {s} | " + " | ".join(f"{v[n]['accuracy']:.2f}" for n in ns) + " |" for s, v in t2.items()]
        g = data["gzsl"]
        out += ["", "GZSL, mean over runs: seen / unseen / H (%):", "",
                "| method | " + " | ".join(protocols) + " |", "|---|" + "---|" * len(protocols)]
        for m in methods:
            cells = []
            for p in protocols:
                runs = g.get(p, {}).get(m)
                cells.append(" / ".join(f"{np.mean([r[k] for r in runs]):.1f}" for k in ("seen", "unseen", "harmonic"))
                             if runs else "n/a")
            out.append(f"| {m} | " + " | ".join(cells) + " |")
        fig1 = data.get("fig1", {}).get("pixels", {})
        if fig1:
            out += ["", "Fig. 1 (split 0, pixels protocol), unseen accuracy per epoch: " + "; ".join(
                f"{m} best at epoch {int(np.argmax(v)) + 1} ({max(v):.1f}), final {v[-1]:.1f}" for m, v in fig1.items()) + "."]
        speed = data.get("speed", {})
        if speed:
            out += ["", "Training speed (pairs per second over all epochs and runs; share of the epoch time spent sampling): "
                    + "; ".join(f"{p} / {m} {np.sum([r['pairs_per_s'] * r['fit_s'] for r in runs]) / np.sum([r['fit_s'] for r in runs]):,.0f}"
                                f" ({100 * np.mean([r['sampler_share'] for r in runs]):.0f} %)"
                                for p, ms in speed.items() for m, runs in ms.items()) + "."]
        out += ["", provenance(name, data), ""]
    return "\n".join(out) + "\n" if out else "*No zeroshot_tables result yet.*\n"


#: esvm_retrieval result files, in the page's order, and what their base features are
ESVM_RETRIEVAL_FILES = {"esvm_retrieval": "raw pixels", "esvm_retrieval_cnn": "CNN features", "esvm_retrieval_dsift": "dense-SIFT BoW-1K",
                        "esvm_retrieval_vlad": "dense-SIFT VLAD-64", "esvm_retrieval_vlad_N20000": "VLAD-64, N = 20,000"}


@_named_result
def esvm_retrieval_table(name: str, data: dict) -> str:
    """One esvm_retrieval*.json run as a table: mAP (symmetric, asymmetric), kNN and NCM accuracy per encoding."""
    setup = data.get("setup", {})
    names = {"centring": "centring (baseline)", "centring + PCA-whitening (256)": "centring + PCA-whitening 256 (baseline)"}

    def encoding(e: str) -> str:
        return names.get(e, e.replace("(batch)", "(exact)").replace("(lda)", "(LDA, extra)"))

    def num(v) -> str:
        return "—" if v is None else f"{v:.3f}"

    out = [f"*{setup.get('features', name)}; pool N = {setup.get('N', '?'):,}, {setup.get('queries', '?')} queries against "
           f"{setup.get('database', '?'):,} items; parameters {setup.get('params', {})}.*", "",
           "| encoding | mAP sym | mAP asym | kNN acc | NCM acc |", "|---|---|---|---|---|"]
    out += [f"| {encoding(r['encoding'])} | {num(r.get('mAP_symmetric'))} | {num(r.get('mAP_asymmetric'))} | "
            f"{num(r.get('knn_acc'))} | {num(r.get('ncm_acc'))} |" for r in data["rows"]]
    grid = data.get("sensitivity_validation") or []
    if grid and "base_val_mAP" in data:
        vals = [g["val_mAP_symmetric"] for g in grid]
        best = max(grid, key=lambda g: g["val_mAP_symmetric"])
        out += ["", f"Validation grid ({len(grid)} settings of the pool size, λ and α₋; E-SVM symmetric mAP on the "
                f"validation split): {min(vals):.3f} to {max(vals):.3f}, base features {data['base_val_mAP']:.3f}; best "
                f"with {best['n_negatives']:,} negatives, λ = {best['lam']:g}, α₋ = {best['alpha_neg']:g}."]
    return "\n".join(out + ["", provenance(name, data), ""])


HASHING_METHODS = (("tsvm", "TSVM hashing"), ("pca_itq", "PCA-ITQ"), ("pca_rr", "PCA-RR"), ("lsh", "LSH"),
                   ("sklsh", "SKLSH"), ("pq", "PQ"), ("euclidean", "exact Euclidean"))


@_from_result("hashing_retrieval")
def hashing_retrieval_tables(data: dict) -> str:
    """The studies of hashing_retrieval.json as tables: retrieval (mAP@500 in %, best per row in bold), the setups,
    the unlabeled study, label noise (mean of the seeds), one node under label noise, and full training."""
    out = [f"*{data['protocol']}.*", ""]
    if data.get("retrieval"):
        cols = [k for k, _ in HASHING_METHODS if k in data["retrieval"][0]]
        out += ["| data | bits | " + " | ".join(dict(HASHING_METHODS)[k] for k in cols) + " |",
                "|---|---|" + "---|" * len(cols)]
        for r in data["retrieval"]:
            best = max(r[k] for k in cols)
            cells = [f"**{100 * r[k]:.1f}**" if r[k] == best else f"{100 * r[k]:.1f}" for k in cols]
            out.append(f"| {r['dataset']} | {r['bits']} | " + " | ".join(cells) + " |")
        out += ["", "| data | queries | database | labelled | unlabelled | dim | C chosen (validation mAP per C) | "
                "TSVM fit (s) |", "|---|---|---|---|---|---|---|---|"]
        for name, su in data.get("setups", {}).items():
            val = ", ".join(f"{float(c):g}: {100 * v:.2f}" for c, v in su.get("C_validation_map", {}).items())
            out.append(f"| {name} | {su.get('queries'):,} | {su.get('database'):,} | {su.get('labeled'):,} | "
                       f"{su.get('unlabeled'):,} | {su.get('dim')} | {su.get('C'):g} ({val}) | {su.get('tsvm_fit_s', 0):.0f} |")
        out.append("")
    if data.get("unlabeled"):
        out += ["**Unlabelled data and the balancing constraint** (64 bits, mAP@500 in %):", "",
                "| data | C | no unlabelled data | unlabelled, balancing on (the paper) | unlabelled, balancing off "
                "(default) |", "|---|---|---|---|---|"]
        out += [f"| {u['dataset']} | {u['C']:g} | {100 * u['without']:.1f} | {100 * u['with_balancing']:.1f} | "
                f"{100 * u['with_no_constraint']:.1f} |" for u in data["unlabeled"]]
        out.append("")
    if data.get("label_noise"):
        groups: dict = {}
        for r in data["label_noise"]:
            groups.setdefault((r["C"], r["flip_rate"]), []).append(r)
        seeds = sorted({r["seed"] for r in data["label_noise"]})
        out += [f"**Label noise** (MNIST 5k, 64 bits, mAP@500 in %, mean of seeds {', '.join(map(str, seeds))}):", "",
                "| C | labels flipped | ramp loss (RTSVM) | hinge loss |", "|---|---|---|---|"]
        for (c, rate), rs in sorted(groups.items()):
            ramp, hinge = (100 * sum(r[k] for r in rs) / len(rs) for k in ("ramp", "hinge"))
            out.append(f"| {c:g} | {rate:.0%} | {ramp:.1f} | {hinge:.1f} |")
        out.append("")
    if data.get("label_noise_node"):
        out += ["**One node under label noise** (binary test accuracy in %, C = 1):", "",
                "| positive classes | labels flipped | ramp | hinge | linear SVM |", "|---|---|---|---|---|"]
        out += [f"| {', '.join(map(str, r['positive_classes']))} | {r['flip_rate']:.0%} | {100 * r['ramp']:.1f} | "
                f"{100 * r['hinge']:.1f} | {100 * r['linear_svm']:.1f} |" for r in data["label_noise_node"]]
        out.append("")
    if data.get("full_training"):
        out += ["**Full training** (Fashion-MNIST, every training image labelled, C = 1):", "",
                "| bits | labelled | trees | fit (s) | mAP@500 (%) |", "|---|---|---|---|---|"]
        out += [f"| {r['bits']} | {r['labeled']:,} | {r['trees']} | {r['fit_s']:.0f} | {100 * r['map']:.1f} |"
                for r in data["full_training"]]
        out.append("")
    return "\n".join(out + [provenance("hashing_retrieval", data), ""])


@_from_result("hashing_trees")
def hashing_trees_table(data: dict) -> str:
    """hashing_trees.json: class subsets and the embedding mode, mAP@500 in % and fit time over the default's."""
    out = [f"*{data['protocol']}.*", "", "| data | variant | trees × nodes per tree | 32 bits | 64 bits | fit time |",
           "|---|---|---|---|---|---|"]
    for key, block in data.items():
        if not isinstance(block, dict) or "rows" not in block:
            continue
        rows = block["rows"]
        best = {b: max(r[f"map_{b}"] for r in rows) for b in (32, 64)}
        for r in rows:
            cells = [f"**{100 * r[f'map_{b}']:.1f}**" if r[f"map_{b}"] == best[b] else f"{100 * r[f'map_{b}']:.1f}"
                     for b in (32, 64)]
            ratio = "1" if r["fit_vs_default"] == 1 else f"{r['fit_vs_default']:.2f}×"
            out.append(f"| {key} | {r['variant']} | {r['trees']} × {r['nodes'] // r['trees']} | {cells[0]} | {cells[1]} "
                       f"| {ratio} |")
    return "\n".join(out + ["", provenance("hashing_trees", data), ""])


MISSING_TAGS_RUNS = ("3seeds", "confusable", "full60k")  # concept_missing_tags_<features>_<run>.json
MISSING_TAGS_FEATURES = (("fashion-mnist-cnn", "CNN"), ("fashion-mnist-dsift1024", "dense-SIFT"))


def concept_missing_tags_table(run: str) -> str:
    """One concept_missing_tags_<features>_<run>.json pair (CNN and dense SIFT) as a table: mean AP over the seeds per
    concept, one cell per untagged share, the default's difference to asymmetric bagging (bold where below), and the
    share of untagged positives among the negatives the paper's selection chose."""
    out, sources, summary = [], [], []
    for feats, label in MISSING_TAGS_FEATURES:
        name = f"concept_missing_tags_{feats}_{run}"
        if not (RESULTS / f"{name}.json").exists():
            continue
        data = _load(name)
        if not out:
            out = [f"*Pool {data['pool']:,}, {data['test']:,} test items, |B+| = {data['n_pos']}, T = {data['T']}, mean "
                   f"over seeds {', '.join(map(str, data['seeds']))}; cells are untagged shares "
                   f"{' / '.join(f'{m:.0%}' for m in data['missing'])} of the concept's pool items.*", "",
                   "| features | group | concept (share of pool) | asymmetric bagging | NB, paper (`skip_top=0`) | "
                   "NB, `skip_top=\"auto\"` (default) | default − bagging | untagged positives among the paper's "
                   "negatives |", "|---|---|---|---|---|---|---|---|"]
        by_concept: dict = {}
        summary.append(_missing_tags_summary(label, data["summary"]))
        for s in data["summary"]:
            by_concept.setdefault((s["group"], s["concept"]), []).append(s)
        shares = {}
        for r in data["results"]:
            shares.setdefault((r["group"], r["concept"], r["missing"]), []).append(
                r["untagged_positive_share_of_negatives"]["NB (paper, skip 0)"])
        for (group, concept), cells in by_concept.items():
            cells = sorted(cells, key=lambda c: c["missing"])

            def col(method, cells=cells):
                return " / ".join(f"{c['mean_AP'][method]:.4f}" for c in cells)

            deltas = []
            for c in cells:
                d = round(c["mean_AP"]["NB skip auto"] - c["mean_AP"]["asymmetric bagging"], 4) + 0.0  # no -0.0000
                deltas.append(f"**{d:+.4f}**" if d < 0 else f"{d:+.4f}")
            neg = " / ".join(f"{statistics.fmean(shares[(group, concept, c['missing'])]):.0%}" for c in cells)
            out.append(f"| {label} | {group} | {concept} ({cells[0]['concept_share']:.2f}) | {col('asymmetric bagging')} | "
                       f"{col('NB (paper, skip 0)')} | {col('NB skip auto')} | {' / '.join(deltas)} | {neg} |")
        sources.append(provenance(name, data))
    if not out:
        return f"*No concept_missing_tags_*_{run}.json result yet.*\n"
    return "\n".join(out + [""] + [f"- {line}" for line in summary] + [""] + [s + "\n" for s in sources])


def _missing_tags_summary(label: str, cells: list[dict]) -> str:
    """One line per feature set: where the default stands against bagging, and the paper's selection's largest loss."""
    def where(c):
        return f"{c['concept']}, {c['missing']:.0%} untagged"

    def diff(c, method):  # to the table's 4 decimals
        return round(c["mean_AP"][method] - c["mean_AP"]["asymmetric bagging"], 4) + 0.0

    ok = [c for c in cells if diff(c, "NB skip auto") >= 0]
    low = min(cells, key=lambda c: diff(c, "NB skip auto"))
    paper = min(cells, key=lambda c: diff(c, "NB (paper, skip 0)"))
    worst = diff(paper, "NB (paper, skip 0)")
    paper_s = (f"the paper's selection falls up to {-worst:.4f} below bagging ({where(paper)})" if worst < 0
               else "the paper's selection is never below bagging")
    return (f"{label}: the default is at or above asymmetric bagging in {len(ok)} of {len(cells)} cells, to 4 decimals (lowest "
            f"{diff(low, 'NB skip auto'):+.4f}, {where(low)}); {paper_s}.")


@_named_result
def concept_missing_tags_T_table(name: str, data: dict) -> str:
    """AP against T in one concept_missing_tags run: mean over its common-concept cells (every untagged share) per
    method, with each method's fit time."""
    cells = [r for r in data["results"] if r["group"] == "common"]
    methods = list(cells[0]["AP_vs_T"])
    ts = sorted({int(t) for t in cells[0]["AP_vs_T"][methods[0]]})
    out = [f"*{data['features']}; pool {data['pool']:,}, |B+| = {data['n_pos']}, seed {data.get('seed', data.get('seeds'))}; "
           f"mean AP over the {len(cells)} common-concept cells (concepts × untagged shares "
           f"{' / '.join(f'{m:.0%}' for m in data['missing'])}).*", "",
           "| method | " + " | ".join(f"T = {t}" for t in ts) + " | fit at T = " + f"{data['T']} (s, mean) |",
           "|---|" + "---|" * (len(ts) + 1)]
    for m in methods:
        aps = [statistics.fmean(c["AP_vs_T"][m][str(t)] for c in cells) for t in ts]
        fit = statistics.fmean(c["fit_s"][m] for c in cells)
        out.append(f"| {m} | " + " | ".join(f"{a:.4f}" for a in aps) + f" | {fit:.1f} |")
    return "\n".join(out + ["", provenance(name, data), ""])


# result files whose benchmark writes its table as markdown ("table"); the pages include them as they are
STORED_TABLE_FILES = ("similarity_solis", "similarity_solis_10k", "similarity_solis_fashion_1k_both",
                      "similarity_solis_fashion_10k_both", "similarity_retrieval", "similarity_vocab_tree")


def stored_table(name: str) -> str:
    """The markdown table a benchmark stored in its result file, with the file's provenance below it."""
    data = _load(name)
    return "\n".join([data["table"].strip(), "", provenance(name, data), ""])


def _words(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}K"


def _param(p) -> str:
    return f"({p[0]:g}, {p[1]:g})" if isinstance(p, list) else str(p)


@_from_result("similarity_solis_large")
def solis_large_tables(data: dict) -> str:
    """similarity_solis_large.json (Section 5.4 at 10K / 100K / 1M words): the vocabularies, every method, S-ADA's
    sparsity path and the inverted index at the sparse end of it; the full index and goal tables folded."""
    out = ["| words | learn tree s | quantize µs / descr. | words used | words per image | database items sharing ≥ 1 "
           "word with a query |", "|---|---|---|---|---|---|"]
    out += [f"| {_words(f['words'])} | {f['learn_s']:.1f} | {f['quantize_us_per_descriptor']:.2f} | {f['words_used']:,} | "
            f"{f['nnz_mean']:.1f} | {f['db_share_sharing_a_word_%']:.2f} % |" for f in data["features"]]
    out += ["", "| words | method | (η, λ) / C | held-out mAP % | mAP % | Δ TF-IDF | Δ OASIS-diag | sparsity % | "
            "train s (1M triplets) | time / OASIS-diag |", "|---|---|---|---|---|---|---|---|---|---|"]
    out += [f"| {_words(r['words'])} | {r['method']} | {_param(r['param'])} | {r['heldout mAP %']} | {r['mAP %']} | "
            f"{r['Δ TF-IDF']} | {r['Δ OASIS-diag']} | {r['sparsity %']} | {r['train s']} | {r['time / OASIS-diag']} |"
            for r in data["rows"]]
    # S-ADA w1 = 0: the chosen model (λ from the grid), then its λ path up to the first λ that zeroes every weight
    out += ["", "Sparsity against mAP, S-ADA w1 = 0 at its chosen η, from the chosen λ along the path until every "
            "weight is zero (chance is 10.0 % mAP):", "", "| words (η) | λ | sparsity % | mAP % |", "|---|---|---|---|"]
    for f in data["features"]:
        chosen = next(r for r in data["rows"] if r["words"] == f["words"] and r["method"] == "S-ADA w1=0")
        lams, spars, maps = [f"{chosen['param'][1]:g} (chosen)"], [chosen["sparsity %"]], [chosen["mAP %"]]
        for p in (p for p in data["sparsity_path"] if p["words"] == f["words"]):
            lams.append(f"{p['lam']:g}")
            spars.append(p["sparsity %"])
            maps.append(p["mAP %"])
            if p["nonzero weights"] == 0:
                break
        out.append(f"| {_words(f['words'])} ({chosen['param'][0]:g}) | {' / '.join(lams)} | {' / '.join(spars)} | "
                   f"{' / '.join(maps)} |")
    sparse = [r for r in data["index"] if "TF-IDF" in r["weights"] or "chosen" in r["weights"]
              or 90 <= float(r["sparsity %"]) < 100]
    out += ["", "Inverted index over the 60,000 training rows, 1,000 queries, top 100 (median of 3): TF-IDF, the chosen "
            "S-ADA w1 = 0 model and its path points with 90–99.99 % zero weights:", "",
            "| words | weights | sparsity % | mAP % | postings / TF-IDF | build s (/ TF-IDF) | search ms / query (/ TF-IDF) |",
            "|---|---|---|---|---|---|---|"]
    out += [f"| {_words(r['words'])} | {r['weights']} | {r['sparsity %']} | {r['mAP %']} | {r['postings / TF-IDF']} | "
            f"{r['build s']} ({r['build / TF-IDF']}) | {r['search ms / query']} ({r['search / TF-IDF']}) |" for r in sparse]
    for title, key in (("Every inverted-index row", "index"), ("The issue's goals, per vocabulary and learner", "goals")):
        out += ["", f'??? note "{title}"', ""] + ["    " + line for line in data["tables"][key].strip().splitlines()]
    return "\n".join(out + ["", provenance("similarity_solis_large", data), ""])


@_from_result("similarity_solis_large")
def solis_large_goals(data: dict) -> str:
    """The figures of issue 13's goals that similarity_solis_large.json measures, one line per goal."""
    rows, path, index = data["rows"], data["sparsity_path"], data["index"]
    sizes = [f["words"] for f in data["features"]]

    def row(words, method):
        return next(r for r in rows if r["words"] == words and r["method"] == method)

    gains = "; ".join(f"{_words(w)}: {row(w, 'S-ADA w1=1')['Δ TF-IDF']} / {row(w, 'S-AFB w1=1')['Δ TF-IDF']} over TF-IDF, "
                      f"{row(w, 'S-ADA w1=1')['Δ OASIS-diag']} / {row(w, 'S-AFB w1=1')['Δ OASIS-diag']} over OASIS-diag"
                      for w in sizes)
    w0 = "; ".join(f"{_words(w)} {row(w, 'S-ADA w1=0')['Δ TF-IDF']}" for w in sizes)
    lines = [f"mAP, S-ADA / S-AFB w1 = 1 (paired s.e. over the queries): {gains}. S-ADA w1 = 0 over TF-IDF: {w0}."]
    spars = []
    for w, goal in ((sizes[1], 90.0), (sizes[2], 99.0)) if len(sizes) == 3 else ():
        chosen = row(w, "S-ADA w1=0")
        first = next((p for p in path if p["words"] == w and float(p["sparsity %"]) > goal), None)
        reach = (f"the path first passes {goal:g} % at λ = {first['lam']:g} ({first['sparsity %']} %), mAP {first['mAP %']} "
                 f"({float(first['mAP %']) - float(chosen['mAP %']):+.2f})" if first else f"the path never passes {goal:g} %")
        spars.append(f"{_words(w)}: the selected S-ADA w1 = 0 has {chosen['sparsity %']} % zero weights (mAP {chosen['mAP %']}); {reach}")
    if spars:
        lines.append("Sparsity: " + "; ".join(spars) + ".")
    timed = [r for r in rows if r["train s"] != "-"]
    secs = [float(r["train s"]) for r in timed]
    ratios = [float(r["time / OASIS-diag"]) for r in timed]
    lines.append(f"Training on 1M triplets: {min(secs):.2f}–{max(secs):.2f} s per learner over every vocabulary size, "
                 f"{min(ratios):.2f}–{max(ratios):.2f}× OASIS-diag's time in the same run.")
    largest = sizes[-1]
    sparse = [r for r in index if r["words"] == largest and "TF-IDF" not in r["weights"] and float(r["sparsity %"]) < 100
              and float(r["search / TF-IDF"]) <= 0.5]
    if sparse:
        best = max(sparse, key=lambda r: float(r["mAP %"]))
        lines.append(f"Inverted index at {_words(largest)} words: the best-mAP model searching in ≤ 0.5× TF-IDF's time is "
                     f"{best['weights']} ({best['sparsity %']} % zeros, {best['search / TF-IDF']}×, mAP {best['mAP %']} against "
                     f"TF-IDF's {row(largest, 'TF-IDF')['mAP %']}).")
    big = data["features"][-1]
    lines.append(f"Vocabulary: the {_words(big['words'])}-word tree learned from {big['tree_sample']:,} descriptors in "
                 f"{big['learn_s']:.0f} s; all {big['images']:,} images ({big['descriptors']:,} descriptors) quantized in "
                 f"{big['quantize_s']:.0f} s.")
    return "\n".join([f"- {line}" for line in lines] + ["", provenance("similarity_solis_large", data), ""])


MUTATION_GOAL = 0.9  # the kill rate issue 12 asked for


@_from_result("mutation_sample")
def mutation_table(data: dict) -> str:
    """mutation_sample.json: the kill rate per folder with its 95 % Wilson interval, then the re-test rounds of an
    earlier sample kept under ``earlier_runs`` (each with its own command and commit)."""
    out = [f"*{data['n_mutants']:,} mutants in the tree; a uniform sample of {data['sample']} (seed {data['seed']}); "
           f"{data['seconds'] / 60:.0f} min on this machine.*", "",
           "| folder | checked | killed | kill rate | 95 % interval | statuses |", "|---|---|---|---|---|---|"]
    out += [f"| {f['folder']} | {f['checked']} | {f['killed']} | {f['kill_rate']:.1%} | {f['ci95'][0]:.1%}–{f['ci95'][1]:.1%} | "
            + ", ".join(f"{k} {v}" for k, v in sorted(f["statuses"].items())) + " |" for f in data["folders"]]
    total = next(f for f in data["folders"] if f["folder"] == "all")
    out += ["", f"Goal: {MUTATION_GOAL:.0%} killed overall: {'met' if total['kill_rate'] >= MUTATION_GOAL else 'not met'} "
            f"({total['kill_rate']:.1%}; mutants that no selected test reaches count as surviving)."]
    earlier = [(run, key, study) for run in data.get("earlier_runs", []) for key, study in run["studies"].items()]
    samples = [(run, study) for run, key, study in earlier if key.startswith("sample_seed")]
    if samples:
        out += ["", "Earlier whole-tree samples (each at its own commit, before the tests written since):", ""]
    for run, study in samples:
        overall = next(f for f in study["folders"] if f["folder"] == "all")
        out.append(f"- seed {study['seed']}, {study['sample']} of {study['n_mutants']:,} mutants (commit "
                   f"`{str(run.get('commit'))[:12]}`): {overall['kill_rate']:.1%} killed "
                   f"({overall['ci95'][0]:.1%}–{overall['ci95'][1]:.1%}).")
    rounds = [(run, key, study) for run, key, study in earlier if not key.startswith("sample_seed")]
    if rounds:
        out += ["", "Earlier rounds on another sample (its survivors re-tested against tests written from them, so "
                "these rates are not estimates for the whole tree):", ""]
    for run, key, study in rounds:
        overall = next(f for f in study["folders"] if f["folder"] == "all")
        excl = (f", {overall['kill_rate_excl_equivalent']:.1%} without the mutants found equivalent"
                if "kill_rate_excl_equivalent" in overall else "")
        commit = f"commit `{str(run['commit'])[:12]}`" if run.get("commit") else "command and commit not recorded"
        out.append(f"- `{key}` ({commit}): {overall['kill_rate']:.1%} killed "
                   f"({overall['ci95'][0]:.1%}–{overall['ci95'][1]:.1%}){excl}.")
    return "\n".join(out + ["", provenance("mutation_sample", data), ""])


@_from_result("dask_scale")
def dask_scale_table(data: dict) -> str:
    """dask_scale.json: each store-wide job in process, on the 2-worker LocalCluster and through dask.array, with the
    cluster's own cost (a no-op job over the same partitions) against the goal."""
    by = {(r["job"], r["mode"]): r for r in data["results"]}
    jobs = list(dict.fromkeys(r["job"] for r in data["results"]))
    load = data.get("load_average_after")
    out = [f"*{data['rows']:,} × {data['dim']} rows: {data['data']}; {data['overhead']['partitions']} "
           f"partitions of {data['overhead']['partition_rows']:,} rows; {data['workers']} workers, "
           f"{data['threads_per_process']} thread per process; median of {data['rounds']} interleaved rounds"
           + (f"; load average after the run {load[0]:.1f}" if load else "") + ".*", "",
           "| job | in process (1 worker) | 2-worker cluster | dask.array, same cluster and store | busy worker's speed "
           "per row / in process |", "|---|---|---|---|---|"]
    for job in jobs:
        one, cl, da = by.get((job, "in process")), by.get((job, "cluster")), by.get((job, "dask.array"))
        out.append(f"| {job} | {one['seconds']:.2f} s ({one['rows_per_s'] / 1e3:,.0f}K rows/s) | "
                   f"{cl['throughput_vs_in_process']:.2f}× | "
                   + (f"{da['throughput_vs_in_process']:.2f}× | " if da else "— | ")
                   + f"{cl['busy_worker_speed_vs_in_process']:.2f} (busy {cl['worker_busy_fraction']:.0%} of the time) |")
    o = data["overhead"]
    out += ["", f"- Cluster overhead: a no-op job over the same partitions and merge takes {o['noop_job_seconds']:.2f} s, "
            f"{o['scheduling_overhead_per_partition_ms']:.1f} ms per partition: {o['overhead_fraction_of_concept_scan']:.1%} "
            f"of the concept scan on the cluster and {o['overhead_fraction_of_hash_encoding']:.1%} of the hash encoding "
            f"(goal ≤ {o['goal_overhead_fraction']:.0%}: {'met' if o['goal_met'] else 'not met'}).",
            "- Same results: " + "; ".join(f"{k}: {'yes' if v is True else 'no' if v is False else f'{v:.7f}'}"
                                         for k, v in data["same_results"].items()) + ".",
            "", provenance("dask_scale", data), ""]
    return "\n".join(out)


def _duration(seconds: float) -> str:
    for unit, size, from_s in (("days", 86400, 2 * 86400), ("h", 3600, 2 * 3600), ("min", 60, 100)):
        if seconds >= from_s:
            value = seconds / size
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


SCALING_WORKERS = (8, 32, 128)
SCALING_ROWS = 100_000_000
WIDE_WORK = 5  # the 1,280-d rows cost about 5x the 256-d per-row work (an extrapolation, said on the page)


def scaling_plan_table() -> str:
    """The 100M plan: each job's per-worker rate, from dask_scale.json (scans and encoding), esvm_speed_cnn.json (the
    batch solver at the default alpha_neg, and LDA) and features_throughput.json (CNN extraction per core), and the
    wall time it implies on 8 / 32 / 128 workers."""
    try:
        dask, esvm, feats = _load("dask_scale"), _load("esvm_speed_cnn"), _load("features_throughput")
    except (OSError, ValueError):
        return "*A result file of the plan (dask_scale, esvm_speed_cnn, features_throughput) is missing.*\n"
    per = dask["per_worker_rows_per_s"]
    default_alpha = 2 * esvm["params"]["lam"] / esvm["N"]  # alpha_neg="auto" on unit-norm rows
    batch = next(r for r in esvm["rows"] if r["solver"].startswith("batch") and r["threads"] == 1
                 and math.isclose(r["alpha_neg"], default_alpha))
    lda = next(r for r in esvm["rows"] if r["solver"].startswith("lda"))
    cnn = feats["rows"][0]
    cnn_per_core = cnn["images_per_s"] / feats["machine"]["torch_threads"]
    jobs = [("concept scan, 256-d", per["concept scan"], "dask_scale"),
            ("concept scan, 1,280-d", per["concept scan"] / WIDE_WORK, f"256-d / {WIDE_WORK}"),
            ("hash encoding, 256-d", per["hash encoding"], "dask_scale"),
            ("hash encoding, 1,280-d", per["hash encoding"] / WIDE_WORK, f"256-d / {WIDE_WORK}"),
            (f"E-SVM encoding (batch solver, default α₋ = {default_alpha:g}, 1,280-d, N = {esvm['N']:,} negatives, one "
             "thread)", batch["exemplars_per_s"], "esvm_speed_cnn"),
            ("E-SVM, LDA mode (extra)", lda["exemplars_per_s"], "esvm_speed_cnn"),
            (f"CNN extraction, {cnn['extractor']} ({cnn['images_per_s']:.1f} images/s on {feats['machine']['torch_threads']} "
             "threads; images already decoded: file decoding comes on top)", cnn_per_core, "features_throughput")]
    out = [f"| job ({SCALING_ROWS // 1_000_000}M rows) | per worker (rows/s) | from | "
           + " | ".join(f"{w} workers" for w in SCALING_WORKERS) + " |", "|---|---|---|" + "---|" * len(SCALING_WORKERS)]
    for job, rate, source in jobs:
        shown = f"{rate / 1e3:,.0f}K" if rate >= 1e4 else f"{rate:,.0f}"
        out.append(f"| {job} | {shown} | {source} | "
                   + " | ".join(_duration(SCALING_ROWS / (rate * w)) for w in SCALING_WORKERS) + " |")
    read_mb = per["concept scan"] * dask["dim"] * 4 / 1e6
    out += ["", f"Reads: one 256-d concept-scan worker reads {read_mb:,.0f} MB/s ({per['concept scan'] / 1e3:,.0f}K rows/s × "
            f"{dask['dim'] * 4:,} B); {SCALING_WORKERS[1]} of them want {SCALING_WORKERS[1] * read_mb / 1e3:.0f} GB/s in total. "
            f"The cluster's own cost was {dask['overhead']['scheduling_overhead_per_partition_ms']:.1f} ms per partition."]
    sources = [provenance(n, d) for n, d in (("dask_scale", dask), ("esvm_speed_cnn", esvm), ("features_throughput", feats))]
    return "\n".join(out) + "\n\n" + "\n\n".join(sources) + "\n"


@_from_result("concept_quality")
def concept_quality_table(data: dict) -> str:
    """concept_quality.json: mean AP over the classes per feature set and setting, every method, and the paper's
    selection against asymmetric bagging."""
    methods: list[str] = []
    for feats in data["results"].values():
        for setting in feats["settings"].values():
            methods += [m for m in setting["methods"] if m not in methods]
    out = ["| features | setting | " + " | ".join(methods) + " | NB (paper) vs AB |", "|---|---|" + "---|" * (len(methods) + 1)]
    for feats in data["results"].values():
        for name, setting in feats["settings"].items():
            res = setting["methods"]
            cells = [f"{res[m]['mAP']:.4f}" if m in res else "—" for m in methods]
            nb, ab = res["negative bootstrap"]["mAP"], res["asymmetric bagging"]["mAP"]
            label = f"{name}, T = {setting['T']}".replace("|", "\\|")
            out.append(f"| {feats['description']} | {label} | " + " | ".join(cells)
                       + f" | {100 * (nb - ab) / ab:+.1f}% |")
    return "\n".join(out + ["", provenance("concept_quality", data), ""])


@_from_result("features_fashion_retrieval")
def features_fashion_retrieval_table(data: dict) -> str:
    """features_fashion_retrieval.json: exact-kNN retrieval quality of each feature set, search time over pixels'."""
    out = [f"*{data['protocol']}.*", "", "| features | mAP | mAP@100 | P@10 | search time / pixels |", "|---|---|---|---|---|"]
    out += [f"| {r['features']} | {r['mAP']:.3f} | {r['mAP@100']:.3f} | {r['P@10']:.3f} | {r['time_vs_pixels']:.2f} |"
            for r in data["rows"]]
    return "\n".join(out + ["", provenance("features_fashion_retrieval", data), ""])


@_from_result("store_scan")
def store_scan_table(data: dict) -> str:
    """store_scan.json: each reader's best scan of the same store, its throughput over the store's, and peak memory."""
    store = data["readers"][0]["GB_per_s"]
    out = [f"*{data['rows']:,} × {data['dim']:,} float32, {data['gigabytes']:.1f} GB, in the page cache; a column sum over "
           f"every block; best of {data['repeats']}.*", "", "| reader | GB/s | throughput vs store | peak RSS |",
           "|---|---|---|---|"]
    for r in data["readers"]:
        rss = r.get("peak_rss_MiB")
        rss_s = "—" if rss is None or rss != rss else f"{rss:,.0f} MiB"
        out.append(f"| `{r['reader']}` | {r['GB_per_s']:.1f} | {r['GB_per_s'] / store:.2f} | {rss_s} |")
    first = data["readers"][0]
    out += ["", f"The store scans at {data['throughput_ratio_store_vs_memmap']:.2f}× a freshly opened memory map and "
            f"{data['throughput_ratio_store_vs_memmap_kept_mapped']:.2f}× one whose page tables are already warm (goal "
            f"{data['goal']}), in bounded memory ({first['peak_rss_MiB']:.0f} MiB peak, of which "
            f"{first['rss_after_imports_MiB']:.0f} MiB is the interpreter and imports)."]
    if "time_ratio_checked_vs_unchecked_store_scan" in data:
        unchecked = next(r for r in data["readers"] if "without the NaN/inf check" in r["reader"])
        kept = next(r for r in data["readers"] if "kept mapped" in r["reader"])
        out += ["", f"Every chunk read is checked for NaN and infinity (`hardneg/store/_finite.py`): the check takes the "
                f"scan to {data['time_ratio_checked_vs_unchecked_store_scan']:.2f}× the time of the same scan without "
                f"it, which reads at {unchecked['GB_per_s'] / kept['GB_per_s']:.2f}× the warm memory map."]
    out += ["", provenance("store_scan", data), ""]
    return "\n".join(out)


@_from_result("features_throughput")
def features_throughput_table(data: dict) -> str:
    """features_throughput.json: images a second of each extractor, and the speed over the default CNN's."""
    threads = data.get("machine", {}).get("torch_threads", "?")
    sizes = sorted(data["photo_sizes"], key=lambda wh: math.prod(int(v) for v in wh.split("x")))
    out = [f"*{threads} threads; photos: the {len(sizes)} scikit-image and scikit-learn sample photos, {sizes[0]} to "
           f"{sizes[-1]} px, as decoded arrays (no file decoding); Fashion-MNIST: 28 × 28 grey "
           "images from memory.*", "", "| extractor | data | images | images/s | speed vs CNN @224 |", "|---|---|---|---|---|"]
    out += [f"| {r['extractor']} | {r['data']} | {r['n_images']:,} | {r['images_per_s']:.1f} | {r['speed_vs_cnn224']:.2f} |"
            for r in data["rows"]]
    return "\n".join(out + ["", provenance("features_throughput", data), ""])


@_from_result("hamming_ann")
def hamming_ann_table(data: dict) -> str:
    """hamming_ann.json: recall@100 and speed of each IVF setting against the exhaustive search and FAISS direct."""
    out = [f"*{data['protocol']}. Exhaustive search: {data['exhaustive_hammingindex_qps']:,.0f} queries/s "
           f"(`HammingIndex`), {data['exhaustive_faiss_flat_qps']:,.0f} (FAISS `IndexBinaryFlat` directly).*", "",
           "| nlist | nprobe | recall@100 | queries/s | × exhaustive | `search` (ids) vs FAISS direct | "
           "`rank` (rows) vs FAISS direct |", "|---|---|---|---|---|---|---|"]
    out += [f"| {g['nlist']} | {g['nprobe']} | {g['recall']:.3f} | {g['qps']:,.0f} | {g['speedup_vs_exhaustive']:.1f} | "
            f"{g['vs_faiss_direct']:.2f} | {g['rank_vs_faiss_direct']:.2f} |" for g in data["grid"]]
    b = data["best_at_recall_0.99"]
    out += ["", f"Fastest setting at recall@100 ≥ 0.99: nlist {b['nlist']}, nprobe {b['nprobe']}, recall "
            f"{b['recall']:.3f}, {b['speedup_vs_exhaustive']:.0f}× the exhaustive search (goal ≥ 10×); `search` at "
            f"{b['vs_faiss_direct']:.2f}× FAISS direct and `rank` at {b['rank_vs_faiss_direct']:.2f}×.", "",
            provenance("hamming_ann", data), ""]
    return "\n".join(out)


@_named_result
def serve_load_table(name: str, data: dict) -> str:
    """A serve_load*.json run: each load run over HTTP, the exact-cosine run and the in-process baselines, then what
    micro-batching changed for the IVF search."""
    run = study_run(data, "load")
    if run is None:
        return f"*{name}.json holds no load study.*\n"
    data = run  # the loadavg, args and provenance of the run that measured the load
    args, load = data["args"], data["load"]

    def ms(v):
        return f"{v:.1f}" if v < 10 else f"{v:.0f}"

    start, end = data.get("loadavg_start", [float("nan")])[0], data.get("loadavg_end", [float("nan")])[0]
    out = [f"*{load['n_codes']:,} codes of {load['bits']} bits, k = {load['k']}, {args['clients']} clients with the "
           f"{args['client']} client, {args['seconds']:g} s per run, IVF {load['nlist']} lists; load average {start:.1f} "
           f"at the start and {end:.1f} at the end (1-minute).*", "",
           "| what | req/s | p50 ms | p95 ms | p99 ms | errors | mean batch | server CPU ms/req | client CPU ms/req |",
           "|---|---|---|---|---|---|---|---|---|"]
    for m in load["runs"]:
        out.append(f"| {m['search'][0] if m['search'] else '?'}, {m['batching']} | {m['requests_per_s']:,.1f} | "
                   f"{ms(m['p50_ms'])} | {ms(m['p95_ms'])} | {ms(m['p99_ms'])} | {m['errors']} | {m['mean_batch_size']:.1f} | "
                   f"{1000 * m['server_cpu_s_per_request']:.2f} | {1000 * m['client_cpu_s_per_request']:.2f} |")
    if load.get("cosine"):
        m = load["cosine"]
        out.append(f"| exact cosine over the float vectors | {m['requests_per_s']:,.1f} | {ms(m['p50_ms'])} | "
                   f"{ms(m['p95_ms'])} | {ms(m['p99_ms'])} | {m['errors']} | | | |")
    for key, b in load["direct_baseline"].items():
        if isinstance(b, dict) and "queries_per_s" in b:
            out.append(f"| baseline: in-process {key}, 1 query at a time | {b['queries_per_s']:,.1f} | {b['p50_ms']:.2f} | "
                       f"{b['p95_ms']:.2f} | {b['p99_ms']:.2f} | 0 | | | |")
    ivf = {m["batching"]: m for m in load["runs"] if m["search"] and m["search"][0].startswith("ivf")}
    if {"batched", "one by one"} <= set(ivf):
        b, one = ivf["batched"], ivf["one by one"]
        out += ["", f"Micro-batching the IVF search: {b['requests_per_s'] / one['requests_per_s']:.1f}× the throughput, "
                f"p95 {ms(one['p95_ms'])} → {ms(b['p95_ms'])} ms, server CPU {1000 * one['server_cpu_s_per_request']:.2f} → "
                f"{1000 * b['server_cpu_s_per_request']:.2f} ms a request; over HTTP the batched IVF search serves "
                f"{b['requests_per_s'] / load['direct_baseline']['ivf']['queries_per_s']:.2f}× the in-process rate of one "
                "query at a time."]
    rec = load.get("recall")
    if rec:
        out += ["", f"Tie-aware recall@{rec['k']} of the {rec['search']} answers over HTTP against the exhaustive ones, "
                f"{rec['n_queries']} queries: {rec['recall_at_k']:.3f} ({rec['identical_lists']:.0%} of the id lists "
                "identical: 64-bit codes over a million items tie, and most differences are equal-distance swaps)."]
    rss = [v for m in load["runs"] for v in (m.get("rss_mb_start"), m.get("rss_mb_end")) if v is not None]
    if rss:
        out += ["", f"Server memory: {min(rss):,.0f}–{max(rss):,.0f} MB RSS over the runs; errors in all runs: "
                f"{sum(m['errors'] for m in load['runs'])}."]
    met = [f"{m['search'][0]}, {m['batching']} ({ms(m['p95_ms'])} ms)" for m in load["runs"]
           if m["search"] and m["p95_ms"] < 50]
    out += ["", "Goal p95 < 50 ms at 32 clients: " + (f"met by {'; '.join(met)}." if met else "met by no run here.")]
    return "\n".join(out + ["", provenance(name, data), ""])


def solis_why_table(key: str, name: str = "similarity_solis_why_10k") -> str:
    """One study of similarity_solis_why.py as a grid: its setting (labelled images per class, or passes) by learner,
    mAP % as mean ± population std over the draws."""
    data = _load(name)
    runs = data[key]
    axis = "labeled per class" if key == "labels" else "passes"
    learners = list(dict.fromkeys((r["method"], r["w_init"]) for r in runs))
    values = sorted({r[axis] for r in runs})
    out = [f"| {'labelled per class' if key == 'labels' else 'passes'} | "
           + " | ".join(m if m.startswith("OASIS") else f"{m} w1={w:g}" for m, w in learners) + " |",
           "|---|" + "---|" * len(learners)]
    for v in values:
        cells = []
        for m, w in learners:
            maps = [100 * r["mAP"] for r in runs if r[axis] == v and (r["method"], r["w_init"]) == (m, w)]
            cells.append(f"{statistics.fmean(maps):.2f} ± {statistics.pstdev(maps):.2f}" if maps else "—")
        out.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(out + ["", provenance(name, data), ""])


@_from_result("serve_load")
def serve_concept_table(data: dict) -> str:
    """serve_load.json's concept study: the service's first grid and re-rank against the CLI's path, per concept."""
    run = study_run(data, "concept")
    if run is None:
        return "*serve_load.json holds no concept study.*\n"
    c = run["concept"]
    out = [f"*{c['store']}; {c['settings']}; store built in {c['store_build_s']:.1f} s; the first concept after the "
           f"start (cold) took {c['cold_first_concept_s']:.1f} s.*", "",
           "| concept | first grid (s) | re-rank after feedback (s) | CLI path (s) | first / CLI | P@24 | "
           "P@24 after feedback | re-rank: train / feedback member / compress / scan (s) |", "|---|---|---|---|---|---|---|---|"]
    steps = ("train_s", "feedback_s", "compress_s", "scan_s")
    out += [f"| {r['concept']} | {r['first_grid_s']:.2f} | {r['rerank_s']:.2f} | {r['cli_train_search_s']:.2f} | "
            f"{r['first_vs_cli']:.2f} | {r['P@24']:.2f} | {r['P@24_after_feedback']:.2f} | "
            + " / ".join(f"{r['feedback_timings'][k]:.2f}" for k in steps) + " |" for r in c["concepts"]]
    first, rerank = max(r["first_grid_s"] for r in c["concepts"]), max(r["rerank_s"] for r in c["concepts"])
    out += ["", f"Goals: first grid < 3 s ({'met' if first < 3 else 'not met'}, slowest {first:.2f} s), re-rank < 2 s "
            f"({'met' if rerank < 2 else 'not met'}, slowest {rerank:.2f} s).", "", provenance("serve_load", run), ""]
    return "\n".join(out)


def page_tables() -> dict[str, str]:
    """Every results table a method or guide page includes (``--8<-- "docs/generated/<file>"``), by file name."""
    tables = {"concept_openclipart_tables.md": concept_openclipart_tables(),
              "concept_untagged_tables.md": concept_untagged_tables(),
              "zeroshot_openclipart_tables.md": zeroshot_openclipart_tables(),
              "zeroshot_keywords_table.md": zeroshot_keywords_table(), "zeroshot_lr_table.md": zeroshot_lr_table(),
              "zeroshot_offline_tables.md": zeroshot_offline_tables(),
              "hashing_retrieval_tables.md": hashing_retrieval_tables(), "hashing_trees_table.md": hashing_trees_table(),
              "concept_missing_tags_T_table.md": concept_missing_tags_T_table("concept_missing_tags_fashion-mnist-dsift1024"),
              "concept_quality_table.md": concept_quality_table(),
              "features_fashion_retrieval_table.md": features_fashion_retrieval_table(),
              "store_scan_table.md": store_scan_table(), "features_throughput_table.md": features_throughput_table(),
              "hamming_ann_table.md": hamming_ann_table(), "serve_concept_table.md": serve_concept_table(),
              "similarity_solis_large_tables.md": solis_large_tables(),
              "similarity_solis_large_goals.md": solis_large_goals(), "mutation_table.md": mutation_table(),
              "dask_scale_table.md": dask_scale_table(), "scaling_plan_table.md": scaling_plan_table()}
    tables |= {f"concept_missing_tags_{run}_table.md": concept_missing_tags_table(run) for run in MISSING_TAGS_RUNS}
    tables |= {f"{name}_table.md": serve_load_table(name) for name in ("serve_load", "serve_load_raw")}
    tables |= {f"{name}_table.md": stored_table(name) for name in STORED_TABLE_FILES}
    tables |= {f"similarity_solis_why_{key}_table.md": solis_why_table(key) for key in ("labels", "passes")}
    tables |= {f"{name}_table.md": esvm_retrieval_table(name) for name in ESVM_RETRIEVAL_FILES
               if (RESULTS / f"{name}.json").exists()}
    return tables


@_from_result("zeroshot_openclipart_lr")
def zeroshot_lr_table(data: dict) -> str:
    """The SGD step study of issue 38 (zeroshot_openclipart_lr.json): fixed steps against lr="auto" per feature set."""
    out = ["| features | step | unseen acc (%) | seen acc (%) | epochs run | diverged runs |", "|---|---|---|---|---|---|"]
    for feats, r in data["by_features"].items():
        for k in data["setup"]["configs"]:
            z, sa = r["zsl"].get(k), r["seen_accuracy"].get(k)
            ep = r["epochs_run_mean"].get(k)
            unseen = f"{z['mean']:.2f} ± {z['std']:.2f}" if z else "—"
            seen = f"{sa['mean']:.2f} ± {sa['std']:.2f}" if sa else "—"
            epochs = f"{ep:.0f}" if ep is not None else "—"
            out.append(f"| {feats} ({r['splits']} splits) | {k} | {unseen} | {seen} | {epochs} | {r['diverged_runs'].get(k, 0)} |")
    out += ["", f"*Training:* {data['setup']['training']}. {provenance('zeroshot_openclipart_lr', data).strip()}", ""]
    return "\n".join(out) + "\n"


@_from_result("zeroshot_openclipart_keywords")
def zeroshot_keywords_table(data: dict) -> str:
    """The per-image protocol (issue 38 item 4, zeroshot_openclipart_keywords.json): [Bucher16] Table 1's samplers,
    ESZSL and DAP, paired per split against random negatives and against ESZSL."""
    setup = data.get("setup", {})
    z, pr, pe = data["zsl"], data["paired_vs_random"], data["paired_vs_ESZSL"]
    ep, ratio = data.get("epochs_run_mean", {}), data.get("fit_time_ratio_vs_random_median", {})

    def pd(table, k):
        v = table.get(k)
        return f"{v['minus_mean']:+.2f} ± {v['minus_std']:.2f} ({v['wins']}/{v['losses']})" if v else "—"

    out = [f"**`zeroshot_openclipart_keywords.json`** ({setup.get('splits')} of {setup.get('splits_asked')} splits; "
           f"{setup.get('attributes')}; chance {setup.get('chance_zsl', float('nan')):.1f} %). Unseen-class accuracy; "
           "paired columns: mean ± std over splits of the per-split difference, then wins/losses.", "",
           "| method | unseen acc (%) | − random | − ESZSL | epochs run | fit time / random (median) |",
           "|---|---|---|---|---|---|"]
    for k, v in z.items():
        epochs = f"{ep[k]:.0f}" if k in ep else "—"
        fit = f"{ratio[k]:.2f}" if k in ratio else "—"
        out.append(f"| {k} | {v['mean']:.2f} ± {v['std']:.2f} | {pd(pr, k)} | {pd(pe, k)} | {epochs} | {fit} |")
    out += ["", f"*Setup:* {setup.get('protocol')}; {setup.get('params')}. {provenance('zeroshot_openclipart_keywords', data).strip()}", ""]
    return "\n".join(out) + "\n"


def headline_figures() -> str:
    """The README's headline table (``benchmarks/readme_figures.py``), for the docs' home page."""
    spec = importlib.util.spec_from_file_location("hardneg_readme_figures", BENCHMARKS / "readme_figures.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    try:
        block = module.render()
    except Exception as exc:  # a reshaped result file: say so, never fail the build
        logger.warning("headline figures skipped: %s", exc)
        return f"!!! note \"Headline figures not generated\"\n    {fmt(str(exc))}\n"
    return "\n".join(line for line in block.splitlines() if not line.startswith("<!--")).strip() + "\n"


def _demote(text: str) -> str:
    """Headings of the generic renderer start at ###; keep them under the page's ## sections."""
    return re.sub(r"^(#{3,5}) ", lambda m: "#" * (len(m.group(1)) + 1) + " ", text, flags=re.M)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "generated")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    info = build(args.out)
    n_fig = sum(len(v) for v in info["figures"].values())
    logger.info("wrote %d benchmark pages and %d figures under %s", len(info["benchmarks"]), n_fig, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
