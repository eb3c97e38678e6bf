"""Editing the item table of an existing store: tags, labels, splits.

An edit never touches the vectors. It builds the whole new item table in
memory, writes it as one new Parquet part under a temporary name, renames it
to a part name no earlier commit has used, and commits by replacing
``meta.json`` atomically with the new part list and its CRC-32 -- the same
commit point as an append. Only after that commit are the old parts removed.
So a writer killed at any point leaves the old table or the new one, never
a mix: before the commit ``meta.json`` still lists the old parts (the new
part is an uncommitted leftover, trimmed by the next writer), after it the
new part. A reader that read the old ``meta.json`` just before the commit
and only then reads the parts finds them gone; it re-reads ``meta.json``
and reads the new table (see ``FeatureStore.items``).

The edit holds the store's writer lock (open it with ``mode="a"``), so
it cannot interleave with an append or another edit.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._atomic import atomic_path
from ._items import check_label, tag_list

if TYPE_CHECKING:
    from ._feature_store import FeatureStore

logger = logging.getLogger(__name__)

__all__ = ["edit_items", "next_part_name", "rebuild_store", "relocate_images", "remove_items", "replace_items", "store_summary"]

_PART_NUMBER = re.compile(r"^part-(\d+)")


def next_part_name(parts: Sequence[str]) -> str:
    """A part name after every numbered one in ``parts`` (names are never reused:
    a reader holding an older ``meta.json`` must not find other bytes under a name it knows)."""
    numbers = [int(m.group(1)) for p in parts if (m := _PART_NUMBER.match(p))]
    return f"part-{max([len(parts) - 1, *numbers]) + 1:08d}.parquet"


def _row_index(store, ids) -> np.ndarray:
    """Row numbers of ``ids``; a ValueError names the unknown ones."""
    all_ids = store.ids().tolist()
    pos = {v: i for i, v in enumerate(all_ids)}
    ids = [str(i) for i in ids]
    missing = [i for i in ids if i not in pos]
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise ValueError(f"ids: not in {store.path}: {', '.join(repr(m) for m in missing[:5])}{more}")
    return np.array([pos[i] for i in ids], dtype=np.int64)


def edit_items(
    store,
    *,
    add_tags: Mapping[str, Sequence[str]] | None = None,
    remove_tags: Mapping[str, Sequence[str]] | None = None,
    labels: Mapping[str, int | None] | None = None,
    split: Mapping[str, str | None] | None = None,
) -> int:
    """Change tags, labels or splits of items (by id) and commit atomically.

    Parameters
    ----------
    store : FeatureStore
        Open for writing (``mode="a"``).
    add_tags, remove_tags : mapping id -> list of tags, optional
        Tags to add to (kept once, in order) or remove from each item.
    labels : mapping id -> int or None, optional
        New single label per item (``None`` or ``-1``: unlabeled). The
        multi-label column is cleared for these items.
    split : mapping id -> str or None, optional
        New split name per item (``None``: no split).

    Returns
    -------
    int
        Number of items whose row changed. Nothing is written when no row
        changes.
    """
    store._require_writable()
    table = store.items
    n = table.num_rows
    tags = table.column("tags").to_pylist()
    label = table.column("label").to_pylist()
    multi = table.column("labels").to_pylist()
    splits = table.column("split").to_pylist()
    changed = np.zeros(n, dtype=bool)

    def rows_of(mapping, name):
        if mapping is None:
            return []
        if not isinstance(mapping, Mapping):
            raise TypeError(f"{name}: expected a mapping from item id to values, got {type(mapping).__name__}")
        keys = list(mapping)
        return list(zip(_row_index(store, keys).tolist(), (mapping[k] for k in keys)))

    for r, new in rows_of(add_tags, "add_tags"):
        old = tags[r] or []
        merged = list(dict.fromkeys(old + tag_list(new, r)))
        if merged != old:
            tags[r], changed[r] = merged, True
    for r, drop in rows_of(remove_tags, "remove_tags"):
        old = tags[r] or []
        gone = set(tag_list(drop, r, check=False))  # a malformed tag already stored can still be removed
        kept = [t for t in old if t not in gone]
        if kept != old:
            tags[r], changed[r] = kept, True
    for r, value in rows_of(labels, "labels"):
        v = None if value is None else check_label(value, "labels", r, multi=False)
        v = None if v is not None and v < 0 else v
        if v != label[r] or multi[r]:
            label[r], multi[r], changed[r] = v, None, True
    for r, value in rows_of(split, "split"):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"split: row {r} holds {type(value).__name__} {value!r}; split names are strings")
        value = value or None
        if value != splits[r]:
            splits[r], changed[r] = value, True
    if not changed.any():
        return 0
    new_table = pa.table(
        {
            "id": table.column("id"),
            "path": table.column("path"),
            "tags": pa.array(tags, pa.list_(pa.string())),
            "label": pa.array(label, pa.int64()),
            "labels": pa.array(multi, pa.list_(pa.int64())),
            "split": pa.array(splits, pa.string()),
        },
        schema=table.schema,
    )
    replace_items(store, new_table)
    return int(changed.sum())


def replace_items(store, table: pa.Table) -> None:
    """Commit ``table`` as the store's whole item table (same ids, same order)."""
    store._require_writable()
    old = store.items
    if table.schema != old.schema:
        raise ValueError(f"table: expected the item schema {old.schema.names}, got {table.schema.names}")
    if table.num_rows != old.num_rows or not table.column("id").equals(old.column("id")):
        raise ValueError("table: an edit keeps every item, with the same ids in the same order")
    meta = dict(store._meta)
    part_name = next_part_name(meta["parts"])
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    part = sink.getvalue()
    with atomic_path(store.path / "items" / part_name) as tmp:
        tmp.write_bytes(memoryview(part))
    old_parts = list(meta["parts"])
    meta["parts"] = [part_name] if table.num_rows else []
    sums = meta.get("checksums")
    if sums is not None:
        meta["checksums"] = {**sums, "parts": {part_name: zlib.crc32(memoryview(part))} if table.num_rows else {}}
    store._commit_meta(meta)  # the commit point: before it the old table, after it the new one
    store._items_cache = table.combine_chunks()
    for name in old_parts:
        if name not in meta["parts"]:
            try:
                (store.path / "items" / name).unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:  # left for the next writer to trim
                logger.warning("could not remove the replaced item part %s: %s", name, exc)
    logger.info("%s: item table rewritten as %s (%d rows)", store.path, part_name, table.num_rows)


def store_summary(store: FeatureStore, *, top: int = 12) -> str:
    """One line saying what a store holds: rows, tags, labels, splits (with counts).

    Used by errors that found no items, so the user sees what to ask for.

    Parameters
    ----------
    store : FeatureStore
        An open store.
    top : int
        Most tags (the most frequent) and labels listed.

    Returns
    -------
    str
        ``"<n> rows; tags: ...; labels: ...; splits: ..."``, each part with counts (or "no tags", ...).
    """
    items = store.items
    parts = [f"{len(store):,} rows"]
    flat = pc.list_flatten(items.column("tags")).to_pylist() if len(store) else []
    if flat:
        vals, counts = np.unique(np.array(flat, dtype=object), return_counts=True)
        order = np.argsort(-counts, kind="stable")[:top]
        more = f", ... ({len(vals)} tags)" if len(vals) > top else ""
        parts.append("tags: " + ", ".join(f"{vals[i]} ({counts[i]})" for i in order) + more)
    else:
        parts.append("no tags")
    lab = store.labels()
    if (lab >= 0).any():
        names = store.attrs.get("class_names") or []
        vals, counts = np.unique(lab[lab >= 0], return_counts=True)
        shown = [f"{names[v] if 0 <= v < len(names) else v} ({c})" for v, c in zip(vals[:top].tolist(), counts[:top].tolist())]
        more = f", ... ({len(vals)} labels)" if len(vals) > top else ""
        parts.append("labels: " + ", ".join(shown) + more)
    else:
        parts.append("no labels")
    sp = [s for s in items.column("split").to_pylist() if s is not None]
    if sp:
        vals, counts = np.unique(np.array(sp, dtype=object), return_counts=True)
        parts.append("splits: " + ", ".join(f"{v} ({c})" for v, c in zip(vals, counts)))
    else:
        parts.append("no splits")
    return "; ".join(parts)



# ---------------------------------------------------------------------------- removing and relocating items


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``).

    False where the system or the filesystem lacks it; the caller then
    falls back to two renames.
    """
    import ctypes
    import errno

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _swap_dir(path: Path) -> Path:
    """A free sibling name for a store being rebuilt beside ``path`` (hidden, removed on success)."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex}.swap")


def _clear_leftovers(path: Path) -> None:
    """Remove what a killed rebuild of ``path`` left beside it (the caller holds the writer lock,
    so no rebuild of this store is running)."""
    from ._feature_store import _remove_replaced

    for stale in path.parent.glob(f".{path.name}.*"):
        # the swap folder, or FeatureStore.create's temporary folder beside it
        if re.fullmatch(rf"\.{re.escape(path.name)}\.[0-9a-f]{{32}}\.swap(\..+\.creating)?", stale.name):
            logger.info("removing %s, left by an interrupted rebuild of %s", stale, path)
            _remove_replaced(stale)


def swap_in(tmp: Path, path: Path) -> Path:
    """Put the folder ``tmp`` at ``path`` (which exists) in one atomic exchange; returns where the
    old folder now is (to remove). Where the system lacks the exchange, two renames: a kill
    between them leaves the old store under a ``.swap`` name beside an empty ``path``."""
    _fsync_dir(tmp)
    if _exchange(tmp, path):
        _fsync_dir(path.parent)
        return tmp
    trash = _swap_dir(path)
    os.rename(path, trash)
    try:
        os.rename(tmp, path)
    except BaseException:
        os.rename(trash, path)
        raise
    return trash


def rebuild_store(path, keep: np.ndarray, *, block_rows: int | None = None, progress=None) -> int:
    """Rewrite the store at ``path`` with only the rows where ``keep`` is True.

    The new store is built beside the old one (vectors copied block by
    block, the item table, attrs and codebook carried over) while the old
    store's writer lock is held, then swapped in with one atomic exchange
    of the two folders (``renameat2``; two renames where the system lacks
    it). A process killed at any point leaves the old store or the new one
    at ``path``; the half-built or replaced copy beside it is a hidden
    ``.NAME.<hex>.swap`` folder, removed by the next rebuild. ``progress``
    is called with the number of rows read after each block. Returns the
    number of rows removed.
    """
    from ._feature_store import FeatureStore, _remove_replaced, local_store_path

    path = local_store_path(path)
    with FeatureStore.open(path, mode="a") as store:
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (len(store),):
            raise ValueError(f"keep: expected {len(store)} booleans (one per row of {path}), got shape {keep.shape}")
        n_removed = int((~keep).sum())
        if n_removed == 0:
            return 0
        _clear_leftovers(path)
        table = store.items.filter(pa.array(keep))
        tmp = _swap_dir(path)
        try:
            with FeatureStore.create(tmp, store.dim, sparse=store.is_sparse, chunk_rows=store.chunk_rows, attrs=store.attrs) as new:
                kept_ids = table.column("id").to_pylist()
                # ~64 MiB blocks: each append is one commit (fsyncs), so few large ones
                rows = block_rows or store.chunk_rows * max(1, (64 << 20) // (4 * store.dim * store.chunk_rows))
                for lo, block in store.iter_chunks(rows):
                    mask = keep[lo : lo + block.shape[0]]
                    if mask.any():
                        done = len(new)
                        new.append(block[mask], ids=kept_ids[done : done + int(mask.sum())])
                    if progress is not None:
                        progress(block.shape[0])
                if table.num_rows:
                    replace_items(new, table)  # tags, labels, splits and paths exactly as they were
                codebook = path / "codebook.npz"
                if codebook.is_file():
                    with atomic_path(tmp / codebook.name) as part:
                        part.write_bytes(codebook.read_bytes())
            tmp = swap_in(tmp, path)
        except BaseException:
            _remove_replaced(tmp)
            raise
    _remove_replaced(tmp)  # now the old store
    logger.info("%s: %d rows removed, %d kept", path, n_removed, table.num_rows)
    return n_removed


def remove_items(path: str | os.PathLike, ids: Iterable[str]) -> int:
    """Remove the items ``ids`` (and their vectors) from the store at ``path``; returns how many.

    Crash-safe: the store is rebuilt beside and swapped in (:func:`rebuild_store`).
    Unknown ids are refused, naming them, before anything is written.

    Parameters
    ----------
    path : str or path-like
        The store folder.
    ids : iterable of str
        Item ids to remove.

    Returns
    -------
    int
        The number of items removed.

    Raises
    ------
    ValueError
        If an id is not in the store (nothing is written).
    """
    from ._feature_store import FeatureStore

    ids = [str(i) for i in ids]
    store = FeatureStore.open(path)
    rows = _row_index(store, ids)
    keep = np.ones(len(store), dtype=bool)
    keep[rows] = False
    return rebuild_store(path, keep)


def relocate_images(store: FeatureStore, old: str | os.PathLike, new: str | os.PathLike) -> int:
    """Point the image paths under folder ``old`` at the same files under ``new`` (images moved).

    ``store`` is open for writing. ``old`` and ``new`` are folders as seen
    from the current directory; a path is rewritten when the file it names
    (see :func:`hardneg.features._images.resolve_stored_path`) lies under
    ``old``. Paths are stored as before: relative to the store when the store
    records them so, else absolute. Commits atomically, like a tag edit.

    Parameters
    ----------
    store : FeatureStore
        A store open for writing.
    old, new : str or path-like
        The images' old and new folders.

    Returns
    -------
    int
        The number of paths changed.

    Raises
    ------
    ValueError
        If ``new`` is not a folder, no path lies under ``old``, or none of the new files exists (a mistyped ``new``).
    """
    from ..features._images import resolve_stored_path

    store._require_writable()
    old_dir, new_dir = os.path.abspath(old), os.path.abspath(new)
    if not os.path.isdir(new_dir):
        raise ValueError(f"--to {new}: no such folder")
    table = store.items
    paths = table.column("path").to_pylist()
    relative = store.attrs.get("image_paths") == "relative-to-store"
    base = os.path.abspath(store.path)  # type: ignore[arg-type]  # writable, hence local (_require_writable): a Path
    changed, found = 0, 0
    out = list(paths)
    for r, p in enumerate(paths):
        where = resolve_stored_path(store, p)
        if where is None:
            continue
        where = os.path.abspath(where)
        try:
            inside = os.path.commonpath([where, old_dir]) == old_dir
        except ValueError:  # another drive
            inside = False
        if not inside:
            continue
        moved = os.path.join(new_dir, os.path.relpath(where, old_dir))
        found += os.path.exists(moved)
        out[r] = os.path.relpath(moved, base) if relative else moved
        changed += out[r] != p
    if not changed:
        raise ValueError(f"--from {old}: no image path of {store.path} lies under {old_dir}")
    if not found:
        raise ValueError(f"--to {new}: none of the {changed} images from {old} is there; check the folder")
    new_table = table.set_column(table.schema.get_field_index("path"), "path", pa.array(out, pa.string()))
    replace_items(store, new_table)
    if found < changed:
        logger.warning("%s: %d of %d relocated images are not under %s either", store.path, changed - found, changed, new_dir)
    return changed
