"""Portable model files: arrays in ``.npz`` plus JSON metadata, never pickle.

A model file is one ``.npz`` archive holding the model's arrays and a
``__meta__`` entry: a JSON document with the library name, the model kind, a
format version and the model's parameters. Loading uses ``allow_pickle=False``
so a model file cannot run code, and checks kind and version before anything
else so a foreign or newer file gives one clear error.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from ._atomic import atomic_path

_LIBRARY = "hardneg"


class ModelFileError(ValueError):
    """A model file is missing, corrupt, foreign or of an unsupported version."""


def save_model(path, kind: str, version: int, arrays: dict, meta: dict) -> Path:
    """Write ``arrays`` and ``meta`` to ``path`` atomically (temp file + rename)."""
    path = Path(path)
    header = {"library": _LIBRARY, "kind": kind, "format_version": int(version), "meta": meta}
    payload = {k: np.asarray(v) for k, v in arrays.items()}
    for key, value in payload.items():
        if value.dtype == object:
            raise TypeError(f"save_model: array {key!r} has dtype object, which would need pickle")
    payload["__meta__"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **payload)
    return path


def _read(path: Path, with_arrays: bool) -> tuple[dict, dict]:
    if not path.is_file():
        raise ModelFileError(f"model file {str(path)!r} does not exist")
    try:
        with np.load(path, allow_pickle=False) as npz:
            if "__meta__" not in npz.files:
                raise ModelFileError(f"{path}: not a hardneg model file (no metadata entry)")
            header = json.loads(npz["__meta__"].tobytes().decode("utf-8"))
            arrays = {k: npz[k] for k in npz.files if k != "__meta__"} if with_arrays else {}
    except ModelFileError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{path}: corrupt or not a hardneg model file ({exc})") from None
    if not isinstance(header, dict) or header.get("library") != _LIBRARY:
        raise ModelFileError(f"{path}: not a hardneg model file")
    return header, arrays


def model_kind(path) -> str:
    """The kind of model a file holds (reads only its metadata)."""
    header, _ = _read(Path(path), with_arrays=False)
    return str(header.get("kind"))


def load_model(path, kind: str, supported_versions) -> tuple[dict, dict]:
    """Read a file written by :func:`save_model`; return ``(arrays, meta)``."""
    path = Path(path)
    header, arrays = _read(path, with_arrays=True)
    if header.get("kind") != kind:
        raise ModelFileError(f"{path}: holds a {header.get('kind')!r} model, expected {kind!r}")
    version = header.get("format_version")
    if version not in tuple(supported_versions):
        raise ModelFileError(
            f"{path}: format version {version} is not supported by this hardneg (supports {sorted(supported_versions)})"
        )
    return arrays, header.get("meta", {})
