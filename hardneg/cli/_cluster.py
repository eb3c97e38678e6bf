"""Scale-out options: ``--workers N`` / ``--scheduler ADDRESS`` and the runner they give a command."""

from __future__ import annotations

import contextlib
import sys

from hardneg.exceptions import CLIError

from ._console import err_console


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
