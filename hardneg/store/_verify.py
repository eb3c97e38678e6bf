"""Checksums of a FeatureStore's chunks and item parts, and the full check.

A chunk's checksum is the CRC-32 of its *committed prefix*: the bytes of the
rows (or values) that ``meta.json`` counts, not the whole chunk file. Zarr
pads the last chunk to full size and a writer killed before its commit may
leave uncommitted rows there; neither changes the committed prefix, so the
checksum stays valid across crashes, and an append extends it with the new
rows' bytes only (CRC-32 can be continued), which keeps appends O(batch).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._errors import StoreDamagedError



def extend_checksums(checksums: list[int], committed: int, values: np.ndarray, chunk_len: int) -> list[int]:
    """Checksums after appending ``values`` (rows along axis 0) to an array
    holding ``committed`` rows in chunks of ``chunk_len`` rows.

    ``checksums`` holds one CRC per chunk of the committed rows; the last one
    is continued with the new rows that fall into its chunk.
    """
    out = list(checksums)
    if not len(values):
        return out
    values = np.ascontiguousarray(values)
    buf = values.data.cast("B")  # .data: numpy's stubs give ndarray __buffer__ only on Python >= 3.12
    row_bytes = values[0:1].nbytes
    pos, done = committed, 0
    while done < len(values):
        c, offset = divmod(pos, chunk_len)
        take = min(chunk_len - offset, len(values) - done)
        piece = buf[done * row_bytes : (done + take) * row_bytes]
        if c < len(out):
            out[c] = zlib.crc32(piece, out[c])
        else:
            out.append(zlib.crc32(piece))
        pos += take
        done += take
    return out


def n_chunks(length: int, chunk_len: int) -> int:
    return -(-length // chunk_len)


@dataclass
class VerifyReport:
    """What :meth:`FeatureStore.verify` found.

    Parameters
    ----------
    path : Path
        The store.
    checksums : bool
        Whether the store records checksums (stores written before they were
        introduced do not; their chunks are then checked for presence, size
        and valid values only).
    n_chunks, n_parts : int
        Vector chunks and item parts checked.
    problems : list of str
        One line per damaged chunk or part, naming it; empty when all is well.
    """

    path: Path
    checksums: bool
    n_chunks: int = 0
    n_parts: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def __str__(self) -> str:
        what = f"{self.n_chunks} vector chunk(s) and {self.n_parts} item part(s)"
        if self.ok:
            if self.checksums:
                return f"OK: {what} match the checksums recorded at commit time"
            return (
                f"OK: {what} are present, readable and hold valid values "
                "(no checksums recorded: the store was written by an older hardneg)"
            )
        lines = [f"DAMAGED: {len(self.problems)} problem(s) in {self.path}"]
        lines += [f"  {p}" for p in self.problems]
        if not self.checksums:
            lines.append("  (no checksums recorded: only presence, sizes and values were checked)")
        return "\n".join(lines)


def verify_store(store) -> VerifyReport:
    """Read every committed chunk and item part of ``store`` and check it.

    Chunks: present, of the right size, their committed prefix matching the
    recorded checksum, and holding valid values (finite floats, column
    indices in range, row offsets in order). Parts: present, matching their
    checksum, readable Parquet with the item schema; their rows add up.
    """
    reader = store._reader  # hardneg.store._chunks.ChunkReader
    sums = reader.meta.get("checksums")
    report = VerifyReport(store.path, checksums=sums is not None)
    for a in reader.arrays.values():
        length = reader.committed(a.name)
        recorded = sums["chunks"][a.name] if sums is not None else None
        prev = None  # the last row offset of the previous indptr chunk: offsets never decrease
        for c in range(n_chunks(length, a.chunk_len)):
            report.n_chunks += 1
            key = a.key(c)
            rows = min(a.chunk_len, length - c * a.chunk_len)
            try:
                reader.stat(a, c)
                with (store.path / key).open("rb") as fh:
                    raw = fh.read(rows * a.row_bytes)
                if recorded is not None and zlib.crc32(raw) != recorded[c]:
                    raise StoreDamagedError(store.path, key, "does not match its checksum")
                values = np.frombuffer(raw, a.dtype)
                reader.check_values(a, c * a.chunk_len, values, key, prev=prev)
                prev = int(values[-1]) if a.name == "indptr" and values.size else None
            except StoreDamagedError as exc:
                report.problems.append(f"{exc.key} {exc.problem}")
                prev = None
            except OSError as exc:
                report.problems.append(f"{key} cannot be read ({exc.strerror or exc})")
                prev = None
    total, parts_ok = 0, True
    for name in reader.meta["parts"]:
        report.n_parts += 1
        try:
            total += store._read_part(name).num_rows
        except StoreDamagedError as exc:
            report.problems.append(f"{exc.key} {exc.problem}")
            parts_ok = False
    if parts_ok and total != len(store):
        report.problems.append(f"items/ parts hold {total} rows but the store has {len(store)} vectors")
    return report
