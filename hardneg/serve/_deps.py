"""FastAPI dependencies: the shared state and the token check."""

from __future__ import annotations

import hmac

from fastapi import Header, Request

from ._errors import ServeError
from ._state import ServeState


async def get_state(request: Request) -> ServeState:  # async: no thread-pool hop per request
    return request.app.state.serve


def check_token(expected: str | None, authorization: str | None, x_hardneg_token: str | None) -> None:
    """Raise a 401 (no token sent) or 403 (a wrong one) unless the service has no token
    or one of the two headers carries it."""
    if expected is None:
        return
    given = x_hardneg_token
    if given is None and authorization and authorization.lower().startswith("bearer "):
        given = authorization[7:].strip()
    if given is None:
        raise ServeError(401, "this endpoint changes state: send the service token (Authorization: Bearer <token>)")
    # constant-time comparison (of the UTF-8 bytes)
    if not hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode("utf-8")):
        raise ServeError(403, "wrong token")


def require_token(request: Request, authorization: str | None = Header(None, include_in_schema=True),
                  x_hardneg_token: str | None = Header(None)) -> None:
    """State-changing endpoints: when the service has a token (always when bound beyond
    loopback), ``Authorization: Bearer <token>`` or ``X-Hardneg-Token`` must carry it.

    The app's guard middleware (:mod:`hardneg.serve._app`) runs the same check before
    the request body is read; this dependency documents the headers in the OpenAPI
    schema and checks again.
    """
    state: ServeState = request.app.state.serve
    check_token(state.settings.token, authorization, x_hardneg_token)


def needs_token(dependant) -> bool:
    """Whether a route's dependency tree includes :func:`require_token`."""
    return any(d.call is require_token or needs_token(d) for d in dependant.dependencies)
