"""The app factory: ``create_app(store_path, ...)``."""

from __future__ import annotations

import ipaddress
import logging
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import FastAPI, HTTPException
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers
from starlette.middleware.trustedhost import TrustedHostMiddleware

from ._deps import check_token, needs_token
from ._errors import ServeError, hide_paths, one_line, validation_message
from .._imaging import MAX_IMAGE_PIXELS
from ..concept import DEFAULT_N_ITER
from ._state import ServeState, Settings, is_loopback
from .routers import concept, items, models, pages, search, text

logger = logging.getLogger(__name__)

__all__ = ["create_app"]

_UPLOAD_PATHS = ("/api/search/upload",)
_FORM_OVERHEAD = 64 << 10  # multipart boundaries and the small form fields
_UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class _BodyTooLarge(HTTPException):
    """Raised from ``receive``: FastAPI passes an HTTPException through its body parsing
    unchanged and answers it as a JSON 413."""


def _reply(status: int, message: str) -> JSONResponse:
    return JSONResponse({"detail": message}, status_code=status)


def _same_origin(origin: str, scheme: str, host: str) -> bool:
    """Whether an ``Origin`` header names the origin the request was sent to (scheme, host, port)."""
    try:
        o, h = urlsplit(origin), urlsplit(f"//{host}")
        o_port, h_port = o.port or _DEFAULT_PORTS.get(o.scheme), h.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        return False
    return bool(o.hostname) and o.scheme == scheme and o.hostname == h.hostname and o_port == h_port


def _cross_origin(scope, headers: Headers) -> str | None:
    """Why a state-changing request looks cross-origin (a page elsewhere making the browser
    send it), or None. Clients that send neither header (curl, scripts) pass."""
    if headers.get("sec-fetch-site", "").lower() == "cross-site":
        return ("cross-site request refused (Sec-Fetch-Site: cross-site): state changes are accepted from "
                "this server's own origin or from clients that send no Origin")
    origin = headers.get("origin")
    if origin is not None and not _same_origin(origin, scope.get("scheme", "http"), headers.get("host", "")):
        return (f"cross-origin request refused: Origin {one_line(origin)[:100]!r} is not this server's origin; "
                "state changes are accepted from its own page or from clients that send no Origin")
    return None


class Guard:
    """ASGI middleware: what every request passes before a route reads its body.

    For POST/PUT/PATCH/DELETE, a cross-origin ``Origin`` or ``Sec-Fetch-Site:
    cross-site`` is a 403 (a page on another site cannot drive the service through a
    browser). The body limit (413) is checked on ``Content-Length`` and counted while
    the body streams in (chunked bodies). When the route asks for the body (routing has
    then named its endpoint), the token is checked first for the endpoints that need it:
    no byte of an unauthenticated body is read. (Routes without a body still check the
    token in their ``require_token`` dependency.) The Host check against DNS rebinding
    is Starlette's ``TrustedHostMiddleware``, outside this one.
    """

    def __init__(self, app, *, routers, token: str | None, json_limit: int, upload_limit: int):
        self.app, self.token = app, token
        self.json_limit, self.upload_limit = json_limit, upload_limit + _FORM_OVERHEAD
        self.max_limit = max(self.json_limit, self.upload_limit)
        routes = [r for router in routers for r in router.routes if isinstance(r, APIRoute)]
        self.token_endpoints = {r.endpoint for r in routes if needs_token(r.dependant)}
        self.upload_endpoints = {r.endpoint for r in routes if r.path in _UPLOAD_PATHS}
        self.json_message = f"request body: larger than the limit of {json_limit:,} bytes"
        self.upload_message = f"upload: larger than the limit of {upload_limit:,} bytes"
        self.any_message = (f"request body: larger than any this service accepts ({json_limit:,} bytes, "
                            f"{upload_limit:,} for image uploads)")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        if scope["method"] in _UNSAFE_METHODS:
            why = _cross_origin(scope, headers)
            if why is not None:
                return await _reply(403, why)(scope, receive, send)
        declared = headers.get("content-length", "")
        declared = int(declared) if declared.isdigit() else None
        if declared is not None and declared > self.max_limit:
            return await _reply(413, self.any_message)(scope, receive, send)
        seen, limit, message = 0, None, self.json_message

        async def guarded():
            nonlocal seen, limit, message
            if limit is None:  # the first read: the route is known now, no byte is read yet
                endpoint = scope.get("endpoint")
                if endpoint in self.token_endpoints:
                    try:
                        check_token(self.token, headers.get("authorization"), headers.get("x-hardneg-token"))
                    except ServeError as exc:
                        raise HTTPException(exc.status, exc.message) from None
                upload = endpoint in self.upload_endpoints
                limit, message = (self.upload_limit, self.upload_message) if upload else (self.json_limit, message)
                if declared is not None and declared > limit:
                    raise _BodyTooLarge(413, message)
            event = await receive()
            seen += len(event.get("body", b""))
            if seen > limit:
                raise _BodyTooLarge(413, message)
            return event

        return await self.app(scope, guarded, send)


def _host_name(name) -> str | None:
    """A Host header name in the form Starlette compares (lower case, IPv6 in brackets), or None."""
    if not isinstance(name, str):
        return None
    name = name.strip().lower()
    if ":" in name.strip("[]"):  # an IPv6 literal: the Host header brackets it
        try:
            return f"[{ipaddress.IPv6Address(name.strip('[]'))}]"
        except ValueError:
            return None
    if not name or any(c in name for c in "/@ ?#:[]") or "*" in name[1:] or (name.startswith("*") and name != "*"
                                                                             and not name.startswith("*.")):
        return None
    return name


def _host_names(host: str, allowed_hosts) -> list[str]:
    """The Host header names to answer: the loopback names, the bound host, and the given ones."""
    if isinstance(allowed_hosts, (str, bytes)):
        raise TypeError(f"allowed_hosts: expected a list of host names, got the string {allowed_hosts!r}")
    names = list(_LOOPBACK_NAMES)
    bound = _host_name(host)  # a wildcard bind (0.0.0.0, ::) adds a name no browser sends: harmless
    for name in ([bound] if bound else []) + list(allowed_hosts or ()):
        checked = _host_name(name)
        if checked is None:
            raise ValueError(f"allowed_hosts: {name!r} is not a host name (a name or an IP address, without "
                             "scheme, port or path; '*.example.com' for its subdomains, '*' for any)")
        if checked not in names:
            names.append(checked)
    return names


def create_app(store_path: str | Path, *, models_dir: str | Path | None = None, token: str | None = None, host: str = "127.0.0.1",
               max_upload_bytes: int = 8 << 20, max_image_pixels: int = MAX_IMAGE_PIXELS, workers: int = 2,
               concept_iterations: int = DEFAULT_N_ITER, concept_bins: int = 100, concept_positives: int = 100,
               memory_bytes: int = 2 << 30, nprobe: int | None = None, batch_window_ms: float = 1.0,
               max_batch: int = 64, batch_workers: int = 2, search_threads: int | None = 1,
               allowed_hosts: list[str] | None = None, max_json_bytes: int = 1 << 20, mode_files: dict | None = None) -> FastAPI:
    """Build the search service over a FeatureStore.

    Parameters
    ----------
    store_path : path of a :class:`~hardneg.store.FeatureStore`
    models_dir : folder of the store's models (default ``<store>.models`` beside it):
        ``hasher.npz`` + ``hamming.index`` (Hamming mode), ``inverted.npz``
        (SOLIS mode), ``concepts/<name>.npz`` (saved concept models).
    mode_files : files to serve instead of ``models_dir``'s: ``{"hasher": ..., "index": ...,
        "similarity_index": ...}`` (``hardneg serve --hasher/--index/--similarity-index``);
        an index's ``<file>.ids.npz`` sidecar must lie beside it.
    token : required by state-changing endpoints when given; must be given
        when ``host`` is not a loopback address.
    host : the address the server will bind: decides whether a token is required, and
        is one of the names the ``Host`` header may give.
    allowed_hosts : more names the ``Host`` header may give (``--allowed-host``), besides
        ``localhost``, ``127.0.0.1``, ``::1`` and ``host``; ``"*.example.com"`` accepts its
        subdomains, ``"*"`` any name (behind a proxy that checks it); a wildcard needs a
        ``token``, since any name it answers could be pointed at the server. Other names are a
        400: a page on another site cannot reach this server by pointing its own DNS
        name at the server's address (DNS rebinding).
    max_upload_bytes, max_image_pixels : upload limits (bytes; declared pixels).
    max_json_bytes : the largest request body of every other endpoint (1 MiB: a
        feedback request with 2,000 ids of ~250 characters each). Larger bodies are a
        413, whether announced by ``Content-Length`` or streamed (chunked).
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
        query alone.
    batch_workers : batches searched at the same time (threads).
    search_threads : FAISS (OpenMP) threads per search call, set for the whole process
        (None: leave FAISS's default). One by default: the batches run one at a time
        and, on a small shared machine, OpenMP threads that wait for a busy core
        made one search of 1M codes 40x slower (``benchmarks/serve_load.py``).

    Returns
    -------
    FastAPI
        The application (serve it with uvicorn, or test it with ``TestClient``).

    Notes
    -----
    State-changing requests (POST, PUT, PATCH, DELETE) that a browser marks as sent
    from another origin (``Origin`` not this server's, or ``Sec-Fetch-Site:
    cross-site``) are a 403; clients that send no ``Origin`` (curl, scripts) pass.
    There is no CORS: pages elsewhere cannot read the answers either. The token (when
    there is one) is checked before the request body is read.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from fastapi.testclient import TestClient
    >>> from hardneg.store import FeatureStore
    >>> from hardneg.serve import create_app
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.store")
    >>> with FeatureStore.create(path, dim=4) as s:
    ...     s.append(np.eye(4, dtype=np.float32), ids=["a", "b", "c", "d"])
    >>> client = TestClient(create_app(path, allowed_hosts=["testserver"]))  # TestClient's Host
    >>> r = client.post("/api/search/example", json={"id": "a", "mode": "cosine", "k": 2})
    >>> r.status_code, r.json()["results"][0]["id"]
    (200, 'b')
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
    if isinstance(max_json_bytes, bool) or not isinstance(max_json_bytes, int) or max_json_bytes < 1:
        raise ValueError(f"max_json_bytes: expected a positive number of bytes, got {max_json_bytes!r}")
    hosts = _host_names(host, allowed_hosts)
    wildcard = next((name for name in hosts if name.startswith("*")), None)
    if wildcard is not None and token is None:
        # any name (or any under a domain) passes the Host check: a page on a site whose DNS name the
        # attacker points at this server would be same-origin with it (DNS rebinding); only a token stops it
        raise ValueError(f"allowed_hosts (--allowed-host) {wildcard!r} answers names others control, which re-opens "
                         "DNS rebinding: give a token (--token or HARDNEG_TOKEN) or list the names")
    if settings.nprobe is not None and settings.nprobe < 1:
        raise ValueError(f"nprobe: expected a positive integer, got {settings.nprobe}")
    if not 0 <= settings.batch_window_s <= 1 or settings.max_batch < 1 or settings.batch_workers < 1:
        raise ValueError(f"batch_window_ms={batch_window_ms}, max_batch={max_batch}, batch_workers={batch_workers}: "
                         "expected 0-1000 ms, >= 1 and >= 1")
    state = ServeState(store_path, models_dir, settings, mode_files=mode_files)

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
        message = hide_paths(exc.message, models_dir=state.models_dir, store_path=state.store.path)
        return _reply(exc.status, one_line(message))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, exc: RequestValidationError):
        # FastAPI's own handler echoes the input, and fails (a 500) on NaN or Infinity in it
        return _reply(422, validation_message(exc.errors()))

    routers = (items.router, search.router, text.router, concept.router, models.router, pages.router)
    for r in routers:
        app.include_router(r)
    app.mount("/static", StaticFiles(directory=str(Path(__file__).resolve().parent / "static")), name="static")
    # the last added runs first: the Host check, then the guard, then the routes
    app.add_middleware(Guard, routers=routers, token=settings.token, json_limit=max_json_bytes,
                       upload_limit=settings.max_upload_bytes)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=hosts, www_redirect=False)
    logger.debug("answering Host names: %s", ", ".join(hosts))
    return app
