"""Query by example: a stored item or an uploaded image, ranked by one search mode.

The endpoints are ``async``: a Hamming query (any mode with ``batched``) waits
on the service's micro-batcher (:mod:`hardneg.serve._batch`), which searches
the queries that arrive together in one FAISS call in its own thread; other
modes, and every blocking step (a store read, decoding and extracting an
upload), run in the thread pool, never on the event loop. The response is
encoded once, by orjson when it is installed (the ``serve`` extra; about a
third of the standard encoder's time for a page of results), else by the
standard JSON encoder (the response model still documents it).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from fastapi import APIRouter, Depends, File, Form, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from .._batch import BatcherClosed
from .._deps import get_state
from .._errors import ServeError
from .._images import decode_upload
from .._schemas import ExampleQuery, Message, ModeInfo, SearchResponse
from .._state import ServeState

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is in the serve extra
    _ORJSON = False
else:
    _ORJSON = True

router = APIRouter(prefix="/api", tags=["query by example"])
_ERR: dict[int | str, dict[str, Any]] = {404: {"model": Message}, 413: {"model": Message}, 422: {"model": Message}, 503: {"model": Message}}


def _json(body: dict) -> Response:
    """The response body encoded once: orjson if available (same JSON as the standard encoder's)."""
    if not _ORJSON:
        return JSONResponse(body)
    return Response(orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json")


def _check_options(mode, mode_name: str, nprobe: int | None) -> None:
    if nprobe is not None and not getattr(mode, "approximate", False):
        raise ServeError(422, f"nprobe: search mode {mode_name!r} has no approximate index here")


async def _rank(state: ServeState, mode_name: str, x, k: int, timings: dict, *, exact: bool = False,
                nprobe: int | None = None, offset: int = 0, exclude: int | None = None) -> Response:
    """One page of the ranking: results ``offset`` to ``offset + k``, without row ``exclude``
    (the query item itself). The modes rank the top ``offset + k`` (+1 to tell whether a
    next page exists, +1 for the excluded row) and the page is cut here."""
    mode = state.mode(mode_name)
    k, offset = state.check_page(k, offset)
    _check_options(mode, mode_name, nprobe)
    page_k, k = k, min(offset + k + 1 + (exclude is not None), len(state.ids))
    t = time.perf_counter()
    if mode.batched:
        if state.batcher is not None:
            try:
                (rows, scores), info = await state.batcher.submit((mode_name, k, bool(exact), nprobe), x)
            except BatcherClosed as exc:
                raise ServeError(503, str(exc)) from None
            timings.update(search_s=info["batch_s"], queue_s=info["queue_s"], batch_size=info["batch_size"])
        else:
            res = (await run_in_threadpool(mode.search, x[None, :], k, exact=bool(exact), nprobe=nprobe))[0]
            rows, scores = res.rows, res.scores
            timings.update(search_s=time.perf_counter() - t, batch_size=1.0)
        keep = rows >= 0  # an approximate search can find fewer than k
        rows, scores = rows[keep], scores[keep]
        label = mode.search_label(bool(exact), nprobe)
        probes = mode.probes(bool(exact), nprobe)
        if probes is not None:
            timings["nprobe"] = float(probes)
    else:
        res = await run_in_threadpool(mode.rank, x, k)
        rows, scores = (res.rows, res.scores) if hasattr(res, "rows") else res  # a TopK; a plugin mode's (rows, scores)
        timings["search_s"] = time.perf_counter() - t
        label = mode.search_label()
    ranked = [(r, s) for r, s in zip(np.asarray(rows).tolist(), np.asarray(scores, np.float64).tolist()) if r != exclude]
    body = {"mode": mode_name, "k": page_k, "offset": offset, "has_more": len(ranked) > offset + page_k,
            "total": len(state.ids) - (exclude is not None),
            "search": label, "results": [state.item(r, s) for r, s in ranked[offset : offset + page_k]],
            "timings": timings}
    return _json(body)


@router.get("/modes", response_model=list[ModeInfo], summary="Search modes available for this store")
def modes(state: ServeState = Depends(get_state)):
    return [m.describe() for m in state.modes.values()]


@router.post("/search/example", response_model=SearchResponse, responses=_ERR,
             summary="Rank the store by similarity to a stored item (the item itself left out, as in the CLI)")
async def search_example(q: ExampleQuery, state: ServeState = Depends(get_state)):
    mode = state.mode(q.mode)
    state.check_page(q.k, q.offset)
    _check_options(mode, q.mode, q.nprobe)
    t = time.perf_counter()
    row = state.row(q.id)
    x = state.matrix[row] if state.matrix is not None else await run_in_threadpool(state.vector, row)
    return await _rank(state, q.mode, x, q.k, {"read_s": time.perf_counter() - t}, exact=q.exact, nprobe=q.nprobe,
                       offset=q.offset, exclude=row)


@router.post("/search/upload", response_model=SearchResponse, responses=_ERR,
             summary="Rank the store by similarity to an uploaded image (extracted with the store's extractor)")
async def search_upload(file: UploadFile = File(..., description="An image file."), mode: str = Form("hamming"),
                        k: int = Form(24), offset: int = Form(0, ge=0), exact: bool = Form(False),
                        nprobe: int | None = Form(None, ge=1), state: ServeState = Depends(get_state)):
    m = state.mode(mode)
    state.check_page(k, offset)
    _check_options(m, mode, nprobe)
    limit = state.settings.max_upload_bytes
    data = await file.read(limit + 1)
    if len(data) > limit:
        raise ServeError(413, f"upload: larger than the limit of {limit:,} bytes")
    if not state.image_query.available:
        raise ServeError(422, f"upload: {state.image_query.reason}")
    t = time.perf_counter()

    def extract():
        q = state.image_query
        return q.transform(decode_upload(data, state.settings.max_image_pixels, target_size=q.target_size))

    x = await run_in_threadpool(extract)
    return await _rank(state, mode, x, k, {"extract_s": time.perf_counter() - t}, exact=exact, nprobe=nprobe,
                       offset=offset)
