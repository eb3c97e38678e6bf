"""What every CLI command shares: logging, progress bars, one-line errors."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import sys
import time
from pathlib import Path

from hardneg._extras import missing_extra_line
from hardneg.exceptions import CLIError  # defined there, re-exported here
from hardneg.exceptions import WordNetUnavailable


class _LazyConsole:
    """A rich Console made on first use: importing the CLI does not import rich (``hardneg --help`` stays fast)."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._console = None

    def real(self):
        """The rich Console itself (for rich objects that take one)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._kwargs)
        return self._console

    def __getattr__(self, name):
        return getattr(self.real(), name)


console = _LazyConsole()  # results
err_console = _LazyConsole(stderr=True)  # progress and errors


def escape(text: str) -> str:
    """``text`` safe to print with rich (brackets are not markup)."""
    from rich.markup import escape as _escape

    return _escape(text)


# Exceptions that are the user's to fix (bad input, missing files, bad models):
# shown as one line, never a traceback. The library raises ValueError, TypeError
# and IndexError (and their subclasses StoreError, ModelFileError) for bad input
# by convention. Of the OSErrors only those about paths the user named are here:
# an EIO or a bad file descriptor is a fault worth a traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (
    CLIError,
    ValueError,
    TypeError,
    IndexError,
    ImportError,  # a missing extra: error_line names its install command
    WordNetUnavailable,  # says which packages to install
    FileNotFoundError,  # includes DatasetNotFoundError
    FileExistsError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)
# Plain OSErrors that the user fixes (disk full or over quota, read-only disk, a
# name too long, a symlink loop).
_USER_ERRNOS = frozenset(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EROFS", "ENAMETOOLONG", "ELOOP") if hasattr(errno, name)
)


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's to fix (one line, exit 2) rather than a bug (traceback)."""
    from ..datasets import DatasetDownloadError  # an OSError: no network, a proxy page, a bad checksum

    if isinstance(exc, (*USER_ERRORS, DatasetDownloadError)):
        return True
    return isinstance(exc, OSError) and exc.errno in _USER_ERRNOS


def error_line(exc: BaseException) -> str:
    """The one line shown for a user error: no traceback, no line breaks, no rich markup."""
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        # "[Errno 21] Is a directory: 'x'" -> "x: Is a directory". With two names it is a
        # rename of a temporary file onto the user's path (atomic writes): name the latter.
        name = exc.filename if exc.filename2 is None else exc.filename2
        text = f"{os.fsdecode(name)}: {exc.strerror}"
    elif isinstance(exc, ModuleNotFoundError) and (extra := missing_extra_line(exc)) is not None:
        text = extra
    else:
        text = str(exc) or type(exc).__name__
    from hardneg.store._errors import public_text  # a store's hidden build folder named as the store

    return one_line(public_text(text))


def one_line(text: str) -> str:
    """``text`` on one line, safe to print with rich (brackets are not markup)."""
    return escape(" ".join(text.split()))


def check_input_file(path: str, kind: str, option: str | None = None) -> Path:
    """Refuse, before any work, an input file that is missing or a folder.

    ``kind`` says what the file should be ("a model file"); ``option`` is the
    option that named it, if any.
    """
    p = Path(path)
    where = _where(path, option)
    if p.is_dir():
        what = "a FeatureStore" if (p / "meta.json").is_file() else "a folder"
        raise CLIError(f"{where}: is {what}, not {kind}")
    if not p.is_file():
        raise CLIError(f"{where}: no such file (expected {kind})")
    return p


def _existing_parent(p: Path) -> Path:
    parent = p.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


def _where(path, option: str | None) -> str:
    return f"{option} {path}" if option else str(path)


def _check_not_a_url(path, option: str | None) -> None:
    """Outputs are written to local paths: a URL would become a folder literally named
    ``file:`` (or ``s3:``) while the command printed the URL, so it is refused, naming the
    path to give instead (issue 39 item 7)."""
    from hardneg.store._remote import LOCAL_PROTOCOLS, url_protocol

    protocol = url_protocol(str(path))
    if protocol is None:
        return
    if protocol in LOCAL_PROTOCOLS:
        from fsspec.utils import infer_storage_options

        local = infer_storage_options(str(path))["path"]
        raise CLIError(f"{_where(path, option)}: outputs are written to a local path, not a URL; give {local}")
    raise CLIError(f"{_where(path, option)}: outputs are written to a local path, not to {protocol}:// (write locally, then upload)")


def check_output_file(path: str, option: str | None = None, *, sidecars: tuple[str, ...] = (), inputs=()) -> Path:
    """Refuse, before any work, an output file that cannot be written.

    A folder in its place, a file where a parent folder should be, or a
    folder that cannot be written would otherwise fail only at the end, after
    the training, and with an ``OSError`` about a temporary file.
    ``sidecars`` are suffixes of files written next to it (``.ids.npz``).
    An output that is one of the command's ``inputs`` (or lies inside an
    input store) is refused too: writing it would destroy what is being read
    (or put a foreign file in the store).
    """
    _check_not_a_url(path, option)
    p = Path(path)
    for target in (p, *(Path(str(p) + s) for s in sidecars)):
        if target.is_dir():
            raise CLIError(f"{_where(target, option)}: is a folder; give a file name")
        _check_not_an_input(target, option, inputs)
    _check_writable_parent(p, option)
    return p


def _check_not_an_input(target: Path, option: str | None, inputs) -> None:
    from hardneg.store._folder import writes_into_input

    for source in inputs:
        if writes_into_input(target, source):
            raise CLIError(f"{_where(target, option)}: is also an input of this command ({source}); write the output somewhere else")


def check_output_dir(path: str, option: str | None = None, *, inputs=()) -> Path:
    """Refuse, before any work, an output folder that is a file, cannot be
    created, is one of the command's ``inputs``, or is a URL."""
    _check_not_a_url(path, option)
    p = Path(path)
    _check_not_an_input(p, option, inputs)
    if p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise CLIError(f"{_where(path, option)}: cannot write in this folder (permission denied)")
        return p
    if p.exists():
        raise CLIError(f"{_where(path, option)}: is a file, not a folder")
    _check_writable_parent(p, option)
    return p


def _check_writable_parent(p: Path, option: str | None) -> None:
    parent = _existing_parent(p)
    if not parent.is_dir():
        raise CLIError(f"{_where(p, option)}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CLIError(f"{_where(p, option)}: cannot write in {parent} (permission denied)")


def setup_logging(verbose: int) -> None:
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr, force=True)
    # FAISS logs at INFO which CPU-specific library it loads (AVX-512 missing, ...): noise below -vv.
    logging.getLogger("faiss").setLevel(logging.DEBUG if verbose >= 2 else logging.WARNING)


def progress():
    """A rich progress bar for long work (shown on stderr, hidden when not a terminal)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console.real(),
        transient=False,
        disable=not err_console.is_terminal,
    )


def _log_interval() -> float:
    """Seconds between progress lines when stderr is not a terminal (HARDNEG_PROGRESS_SECONDS, default 10)."""
    try:
        value = float(os.environ.get("HARDNEG_PROGRESS_SECONDS", "10"))
    except ValueError:
        return 10.0
    return value if value >= 0 else 10.0


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class ProgressLog:
    """Progress as plain lines on stderr, one every ``interval`` seconds: for logs, CI, nohup.

    Each line says done/total, the rate and the time left: ``extracting cnn:
    120/300 (40%), 3.1/s, ETA 58s``. A last line is written at the end when
    any line was written before.
    """

    def __init__(self, description: str, total: int | None, interval: float, *, stream=None, clock=time.monotonic):
        self.description, self.total, self.interval = description, total, interval
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.start = self.last = clock()
        self.done = 0
        self.lines = 0
        self.written = -1  # done count of the last line
        # The rate counts this run's work only: it is measured from the first report on, which
        # is often the count of what a resumed run found already done (reported at once).
        self.base: tuple[float, int] | None = None

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = self.clock()
        if self.base is None:
            self.base = (now, self.done)
        if now - self.last >= self.interval:
            self.last = now
            self.write(now)

    def line(self, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        since, base_done = self.base if self.base is not None else (self.start, 0)
        rate = (self.done - base_done) / max(now - since, 1e-9) if now > since else 0.0
        text = f"{self.description}: {self.done:,}"
        if self.total:
            text += f"/{self.total:,} ({100 * self.done / self.total:.0f}%)"
        if rate > 0:
            text += f", {rate:.3g}/s" if rate < 1000 else f", {rate:,.0f}/s"
        if self.total and rate > 0 and self.done < self.total:
            text += f", ETA {_duration((self.total - self.done) / rate)}"
        elif self.total and self.done >= self.total:
            text += f", done in {_duration(elapsed)}"
        else:
            text += f", {_duration(elapsed)} elapsed"
        return text

    def write(self, now: float | None = None) -> None:
        print(self.line(self.clock() if now is None else now), file=self.stream, flush=True)
        self.lines += 1
        self.written = self.done

    def finish(self) -> None:
        if self.lines and self.written != self.done:
            self.write()


class _StatusHandler(logging.Handler):
    """Shows the library's ``hardneg.status`` log records (a step before the counted work, such as
    learning a codebook) as a status: the bar's description on a terminal, else a line."""

    def __init__(self, show):
        super().__init__(logging.INFO)
        self.show = show

    def emit(self, record):
        try:
            self.show(record.getMessage())
        except Exception:  # noqa: BLE001 - a status line must never break the work
            self.handleError(record)


@contextlib.contextmanager
def _status_records(show):
    status = logging.getLogger("hardneg.status")
    handler = _StatusHandler(show)
    saved = status.level, status.propagate
    status.addHandler(handler)
    status.setLevel(logging.INFO)
    status.propagate = False
    try:
        yield
    finally:
        status.removeHandler(handler)
        status.setLevel(saved[0])
        status.propagate = saved[1]


@contextlib.contextmanager
def task_progress(description: str, total: int | None):
    """Yield an ``advance(n)`` callback: a rich bar on a terminal, else a log line every ~10 s.

    The rate and time left count only this run's work (a resumed run first reports what it
    found done). A ``hardneg.status`` log record from the library during the task is shown
    as what it is doing now.
    """
    if not err_console.is_terminal:
        log = ProgressLog(description, total, _log_interval())
        with _status_records(lambda msg: print(f"{description}: {msg}", file=log.stream, flush=True)):
            yield log.advance
        log.finish()
        return
    with progress() as bar:
        task = bar.add_task(description, total=total)
        with _status_records(lambda msg: bar.update(task, description=f"{description}: {msg}")):
            yield lambda n=1: bar.update(task, advance=n, description=description)


@contextlib.contextmanager
def task_status(description: str):
    """Say what a step with no count is doing (loading a model, ...): a spinner on a
    terminal, else one line on stderr when it starts."""
    if err_console.is_terminal:
        with err_console.status(escape(description)):
            yield
        return
    print(f"{description} ...", file=sys.stderr, flush=True)
    yield


def read_id_csv(path: str, option: str) -> dict[str, str]:
    """``id,value`` rows of a CSV file as a dict; a first row ``id,...`` is a header.

    Read by :func:`hardneg.store._csv.read_csv_rows` (the rules of every id CSV).
    Refused with one line naming ``option``: a missing file, a row without a
    value, an id given twice.
    """
    from hardneg.store._csv import read_csv_rows, starts_with_header

    check_input_file(path, "a CSV file of id,value rows", option)
    try:
        rows = read_csv_rows(path, option)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    out: dict[str, str] = {}
    for n, row in rows[1 if starts_with_header(rows) else 0 :]:
        if len(row) < 2:
            raise CLIError(f"{option} {path}: line {n} has no value after the id (expected id,value)")
        key, value = row[0].strip(), ",".join(row[1:]).strip()
        if key in out:
            raise CLIError(f"{option} {path}: line {n}: id {key!r} is given twice")
        out[key] = value
    if not out:
        raise CLIError(f"{option} {path}: no id,value rows")
    return out


def in_split(split: str | None) -> str:
    """`` in split 'train' (...)`` for an error that names a split, saying which flag gets past it;
    empty when no split was used."""
    if not split:
        return ""
    return (f" in split {split!r} (--split '' uses every row; items added since the store was split have none: "
            "`hardneg store split` assigns them)")


def split_tags(value: str) -> list[str]:
    """Tags of one CSV cell: separated by ';' (a tag may contain spaces)."""
    return [t.strip() for t in value.split(";") if t.strip()]


# ---------------------------------------------------------------------------- search results


def item_info(store, rows) -> list[dict]:
    """id, label (class name where the store has them), tags and image path of store rows.

    Paths are resolved to files that open from any working directory.
    """
    from ..store._items import resolve_stored_path

    rows = [int(r) for r in rows]
    items = store.items
    names = store.attrs.get("class_names") or []
    ids = items.column("id")
    labels = items.column("label")
    tags = items.column("tags")
    paths = items.column("path")
    out = []
    for r in rows:
        lab = labels[r].as_py()
        out.append({
            "id": ids[r].as_py(),
            "label": None if lab is None else (names[lab] if 0 <= lab < len(names) else str(lab)),
            "tags": tags[r].as_py() or [],
            "path": resolve_stored_path(store, paths[r].as_py()),
        })
    return out


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


# ---------------------------------------------------------------------------- queries


def is_same_store(recorded, path) -> bool:
    """Whether an index's recorded store location is ``path`` (both resolved to absolute locations)."""
    from .._parallel._partition import store_url

    try:
        return bool(recorded) and store_url(recorded) == store_url(path)
    except (ValueError, OSError):
        return False


def check_index_current(index_ids, store, index_path: str, rebuild: str) -> None:
    """Refuse an index built from an earlier state of ``store`` (issue 37): its items, in order, must be
    the store's. An index over removed items would return them; one missing new items would never find
    them. ``rebuild`` is the command line that brings it up to date."""
    import numpy as np

    ids = np.asarray(index_ids).astype(str)
    now = store.ids().astype(str)
    if ids.shape == now.shape and bool(np.all(ids == now)):
        return
    current = set(now.tolist())
    indexed = set(ids.tolist())
    removed = sum(1 for i in indexed if i not in current)
    added = sum(1 for i in current if i not in indexed)
    change = (f"{removed:,} of its items were removed from the store and {added:,} added" if removed or added
              else "the store's items were reordered")
    raise CLIError(f"{index_path} was built from an earlier state of {store.path}: {change} since; rebuild it: {rebuild}")


def rows_of_ids(store, ids: list[str], option: str) -> list[int]:
    """Row numbers of item ids in ``store``; a CLIError names the unknown ones."""
    pos = {v: i for i, v in enumerate(store.ids().tolist())}
    missing = [q for q in ids if q not in pos]
    if missing:
        raise CLIError(f"{option}: not in {store.path}: {', '.join(missing[:5])}")
    return [pos[q] for q in ids]


def ranked_results(store, res, *, concept=None, relevant_tag=None, relevant_label=None) -> list[dict]:
    """Result rows (rank, id, score, label, tags, path, relevant) of a store-wide ranking ``res``
    (a :class:`hardneg.TopK` of one query); ``relevant`` from the contact sheet's rule
    (the concept's tag, or ``--relevant-tag`` / ``--relevant-label``; None where unknown)."""
    from ..report._contact import relevance_marks

    relevant = relevance_marks(store, res.rows, concept=concept, tag=relevant_tag, label=relevant_label)
    return [{"rank": i + 1, "id": info["id"], "score": float(res.scores[i]), "label": info["label"], "tags": info["tags"],
             "path": info["path"], "relevant": None if relevant is None else relevant[i]}
            for i, info in enumerate(item_info(store, res.rows))]


def stored_queries(store, ids: list[str], option: str = "--query-id"):
    """``(rows, X, infos)`` of stored items used as queries: their rows, dense float32
    vectors and item info, read under a status line (the item table and the
    vectors' first check take seconds on a large store)."""
    import numpy as np

    with task_status(f"reading {len(ids)} stored quer{'y' if len(ids) == 1 else 'ies'} from {store.path}"):
        rows = rows_of_ids(store, list(ids), option)
        block = store.take(np.array(rows))
        X = np.ascontiguousarray(block.toarray() if hasattr(block, "toarray") else block, dtype=np.float32)
        infos = item_info(store, rows)
    return rows, X, infos


def extract_query_images(store, files: list[str], *, model: str | None = None, trust_model: bool = False):
    """Feature rows of image files, extracted with the store's own extractor settings
    (the settings recorded in the store; the codebook saved in it)."""
    from ..features._extract import extractor_from_store
    from ..features._images import ImageReadError, read_image

    for f in files:
        check_input_file(f, "an image file", "--query-image")
    if model is not None and not trust_model:
        raise CLIError(f"--model {model}: a model file runs code from the file; pass --trust-model if you trust it")
    images = []
    for f in files:
        try:
            images.append(read_image(f))
        except ImageReadError as exc:
            raise CLIError(f"--query-image {f}: cannot read the image ({exc})") from None
    from ..features._extract import describe_features

    what = describe_features(store.attrs.get("extractor"), store.dim)
    with task_status(f"extracting {len(files)} query image(s): loading the extractor of {store.path} ({what})"):
        extractor = extractor_from_store(store, model=model, trust_model=trust_model)
        X = extractor.transform(images)
    return X.toarray() if hasattr(X, "toarray") else X


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


# ---------------------------------------------------------------------------- scale-out (Dask)


@contextlib.contextmanager
def cluster_runner(workers: int | None, scheduler: str | None):
    """The :mod:`hardneg.distributed` runner for ``--workers`` / ``--scheduler``;
    says where the job runs and prints the Dask dashboard link when a cluster is used."""
    # the runner module alone: the package re-exports every job and would import scikit-learn/SciPy
    # (seconds on a loaded machine) before an in-process command has done anything
    from .._parallel._runner import get_runner

    if workers is not None and scheduler:
        raise CLIError(f"give --workers N or --scheduler ADDRESS (or {_SCHEDULER_ENV}), not both")
    try:
        ctx = get_runner(workers, scheduler or None, env=False)
        runner = ctx.__enter__()
    except ValueError as exc:
        raise CLIError(f"--scheduler {scheduler}: {exc}" if scheduler else str(exc)) from None
    try:
        if runner.client is not None:
            where = f"{runner.n_workers} worker thread(s) at {runner.client.scheduler.address}"
            link = runner.dashboard_link
            err_console.print(f"running on Dask: {where}" + (f"; dashboard: {link}" if link else ""), highlight=False, markup=False, soft_wrap=True)
        yield runner
    except BaseException:
        ctx.__exit__(*sys.exc_info())
        raise
    else:
        ctx.__exit__(None, None, None)


_SCHEDULER_ENV = "HARDNEG_SCHEDULER"


def cluster_options(func):
    """Decorator: give a command ``--workers N`` and ``--scheduler ADDRESS`` (env ``HARDNEG_SCHEDULER``).

    The command declares a ``runner=None`` parameter (no annotation) and
    receives the :class:`hardneg.distributed.Runner` to pass to the store-wide
    job: in process by default, a LocalCluster of N worker processes, or a
    running Dask scheduler.
    """
    import functools
    import inspect

    import typer

    from ._options import SCHEDULER_HELP, WORKERS_HELP

    sig = inspect.signature(func, eval_str=True)
    params = [p for p in sig.parameters.values() if p.name != "runner"]
    kind = inspect.Parameter.KEYWORD_ONLY
    extra = [
        inspect.Parameter("workers", kind, annotation=int | None, default=typer.Option(
            None, "--workers", min=1, help=WORKERS_HELP)),
        inspect.Parameter("scheduler", kind, annotation=str | None, default=typer.Option(
            None, "--scheduler", envvar=_SCHEDULER_ENV, show_envvar=True,
            help=SCHEDULER_HELP)),
    ]

    @functools.wraps(func)
    def wrapper(*args, workers=None, scheduler=None, **kwargs):
        with cluster_runner(workers, scheduler) as runner:
            return func(*args, runner=runner, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=params + extra)
    return wrapper
