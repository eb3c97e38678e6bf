"""Where a store-wide job runs: in this process, or on a Dask cluster.

A job is a pure function over one partition of store rows plus a merge.
:class:`Runner` runs it in this process, one partition after the other;
:class:`DaskRunner` runs the same function on a ``dask.distributed`` cluster
(a :class:`~distributed.LocalCluster` it starts, or a running scheduler).
Both offer the same two shapes of job:

- :meth:`Runner.map_reduce`: partitions to one small result, merged as a tree
  on the workers, up to 8 results per merge task (top-k scans); the merge
  must be associative and commutative, so the result does not depend on the
  order partitions finish.
- :meth:`Runner.map_ordered`: partition results in partition order, at most
  ``window`` in flight, so the client (which appends them to a store or an
  index) holds a bounded number of them.

Faults: Dask recomputes the tasks of a worker that dies (up to
``distributed.scheduler.allowed-failures`` deaths per task); the partition
functions are pure (their output depends only on their arguments and the
files they read), so a recomputed partition gives the same bytes and is
merged once: a future's result is taken once, whichever worker made it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from hardneg._extras import install_hint
from hardneg._validation import issparse

__all__ = ["DaskRunner", "Runner", "get_runner"]

logger = logging.getLogger(__name__)

SCHEDULER_ENV = "HARDNEG_SCHEDULER"


class Runner:
    """Run partition functions in this process (the default)."""

    client: Any = None  # a distributed.Client on a DaskRunner; none in this process

    @property
    def dashboard_link(self) -> str | None:
        """The URL of the cluster's Dask dashboard: None in this process."""
        return None

    @property
    def n_workers(self) -> int:
        """Number of partitions that run at once: 1 in this process."""
        return 1

    def share(self, obj: Any) -> Any:
        """A handle on ``obj`` that partition functions receive as ``obj`` itself
        (on a cluster: sent to every worker once, not once per task).

        Parameters
        ----------
        obj : object
            The object partition functions need (a model, an array, a path).

        Returns
        -------
        handle : object
            ``obj`` itself: in this process there is nothing to send.
        """
        return obj

    def map_reduce(self, func: Callable, parts: Iterable, merge: Callable, *, progress: Callable | None = None):
        """``merge`` over ``func(part)`` for every part; ``progress(part)`` after each.

        Parameters
        ----------
        func : callable
            ``func(part)`` computes one partition's result; it must be pure.
        parts : iterable
            The partitions (e.g. :class:`~hardneg.distributed.Partition`), run in this order.
        merge : callable
            ``merge(a, b)`` combines two results into one; associative and commutative.
        progress : callable, optional
            Called as ``progress(part)`` after each partition is done.

        Returns
        -------
        result : object
            All partitions' results merged into one.

        Raises
        ------
        ValueError
            If ``parts`` is empty.
        """
        result = None
        for i, part in enumerate(parts):
            out = func(part)
            result = out if i == 0 else merge(result, out)
            if progress is not None:
                progress(part)
        if result is None:
            raise ValueError("parts: no partitions to run")
        return result

    def map_ordered(self, func: Callable, parts: Iterable, *, window: int | None = None, progress: Callable | None = None) -> Iterator:
        """Yield ``func(part)`` in the order of ``parts``.

        Parameters
        ----------
        func : callable
            ``func(part)`` computes one partition's result; it must be pure.
        parts : iterable
            The partitions, whose results are yielded in this order.
        window : int, optional
            Most partitions in flight at once (on a cluster; default twice the
            number of worker threads); ignored in this process, which runs one at a time.
        progress : callable, optional
            Called as ``progress(part)`` after each partition is done.

        Yields
        ------
        result : object
            ``func(part)`` for each part, in the order of ``parts``.
        """
        for part in parts:
            out = func(part)
            if progress is not None:
                progress(part)
            yield out

    def close(self) -> None:
        """Release the runner's resources (nothing to release in this process)."""
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return "Runner(in process)"


class DaskRunner(Runner):
    """Run partition functions on a ``dask.distributed`` cluster.

    Parameters
    ----------
    client : distributed.Client
    owns : bool
        Close the client (and its LocalCluster) on :meth:`close`.
    """

    fan_in = 8  # results merged per merge task

    def __init__(self, client: Any, *, owns: bool = False):
        self.client = client
        self._owns = owns

    @property
    def dashboard_link(self) -> str | None:
        """The URL of the cluster's Dask dashboard, or None when it has none."""
        try:
            return self.client.dashboard_link
        except Exception:  # no dashboard (bokeh missing) or a scheduler without one
            return None

    @property
    def n_workers(self) -> int:
        """Number of partitions that run at once: the cluster's worker threads (at least 1)."""
        return max(1, sum(self.client.nthreads().values()))

    def share(self, obj: Any) -> Any:
        """A handle on ``obj`` that partition functions receive as ``obj`` itself,
        fetched by each worker once, not sent once per task.

        A model (any object but an array) becomes the result of a task that
        returns it: the scheduler keeps that task, so a copy lost with a dying
        worker is made again and the job goes on. An array or sparse matrix is
        scattered to the workers connected at that moment instead (its bytes do
        not pass through the scheduler); Dask cannot remake scattered data, so
        if every worker holding a copy dies, the job stops with Dask's "lost
        dependencies" error. (Dask's active memory manager drops extra copies of
        scattered data that no queued task needs, so a broadcast alone does not
        keep a copy on every worker.)

        Parameters
        ----------
        obj : object
            The object partition functions need. Strings, bytes, numbers, None and
            paths are small and returned as they are.

        Returns
        -------
        handle : object or distributed.Future
            ``obj`` itself for a small value, else a future of the object.
        """
        if isinstance(obj, (str, bytes, int, float, type(None), os.PathLike)):
            return obj
        if isinstance(obj, np.ndarray) or issparse(obj):
            return self.client.scatter(obj, broadcast=True, hash=False)
        return self.client.submit(_identity, obj, pure=False)

    def map_reduce(self, func: Callable, parts: Iterable, merge: Callable, *, progress: Callable | None = None) -> Any:
        """``merge`` over ``func(part)`` for every part, merged as a tree on the workers.

        Up to ``fan_in`` (8) results are merged per merge task, in the order
        partitions finish; ``progress(part)`` runs on the client after each.

        Parameters
        ----------
        func : callable
            ``func(part)`` computes one partition's result; it must be pure (a
            recomputed partition gives the same result). A ``functools.partial``
            with keywords only is unpacked, so shared futures in its keywords resolve.
        parts : iterable
            The partitions (e.g. :class:`~hardneg.distributed.Partition`).
        merge : callable
            ``merge(a, b)`` combines two results into one; associative and commutative.
        progress : callable, optional
            Called as ``progress(part)`` after each partition is done.

        Returns
        -------
        result : object
            All partitions' results merged into one.

        Raises
        ------
        ValueError
            If ``parts`` is empty.
        """
        from distributed import as_completed

        parts = list(parts)
        if not parts:
            raise ValueError("parts: no partitions to run")
        fn, kw = _unpack(func)
        futures = self.client.map(fn, parts, pure=False, **kw)
        part_of = {f.key: p for f, p in zip(futures, parts)}
        done = as_completed(futures)
        pending: list = []
        merges: list = []
        try:
            for fut in done:
                if fut.status == "error":
                    fut.result()  # raises the task's exception
                if fut.key in part_of and progress is not None:
                    progress(part_of[fut.key])
                pending.append(fut)
                # Tree reduction: merge finished results on a worker, up to `fan_in` at a time
                # (fewer merge tasks than pairwise: each task costs the scheduler a round trip).
                if len(pending) >= self.fan_in or (done.count() == 0 and len(pending) > 1):
                    merges.append(self.client.submit(_reduce, merge, *pending, pure=False))
                    done.add(merges[-1])
                    pending = []
            return pending[0].result()
        finally:
            for f in futures + merges:
                f.release()

    def map_ordered(self, func: Callable, parts: Iterable, *, window: int | None = None, progress: Callable | None = None) -> Iterator:
        """Yield ``func(part)`` in the order of ``parts``, at most ``window`` partitions in flight.

        Parameters
        ----------
        func : callable
            ``func(part)`` computes one partition's result; it must be pure.
        parts : iterable
            The partitions, whose results are yielded in this order.
        window : int, optional
            Most partitions submitted and not yet yielded; default twice the
            number of worker threads.
        progress : callable, optional
            Called as ``progress(part)`` after each partition's result arrives.

        Yields
        ------
        result : object
            ``func(part)`` for each part, in the order of ``parts``.
        """
        parts = list(parts)
        window = max(1, window or 2 * self.n_workers)
        fn, kw = _unpack(func)
        queue: list = []
        nxt = 0
        try:
            while nxt < len(parts) or queue:
                while nxt < len(parts) and len(queue) < window:
                    queue.append((parts[nxt], self.client.submit(fn, parts[nxt], pure=False, **kw)))
                    nxt += 1
                part, fut = queue.pop(0)
                out = fut.result()
                fut.release()
                if progress is not None:
                    progress(part)
                yield out
        finally:
            for _, fut in queue:
                fut.cancel()

    def close(self) -> None:
        """Close the client and its LocalCluster when this runner started them (``owns``); else nothing."""
        if self._owns:
            cluster = getattr(self.client, "cluster", None)
            self.client.close()
            if cluster is not None:
                cluster.close()

    def __repr__(self) -> str:
        return f"DaskRunner({self.client.scheduler.address if self.client.scheduler else '?'}, {self.n_workers} threads)"


def _identity(obj):
    """The task whose result is a shared model (:meth:`DaskRunner.share`)."""
    return obj


def _reduce(merge, *results):
    return functools.reduce(merge, results)


def _unpack(func):
    """A ``functools.partial``'s function and keywords: Dask resolves futures
    (objects sent by :meth:`Runner.share`) in task keywords, not inside a partial."""
    if isinstance(func, functools.partial) and not func.args:
        return func.func, dict(func.keywords)
    return func, {}


@contextlib.contextmanager
def get_runner(workers: int | None = None, scheduler: str | None = None, *, env: bool = True) -> Iterator[Runner]:
    """The runner for ``--workers N`` / ``--scheduler ADDRESS`` (context manager).

    Neither: in this process (unless ``env`` and ``HARDNEG_SCHEDULER`` is
    set). ``workers``: a ``LocalCluster`` of that many single-threaded
    worker processes, closed on exit. ``scheduler``: a client of that running
    cluster (``tcp://host:8786``).

    Parameters
    ----------
    workers : int, optional
        Start a local cluster of this many worker processes.
    scheduler : str, optional
        Address of a running Dask scheduler.
    env : bool
        Read ``HARDNEG_SCHEDULER`` when neither is given.

    Yields
    ------
    Runner
        In-process, or a :class:`DaskRunner`.

    Raises
    ------
    ValueError
        If both ``workers`` and ``scheduler`` are given.
    ImportError
        If a cluster is asked for without dask.distributed installed.
    """
    if scheduler is None and env:
        scheduler = os.environ.get(SCHEDULER_ENV) or None
    if workers is not None and scheduler is not None:
        raise ValueError(f"give workers or a scheduler address, not both (got workers={workers}, scheduler={scheduler!r})")
    if workers is None and scheduler is None:
        yield Runner()
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ImportError(f"running on a Dask cluster needs dask.distributed: {install_hint('distributed')}") from None
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="20s")
        except OSError as exc:
            raise ValueError(f"scheduler {scheduler!r}: cannot connect ({exc})") from None
    else:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers: expected a positive integer, got {workers!r}")
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
        client = Client(cluster)
    runner = DaskRunner(client, owns=True)
    try:
        yield runner
    finally:
        runner.close()
