"""Entry point of the ``hardneg`` command.

Each command group lives in its own module and is registered here, by name:
its module is imported only when one of its commands is used. User
errors (bad input, bad options, missing data, corrupt files) print one line
on stderr and exit with code 2; a traceback is only shown with ``-vv``, or
for an error that is a bug (see :func:`._console.is_user_error`).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any, Protocol, cast

import typer
from typer.core import TyperCommand, TyperGroup

from ._console import err_console, error_line, is_user_error, one_line, setup_logging
from ._inputs import check_output_dir

# Every command that lives in a module of its own, in the order `hardneg --help` lists them
# (commands before groups, as typer orders them): name -> (module of hardneg.cli, attribute,
# help). A module is imported only when one of its commands runs or shows its own help, so
# that `hardneg --help` answers at once (issue 29). The help line is the group's (or the
# command docstring's first paragraph), repeated here so that listing imports nothing;
# tests/cli/test_cli_tree.py checks that it matches the module's.
LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "knn": ("knn", "knn", "Nearest neighbours of image files or stored items in a store (exact, or HNSW)."),
    "serve": ("serve", "serve", "Serve query by example, concept search with relevance feedback, and the web page."),
    "serve-demo": ("serve", "serve_demo", "Build a demo store with a TSVM hasher + Hamming index (once) and serve it."),
}
LAZY_GROUPS: dict[str, tuple[str, str, str]] = {
    "datasets": ("datasets", "app", "List datasets and import them into FeatureStores."),
    "store": ("store", "app", "Inspect FeatureStores, and edit their tags and train/test splits."),
    # Method command groups register below (one line each).
    "concept": ("concept", "app", "Concept search: Negative Bootstrap + Model Compression (Li et al., IEEE TMM 2013)."),
    "extract": ("extract", "app", "Extract CNN or dense-SIFT bag-of-words features from images into a FeatureStore (resumable)."),
    "hash": ("hash", "app", "Compact binary codes: train hashers, build Hamming indexes, search."),
    "similarity": ("similarity", "app", "Sparse online similarity learning (SOLIS) for bag-of-words stores, with an inverted index."),
    "zsl": ("zsl", "app", "Zero-shot classification by metric learning (Bucher, Herbin & Jurie 2016) on a FeatureStore "
            "(or an xlsa17 folder)."),
    "esvm": ("esvm", "app", "Exemplar-SVM feature encoding (Zepeda & Pérez 2015): E-SVM and recursive RE-SVM."),
}
# Settings of the root app, which its lazily built commands inherit as add_typer's would.
_APP_SETTINGS: dict[str, Any] = {
    "pretty_exceptions_enable": False,
    "add_completion": False,
    # Plain (click) help: wrapped to the terminal, at most 80 columns, and without importing
    # rich's markdown and traceback modules (a third of `hardneg --help`'s time). Rich help
    # would also list the commands through get_command, importing every module.
    "rich_markup_mode": None,
}


def load_command(name: str):
    """The click command (or group) of a lazily registered ``name``, built as ``add_typer`` /
    ``app.command`` would build it at start-up."""
    from importlib import import_module

    module, attr, _ = {**LAZY_COMMANDS, **LAZY_GROUPS}[name]
    obj = getattr(import_module(f"{__package__}.{module}"), attr)
    holder = typer.Typer(**_APP_SETTINGS)
    if isinstance(obj, typer.Typer):
        holder.add_typer(obj, name=name)
        return typer.main.get_command(holder).commands[name]  # type: ignore[attr-defined]
    holder.command(name)(obj)
    return typer.main.get_command(holder)  # one command: typer returns the command itself


class _LazyCommands(MutableMapping):
    """A group's ``commands``: the registered names at once, a lazy command loaded on first access."""

    def __init__(self, eager: MutableMapping):
        self._loaded = dict(eager)
        self._removed: set[str] = set()

    def _names(self) -> list[str]:
        return [n for n in dict.fromkeys([*LAZY_COMMANDS, *self._loaded, *LAZY_GROUPS]) if n not in self._removed]

    def loaded(self, name: str):
        """The command if it is defined here or was loaded already, else None (imports nothing)."""
        return self._loaded.get(name)

    def __getitem__(self, name: str):
        if name not in self:
            raise KeyError(name)
        if name not in self._loaded:
            self._loaded[name] = load_command(name)
        return self._loaded[name]

    def __setitem__(self, name: str, cmd) -> None:
        self._loaded[name] = cmd
        self._removed.discard(name)

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._loaded.pop(name, None)
        self._removed.add(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        return name not in self._removed and (name in self._loaded or name in LAZY_COMMANDS or name in LAZY_GROUPS)


class LazyGroup(TyperGroup):
    """The root group: lists every command without importing its module, imports it on use.

    The pattern of click's "lazily loading subcommands" (a group whose
    ``list_commands``/``get_command`` import on demand), with the short help of
    ``--help`` taken from :data:`LAZY_COMMANDS` / :data:`LAZY_GROUPS`.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._lazy = _LazyCommands(self.commands)
        self.commands = self._lazy

    def list_commands(self, ctx) -> list[str]:
        return list(self.commands)  # the names only (typer's own walks the items: imports all)

    def format_commands(self, ctx, formatter) -> None:
        # typer's TyperGroup.format_commands, with a stand-in carrying the registry's help for
        # a command not loaded yet: same lines, no import
        commands = []
        for name in self.list_commands(ctx):
            cmd = self._lazy.loaded(name) or TyperCommand(name=name, help={**LAZY_COMMANDS, **LAZY_GROUPS}[name][2])
            if not cmd.hidden:
                commands.append((name, cmd))
        if commands:
            limit = formatter.width - 6 - max(len(name) for name, _ in commands)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in commands])


app = typer.Typer(
    name="hardneg",
    help="Learn image search and categorization from a few labels and the hard examples in a large pool.",
    no_args_is_help=True,
    cls=LazyGroup,
    **_APP_SETTINGS,
)


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
        import math

        if not (math.isfinite(timeout) and timeout > 0):  # typer's range lets nan and inf through
            from ..exceptions import CLIError

            raise CLIError(f"--timeout: expected seconds, a finite number > 0, got {timeout}")
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


class _ParseError(Protocol):
    """What typer's and click's usage errors offer (``show`` on the UsageError subclasses, NoArgsIsHelpError among them)."""

    def format_message(self) -> str: ...

    def show(self) -> None: ...


def _handle(exc: Exception) -> int:
    """The exit code of a command that raised ``exc`` (after saying what went wrong), or raise it again."""
    if isinstance(exc, _parse_error_types()):  # bad or missing options and arguments, unknown commands
        usage = cast(_ParseError, exc)  # a TyperException or click.ClickException (click is untyped here)
        if type(exc).__name__ == "NoArgsIsHelpError":  # a group run bare: its help was shown
            if usage.format_message().strip():
                usage.show()
            return 2
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        _error(one_line(usage.format_message()) + hint)
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
