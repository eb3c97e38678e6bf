"""Reader and writer for the IDX format of MNIST and Fashion-MNIST.

An IDX file is a 4-byte magic number ``0x0000TTNN`` — two zero bytes, a
type code ``TT`` and the number of dimensions ``NN`` — then ``NN``
big-endian uint32 sizes, then the values in C order, big-endian. MNIST
images are ``0x00000803`` (uint8, 3-D) and labels ``0x00000801`` (uint8,
1-D). Files may be gzip-compressed (``.gz``).
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import numpy as np

__all__ = ["read_idx", "write_idx"]

_TYPES: dict[int, np.dtype] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_CODES = {dt.newbyteorder("=") if dt.itemsize > 1 else dt: code for code, dt in _TYPES.items()}


def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as fh:
        head = fh.read(2)
    try:
        if head == b"\x1f\x8b":
            with gzip.open(path, "rb") as fh:
                return fh.read()
        return path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"{path}: corrupt or truncated gzip file ({exc})") from None


def read_idx(path: str | os.PathLike, *, expected_ndim: int | None = None, expected_type: int | None = 0x08) -> np.ndarray:
    """Read one IDX file (plain or gzip-compressed) into a NumPy array.

    Parameters
    ----------
    path : str or Path
    expected_ndim : int, optional
        Required number of dimensions (3 for images, 1 for labels).
    expected_type : int or None
        Required type code (``0x08`` = uint8, the MNIST type); ``None``
        accepts any IDX type.

    Returns
    -------
    ndarray of shape given by the header, native byte order.

    Raises
    ------
    ValueError
        Bad magic number, unexpected type or rank, or a data section whose
        size does not match the header (truncated or padded file).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from hardneg.datasets import read_idx, write_idx
    >>> path = os.path.join(tempfile.mkdtemp(), "labels-idx1-ubyte.gz")
    >>> write_idx(path, np.array([3, 1, 4], dtype=np.uint8))
    >>> read_idx(path, expected_ndim=1).tolist()
    [3, 1, 4]
    """
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < 4:
        raise ValueError(f"{path}: not an IDX file (only {len(data)} bytes)")
    magic = int.from_bytes(data[:4], "big")
    zero, type_code, ndim = magic >> 16, (magic >> 8) & 0xFF, magic & 0xFF
    if zero != 0 or type_code not in _TYPES or ndim == 0:
        raise ValueError(f"{path}: bad IDX magic number 0x{magic:08X} (expected 0x000008NN, e.g. 0x00000803 for images)")
    if expected_type is not None and type_code != expected_type:
        raise ValueError(f"{path}: IDX type code 0x{type_code:02X}, expected 0x{expected_type:02X} (magic 0x{magic:08X})")
    if expected_ndim is not None and ndim != expected_ndim:
        raise ValueError(
            f"{path}: IDX file has {ndim} dimension(s), expected {expected_ndim} "
            f"(magic 0x{magic:08X}; images are 0x00000803, labels 0x00000801)"
        )
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{path}: truncated IDX header ({len(data)} bytes, need {header})")
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = _TYPES[type_code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    got = len(data) - header
    if got != expected:
        what = "truncated" if got < expected else "has trailing bytes"
        raise ValueError(f"{path}: IDX file {what}: header says shape {shape} ({expected} data bytes) but found {got}")
    arr = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return arr.astype(dtype.newbyteorder("="), copy=False) if dtype.itemsize > 1 else arr


def write_idx(path: str | os.PathLike, array: np.ndarray, *, compress: bool | None = None) -> None:
    """Write ``array`` as an IDX file; gzip it when ``path`` ends in ``.gz``.

    Supported dtypes: uint8, int8, int16, int32, float32, float64.

    Parameters
    ----------
    path : str or path-like
        The file to write.
    array : ndarray
        The data, of a supported dtype.
    compress : bool, optional
        Gzip the file; default when ``path`` ends in ``.gz``.

    Raises
    ------
    TypeError
        If IDX cannot store the array's dtype.
    """
    array = np.ascontiguousarray(array)
    key = array.dtype.newbyteorder("=") if array.dtype.itemsize > 1 else array.dtype
    if key not in _CODES:
        raise TypeError(f"array: IDX cannot store dtype {array.dtype}; use uint8, int8, int16, int32, float32 or float64")
    if array.ndim == 0 or array.ndim > 255:
        raise ValueError(f"array: IDX needs 1 to 255 dimensions, got shape {array.shape}")
    code = _CODES[key]
    header = bytes([0, 0, code, array.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
    payload = header + array.astype(_TYPES[code], copy=False).tobytes()
    path = Path(path)
    if compress is None:
        compress = path.suffix == ".gz"
    tmp = path.with_name(path.name + ".tmp")
    if compress:
        with gzip.open(tmp, "wb") as fh:
            fh.write(payload)
    else:
        tmp.write_bytes(payload)
    os.replace(tmp, path)
