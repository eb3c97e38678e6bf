"""What every CLI command shares: logging, progress bars, one-line errors."""

from __future__ import annotations

import contextlib
import logging
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console()  # results
err_console = Console(stderr=True)  # progress and errors


class CLIError(Exception):
    """A user error: shown as one line, exit code 2."""


# Exceptions that are the user's to fix (bad input, missing files, bad models):
# shown as one line, never a traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (CLIError, ValueError, TypeError, FileNotFoundError, IndexError, ImportError, PermissionError)


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
