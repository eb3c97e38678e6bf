"""Portable model files: arrays in ``.npz`` plus JSON metadata, never pickle.

A model file is one uncompressed ``.npz`` archive holding the model's arrays
and a ``__meta__`` entry: a JSON document with the library name, the model
kind, a format version, the model's parameters and a checksum (BLAKE2b) of
every array and of the parameters.

Loading treats the file as hostile until proven otherwise, and checks before
it decompresses or allocates anything:

1. the zip directory: at most a few entries, names that are plain array names
   (no paths), no compression and no encryption (so no zip bomb: every
   declared byte must really be in the file), sizes that fit in the file;
2. the metadata: at most 1 MiB, nested at most 32 deep, a JSON object, the
   right library, kind and version;
3. each array's ``.npy`` header: a number, bool or fixed-size string dtype
   (never object: no pickle), the shape and dtype the model kind declares in
   its *schema*, and a byte count equal to the entry's declared size;
4. after reading, each array's checksum.

Every failure is a :class:`ModelFileError` with one line saying what is
wrong. Files written before checksums existed (no ``checksum`` entry in the
metadata) still load, with a logged warning: their structure and contents are
validated as strictly, but a flipped byte inside an array is caught only by
the zip CRC (or by the model's own content checks). Re-save such a file to
add checksums. The checksum guards against damage and careless edits, not
against a forger, who can recompute it: model loaders validate their values
(finite weights, consistent shapes) whatever the checksum says.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import struct
import threading
import zipfile
import zlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

import numpy as np
from numpy.lib import format as npy_format

from ._atomic import atomic_path
from .exceptions import ModelFileError  # defined there (public), re-exported here

__all__ = [
    "ArraySpec", "ModelFileError", "array_digest", "deserialize_faiss", "file_digest", "load_model", "model_kind", "save_model",
]

logger = logging.getLogger(__name__)

_LIBRARY = "hardneg"
_META = "__meta__"
_DIGEST = "blake2b-128"

# Bounds for a file that is what it claims to be; anything beyond is refused unread.
MAX_META_BYTES = 1 << 20  # the JSON metadata
MAX_META_DEPTH = 32  # nesting of the JSON metadata
MAX_ENTRIES = 64  # arrays in a file without a schema
MAX_DIRECTORY_BYTES = 1 << 20  # the zip central directory
MAX_ARRAY_BYTES = 1 << 36  # one array (64 GiB): a sanity bound; the file size is the real one

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_SAFE_KINDS = "biufcSU"  # bool, integers, floats, complex, fixed-size bytes and text
# np.savez's own keyword parameters: an array passed under one of these names is not stored
# ("allow_pickle" was taken as the flag, leaving a file that fails its checksum) or fails
_SAVEZ_KEYWORDS = frozenset({"file", "allow_pickle"})

# Errors that reading a damaged archive can raise from zipfile, zlib, struct and numpy's header parser.
_READ_ERRORS = (
    OSError, EOFError, ValueError, KeyError, IndexError, OverflowError, RuntimeError, NotImplementedError,
    zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, struct.error, UnicodeDecodeError, SyntaxError,
)


@dataclass(frozen=True)
class ArraySpec:
    """What a model kind expects of one array in its file.

    Parameters
    ----------
    kinds : str
        Allowed ``dtype.kind`` letters, e.g. ``"f"`` (floating point),
        ``"iu"`` (integers), ``"U"`` (text).
    ndim : int or tuple of int or None
        Allowed numbers of dimensions (None: any).
    optional : bool
        The array may be absent.
    """

    kinds: str = _SAFE_KINDS
    ndim: int | tuple[int, ...] | None = None
    optional: bool = False

    def allows_ndim(self, ndim: int) -> bool:
        if self.ndim is None:
            return True
        return ndim in ((self.ndim,) if isinstance(self.ndim, int) else tuple(self.ndim))


# ---------------------------------------------------------------------- digests
def array_digest(name: str, array) -> str:
    """BLAKE2b-128 of an array's name, dtype, shape and bytes (C order), in hex."""
    a = np.asarray(array)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode())
    if a.size and a.dtype.itemsize:
        # .data, not memoryview(): numpy's stubs give ndarray __buffer__ only on Python >= 3.12
        h.update(np.ascontiguousarray(a.reshape(-1)).view(np.uint8).data)
    return h.hexdigest()


def file_digest(path) -> str:
    """BLAKE2b-128 of a file's bytes, in hex (read in 16 MiB pieces)."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for piece in iter(lambda: fh.read(1 << 24), b""):
            h.update(piece)
    return h.hexdigest()


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _meta_digest(kind, version, meta) -> str:
    return hashlib.blake2b(_canonical([kind, version, meta]), digest_size=16).hexdigest()


# ---------------------------------------------------------------------- JSON
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _json_depth(text: bytes) -> int:
    """Deepest nesting of ``[``/``{`` outside strings (no recursion, linear time)."""
    bare = np.frombuffer(_JSON_STRING.sub(b'""', text), dtype=np.uint8)
    step = ((bare == ord("[")) | (bare == ord("{"))).astype(np.int8)
    step -= (bare == ord("]")) | (bare == ord("}"))
    return int(np.cumsum(step, dtype=np.int32).max()) if step.size else 0


def _parse_json(text: bytes) -> object:
    if len(text) > MAX_META_BYTES:
        raise ValueError(f"metadata is {len(text):,} bytes, more than the {MAX_META_BYTES:,} allowed")
    if _json_depth(text) > MAX_META_DEPTH:
        raise ValueError(f"metadata is nested more than {MAX_META_DEPTH} levels deep")
    try:
        return json.loads(text.decode("utf-8"))
    except RecursionError:  # the depth scan should have caught it; never let it escape
        raise ValueError("metadata is nested too deeply") from None


# ---------------------------------------------------------------------- save
def _check_name(name) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"save_model: array name {name!r} is not a plain identifier of at most 64 characters")
    if name in _SAVEZ_KEYWORDS:
        raise ValueError(f"save_model: array name {name!r} is reserved (a keyword of numpy.savez)")


def save_model(path, kind: str, version: int, arrays: dict, meta: dict) -> Path:
    """Write ``arrays`` and ``meta`` to ``path`` atomically (temp file + rename).

    The metadata records a BLAKE2b checksum of every array and of ``meta``,
    checked by :func:`load_model`.
    """
    path = Path(path)
    if not isinstance(meta, dict):
        raise TypeError(f"save_model: meta must be a dict, got {type(meta).__name__}")
    payload: dict[str, np.ndarray] = {}
    for key, value in arrays.items():
        _check_name(key)
        value = np.asarray(value)
        if value.dtype == object:
            raise TypeError(f"save_model: array {key!r} has dtype object, which would need pickle")
        if value.dtype.kind not in _SAFE_KINDS:
            raise TypeError(f"save_model: array {key!r} has dtype {value.dtype}; model files hold numbers, bools and strings")
        payload[key] = value
    # what load_model will see: JSON turns tuples into lists and keys into strings
    meta = json.loads(json.dumps(meta))
    header = {
        "library": _LIBRARY,
        "kind": kind,
        "format_version": int(version),
        "meta": meta,
        "checksum": {
            "algorithm": _DIGEST,
            "meta": _meta_digest(kind, int(version), meta),
            "arrays": {k: array_digest(k, v) for k, v in payload.items()},
        },
    }
    text = json.dumps(header).encode("utf-8")
    if len(text) > MAX_META_BYTES or _json_depth(text) > MAX_META_DEPTH:
        raise ValueError(f"save_model: metadata too large or too deeply nested to load back ({len(text):,} bytes)")
    payload[_META] = np.frombuffer(text, dtype=np.uint8)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        # names checked above; mypy matches **payload against `allow_pickle: bool` (mypy #8862)
        np.savez(fh, **payload)  # type: ignore[arg-type]
    return path


# ---------------------------------------------------------------------- load
def _first_line(exc: BaseException, limit: int = 160) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _zip_directory_size(fh, file_size: int) -> tuple[int, int]:
    """(number of entries, central directory bytes) from the end records, read
    before ``zipfile`` parses the directory (which costs time and memory per entry)."""
    tail_len = min(file_size, 22 + 65535 + 20)
    fh.seek(file_size - tail_len)
    tail = fh.read(tail_len)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        raise ValueError("not a zip archive (no end-of-directory record)")
    _, _, _, n_entries, cd_size, _, _ = struct.unpack("<4H2LH", tail[at + 4 : at + 22])
    if (n_entries == 0xFFFF or cd_size == 0xFFFFFFFF) and at >= 20 and tail[at - 20 : at - 16] == b"PK\x06\x07":
        # ZIP64: the locator points at the ZIP64 end record that holds the real counts
        (offset,) = struct.unpack("<Q", tail[at - 12 : at - 4])
        if offset + 56 > file_size:
            raise ValueError("damaged ZIP64 end record")
        fh.seek(offset)
        record = fh.read(56)
        if record[:4] != b"PK\x06\x06":
            raise ValueError("damaged ZIP64 end record")
        n_entries, cd_size = struct.unpack("<QQ", record[32:48])
    return int(n_entries), int(cd_size)


class _Archive:
    """An opened model archive whose directory has passed the checks."""

    def __init__(self, path: Path):
        self.path = path
        self.size = path.stat().st_size
        self.fh = open(path, "rb")
        try:
            n_entries, cd_size = _zip_directory_size(self.fh, self.size)
            if n_entries > MAX_ENTRIES + 1 or cd_size > MAX_DIRECTORY_BYTES:
                raise ModelFileError(
                    f"{path}: not a hardneg model file (a zip directory of {n_entries:,} entries, {cd_size:,} bytes)"
                )
            self.fh.seek(0)
            self.zf = zipfile.ZipFile(self.fh)
            self.entries = self._check_directory(self.zf.infolist())
        except BaseException:
            self.fh.close()
            raise

    def close(self):
        self.zf.close()
        self.fh.close()

    def _check_directory(self, infos) -> dict:
        path = self.path
        entries = {}
        for info in infos:
            name = info.filename
            if not name.endswith(".npy") or not _NAME.match(name[:-4]):
                raise ModelFileError(f"{path}: entry {name[:80]!r} is not an array name (paths and odd names are refused)")
            if name[:-4] in entries:
                raise ModelFileError(f"{path}: entry {name!r} appears twice")
            if info.flag_bits & 0x1:
                raise ModelFileError(f"{path}: entry {name!r} is encrypted")
            if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
                # hardneg writes arrays uncompressed: every declared byte must really be in the file
                raise ModelFileError(f"{path}: entry {name!r} is compressed; hardneg model files store arrays uncompressed")
            if info.file_size > MAX_ARRAY_BYTES or info.header_offset + 30 + len(name) + info.file_size > self.size:
                raise ModelFileError(f"{path}: entry {name!r} declares {info.file_size:,} bytes, more than the file holds")
            entries[name[:-4]] = info
        if _META not in entries:
            raise ModelFileError(f"{path}: not a hardneg model file (no metadata entry)")
        return entries

    def _open_array(self, name: str, spec: ArraySpec | None, max_bytes: int):
        """Open entry ``name`` and check its .npy header against the entry and the spec."""
        info = self.entries[name]
        fh = self.zf.open(info)
        try:
            try:
                version = npy_format.read_magic(fh)
                if version == (1, 0):
                    shape, fortran, dtype = npy_format.read_array_header_1_0(fh)
                elif version == (2, 0):
                    shape, fortran, dtype = npy_format.read_array_header_2_0(fh)
                else:
                    raise ModelFileError(f"{self.path}: array {name!r} has an unsupported .npy version {version}")
            except ModelFileError:
                raise
            except Exception as exc:  # numpy's header parser tokenizes file bytes: any error means a bad header
                raise ModelFileError(f"{self.path}: array {name!r} has a malformed .npy header ({_first_line(exc)})") from None
            if dtype.hasobject or dtype.kind not in _SAFE_KINDS or dtype.fields is not None or dtype.subdtype is not None:
                what = "object (pickled Python objects)" if dtype.hasobject else str(dtype)
                raise ModelFileError(
                    f"{self.path}: array {name!r} has dtype {what}; model files hold only numbers, bools and strings"
                )
            if spec is not None and dtype.kind not in spec.kinds:
                raise ModelFileError(f"{self.path}: array {name!r} has dtype {dtype}, expected kind {spec.kinds!r}")
            if spec is not None and not spec.allows_ndim(len(shape)):
                raise ModelFileError(f"{self.path}: array {name!r} has shape {shape}, expected {spec.ndim} dimension(s)")
            count = 1
            for n in shape:
                count *= int(n)
            nbytes = count * dtype.itemsize
            if nbytes > max_bytes:
                raise ModelFileError(f"{self.path}: array {name!r} claims {nbytes:,} bytes, more than the {max_bytes:,} allowed")
            if fh.tell() + nbytes != info.file_size:
                raise ModelFileError(
                    f"{self.path}: array {name!r} header describes {nbytes:,} bytes "
                    f"but the entry holds {info.file_size - fh.tell():,}"
                )
            return fh, shape, fortran, dtype, count
        except BaseException:
            fh.close()
            raise

    def read_array(self, name: str, spec: ArraySpec | None = None, max_bytes: int = MAX_ARRAY_BYTES) -> np.ndarray:
        fh, shape, fortran, dtype, count = self._open_array(name, spec, max_bytes)
        with fh:
            out = np.empty(count, dtype=dtype)
            if count and dtype.itemsize:
                view = out.view(np.uint8).data
                done, step = 0, 1 << 24
                while done < view.nbytes:
                    got = fh.readinto(view[done : done + step])
                    if not got:
                        raise ModelFileError(f"{self.path}: array {name!r} is truncated")
                    done += got
            if fh.read(1):  # also completes the entry, so zipfile checks its CRC-32
                raise ModelFileError(f"{self.path}: array {name!r} has trailing bytes")
        return out.reshape(shape, order="F" if fortran else "C")

    def read_header(self) -> dict:
        raw = self.read_array(_META, ArraySpec("u", 1), max_bytes=MAX_META_BYTES)
        if raw.dtype != np.uint8:
            raise ModelFileError(f"{self.path}: metadata entry has dtype {raw.dtype}, expected uint8")
        try:
            header = _parse_json(raw.tobytes())
        except (ValueError, UnicodeDecodeError) as exc:
            raise ModelFileError(f"{self.path}: unreadable metadata ({_first_line(exc)})") from None
        if not isinstance(header, dict) or header.get("library") != _LIBRARY:
            raise ModelFileError(f"{self.path}: not a hardneg model file")
        if not isinstance(header.get("meta", {}), dict):
            raise ModelFileError(f"{self.path}: metadata 'meta' is not a JSON object")
        return header


@contextlib.contextmanager
def _archive(path: Path):
    if not path.is_file():
        raise ModelFileError(f"model file {str(path)!r} does not exist")
    archive = None
    try:
        archive = _Archive(path)
        yield archive
    except ModelFileError:
        raise
    except RecursionError:
        raise ModelFileError(f"{path}: corrupt model file (nested too deeply)") from None
    except _READ_ERRORS as exc:
        raise ModelFileError(f"{path}: corrupt or not a hardneg model file ({_first_line(exc)})") from None
    finally:
        if archive is not None:
            archive.close()


def model_kind(path) -> str:
    """The kind of model a file holds (reads only its metadata)."""
    with _archive(Path(path)) as archive:
        header = archive.read_header()
    return str(header.get("kind"))


def _check_checksum(path: Path, header: dict, names) -> dict | None:
    """The array digests to verify (None for a file from before checksums); checks the meta digest."""
    checksum = header.get("checksum")
    if checksum is None:
        return None
    if not isinstance(checksum, dict) or checksum.get("algorithm") != _DIGEST:
        raise ModelFileError(f"{path}: unknown checksum format in the metadata")
    digests = checksum.get("arrays")
    if not isinstance(digests, dict) or set(digests) != set(names):
        raise ModelFileError(f"{path}: the checksums do not list the file's arrays (damaged or edited file)")
    if checksum.get("meta") != _meta_digest(header.get("kind"), header.get("format_version"), header.get("meta", {})):
        raise ModelFileError(f"{path}: the model parameters do not match their checksum (damaged or edited file)")
    return digests


def load_model(path, kind: str, supported_versions, schema: dict | None = None) -> tuple[dict, dict]:
    """Read a file written by :func:`save_model`; return ``(arrays, meta)``.

    Parameters
    ----------
    path : str or Path
    kind : str
        The model kind the caller expects.
    supported_versions : iterable of int
    schema : dict of str to ArraySpec, optional
        The arrays the kind stores. With a schema, any other entry is refused,
        required ones must be present, and each array's dtype kind and number
        of dimensions are checked from its header before its data is read.

    Raises
    ------
    ModelFileError
        For anything wrong with the file, in one line.
    """
    path = Path(path)
    with _archive(path) as archive:
        header = archive.read_header()
        if header.get("kind") != kind:
            raise ModelFileError(
                f"{path}: holds a {header.get('kind')!r} model, expected {kind!r} (hardneg.load(path) reads any model file)"
            )
        version = header.get("format_version")
        supported = tuple(supported_versions)
        if isinstance(version, bool) or version not in supported:
            raise ModelFileError(
                f"{path}: format version {version} is not supported by this hardneg (supports {sorted(supported)})"
            )
        names = [n for n in archive.entries if n != _META]
        if schema is not None:
            extra = sorted(set(names) - set(schema))
            if extra:
                raise ModelFileError(f"{path}: unexpected array(s) {', '.join(map(repr, extra[:5]))} in a {kind!r} file")
            missing = sorted(n for n, spec in schema.items() if not spec.optional and n not in names)
            if missing:
                raise ModelFileError(f"{path}: {kind!r} file lacks array(s) {', '.join(map(repr, missing))}")
        elif len(names) > MAX_ENTRIES:
            raise ModelFileError(f"{path}: {len(names)} arrays, more than the {MAX_ENTRIES} allowed")
        digests = _check_checksum(path, header, names)
        # every header first, so a lying entry is refused before any data is read
        for name in names:
            archive._open_array(name, None if schema is None else schema[name], MAX_ARRAY_BYTES)[0].close()
        arrays = {}
        for name in names:
            arrays[name] = archive.read_array(name, None if schema is None else schema[name])
            if digests is not None and array_digest(name, arrays[name]) != digests[name]:
                raise ModelFileError(f"{path}: array {name!r} does not match its checksum (damaged or edited file)")
    if digests is None:
        logger.warning("%s: written without checksums by an older hardneg; re-save it to add them", path)
    return arrays, header.get("meta", {})


# ---------------------------------------------------------------------- FAISS blobs
_FAISS_LIMIT_LOCK = threading.Lock()


@contextlib.contextmanager
def _faiss_vector_limit(faiss, nbytes: int):
    # FAISS allocates what a blob's length fields claim before reading; bound that by
    # what a genuine blob of this size (and these dimensions) can hold. The limit is
    # process-wide in FAISS, hence the lock and the restore.
    get = getattr(faiss, "get_deserialization_vector_byte_limit", None)
    if get is None:  # FAISS < 1.11 has no limit to set
        yield
        return
    with _FAISS_LIMIT_LOCK:
        old = get()
        faiss.set_deserialization_vector_byte_limit(int(min(old, max(nbytes, 1 << 16))))
        try:
            yield
        finally:
            faiss.set_deserialization_vector_byte_limit(old)


def deserialize_faiss(blob, *, binary: bool = False, vector_bytes: int = 0):
    """A FAISS index from bytes stored in a model file (or from a FAISS index
    file, given its path), or ``ValueError`` in one line.

    ``vector_bytes``: the largest array the genuine index may hold (e.g.
    ``4 * d_in * d_out`` of a projection); allocations beyond
    ``max(size of the bytes, vector_bytes)`` are refused (where FAISS supports it).
    """
    import faiss

    read: Callable[[], Any]
    if isinstance(blob, (str, Path)):
        source, size = str(blob), Path(blob).stat().st_size
        read = partial(faiss.read_index_binary if binary else faiss.read_index, source)
    else:
        array = np.asarray(blob)
        if array.dtype != np.uint8 or array.ndim != 1 or array.size == 0:
            raise ValueError(f"FAISS index bytes: expected a non-empty 1-D uint8 array, got {array.dtype} {array.shape}")
        size = array.size
        read = partial(faiss.deserialize_index_binary if binary else faiss.deserialize_index, np.ascontiguousarray(array))
    try:
        with _faiss_vector_limit(faiss, max(size, int(vector_bytes))):
            return read()
    except (RuntimeError, MemoryError, ValueError, TypeError) as exc:
        message = _first_line(exc)
        message = message.split("Error: ", 1)[-1] if "Error: " in message else message
        raise ValueError(f"corrupt FAISS index ({message})") from None
