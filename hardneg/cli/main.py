"""Entry point of the ``hardneg`` command.

Each command group lives in its own module and is registered here. User
errors (bad input, missing data, corrupt files) print one line and exit with
code 2; a traceback is only shown with ``-vv``.
"""

from __future__ import annotations

import logging
import sys

import typer

from ._common import USER_ERRORS, err_console, setup_logging
from .concept import app as concept_app
from .datasets import app as datasets_app
from .extract import app as extract_app
from .hash import app as hash_app
from .store import app as store_app

app = typer.Typer(
    name="hardneg",
    help="Learn image search and categorization from a few labels and the hard examples in a large pool.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(datasets_app, name="datasets")
app.add_typer(store_app, name="store")
# Method command groups register below (one line each).
app.add_typer(concept_app, name="concept")
app.add_typer(extract_app, name="extract")
app.add_typer(hash_app, name="hash")


@app.callback()
def _root(verbose: int = typer.Option(0, "--verbose", "-v", count=True, help="Log progress (-v) or debug detail (-vv).")):
    setup_logging(verbose)


@app.command()
def demo(
    out: str = typer.Option("demo-output", "--out", "-o", help="Folder for the demo's results."),
):
    """Run the main job on the embedded default dataset and write its results."""
    from ..demo import run_demo

    run_demo(out)


def main(argv=None) -> int:
    """Run the CLI and return its exit code (usage errors are Typer's own: code 2)."""
    try:
        app(args=argv, prog_name="hardneg")
    except SystemExit as exc:  # standalone mode always ends in sys.exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        err_console.print("[red]aborted[/red]")
        return 130
    except USER_ERRORS as exc:
        if logging.getLogger().isEnabledFor(logging.DEBUG):
            raise
        err_console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
