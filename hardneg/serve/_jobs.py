"""Long work off the event loop: a thread pool and job records with progress."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from ._errors import ServeError

logger = logging.getLogger(__name__)

__all__ = ["JobManager"]


class Job:
    def __init__(self, kind: str, total: int):
        self.id = uuid.uuid4().hex
        self.kind = kind
        self.status = "queued"
        self.done, self.total = 0, int(total)
        self.result = None
        self.error = None
        self.error_status = None
        self.created = time.time()
        self.started = self.finished = None

    def advance(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + int(n))

    def to_dict(self) -> dict:
        end = self.finished or time.time()
        return {"id": self.id, "kind": self.kind, "status": self.status, "done": self.done, "total": self.total,
                "seconds": round(end - (self.started or end), 4), "result": self.result, "error": self.error}


class JobManager:
    """Runs ``fn(job)`` in a worker thread; keeps the last ``keep`` jobs."""

    def __init__(self, workers: int = 2, keep: int = 200):
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hardneg-serve")
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._keep = keep

    def submit(self, kind: str, total: int, fn) -> Job:
        job = Job(kind, total)
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > self._keep:
                oldest = next(iter(self._jobs))
                if self._jobs[oldest].status in ("queued", "running"):
                    break
                del self._jobs[oldest]

        def run():
            job.status, job.started = "running", time.time()
            try:
                job.result = fn(job)
                job.status = "done"
            except ServeError as exc:
                job.status, job.error, job.error_status = "failed", exc.message, exc.status
            except (ValueError, TypeError) as exc:
                job.status, job.error, job.error_status = "failed", str(exc).splitlines()[0], 422
            except Exception as exc:  # noqa: BLE001 - reported in the job, logged with its traceback
                logger.exception("job %s failed", job.id)
                job.status, job.error, job.error_status = "failed", f"{type(exc).__name__}: {exc}", 500
            finally:
                job.finished = time.time()

        self._pool.submit(run)
        return job

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise ServeError(404, f"job {job_id!r} does not exist")
        return job

    def list(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
