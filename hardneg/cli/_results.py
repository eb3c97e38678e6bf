"""Writing results: the one writer of every result command (:func:`emit_results`):
a table on the terminal, ``--json``, ``--csv`` or an ``--html`` contact sheet, and
the result rows of store items."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from hardneg.exceptions import CLIError

from ._console import console, err_console, escape
from ._inputs import check_output_file, item_info


def as_rows(results) -> list[dict]:
    """Result rows as plain dicts, whatever holds them: a list of dicts, one dict of figures,
    or a result object with ``to_records()`` (:class:`hardneg.TopK`) / ``to_rows()`` / ``to_dicts()``."""
    for name in ("to_records", "to_rows", "to_dicts"):
        if hasattr(results, name):
            return [dict(r) for r in getattr(results, name)()]
    if isinstance(results, dict):
        return [results]
    return [dict(r) for r in results]


def check_result_outputs(as_json: bool, csv_out: str | None, html_out: str | None, inputs=()) -> None:
    """Refuse, before any work, result outputs that cannot be written or that clash."""
    if as_json and csv_out == "-":
        raise CLIError("--json and --csv - both write to stdout: give --csv a file name, or drop one of them")
    if csv_out and csv_out != "-":
        check_output_file(csv_out, "--csv", inputs=inputs)
    if html_out:
        check_output_file(html_out, "--html", inputs=inputs)
    if csv_out and html_out and csv_out != "-" and os.path.realpath(csv_out) == os.path.realpath(html_out):
        raise CLIError(f"--csv {csv_out} and --html {html_out}: the same file; give two names")


def _cell(value) -> str:
    import json

    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return ";".join(value)  # tags, as in the CSV files the CLI reads
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _columns(rows: list[dict]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        cols.extend(c for c in r if c not in cols)
    return cols


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # control characters but tab and newline


def write_csv(rows: list[dict], out: str) -> None:
    """Rows as CSV (a header of every key seen, in order): ``-`` is stdout, else a UTF-8 file."""
    import csv
    import io

    buf = io.StringIO()
    cols = _columns(rows)
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(cols)
    for r in rows:
        writer.writerow([_cell(r.get(c)) for c in cols])
    if out == "-":
        # a terminal must not get raw control characters (an ESC in an id of an old store
        # could drive it): shown escaped, as \x1b; a file keeps the data as it is
        sys.stdout.write(_CONTROL.sub(lambda m: repr(m.group())[1:-1], buf.getvalue()))
        sys.stdout.flush()
    else:
        Path(out).write_text(buf.getvalue(), encoding="utf-8")


def _figures_html(out: str, title: str, rows: list[dict]) -> None:
    import html

    cols = _columns(rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r.get(c)))}</td>" for c in cols) + "</tr>" for r in rows)
    page = (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head><body>"
            f"<h1>{html.escape(title)}</h1><table border=\"1\"><tr>{head}</tr>{body}</table></body></html>\n")
    Path(out).write_text(page, encoding="utf-8")
    err_console.print(f"report: {out}", highlight=False, markup=False, soft_wrap=True)


def emit_results(results, *, title: str, score: str | None = "score", as_json: bool = False, csv_out: str | None = None,
                 html_out: str | None = None, groups: list[dict] | None = None, query_column: bool = False,
                 figures: bool = False) -> None:
    """The one writer of every result command: a table on the terminal, or ``--json``, ``--csv``, ``--html``.

    ``results`` are rows of dicts (see :func:`as_rows`): ranked items (``rank``,
    ``id``, ``score`` or ``distance``, ``label``, ``tags``, ``path``...) or, with
    ``figures=True``, one dict of named figures (an evaluation). ``groups`` are
    the contact-sheet groups of ``--html`` (default: one group of all rows);
    figures get an HTML table instead. JSON keeps non-ASCII text as UTF-8.
    """
    import json

    rows = as_rows(results)
    if html_out:
        if figures:
            _figures_html(html_out, title, rows)
        else:
            write_html(html_out, title=title, groups=groups if groups is not None else [{"name": title, "results": rows}])
    if csv_out:
        write_csv(rows, csv_out)
    if as_json:
        payload = rows[0] if figures and isinstance(results, dict) else rows
        sys.stdout.write(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
        return
    if csv_out == "-":
        return
    if figures:
        from rich.table import Table

        table = Table(title=title, show_header=False)
        for row in rows:
            for key, value in row.items():
                if not isinstance(value, (list, dict)):
                    table.add_row(escape(str(key)), f"{value:.4f}" if isinstance(value, float) else escape(str(value)))
        console.print(table)
        return
    if score is None:  # only a figures table has no score column
        raise ValueError("emit_results: score=None is for figures=True; ranked rows need the name of their score column")
    print_results(rows, title=title, score=score, as_json=False, query_column=query_column)


def print_results(results: list[dict], *, title: str, score: str, as_json: bool, query_column: bool = False) -> None:
    """Search results as a table (rank, id, score, label, tags, path) or, with ``--json``, a JSON list."""
    import json

    if as_json:
        sys.stdout.write(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
        return
    from rich.table import Table

    folder, shown = short_paths([r.get("path") for r in results], [str(r["id"]) for r in results])
    caption = None
    if folder:
        caption = f"image files: {folder}/<id>" if shown is None else f"image files under {folder}"
    table = Table(title=title)
    cols = (["query"] if query_column else []) + ["rank", "id", score]
    # columns empty in every row (no labels, no tags, no files) only take width from the ids
    cols += [c for c, key in (("label", "label"), ("tags", "tags"), ("path", "path"))
             if any(r.get(key) for r in results) and (c != "path" or shown is not None)]
    for c in cols:
        table.add_column(c, justify="right" if c in ("rank", score) else "left", overflow="fold",
                         no_wrap=c in ("rank", score), max_width=max(12, console.width // 5) if c == "tags" else None)
    last = None
    for k, r in enumerate(results):
        value = r[score]
        cell = {"rank": str(r["rank"]), "id": str(r["id"]), score: f"{value:.4f}" if isinstance(value, float) else str(value),
                "label": r.get("label") or "", "tags": ", ".join(r.get("tags") or []),
                "path": (shown[k] if shown is not None else None) or ""}
        if query_column:
            cell["query"] = r["query"] if r["query"] != last else ""
            last = r["query"]
        table.add_row(*(escape(str(cell[c])) for c in cols))
    console.print(table)
    if caption:  # its own line: a caption would fold to the table's width
        console.print(escape(caption), highlight=False, soft_wrap=True)


def short_paths(paths: list[str | None], ids: list[str]) -> tuple[str | None, list[str | None] | None]:
    """What a result table shows of the items' image files, so that at 80 columns the same
    absolute prefix is not folded into every cell (issue 37 item 12).

    Returns ``(folder, shown)``: when every file is ``folder/<its id>`` (extracted images),
    ``shown`` is None (the id says it all); otherwise each path relative to the folder the
    files share (``folder`` None and paths unchanged when they share none).
    """
    given = [(p, i) for p, i in zip(paths, ids) if p]
    if not given:
        return None, None
    if all(p.replace(os.sep, "/").endswith("/" + i) for p, i in given):
        roots = {p[: -len(i) - 1] for p, i in given}
        if len(roots) == 1:
            return roots.pop(), None
    try:
        folder = os.path.commonpath([os.path.dirname(p) for p, _ in given])
    except ValueError:  # relative and absolute mixed, or other drives
        return None, list(paths)
    if folder in ("", os.sep):
        return None, list(paths)
    return folder, [None if not p else os.path.relpath(p, folder).replace(os.sep, "/") for p in paths]


def write_html(out: str, *, title: str, groups: list[dict]) -> None:
    """Write a contact sheet of search results (see :func:`hardneg.report.contact_sheet`) and say where."""
    from ..report import contact_sheet

    written = contact_sheet(out, title=title, groups=groups)
    err_console.print(f"contact sheet: {written}", highlight=False, markup=False, soft_wrap=True)


def ranked_results(store, res, *, concept=None, relevant_tag=None, relevant_label=None) -> list[dict]:
    """Result rows (rank, id, score, label, tags, path, relevant) of a store-wide ranking ``res``
    (a :class:`hardneg.TopK` of one query); ``relevant`` from the contact sheet's rule
    (the concept's tag, or ``--relevant-tag`` / ``--relevant-label``; None where unknown)."""
    from ..report._contact import relevance_marks

    relevant = relevance_marks(store, res.rows, concept=concept, tag=relevant_tag, label=relevant_label)
    return [{"rank": i + 1, "id": info["id"], "score": float(res.scores[i]), "label": info["label"], "tags": info["tags"],
             "path": info["path"], "relevant": None if relevant is None else relevant[i]}
            for i, info in enumerate(item_info(store, res.rows))]


def same_class(store, query_row: int | None, item_row: int) -> bool | None:
    """A result is a hit when it shares the query's label (both labeled), else any of its tags;
    None when there is nothing to judge by (an image-file query, or no labels and tags)."""
    if query_row is None:
        return None
    labels = store.labels()
    if labels[query_row] >= 0 and labels[item_row] >= 0:
        return bool(labels[query_row] == labels[item_row])
    tags = store.items.column("tags")
    q, t = set(tags[query_row].as_py() or []), set(tags[item_row].as_py() or [])
    return bool(q & t) if q and t else None
