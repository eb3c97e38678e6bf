"""The app factory: ``create_app(store_path, ...)``."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, HTTPException
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from ._errors import ServeError
from ._state import ServeState, Settings, is_loopback
from .routers import concept, items, models, pages, search

logger = logging.getLogger(__name__)

__all__ = ["create_app"]

_UPLOAD_PATHS = ("/api/search/upload",)
_FORM_OVERHEAD = 64 << 10  # multipart boundaries and the small form fields


class UploadLimit:
    """ASGI middleware: refuse upload bodies beyond the limit before they are parsed or spooled."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] not in _UPLOAD_PATHS:
            return await self.app(scope, receive, send)
        limit = self.limit + _FORM_OVERHEAD
        for key, value in scope.get("headers", []):
            if key == b"content-length" and value.isdigit() and int(value) > limit:
                return await JSONResponse({"detail": f"upload: larger than the limit of {self.limit:,} bytes"},
                                          status_code=413)(scope, receive, send)
        seen = 0

        async def counted():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                # an HTTPException passes FastAPI's body parsing unchanged and becomes a JSON 413
                raise HTTPException(413, f"upload: larger than the limit of {self.limit:,} bytes")
            return message

        return await self.app(scope, counted, send)


def create_app(store_path, *, models_dir=None, token: str | None = None, host: str = "127.0.0.1",
               max_upload_bytes: int = 8 << 20, max_image_pixels: int = 40_000_000, workers: int = 2,
               concept_iterations: int = 10, concept_bins: int = 100, concept_positives: int = 100,
               memory_bytes: int = 2 << 30, nprobe: int | None = None, batch_window_ms: float = 1.0,
               max_batch: int = 64, batch_workers: int = 2, search_threads: int | None = 1) -> FastAPI:
    """Build the search service over a FeatureStore.

    Parameters
    ----------
    store_path : path of a :class:`~hardneg.store.FeatureStore`
    models_dir : folder of the store's models (default ``<store>.models`` beside it):
        ``hasher.npz`` + ``hamming.index`` (Hamming mode), ``inverted.npz``
        (SOLIS mode), ``concepts/<name>.npz`` (saved concept models).
    token : required by state-changing endpoints when given; must be given
        when ``host`` is not a loopback address.
    host : the address the server will bind (only decides whether a token is required).
    max_upload_bytes, max_image_pixels : upload limits (bytes; declared pixels).
    workers : threads for training jobs.
    concept_iterations, concept_bins, concept_positives : Negative Bootstrap T, q,
        and the most tagged items used as positives (a random subset, as in the CLI).
    memory_bytes : a dense store up to this size is held in memory (queries, concept
        training and scans skip Zarr decoding); larger or sparse stores are read in chunks.
    nprobe : lists scanned per query by an approximate (IVF) Hamming index (default:
        the one saved with it); a query can still ask for its own, or for ``exact``.
    batch_window_ms, max_batch : micro-batching of Hamming queries: concurrent ones
        arriving within the window (or while a batch is being searched) are searched
        together, at most ``max_batch`` per FAISS call; ``max_batch=1`` searches each
        query alone. ``batch_workers`` batches are searched at the same time (threads).
    search_threads : FAISS (OpenMP) threads per search call, set for the whole process
        (None: leave FAISS's default). One by default: the batches run one at a time
        and, on a small shared machine, OpenMP threads that wait for a busy core
        made one search of 1M codes 40x slower (``benchmarks/serve_load.py``).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from fastapi.testclient import TestClient
    >>> from hardneg.store import FeatureStore
    >>> from hardneg.serve import create_app
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.store")
    >>> with FeatureStore.create(path, dim=4) as s:
    ...     s.append(np.eye(4, dtype=np.float32), ids=["a", "b", "c", "d"])
    >>> client = TestClient(create_app(path))
    >>> r = client.post("/api/search/example", json={"id": "a", "mode": "cosine", "k": 2})
    >>> r.status_code, r.json()["results"][0]["id"]
    (200, 'a')
    """
    if token is not None and not token:
        raise ValueError("token: an empty token would accept anything; give a real one or none")
    if not is_loopback(host) and token is None:
        raise ValueError(f"host {host!r} is not a loopback address: give a token (--token or HARDNEG_TOKEN) "
                         "so that only its holders can change state")
    settings = Settings(host=host, token=token, max_upload_bytes=int(max_upload_bytes),
                        max_image_pixels=int(max_image_pixels), workers=int(workers),
                        concept_iterations=int(concept_iterations), concept_bins=int(concept_bins),
                        concept_positives=int(concept_positives), memory_bytes=int(memory_bytes),
                        nprobe=None if nprobe is None else int(nprobe), batch_window_s=float(batch_window_ms) / 1000,
                        max_batch=int(max_batch), batch_workers=int(batch_workers))
    if search_threads is not None:
        if search_threads < 1:
            raise ValueError(f"search_threads: expected a positive integer or None, got {search_threads}")
        import faiss

        faiss.omp_set_num_threads(int(search_threads))
    if settings.max_upload_bytes < 1 or settings.max_image_pixels < 1:
        raise ValueError("max_upload_bytes and max_image_pixels must be positive")
    if settings.nprobe is not None and settings.nprobe < 1:
        raise ValueError(f"nprobe: expected a positive integer, got {settings.nprobe}")
    if not 0 <= settings.batch_window_s <= 1 or settings.max_batch < 1 or settings.batch_workers < 1:
        raise ValueError(f"batch_window_ms={batch_window_ms}, max_batch={max_batch}, batch_workers={batch_workers}: "
                         "expected 0-1000 ms, >= 1 and >= 1")
    state = ServeState(store_path, models_dir, settings)

    @asynccontextmanager
    async def lifespan(app):
        yield
        state.close()

    app = FastAPI(title="hardneg search service",
                  description="Query by example (Hamming codes, exact cosine, SOLIS) and concept search with "
                              "relevance feedback (Negative Bootstrap) over a FeatureStore.",
                  version="1", lifespan=lifespan)
    app.state.serve = state

    @app.exception_handler(ServeError)
    async def _serve_error(request, exc: ServeError):
        return JSONResponse({"detail": exc.message}, status_code=exc.status)

    for r in (items.router, search.router, concept.router, models.router, pages.router):
        app.include_router(r)
    app.mount("/static", StaticFiles(directory=str(Path(__file__).resolve().parent / "static")), name="static")
    app.add_middleware(UploadLimit, limit=settings.max_upload_bytes)
    return app
