"""Micro-batching of concurrent queries: gathered on the event loop, searched in one call in a thread.

Concurrent query-by-example requests to the same index each cost one scan when
searched one by one; a FAISS search of n queries costs far less than n searches
of one (the codes are read once per block of queries, and the per-call Python
overhead is paid once). :class:`MicroBatcher` collects the queries that arrive
within a short window (or while the previous batch is still being searched),
groups them by a key (queries with different ``k`` or search settings are never
mixed, so a batched answer is the one-by-one answer), runs each group with one
call of a blocking function in a worker thread (``workers`` batches at once), off
the event loop, and
hands every request its own result.

If a batched call raises, its queries are retried one by one, so a query that
fails (bad input, or a bug it triggers) fails alone and the others get their
answers. :meth:`MicroBatcher.close` fails the queries still waiting and never
waits for the worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from hardneg.exceptions import BatcherClosed  # defined there, re-exported here

logger = logging.getLogger(__name__)

__all__ = ["BatcherClosed", "MicroBatcher"]


class MicroBatcher:
    """Gather concurrent calls of ``run(key, payloads) -> results`` into batches.

    Parameters
    ----------
    run : callable
        ``run(key, payloads)`` takes a key and a list of payloads that share it
        and returns one result per payload, in order. It runs in the batcher's
        single worker thread.
    window_s : float
        After the first query of a batch arrives, wait this long for others
        (0: take only those already waiting); the wait ends as soon as
        ``max_batch`` queries wait. Queries that arrive while every worker is
        busy join the next batch anyway.
    max_batch : int
        Most queries in one call of ``run``.
    workers : int
        Batches searched at the same time, each in its own worker thread (a
        batch of exhaustive scans keeps one core busy; two let a 2-core machine
        use both). The next batch gathers while these run.

    Examples
    --------
    >>> import asyncio
    >>> b = MicroBatcher(lambda key, xs: [key * x for x in xs], window_s=0.001)
    >>> async def main():
    ...     out = await asyncio.gather(*(b.submit(10, x) for x in range(4)))
    ...     b.close()
    ...     return out
    >>> [r for r, info in asyncio.run(main())]
    [0, 10, 20, 30]
    """

    def __init__(self, run: Callable[[Hashable, list], list], *, window_s: float = 0.001, max_batch: int = 64,
                 workers: int = 1, name: str = "hardneg-batch"):
        if window_s < 0:
            raise ValueError(f"window_s: expected >= 0, got {window_s}")
        if max_batch < 1:
            raise ValueError(f"max_batch: expected >= 1, got {max_batch}")
        if workers < 1:
            raise ValueError(f"workers: expected >= 1, got {workers}")
        self.run, self.window_s, self.max_batch, self.name = run, float(window_s), int(max_batch), name
        self.workers = int(workers)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._inflight: dict = {}  # dispatch task -> its batch
        self._full: asyncio.Event | None = None  # set when max_batch queries wait: the window ends early
        self._closed = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ public
    async def submit(self, key: Hashable, payload):
        """Queue one query; returns ``(result, info)`` where ``info`` holds
        ``batch_size``, ``queue_s`` (waited before its batch started) and
        ``batch_s`` (the batch's call of ``run``)."""
        if self._closed:
            raise BatcherClosed("the service is shutting down")
        loop = asyncio.get_running_loop()
        queue = self._queue
        if self._loop is not loop or queue is None:  # (_start sets both)
            queue = self._start(loop)
        fut = loop.create_future()
        queue.put_nowait((key, payload, fut, time.perf_counter()))
        if self._full is not None and queue.qsize() + 1 >= self.max_batch:  # + the one being gathered
            self._full.set()
        return await fut

    def close(self) -> None:
        """Stop collecting; queries not yet answered fail with :class:`BatcherClosed`.

        Safe to call from any thread and more than once; never waits for a
        batch that is being searched (its results are dropped)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        loop = self._loop
        if loop is None or loop.is_closed():
            self._shutdown_executor()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._close_now()
        else:
            try:
                loop.call_soon_threadsafe(self._close_now)
            except RuntimeError:  # the loop closed meanwhile
                self._shutdown_executor()

    # ---------------------------------------------------------------- internals
    def _start(self, loop) -> asyncio.Queue:
        # a new event loop (e.g. a second TestClient): the old loop's queue and task are gone with it
        self._loop = loop
        queue: asyncio.Queue = asyncio.Queue()
        self._queue = queue
        self._full = asyncio.Event()
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix=self.name)
        self._task = loop.create_task(self._collect(queue))
        return queue

    def _shutdown_executor(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _close_now(self) -> None:
        if self._task is not None:
            self._task.cancel()
        pending = [q for task, batch in self._inflight.items() for q in batch]
        for task in self._inflight:
            task.cancel()
        while self._queue is not None and not self._queue.empty():
            pending.append(self._queue.get_nowait())
        for _, _, fut, _ in pending:
            if not fut.done():
                fut.set_exception(BatcherClosed("the service is shutting down"))
        self._inflight = {}
        self._shutdown_executor()

    async def _collect(self, queue: asyncio.Queue) -> None:
        free = asyncio.Semaphore(self.workers)

        def finished(task: asyncio.Task) -> None:
            self._inflight.pop(task, None)
            free.release()

        while True:
            batch = [await queue.get()]
            if self.window_s > 0 and queue.qsize() + 1 < self.max_batch:
                await self._wait_window()
            await free.acquire()  # all workers busy: the queries keep gathering meanwhile
            while len(batch) < self.max_batch and not queue.empty():
                batch.append(queue.get_nowait())
            batch = [q for q in batch if not q[2].done()]  # cancelled: the client went away
            if not batch:
                free.release()
                continue
            task = asyncio.get_running_loop().create_task(self._dispatch(batch))
            self._inflight[task] = batch
            task.add_done_callback(finished)

    async def _wait_window(self) -> None:
        """Wait up to ``window_s`` for more queries, less when ``max_batch`` of them wait: a lone
        query waits one window at most, never for a batch that does not fill."""
        full, queue = self._full, self._queue
        if full is None or queue is None:  # not started (_start sets both before _collect runs)
            return
        full.clear()
        if queue.qsize() + 1 >= self.max_batch:
            return
        try:
            await asyncio.wait_for(full.wait(), self.window_s)
        except TimeoutError:
            pass

    async def _dispatch(self, batch: list) -> None:
        loop = asyncio.get_running_loop()
        try:
            outcomes = await loop.run_in_executor(self._executor, self._run_groups, batch)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the executor itself failed (shut down): fail this batch only
            outcomes = [(exc, {}) for _ in batch]
        for (_, _, fut, _), (result, info) in zip(batch, outcomes):
            if fut.done():
                continue
            if isinstance(result, BaseException):
                fut.set_exception(result)
            else:
                fut.set_result((result, info))

    def _run_groups(self, batch: list) -> list:
        """In the worker thread: one call of ``run`` per key; one by one if it raises."""
        groups: dict = {}
        for i, (key, *_rest) in enumerate(batch):
            groups.setdefault(key, []).append(i)
        outcomes: list = [None] * len(batch)
        start = time.perf_counter()
        for key, idx in groups.items():
            t = time.perf_counter()
            try:
                results = self.run(key, [batch[i][1] for i in idx])
                if len(results) != len(idx):
                    raise RuntimeError(f"{self.name}: {len(results)} results for {len(idx)} queries")
            except Exception as exc:  # noqa: BLE001 - retried one by one below, so only the culprit fails
                if len(idx) == 1:
                    results = [exc]
                else:
                    logger.warning("%s: a batch of %d failed (%s); retrying its queries one by one", self.name,
                                   len(idx), exc)
                    results = [self._run_one(key, batch[i][1]) for i in idx]
            elapsed = time.perf_counter() - t
            for i, r in zip(idx, results):
                outcomes[i] = (r, {"batch_size": float(len(idx)), "queue_s": start - batch[i][3], "batch_s": elapsed})
        return outcomes

    def _run_one(self, key, payload):
        try:
            results = self.run(key, [payload])
            if len(results) != 1:
                raise RuntimeError(f"{self.name}: {len(results)} results for 1 query")
            return results[0]
        except Exception as exc:  # noqa: BLE001 - handed to the query's own request
            return exc
