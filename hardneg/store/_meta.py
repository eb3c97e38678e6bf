"""Reading and validating a store's ``meta.json`` and its arrays' ``zarr.json``.

Everything read here comes from disk and may be damaged or hostile: every
problem becomes one :class:`StoreError` line, never a ``KeyError`` or
``AttributeError`` from a malformed file.

Plain Python (json, pathlib): ``hardneg store info`` reads a store through
this module alone, without NumPy or Arrow (issue 29).
"""

from __future__ import annotations

import json
from pathlib import Path

from ._errors import StoreError
from ._remote import RemoteFolder, RemoteReadError
from ._summary import SUMMARY, check_summary

FORMAT_VERSION = 1
META = "meta.json"
CHECKSUM_ALGORITHM = "crc32"  # of chunks and parts (meta.json "checksums")
# The arrays of a store and their on-disk element types (uncompressed, little-endian).
ARRAY_TYPES = {"X": "<f4", "indptr": "<i8", "indices": "<i4", "data": "<f4"}
# The zarr v3 names of those types (what zarr writes); another spelling is checked with NumPy.
_ZARR_TYPES = {"<f4": "float32", "<i8": "int64", "<i4": "int32"}


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def load_meta(path: Path | RemoteFolder) -> dict:
    meta_path = path / META
    if not meta_path.is_file():
        if isinstance(path, Path) and not (path.exists() or path.is_symlink()):
            raise StoreError(f"no such store: {path} (nothing there; check the path, or make one with 'hardneg extract' or 'hardneg store import')")
        raise StoreError(f"{str(path)!r} is not a FeatureStore (no {META})")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except RemoteReadError:  # the server or the network, not a corrupt file
        raise
    except (OSError, ValueError, RecursionError) as exc:
        raise StoreError(f"{path}: corrupt {META} ({first_line(exc)})") from None
    return check_meta(meta, path)


def check_part_name(name, path: Path | RemoteFolder) -> str:
    # Parts live in items/: a name that could leave it (or the store) is refused.
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or any(ch in name for ch in "/\\\0:")
        or Path(name).name != name
        or name.startswith(".")
    ):
        raise StoreError(f"{path}: corrupt {META}: item part name {name!r} is not a plain file name inside items/")
    return name


def check_meta(meta, path: Path | RemoteFolder) -> dict:
    def corrupt(what: str) -> StoreError:
        return StoreError(f"{path}: corrupt {META}: {what}")

    if not isinstance(meta, dict):
        raise corrupt(f"expected a JSON object, got a JSON {type(meta).__name__}")
    if meta.get("format") != "hardneg.FeatureStore":
        raise StoreError(f"{path}: {META} does not describe a hardneg FeatureStore")
    if meta.get("format_version") != FORMAT_VERSION:
        raise StoreError(
            f"{path}: store format version {meta.get('format_version')!r} is not supported (this hardneg reads {FORMAT_VERSION})"
        )
    for key, minimum in (("dim", 1), ("chunk_rows", 1), ("n_rows", 0), ("nnz", 0)):
        if key not in meta:
            raise corrupt(f"missing key {key!r}")
        value = meta[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise corrupt(f"{key} must be an integer >= {minimum}, got {value!r}")
    if not isinstance(meta.get("sparse"), bool):
        raise corrupt(f"sparse must be true or false, got {meta.get('sparse', '(missing)')!r}")
    if not meta["sparse"] and meta["nnz"] != 0:
        raise corrupt(f"a dense store has nnz 0, got {meta['nnz']}")
    if meta["sparse"] and meta["n_rows"] == 0 and meta["nnz"] != 0:
        raise corrupt(f"a store without rows has nnz 0, got {meta['nnz']}")
    parts = meta.get("parts")
    if not isinstance(parts, list):
        raise corrupt(f"parts must be a list of file names, got {parts!r}"[:200])
    for name in parts:
        check_part_name(name, path)
    if len(set(parts)) != len(parts):
        raise corrupt("parts lists a file twice")
    if len(parts) > meta["n_rows"]:
        raise corrupt(f"{len(parts)} item parts for {meta['n_rows']} rows (every part holds at least one)")
    if not isinstance(meta.get("attrs", {}), dict):
        raise corrupt("attrs must be a JSON object")
    if "checksums" in meta:
        sums = meta["checksums"]
        arrays = ("indptr", "indices", "data") if meta["sparse"] else ("X",)

        def crc_ok(v) -> bool:
            return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**32

        if (
            not isinstance(sums, dict)
            or sums.get("algorithm") != CHECKSUM_ALGORITHM
            or not isinstance(sums.get("chunks"), dict)
            or set(sums["chunks"]) != set(arrays)
            or not all(isinstance(v, list) and all(crc_ok(x) for x in v) for v in sums["chunks"].values())
            or not isinstance(sums.get("parts"), dict)
            or set(sums["parts"]) != set(parts)
            or not all(crc_ok(v) for v in sums["parts"].values())
        ):
            raise corrupt("checksums must be {'algorithm': 'crc32', 'chunks': {array: [crc, ...]}, 'parts': {part: crc}} covering every array and part")
    if SUMMARY in meta:
        # Written by hardneg in the same atomic commit as the parts: a malformed one was altered
        # by something else, like any other malformed key here. See hardneg.store._summary.
        problem = check_summary(meta[SUMMARY], parts, meta["n_rows"])
        if problem is not None:
            raise corrupt(f"{SUMMARY}: {problem}")
    return meta


def _same_type(name: str, data_type) -> bool:
    want = ARRAY_TYPES[name]
    if data_type == _ZARR_TYPES[want]:
        return True
    import numpy as np  # a spelling zarr does not write: compare as NumPy would

    return bool(np.dtype(want) == np.dtype(data_type).newbyteorder("<"))


def read_array_layout(path: Path | RemoteFolder, name: str) -> tuple[list[int], list[int]]:
    """Shape and chunk shape of ``vectors/<name>``, after checking it is the
    layout the store writes and reads as plain files."""
    where = f"vectors/{name}/zarr.json"
    try:
        meta = json.loads((path / "vectors" / name / "zarr.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"{path}: {where} is missing") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise StoreError(f"{path}: cannot read {where} ({first_line(exc)})") from None
    ndim = 2 if name == "X" else 1
    try:
        shape = meta["shape"]
        grid = meta["chunk_grid"]
        chunks = grid["configuration"]["chunk_shape"]
        codecs = meta["codecs"]
        ok = (
            meta.get("zarr_format") == 3
            and meta.get("node_type") == "array"
            and _same_type(name, meta["data_type"])
            and grid.get("name") == "regular"
            and len(codecs) == 1
            and codecs[0]["name"] == "bytes"
            and codecs[0].get("configuration", {}).get("endian", "little") == "little"
            and meta["chunk_key_encoding"] == {"name": "default", "configuration": {"separator": "/"}}
            and not meta.get("storage_transformers")
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in shape + chunks)
            and len(shape) == len(chunks) == ndim
            and min(chunks) > 0
        )
    except (KeyError, TypeError, AttributeError, IndexError, ValueError):
        ok = False
    if not ok:
        raise StoreError(f"{path}: {where} does not describe the layout a FeatureStore writes (uncompressed little-endian {ARRAY_TYPES[name]}, {ndim}-D, regular chunks)")
    return shape, chunks


def check_layouts(path: Path | RemoteFolder, meta: dict) -> dict[str, tuple[int, int]]:
    """Check the store's arrays against a checked ``meta``: ``{name: (rows per chunk, length)}``.

    Shapes, ``dim``, chunk rows and the number of recorded chunk checksums
    must agree with ``meta``; only ``zarr.json`` files are read.
    """
    n, dim = meta["n_rows"], meta["dim"]
    out: dict[str, tuple[int, int]] = {}
    if meta["sparse"]:
        for name in ("indptr", "indices", "data"):
            shape, chunks = read_array_layout(path, name)
            out[name] = (chunks[0], shape[0])
        if out["indptr"][1] < (n + 1 if n else 0):
            raise StoreError(f"{path}: {META} says n_rows={n} but vectors/indptr holds offsets for {max(out['indptr'][1] - 1, 0)} rows")
        for name in ("indices", "data"):
            if out[name][1] < meta["nnz"]:
                raise StoreError(f"{path}: {META} says nnz={meta['nnz']} but vectors/{name} holds only {out[name][1]} values")
    else:
        shape, chunks = read_array_layout(path, "X")
        if shape[1] != dim:
            raise StoreError(f"{path}: {META} says dim={dim} but vectors/X has {shape[1]} columns")
        if chunks != [meta["chunk_rows"], dim]:
            raise StoreError(f"{path}: {META} says chunk_rows={meta['chunk_rows']} but vectors/X is chunked by {chunks[0]} rows")
        if shape[0] < n:
            raise StoreError(f"{path}: {META} says n_rows={n} but vectors/X holds only {shape[0]} rows")
        out["X"] = (chunks[0], shape[0])
    sums = meta.get("checksums")
    if sums is not None:
        for name, (chunk_len, _) in out.items():
            committed = {"X": n, "indptr": n + 1 if n else 0}.get(name, meta["nnz"])
            want = -(-committed // chunk_len)
            if len(sums["chunks"][name]) != want:
                raise StoreError(f"{path}: corrupt {META}: {len(sums['chunks'][name])} checksums for vectors/{name}, which has {want} committed chunk(s)")
    return out
