"""Service errors: one exception type carrying the HTTP status, rendered as JSON.

:class:`ServeError` is defined in :mod:`hardneg.exceptions` and re-exported here.
"""

from __future__ import annotations

from hardneg.exceptions import ServeError

__all__ = ["ServeError"]
