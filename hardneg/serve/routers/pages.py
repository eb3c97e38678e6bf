"""The web page (a server template and a little vanilla JavaScript, no build step)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from .._deps import get_state
from .._state import ServeState

router = APIRouter(tags=["page"])
templates = Jinja2Templates(directory=str(Path(__file__).resolve().parent.parent / "templates"))


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def index(request: Request, state: ServeState = Depends(get_state)):
    s = state.store
    return templates.TemplateResponse(request, "index.html", {
        "store_name": Path(str(s.path)).name, "n_items": len(s), "dim": s.dim,
        "modes": list(state.modes.values()), "tags": state.tag_counts.most_common(30),
        "upload": state.image_query.available, "upload_reason": state.image_query.reason,
        "token_required": state.settings.token_required, "max_upload_mb": state.settings.max_upload_bytes / 2**20,
        "concept_split": state.concept_split, "extractor": state.extractor_status,
    })
