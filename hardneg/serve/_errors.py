"""Service errors: one exception type carrying the HTTP status, rendered as JSON."""

from __future__ import annotations

__all__ = ["ServeError"]


class ServeError(Exception):
    """An error to answer with ``status`` and ``{"detail": message}``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = int(status)
        self.message = message
