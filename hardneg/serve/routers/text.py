"""Search by description: free text ranks the store (issue 26).

The first text query trains a zero-shot model ([Bucher16], :func:`hardneg.zeroshot.fit_text_search`)
on the store's tags, each described by its WordNet gloss embedded by all-MiniLM-L6-v2, and keeps it
for the life of the service (one per service; concurrent first queries wait for the same
training). Every query is then embedded and every row scored by ``-S(X, q)``
([Bucher16] Eq. (1)); training, embedding and the scan run in the thread pool, never on the event loop.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import Field

from .._deps import get_state
from .._errors import ServeError
from .._schemas import Message, SearchResponse, _Request
from .._state import ServeState

router = APIRouter(prefix="/api", tags=["search by description"])
_ERR: dict[int | str, dict[str, Any]] = {404: {"model": Message}, 409: {"model": Message}, 422: {"model": Message}}

_models: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # ServeState -> (model, seconds to train)
_lock = threading.Lock()


class TextQuery(_Request):
    text: str = Field(min_length=1, max_length=1000, description="What to find, in words: 'a striped animal with four legs'.")
    k: int = Field(24, description="Number of results (1 to 1000): the page size.")
    offset: int = Field(0, ge=0, description="Skip this many results (paging; offset + k <= 1000).")


def text_model(state: ServeState):
    """The service's zero-shot model over the store's tags, trained on first use: ``(model, train_s)``."""
    with _lock:
        if state not in _models:
            from hardneg.zeroshot import fit_text_search

            if state.store.is_sparse:
                raise ServeError(409, "search by description needs a dense feature store (CNN features)")
            t = time.perf_counter()
            try:
                model = fit_text_search(state.store, None)
            except ImportError as exc:
                raise ServeError(422, str(exc).splitlines()[0]) from None
            except ValueError as exc:
                raise ServeError(409, f"search by description: {str(exc).splitlines()[0]}") from None
            _models[state] = (model, time.perf_counter() - t)
        return _models[state]


def _rank(state: ServeState, text: str, want: int):
    from hardneg.zeroshot import text_search

    fresh = state not in _models
    model, train_s = text_model(state)
    t = time.perf_counter()
    try:
        res = text_search(model, state.data, text, k=want)
    except ImportError as exc:
        raise ServeError(422, str(exc).splitlines()[0]) from None
    except ValueError as exc:
        raise ServeError(422, f"text: {str(exc).splitlines()[0]}") from None
    timings = {"search_s": time.perf_counter() - t}
    if fresh:  # the first query of this service trained the model
        timings["train_s"] = train_s
    return res, timings


@router.post("/search/text", response_model=SearchResponse, responses=_ERR,
             summary="Rank the store by a description in words (a zero-shot model over the store's tags)")
async def search_text(q: TextQuery, state: ServeState = Depends(get_state)):
    k, offset = state.check_page(q.k, q.offset)
    if not q.text.strip():
        raise ServeError(422, "text: is empty; describe what to find, e.g. 'a striped animal with four legs'")
    want = min(offset + k + 1, len(state.ids))  # one more tells whether a next page exists
    res, timings = await run_in_threadpool(_rank, state, q.text, want)
    pairs = list(zip(res.rows.tolist(), res.scores.tolist()))
    return {"mode": "text", "k": k, "offset": offset, "has_more": len(pairs) > offset + k, "search": "exact",
            "results": [state.item(r, s) for r, s in pairs[offset: offset + k]], "timings": timings}
