"""Saved concept models: list, inspect, reuse, delete."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from .._deps import get_state, require_token
from .._schemas import Message, ModelInfo, ModelSearchRequest, SearchResponse
from .._state import ServeState
from .concept import scan

router = APIRouter(prefix="/api", tags=["saved models"])
_ERR: dict[int | str, dict[str, Any]] = {404: {"model": Message}, 409: {"model": Message}, 422: {"model": Message}}


def _info(name: str, model) -> ModelInfo:
    m = model.meta
    return ModelInfo(name=name, concept=m.get("concept"), estimator=m.get("estimator"), n_positives=m.get("n_positives"),
                     n_marked_negatives=m.get("n_marked_negatives"), feedback_rounds=int(m.get("feedback_rounds") or 0),
                     positive_ids=list(m.get("positive_ids") or []), negative_ids=list(m.get("negative_ids") or []),
                     marked_ids=list(m.get("marked_ids") or []), created=m.get("created"))


@router.get("/models", response_model=list[ModelInfo], summary="Saved concept models")
def list_models(state: ServeState = Depends(get_state)):
    out = []
    for name in state.registry.names():
        try:
            out.append(_info(name, state.registry.load(name)))
        except Exception:  # noqa: BLE001 - a damaged file is listed by name only
            out.append(ModelInfo(name=name))
    return out


@router.get("/models/{name}", response_model=ModelInfo, responses=_ERR, summary="One saved model")
def get_model(name: str, state: ServeState = Depends(get_state)):
    return _info(name, state.registry.load(name))


@router.post("/models/{name}/search", response_model=SearchResponse, responses=_ERR,
             summary="Rank the store with a saved model (no training; items it was told are not relevant left out)")
def search_model(name: str, req: ModelSearchRequest, state: ServeState = Depends(get_state)):
    state.check_page(req.k, req.offset)
    model = state.registry.load(name)
    page = scan(state, model, req.k, model.meta.get("split"), req.offset, req.new_only)
    return SearchResponse(mode=f"concept:{name}", k=len(page["results"]), offset=page["offset"], has_more=page["has_more"],
                          total=page["total"], search="exact", results=page["results"], timings={"scan_s": page["scan_s"]})


@router.delete("/models/{name}", response_model=Message, responses={**_ERR, 401: {"model": Message}, 403: {"model": Message}},
               dependencies=[Depends(require_token)], summary="Delete a saved model")
def delete_model(name: str, state: ServeState = Depends(get_state)):
    state.registry.delete(name)
    return Message(detail=f"deleted {name}")
