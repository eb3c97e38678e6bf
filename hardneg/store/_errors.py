"""The store's exceptions (one module, so every store module can raise them), and
:func:`public_text`, which names a store instead of the hidden folder it is built in.

The exceptions are defined in :mod:`hardneg.exceptions` (the public home of every
exception hardneg raises) and re-exported here.
"""

from __future__ import annotations

import re

from hardneg.exceptions import StoreDamagedError, StoreError, StoreLockedError

__all__ = ["StoreDamagedError", "StoreError", "StoreLockedError", "public_text"]

_NAME = r"[^/\\\s'\"]+?"
# The folders a store is built in or moved out to, beside it: ".NAME.<hex>.swap" (a rebuild, an import),
# "NAME.<mkdtemp>.creating" (FeatureStore.create, also inside a swap folder's name), "NAME.<hex>.deleting".
_BUILD_FOLDERS = (
    (re.compile(rf"\.({_NAME})\.[0-9a-f]{{32}}\.swap(?:\.[A-Za-z0-9_]+\.creating)?"), r"\1"),
    (re.compile(rf"({_NAME})\.[A-Za-z0-9_]{{8}}\.creating"), r"\1"),
    (re.compile(rf"({_NAME})\.[0-9a-f]{{32}}\.deleting"), r"\1"),
)


def public_text(text: str) -> str:
    """``text`` with each hidden build folder named as the store it builds (``/d/.s.<hex>.swap/x``
    -> ``/d/s/x``): an error line names what the user gave, not an internal name (issue 39)."""
    for pattern, repl in _BUILD_FOLDERS:
        text = pattern.sub(repl, text)
    return text
