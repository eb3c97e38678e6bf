"""FastAPI dependencies: the shared state and the token check."""

from __future__ import annotations

import hmac

from fastapi import Header, Request

from ._errors import ServeError
from ._state import ServeState


async def get_state(request: Request) -> ServeState:  # async: no thread-pool hop per request
    return request.app.state.serve


def require_token(request: Request, authorization: str | None = Header(None, include_in_schema=True),
                  x_hardneg_token: str | None = Header(None)) -> None:
    """State-changing endpoints: when the service has a token (always when bound beyond
    loopback), ``Authorization: Bearer <token>`` or ``X-Hardneg-Token`` must carry it."""
    state: ServeState = request.app.state.serve
    expected = state.settings.token
    if expected is None:
        return
    given = x_hardneg_token
    if given is None and authorization and authorization.lower().startswith("bearer "):
        given = authorization[7:].strip()
    if given is None:
        raise ServeError(401, "this endpoint changes state: send the service token (Authorization: Bearer <token>)")
    # constant-time comparison (of the UTF-8 bytes)
    if not hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8")):
        raise ServeError(403, "wrong token")
