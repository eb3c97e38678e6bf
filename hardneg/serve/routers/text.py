"""Search by description: free text ranks the store (issues 26, 38).

The first text query of a store state builds its text index
(:func:`hardneg.zeroshot.open_text_index`, ``method="auto"``: ConSE [Norouzi14] with no
training on a store without tags, ConSE + the caption model on the store's tags otherwise), cached in the
service's models folder under ``text-index/`` and keyed by the store's content, so a restarted
service, or the CLI on the same store, reads it instead of building it. While it is built,
``GET /api/search/text/status`` reports the rows done (the page shows it); concurrent first
queries wait for the same build. A query is then its MiniLM embedding and one product with
the index's vectors. Building, embedding and ranking run in the thread pool, never on the event loop.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from .._deps import get_state
from .._errors import ServeError
from .._schemas import Message, SearchResponse, _Request
from .._state import ServeState

router = APIRouter(prefix="/api", tags=["search by description"])
_ERR: dict[int | str, dict[str, Any]] = {404: {"model": Message}, 409: {"model": Message}, 422: {"model": Message}}

_indexes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # ServeState -> (TextIndex, seconds to build or read)
_failed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # ServeState -> (status, message): not retried
_progress: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # ServeState -> {"state", "done", "total", "method"}
_lock = threading.Lock()


class TextQuery(_Request):
    text: str = Field(min_length=1, max_length=1000, description="What to find, in words: 'a striped animal with four legs'.")
    k: int = Field(24, description="Number of results (1 to 1000): the page size.")
    offset: int = Field(0, ge=0, description="Skip this many results (paging; offset + k <= 1000).")


class TextIndexStatus(BaseModel):
    state: str = Field(description="'none' (no text query yet), 'building', 'ready' or 'failed'.")
    done: int = Field(0, description="Rows of the store mapped so far (while building).")
    total: int = Field(0, description="Rows of the store.")
    method: str | None = Field(None, description="auto (the default) or another of hardneg.zeroshot._text_index.TEXT_METHODS.")
    named_share: float | None = Field(None, description="Once built: the share of items whose file names the index uses "
                                                        "as captions (None: file names not used).")
    error: str | None = None


def text_index(state: ServeState):
    """The service's text index, read from the cache or built on first use: ``(index, seconds, built)``."""
    with _lock:
        if state in _failed:
            status, message = _failed[state]
            raise ServeError(status, message)
        if state not in _indexes:
            from hardneg.zeroshot._text_index import cached_text_index, open_text_index, resolve_method

            if state.store.is_sparse:
                raise ServeError(409, "search by description needs a dense feature store (CNN features)")
            prog: dict[str, Any] = {"state": "building", "done": 0, "total": len(state.ids), "method": None}
            _progress[state] = prog

            def advance(n: int) -> None:
                prog["done"] = min(prog["total"], prog["done"] + int(n))

            t = time.perf_counter()
            try:
                index = cached_text_index(state.store, cache_dir=state.models_dir / "text-index")
                if index is None:
                    prog["method"] = resolve_method(state.store)
                    index, _ = open_text_index(state.store, cache_dir=state.models_dir / "text-index", progress=advance)
                prog["method"] = index.method
                prog["named_share"] = index.info.get("named_share") if index.names is not None else None
            except ImportError as exc:
                prog["state"] = "failed"
                raise ServeError(422, str(exc).splitlines()[0]) from None
            except ValueError as exc:  # what the store lacks: the same answer until the service restarts
                prog["state"] = "failed"
                _failed[state] = (409, f"search by description: {str(exc).splitlines()[0]}")
                raise ServeError(*_failed[state]) from None
            prog.update(state="ready", done=prog["total"])
            _indexes[state] = (index, time.perf_counter() - t, True)
            return index, _indexes[state][1], True
        index, seconds, _ = _indexes[state]
        return index, seconds, False


def _rank(state: ServeState, text: str, want: int):
    index, seconds, first = text_index(state)
    t = time.perf_counter()
    try:
        res = index.search(text, k=want, data=state.data)
    except ImportError as exc:
        raise ServeError(422, str(exc).splitlines()[0]) from None
    except ValueError as exc:
        raise ServeError(422, f"text: {str(exc).splitlines()[0]}") from None
    timings = {"search_s": time.perf_counter() - t}
    if first:  # the first query of this service built (or read) the index
        timings["train_s"] = seconds
    return res, timings


@router.get("/search/text/status", response_model=TextIndexStatus,
            summary="Whether the text index is built; while the first text query builds it, the rows done")
async def text_status(state: ServeState = Depends(get_state)):
    prog = _progress.get(state)
    if prog is None:
        return {"state": "ready" if state in _indexes else "none", "total": len(state.ids)}
    failed = _failed.get(state)
    return {**prog, "error": failed[1] if failed else None}


@router.post("/search/text", response_model=SearchResponse, responses=_ERR,
             summary="Rank the store by a description in words (ConSE with no training, or with a model over the store's tags)")
async def search_text(q: TextQuery, state: ServeState = Depends(get_state)):
    k, offset = state.check_page(q.k, q.offset)
    if not q.text.strip():
        raise ServeError(422, "text: is empty; describe what to find, e.g. 'a striped animal with four legs'")
    want = min(offset + k + 1, len(state.ids))  # one more tells whether a next page exists
    res, timings = await run_in_threadpool(_rank, state, q.text, want)
    pairs = list(zip(res.rows.tolist(), res.scores.tolist()))
    return {"mode": "text", "k": k, "offset": offset, "has_more": len(pairs) > offset + k, "search": "exact",
            "results": [state.item(r, s) for r, s in pairs[offset: offset + k]], "timings": timings}
