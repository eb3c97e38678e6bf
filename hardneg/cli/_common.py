"""What every CLI command shares: logging, progress bars, one-line errors."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console()  # results
err_console = Console(stderr=True)  # progress and errors


class CLIError(Exception):
    """A user error: shown as one line, exit code 2."""


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
    ImportError,
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
    else:
        text = str(exc) or type(exc).__name__
    return one_line(text)


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


def check_output_file(path: str, option: str | None = None, *, sidecars: tuple[str, ...] = ()) -> Path:
    """Refuse, before any work, an output file that cannot be written.

    A folder in its place, a file where a parent folder should be, or a
    folder that cannot be written would otherwise fail only at the end, after
    the training, and with an ``OSError`` about a temporary file.
    ``sidecars`` are suffixes of files written next to it (``.ids.npz``).
    """
    p = Path(path)
    for target in (p, *(Path(str(p) + s) for s in sidecars)):
        if target.is_dir():
            raise CLIError(f"{_where(target, option)}: is a folder; give a file name")
    _check_writable_parent(p, option)
    return p


def check_output_dir(path: str, option: str | None = None) -> Path:
    """Refuse, before any work, an output folder that is a file or cannot be created."""
    p = Path(path)
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


def progress() -> Progress:
    """A rich progress bar for long work (shown on stderr, hidden when not a terminal)."""
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
        disable=not err_console.is_terminal,
    )


@contextlib.contextmanager
def task_progress(description: str, total: int | None):
    """Yield an ``advance(n)`` callback bound to one progress bar."""
    with progress() as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)
