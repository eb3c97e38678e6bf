"""The CLI's console: where output goes (results on stdout, progress and errors on
stderr), which exceptions are the user's to fix and the one line shown for them,
logging, progress bars and status lines."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
import time

from hardneg._extras import missing_extra_line
from hardneg.exceptions import CLIError, WordNetUnavailable


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
