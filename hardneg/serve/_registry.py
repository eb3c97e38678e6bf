"""Saved concept models: one ``<name>.npz`` per model in ``<models_dir>/concepts``.

Names are validated (letters, digits, ``-``, ``_``, ``.``; no path parts), files
are written atomically by :func:`hardneg._persist.save_model` (temp file +
rename), so a model being written is never read half-written and a restart
finds every saved model again.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from hardneg._persist import ModelFileError

from ._errors import ServeError

__all__ = ["ModelRegistry", "check_name"]

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_name(name: str, what: str = "model name") -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or ".." in name:
        raise ServeError(422, f"{what} {name!r}: use 1-64 letters, digits, '-', '_' or '.', starting with a letter or digit")
    return name


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:48]
    return s or "concept"


class ModelRegistry:
    def __init__(self, folder: Path):
        self.folder = Path(folder) / "concepts"
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def path(self, name: str) -> Path:
        return self.folder / f"{check_name(name)}.npz"

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.npz") if NAME_RE.fullmatch(p.stem))

    def load(self, name: str):
        from hardneg.concept import load_concept

        p = self.path(name)
        if not p.is_file():
            raise ServeError(404, f"model {name!r} does not exist")
        try:
            return load_concept(p)
        except ModelFileError as exc:
            raise ServeError(409, f"model {name!r} cannot be read: {exc}") from None

    def save(self, name: str, model) -> Path:
        with self._lock:
            return model.save(self.path(name))

    def delete(self, name: str) -> None:
        p = self.path(name)
        with self._lock:
            if not p.is_file():
                raise ServeError(404, f"model {name!r} does not exist")
            p.unlink()

    def free_name(self, base: str) -> str:
        base = slug(base)
        with self._lock:
            taken = set(self.names())
        if base not in taken:
            return base
        i = 2
        while f"{base}-{i}" in taken:
            i += 1
        return f"{base}-{i}"
