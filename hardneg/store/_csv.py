"""The id CSV files (``--ids``, ``--tags``, ``--labels``, ``--from-csv``): read in one place, by one set of rules.

- UTF-8 text (a byte-order mark is skipped); blank rows are skipped. There are no
  comments: an id may start with ``#`` (CSV has no comment syntax, and a skipped id
  would silently shift or drop a row).
- A first row whose first cell is ``id`` is a header, unless the caller knows it is an
  id (an ``--ids`` file with exactly one id per embedding row; a store holding the id).
- A bad file is one ``ValueError`` line naming the file and the line: not UTF-8, a field
  longer than Python's CSV limit (128 KiB), a NUL byte.
"""

from __future__ import annotations

import csv
from pathlib import Path

__all__ = ["read_csv_rows", "starts_with_header"]


def read_csv_rows(path, what: str) -> list[tuple[int, list[str]]]:
    """``(line number, cells)`` of each non-blank row of the CSV file ``path``; ``what`` names it in errors."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{what} {path}: is a folder, not a CSV file")
    if not p.is_file():
        raise ValueError(f"{what} {path}: no such file")
    rows: list[tuple[int, list[str]]] = []
    with open(p, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        try:
            for row in reader:
                if row and any(c.strip() for c in row):
                    rows.append((reader.line_num, row))
        except UnicodeDecodeError:
            raise ValueError(f"{what} {path}: not a UTF-8 text file (near line {reader.line_num + 1})") from None
        except csv.Error as exc:
            line = reader.line_num
            if "field limit" in str(exc):
                raise ValueError(f"{what} {path}: line {line} has a field longer than {csv.field_size_limit():,} "
                                 "characters; ids, tags and labels are short texts (is this the right file?)") from None
            raise ValueError(f"{what} {path}: line {line}: not readable as CSV ({exc})") from None
    return rows


def starts_with_header(rows: list[tuple[int, list[str]]]) -> bool:
    """Whether the first row looks like a header (its first cell is ``id``)."""
    return bool(rows) and rows[0][1][0].strip().lower() == "id"
