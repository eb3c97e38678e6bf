"""Query by example: a stored item or an uploaded image, ranked by one search mode."""

from __future__ import annotations

import time

from fastapi import APIRouter, Depends, File, Form, UploadFile

from .._deps import get_state
from .._errors import ServeError
from .._images import decode_upload
from .._schemas import ExampleQuery, Message, ModeInfo, SearchResponse
from .._state import ServeState

router = APIRouter(prefix="/api", tags=["query by example"])
_ERR = {404: {"model": Message}, 413: {"model": Message}, 422: {"model": Message}, 503: {"model": Message}}


def _rank(state: ServeState, mode_name: str, x, k: int, timings: dict) -> SearchResponse:
    mode = state.mode(mode_name)
    k = state.check_k(k)
    t = time.perf_counter()
    rows, scores = mode.rank(x, k)
    timings["search_s"] = time.perf_counter() - t
    return SearchResponse(mode=mode_name, k=k, results=[state.item(int(r), s) for r, s in zip(rows, scores)],
                          timings=timings)


@router.get("/modes", response_model=list[ModeInfo], summary="Search modes available for this store")
def modes(state: ServeState = Depends(get_state)):
    return [m.describe() for m in state.modes.values()]


@router.post("/search/example", response_model=SearchResponse, responses=_ERR,
             summary="Rank the store by similarity to a stored item")
def search_example(q: ExampleQuery, state: ServeState = Depends(get_state)):
    state.mode(q.mode)
    state.check_k(q.k)
    t = time.perf_counter()
    x = state.vector(state.row(q.id))
    return _rank(state, q.mode, x, q.k, {"read_s": time.perf_counter() - t})


@router.post("/search/upload", response_model=SearchResponse, responses=_ERR,
             summary="Rank the store by similarity to an uploaded image (extracted with the store's extractor)")
def search_upload(file: UploadFile = File(..., description="An image file."), mode: str = Form("hamming"),
                  k: int = Form(24), state: ServeState = Depends(get_state)):
    state.mode(mode)
    state.check_k(k)
    limit = state.settings.max_upload_bytes
    data = file.file.read(limit + 1)
    if len(data) > limit:
        raise ServeError(413, f"upload: larger than the limit of {limit:,} bytes")
    if not state.image_query.available:
        raise ServeError(422, f"upload: {state.image_query.reason}")
    t = time.perf_counter()
    rgb = decode_upload(data, state.settings.max_image_pixels)
    x = state.image_query.transform(rgb)
    return _rank(state, mode, x, k, {"extract_s": time.perf_counter() - t})
