"""Service errors: one exception type carrying the HTTP status, rendered as JSON, and the
helpers that keep every error one line without server paths."""

from __future__ import annotations

import os
from pathlib import Path

from hardneg.exceptions import ServeError  # defined there (public), re-exported here

__all__ = ["ServeError", "hide_paths", "one_line", "validation_message"]

_MAX_CHARS = 500


def one_line(text: str) -> str:
    """Whitespace runs (newlines included) become one space; long texts are cut."""
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_CHARS else text[: _MAX_CHARS - 3] + "..."


def hide_paths(message: str, *, models_dir, store_path) -> str:
    """Names relative to the models folder (``concepts/x.npz``) and the store (``name.store/...``)
    instead of absolute server paths: clients learn nothing about the server's file system."""
    rules = {}  # absolute prefix -> (what replaces "prefix/", what replaces the bare prefix)
    for folder, inside in ((store_path, Path(store_path).name + os.sep), (models_dir, "")):
        for p in {os.path.abspath(folder), str(Path(folder).resolve())}:  # absolute forms only
            if p.rstrip(os.sep):
                rules[p.rstrip(os.sep)] = (inside, Path(p).name)
    # longest first: "<store>.models" beside the store starts with the store's own path
    for root in sorted(rules, key=len, reverse=True):
        inside, bare = rules[root]
        message = message.replace(root + os.sep, inside).replace(root, bare)
    return message


def validation_message(errors) -> str:
    """One line for a request that failed validation: the first error's field and reason.

    The input is never echoed: it may be anything JSON holds (NaN, Infinity), which
    the JSON encoder of the response would refuse.
    """
    errors = list(errors) or [{"loc": ("body",), "msg": "invalid request"}]
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ())]
    if first.get("type") == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "")
        text = f"body: not valid JSON ({reason})" if reason else "body: not valid JSON"
    else:
        field = ".".join(loc[1:] if len(loc) > 1 and loc[0] in ("body", "query", "path", "header", "cookie") else loc)
        text = f"{field or 'body'}: {first.get('msg', 'invalid value')}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more)"
    return one_line(text)
