"""The item table's schema, and the checks for the per-row item columns given to :meth:`FeatureStore.append`.

A value that would be stored as something else than what was meant is
refused: a string where one entry per row is expected (it would be read as
one character per row), a non-integral or boolean label, a tag that is not a
string, or a tag that would not read back as itself (empty, holding ``;`` or a
control character).
"""

from __future__ import annotations

import math
import os
import numbers
import unicodedata
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


ITEM_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("path", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("label", pa.int64()),
        ("labels", pa.list_(pa.int64())),
        ("split", pa.string()),
    ]
)


def rows_with_any_tag(tags_column: pa.Array | pa.ChunkedArray, tags) -> np.ndarray:
    """Boolean mask over the rows of a ``list<string>`` column: True where a row carries any of ``tags``.

    One ``is_in`` over every tag of every row (no Python loop per row); a null tag matches nothing.
    """
    col = tags_column.combine_chunks() if isinstance(tags_column, pa.ChunkedArray) else tags_column
    hit = pc.is_in(pc.list_flatten(col), value_set=pa.array([str(t) for t in tags], pa.string())).fill_null(False)
    mask = np.zeros(len(col), dtype=bool)
    mask[pc.list_parent_indices(col).to_numpy()[hit.to_numpy(zero_copy_only=False)]] = True
    return mask


def per_row(values, n: int, name: str) -> list:
    """``values`` as a list of ``n`` entries, one per row (a lone string is refused)."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name}: expected one entry per row, got the string {values!r}"[:160] + f"; pass a list of {n} entries")
    try:
        values = list(values)
    except TypeError:
        raise TypeError(f"{name}: expected a sequence with one entry per row, got {type(values).__name__}") from None
    if len(values) != n:
        raise ValueError(f"{name}: has {len(values)} entries for {n} rows")
    return values


def check_label(v, name: str, row: int, *, multi: bool) -> int:
    """One class id: an integer (or an integral float) >= 0, or -1 (unlabeled) unless ``multi``."""
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name}: row {row} holds the boolean {v!r}; labels are integer class ids")
    if isinstance(v, numbers.Integral):
        value = int(v)
    elif isinstance(v, numbers.Real):
        f = float(v)
        if not (math.isfinite(f) and f.is_integer()):
            raise ValueError(f"{name}: row {row} holds {v!r}, which is not an integer class id")
        value = int(f)
    else:
        raise TypeError(f"{name}: row {row} holds {type(v).__name__} {v!r}; labels are integer class ids"[:200])
    lowest = 0 if multi else -1
    if value < lowest or value >= 2**63:
        hint = "class ids in a list of labels are >= 0" if multi else "class ids are >= 0; -1 or None means unlabeled"
        raise ValueError(f"{name}: row {row} holds {value}; {hint}")
    return value


def control_character(text: str) -> str | None:
    """The first control character or line break in ``text`` (None if there is none)."""
    return next((c for c in text if unicodedata.category(c) in ("Cc", "Zl", "Zp")), None)


def id_problem(item_id: str, *, as_path: bool = False) -> str | None:
    """Why ``item_id`` cannot be an id, or None: a control character or line break (it would print
    raw to a terminal or break a CSV line); with ``as_path`` (ids read from a user's file, which
    also name images under a root), a leading ``/``, a backslash, or an empty, ``.`` or ``..`` part."""
    bad = control_character(item_id)
    if bad is not None:
        return f"contains the control character {bad!r}"
    if as_path:
        if item_id.startswith("/") or "\\" in item_id:
            return "is an absolute path or holds a backslash; ids are names, or relative paths with '/'"
        if any(part in ("", ".", "..") for part in item_id.split("/")):
            return "has an empty, '.' or '..' path part; ids are names, or relative paths with '/'"
    return None


def check_tag(tag: str, row: int) -> str:
    """A tag that reads back as itself: not empty, no ``;`` (the separator of tags in CSV files and
    ``--tags`` options), no control character or line break (one tag per line in listings and CSVs)."""
    if not tag:
        raise ValueError(f"tags: row {row} holds an empty tag ''; a tag needs at least one character")
    bad = next((c for c in tag if c == ";" or unicodedata.category(c) in ("Cc", "Zl", "Zp")), None)
    if bad is not None:
        what = "';', the separator of tags in CSV files" if bad == ";" else f"the control character {bad!r}"
        raise ValueError(f"tags: row {row} holds the tag {tag[:80]!r}, which contains {what}; remove it from the tag")
    return tag


def tag_list(v, row: int, *, check: bool = True) -> list[str]:
    """One row's tags: None, a tag string, or a list of tag strings (integers become strings).

    ``check``: refuse tags that would not read back as themselves (:func:`check_tag`); off only
    for tags being removed, so a store that holds such a tag can still be cleaned.
    """
    if v is None:
        return []
    if isinstance(v, str):
        return [check_tag(v, row) if check else v]  # one tag for this row
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
        return [str(v)]
    if isinstance(v, (list, tuple, set, frozenset, np.ndarray, pa.Array)):
        out = []
        for t in (v.tolist() if isinstance(v, np.ndarray) else v.to_pylist() if isinstance(v, pa.Array) else v):
            if isinstance(t, str):
                out.append(check_tag(t, row) if check else t)
            elif isinstance(t, numbers.Integral) and not isinstance(t, (bool, np.bool_)):
                out.append(str(t))
            else:
                raise TypeError(f"tags: row {row} holds {type(t).__name__} {t!r} in its tag list; tags are strings"[:200])
        return out
    raise TypeError(f"tags: row {row} holds {type(v).__name__} {v!r}; expected a tag string or a list of tags"[:200])


def _inside(path: str, root: str) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def image_path(value: str, base: str | Path, allow_outside: bool, where: str) -> str:
    """The absolute image path of ``value`` (relative to the folder ``base``); outside ``base``
    (after links) refused unless ``allow_outside``: a path column must not reach the user's
    private files (``../.ssh/id_rsa``) without being told so. ``where`` names the row in errors."""
    full = os.path.normpath(os.path.join(os.path.abspath(base), os.path.expanduser(value)))
    if not allow_outside and not _inside(full, str(base)):
        raise ValueError(f"{where}: the image path {value[:120]!r} lies outside {os.path.abspath(base)}; image paths stay "
                         "inside the folder they are relative to (--image-root, else the file's folder) unless you "
                         "pass --allow-outside-root (allow_outside_root=True)")
    return full


def resolve_stored_path(store, path: str | None) -> str | None:
    """The file of an image path recorded in ``store``, from any working directory.

    Stores made since ``attrs["image_paths"] == "relative-to-store"`` record
    paths relative to the store folder; absolute paths stay as they are;
    older stores recorded the paths as given at extraction, relative to the
    folder it ran in (tried as is, then relative to the store's parent).
    """
    if path is None:
        return None
    p = Path(path)
    if p.is_absolute():
        return str(p)
    if store.attrs.get("image_paths") == "relative-to-store":
        return os.path.normpath(os.path.join(os.path.abspath(store.path), p))
    if p.exists():
        return str(p)
    guess = Path(store.path).parent / p
    return str(guess) if guess.exists() else str(p)


def make_items(n: int, start: int, ids, paths, tags, labels, split, *, existing: Callable[[list[str]], bool]) -> pa.Table:
    """The item table of ``n`` rows appended at row ``start`` (see :meth:`FeatureStore.append`), checked;
    ``existing(ids)`` says whether any of ``ids`` is already in the store."""
    if ids is None:
        ids = [str(start + i) for i in range(n)]
    else:
        ids = per_row(ids, n, "ids")
        for i, v in enumerate(ids):
            if v is None or isinstance(v, bytes):
                raise TypeError(f"ids: row {i} holds {v!r}; ids are strings")
        ids = [str(i) for i in ids]
        for i, v in enumerate(ids):
            bad = control_character(v)
            if bad is not None:
                raise ValueError(f"ids: row {i} holds the id {v[:80]!r}, which contains the control character {bad!r}")
        if len(set(ids)) != n:
            raise ValueError("ids: contains duplicates within the batch")
        if existing(ids):
            raise ValueError("ids: some ids already exist in the store")
    if paths is not None:
        paths = [None if p is None else str(p) for p in per_row(paths, n, "paths")]
    if tags is not None:
        if isinstance(tags, (str, bytes)):
            raise TypeError(
                f"tags: expected one entry per row (a tag or a list of tags), got the string {tags!r}"[:160]
                + "; to give every row one tag, pass [[tag]] * n_rows"
            )
        tags = [tag_list(v, i) for i, v in enumerate(per_row(tags, n, "tags"))]
    label: list[int | None] | None = None
    multi: list[list[int]] | None = None
    if labels is not None:
        labels = per_row(labels, n, "labels")
        if any(isinstance(v, (list, tuple, np.ndarray)) for v in labels):
            multi = []
            for i, v in enumerate(labels):
                if v is None:
                    multi.append([])
                elif isinstance(v, (list, tuple, np.ndarray)):
                    multi.append([check_label(t, "labels", i, multi=True) for t in v])
                else:
                    value = check_label(v, "labels", i, multi=False)
                    multi.append([] if value < 0 else [value])
            label = [v[0] if v else None for v in multi]
        else:
            label = [None if v is None else check_label(v, "labels", i, multi=False) for i, v in enumerate(labels)]
            label = [None if v is None or v < 0 else v for v in label]
    if isinstance(split, str):
        split = [split] * n
    elif split is not None:
        split = [None if s is None else str(s) for s in per_row(split, n, "split")]
    cols = {
        "id": ids,
        "path": paths if paths is not None else [None] * n,
        "tags": tags if tags is not None else [[] for _ in range(n)],
        "label": label if label is not None else [None] * n,
        "labels": multi if multi is not None else [None] * n,
        "split": split if split is not None else [None] * n,
    }
    return pa.table(cols, schema=ITEM_SCHEMA)
