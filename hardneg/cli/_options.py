"""Options that mean the same thing in every ``hardneg`` command, defined once.

One flag, one meaning across the whole command tree (tests/cli/test_cli_tree.py
walks the tree and checks it):

- ``-k/--k``: how many results (per query), or the rank cut-off of a figure;
- ``-q/--query-id``: a stored item to query with;
- ``-o/--out``: the file or folder a command writes;
- ``--json``, ``--csv``, ``--html``: the output formats of every result command;
- ``--workers`` / ``--scheduler``: Dask processes or a Dask cluster (store-wide scans);
- ``-v``: log more (on the root command).

Symbols of the papers have long names only (``--recursions``, ``--cost``,
``--bins``, ``--candidates``, ``--solver``, ``--sampler``, ``--method``): a
one-letter flag is kept for the handful of options that every command shares.

This module imports nothing but typer, so that ``hardneg --help`` stays fast.
"""

from __future__ import annotations

import typer

# ------------------------------------------------------------------------ shared flags

#: Help of the formats every result command offers.
JSON_HELP = "Print the results as JSON (UTF-8) on stdout."
CSV_HELP = "Write the results as CSV: to stdout with '-', else to this file."
HTML_HELP = "Also write a contact sheet (HTML image grid of the results) to this file."


def k_option(default: int = 10, help: str = "Results per query."):
    """``-k/--k``: how many results (per query)."""
    return typer.Option(default, "--k", "-k", min=1, help=help)


def query_id_option(help: str = "Id of a stored item to query with (repeatable).", required: bool = False):
    """``-q/--query-id``: a stored item to query with (repeatable)."""
    return typer.Option(... if required else None, "--query-id", "-q", help=help)


def out_option(help: str, default=...):
    """``-o/--out``: what the command writes."""
    return typer.Option(default, "--out", "-o", help=help)


def json_option():
    return typer.Option(False, "--json", help=JSON_HELP)


def csv_option():
    return typer.Option(None, "--csv", metavar="FILE|-", help=CSV_HELP)


def html_option():
    return typer.Option(None, "--html", metavar="FILE", help=HTML_HELP)


def method_option(default: str, help: str):
    """``--method``: which algorithm (long name only)."""
    return typer.Option(default, "--method", help=help)


def solver_option(default: str, help: str):
    """``--solver``: which optimizer (long name only)."""
    return typer.Option(default, "--solver", help=help)


def cost_option(default, help: str):
    """``--cost``: the SVM cost C (long name only; ``--C`` is a hidden, deprecated alias)."""
    return typer.Option(default, "--cost", help=help)


def cost_alias_option():
    """The hidden ``--C`` spelling of ``--cost`` (deprecated; same meaning)."""
    return typer.Option(None, "--C", hidden=True, help="Deprecated spelling of --cost.")


def pick_cost(cost, alias):
    """``--cost`` unless only the deprecated ``--C`` was given."""
    if alias is None:
        return cost
    import sys

    print("hardneg: --C is deprecated; use --cost", file=sys.stderr)
    return alias


#: Dask options (see :func:`hardneg.cli._cluster.cluster_options`, which adds them).
WORKERS_HELP = "Run on a local Dask cluster of N worker processes (same results as in process)."
SCHEDULER_HELP = ("Run on a running Dask cluster at this scheduler address (tcp://host:8786); the store must be "
                  "reachable by the workers at the same path.")
