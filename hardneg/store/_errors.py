"""The store's exceptions (one module, so every store module can raise them).

They are defined in :mod:`hardneg.exceptions` (the public home of every
exception hardneg raises) and re-exported here.
"""

from __future__ import annotations

from hardneg.exceptions import StoreDamagedError, StoreError, StoreLockedError

__all__ = ["StoreDamagedError", "StoreError", "StoreLockedError"]
