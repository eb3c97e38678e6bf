"""Items, tags, store information and thumbnails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Query, Response

from .._deps import get_state
from .._errors import ServeError
from .._schemas import Info, Item, ItemPage, Message, ModeInfo, TagCount
from .._state import ServeState

router = APIRouter(prefix="/api", tags=["items"])
_ERR: dict[int | str, dict[str, Any]] = {404: {"model": Message}, 422: {"model": Message}}


@router.get("/info", response_model=Info, summary="The store, its search modes and the service's limits")
def info(state: ServeState = Depends(get_state)):
    s = state.store
    # the store's folder name only: where it lies on the server is not the client's business
    return Info(store=Path(str(s.path)).name, n_items=len(s), dim=s.dim, sparse=s.is_sparse,
                dataset=s.attrs.get("dataset"), modes=[ModeInfo.model_validate(m.describe()) for m in state.modes.values()],
                upload=state.image_query.available, upload_reason=state.image_query.reason,
                token_required=state.settings.token_required, max_upload_bytes=state.settings.max_upload_bytes,
                extractor=state.extractor_status, concept_split=state.concept_split)


@router.get("/items", response_model=ItemPage, summary="List items, optionally only those with a tag")
def list_items(offset: int = Query(0, ge=0), limit: int = Query(50, ge=1, le=1000), tag: str | None = None,
               state: ServeState = Depends(get_state)):
    rows = state.store.select(tags=[tag]) if tag else range(len(state.ids))
    total = len(rows)
    page = [Item.model_validate(state.item(int(r))) for r in list(rows[offset : offset + limit])]
    return ItemPage(total=total, offset=offset, items=page)


@router.get("/items/{item_id:path}/thumbnail", responses={**_ERR, 200: {"content": {"image/png": {}}}},
            response_class=Response, summary="PNG thumbnail of an item (cached)")
def thumbnail(item_id: str, state: ServeState = Depends(get_state)):
    png = state.thumbs.get(state.row(item_id))
    if png is None:
        raise ServeError(404, f"item {item_id!r} has no image to show (no readable source file, not a built-in data set)")
    return Response(png, media_type="image/png", headers={"Cache-Control": "public, max-age=3600"})


@router.get("/items/{item_id:path}", response_model=Item, responses=_ERR, summary="One item")
def get_item(item_id: str, state: ServeState = Depends(get_state)):
    return state.item(state.row(item_id))


@router.get("/tags", response_model=list[TagCount], summary="Tags and how many items carry each")
def tags(limit: int = Query(200, ge=1, le=10000), state: ServeState = Depends(get_state)):
    return [TagCount(tag=t, count=c) for t, c in state.tag_counts.most_common(limit)]
