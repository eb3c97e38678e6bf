"""Entry point of the ``hardneg`` command.

Each command group lives in its own module and is registered here. User
errors (bad input, bad options, missing data, corrupt files) print one line
on stderr and exit with code 2; a traceback is only shown with ``-vv``, or
for an error that is a bug (see :func:`._common.is_user_error`).
"""

from __future__ import annotations

import logging
import os
import sys

import typer

from ._common import check_output_dir, err_console, error_line, is_user_error, one_line, setup_logging
from .concept import app as concept_app
from .datasets import app as datasets_app
from .esvm import app as esvm_app
from .extract import app as extract_app
from .hash import app as hash_app
from .knn import knn as knn_command
from .serve import serve as serve_cmd
from .serve import serve_demo as serve_demo_cmd
from .similarity import app as similarity_app
from .store import app as store_app
from .zsl import app as zsl_app

app = typer.Typer(
    name="hardneg",
    help="Learn image search and categorization from a few labels and the hard examples in a large pool.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Plain (click) help: wrapped to the terminal, at most 80 columns, and without importing
    # rich's markdown and traceback modules (a third of `hardneg --help`'s time).
    rich_markup_mode=None,
)
app.add_typer(datasets_app, name="datasets")
app.add_typer(store_app, name="store")
# Method command groups register below (one line each).
app.add_typer(concept_app, name="concept")
app.add_typer(extract_app, name="extract")
app.add_typer(hash_app, name="hash")
app.add_typer(similarity_app, name="similarity")
app.add_typer(zsl_app, name="zsl")
app.add_typer(esvm_app, name="esvm")
app.command("knn")(knn_command)
app.command("serve")(serve_cmd)
app.command("serve-demo")(serve_demo_cmd)


@app.callback()
def _root(
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, help="Log progress (-v) or debug detail (-vv)."),
    timeout: float = typer.Option(
        None, "--timeout", min=0.001, help="Seconds before a request to a remote store (http://, s3://, ...) gives up "
        "(default 30, or $HARDNEG_REMOTE_TIMEOUT).",
    ),
):
    setup_logging(verbose)
    if timeout is not None:
        # the store reads the variable wherever it opens a URL, in this process and in Dask workers started from it
        os.environ["HARDNEG_REMOTE_TIMEOUT"] = repr(float(timeout))


@app.command()
def demo(
    out: str = typer.Option("demo-output", "--out", "-o", help="Folder for the demo's results."),
):
    """Run the main job on the embedded default dataset and write its results."""
    from ..demos.digits import run_demo

    check_output_dir(out, "--out")
    run_demo(out)


def _parse_error_types() -> tuple[type[BaseException], ...]:
    """Usage errors of the option parser: typer's own (typer >= 0.26 vendors click) or click's.

    click is not imported for this (it costs ~30 ms of every start): an exception
    of click's can only have been raised if something imported it.
    """
    types: list[type[BaseException]] = [typer.TyperException] if hasattr(typer, "TyperException") else []
    click = sys.modules.get("click")
    if click is not None:
        types.append(click.ClickException)
    return tuple(types)


def _abort_types() -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = [typer.Abort]
    click = sys.modules.get("click")
    if click is not None:
        types.append(click.exceptions.Abort)
    return tuple(types)


def _error(text: str) -> None:
    err_console.print(f"[red]error:[/red] {text}", highlight=False, soft_wrap=True)


def main(argv=None) -> int:
    """Run the CLI and return its exit code: 0, 2 for a user error, 130 when interrupted."""
    try:
        # Not standalone: usage errors come back here, to be shown as one line like the others.
        rv = app(args=argv, prog_name="hardneg", standalone_mode=False)
    except SystemExit as exc:  # a broken pipe, or a command that calls sys.exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        err_console.print("[red]aborted[/red]")
        return 130
    except Exception as exc:
        return _handle(exc)
    # Typer returns an exit code when a command ends with typer.Exit, the command's value otherwise.
    return rv if isinstance(rv, int) else 0


def _handle(exc: Exception) -> int:
    """The exit code of a command that raised ``exc`` (after saying what went wrong), or raise it again."""
    if isinstance(exc, _parse_error_types()):  # bad or missing options and arguments, unknown commands
        if type(exc).__name__ == "NoArgsIsHelpError":  # a group run bare: its help was shown
            if exc.format_message().strip():
                exc.show()
            return 2
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        _error(one_line(exc.format_message()) + hint)
        return 2
    if isinstance(exc, _abort_types()):
        err_console.print("[red]aborted[/red]")
        return 1
    if not is_user_error(exc) or logging.getLogger().isEnabledFor(logging.DEBUG):
        raise exc
    _error(error_line(exc))
    return 2


if __name__ == "__main__":
    sys.exit(main())
