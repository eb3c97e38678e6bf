"""Removing items from a store and relocating its images; the item-table edits.

:func:`remove_items` / :func:`rebuild_store` rewrite a whole store beside the
old one and swap it in (see :func:`rebuild_store`); :func:`relocate_images`
rewrites the image paths of the item table. Edits of tags, labels and
splits (:func:`edit_items`, :func:`replace_items`, :func:`store_summary`)
live in ``hardneg.store._item_table``, below ``FeatureStore``, and
:func:`next_part_name` in ``hardneg.store._writer``; they are re-exported
here, and the commit protocol is described there.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa

from .._atomic import atomic_path
from ..exceptions import StoreDamagedError
from ._feature_store import FeatureStore
from ._folder import check_replaceable, clear_stale_builds, local_store_path, remove_replaced, swap_dir, swap_in
from ._item_table import _row_index, edit_items, replace_items, store_summary
from ._writer import next_part_name

logger = logging.getLogger(__name__)

__all__ = ["edit_items", "next_part_name", "rebuild_store", "relocate_images", "remove_items", "replace_items", "set_image_paths",
           "store_summary"]


# ---------------------------------------------------------------------------- removing and relocating items


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
    path = local_store_path(path)
    with FeatureStore.open(path, mode="a") as store:
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (len(store),):
            raise ValueError(f"keep: expected {len(store)} booleans (one per row of {path}), got shape {keep.shape}")
        n_removed = int((~keep).sum())
        if n_removed == 0:
            return 0
        check_replaceable(path, "rewrite")  # the old copy is deleted after the swap: never with the user's files in it
        # Reads check only what is cheap; a rewrite gives every copied chunk a fresh checksum, so damage it
        # copied would pass `store verify` for good. Check every chunk and part first (issue 39).
        report = store.verify()
        if not report.ok:
            more = f" and {len(report.problems) - 1} more" if len(report.problems) > 1 else ""
            raise StoreDamagedError(str(path), report.problems[0].split(" ", 1)[0],
                                    f"is damaged{more}; refusing to rewrite the store, which would cover the damage "
                                    "with fresh checksums")
        clear_stale_builds(path)
        table = store.items.filter(pa.array(keep))
        tmp = swap_dir(path)
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
                tmp = swap_in(tmp, path)  # the new store's lock held until it is in place
        except BaseException:
            remove_replaced(tmp)
            raise
    remove_replaced(tmp)  # now the old store
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
    (see :func:`hardneg.store._items.resolve_stored_path`) lies under
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
    from ._items import resolve_stored_path

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


def set_image_paths(store: FeatureStore, root: str | os.PathLike, *, allow_outside: bool = False) -> int:
    """Set every item's image path to ``root/<id>`` (ids relative to ``root``): the images of a store
    of imported embeddings. Ids that lead outside ``root`` (``..``, links) are refused unless
    ``allow_outside``. Stored as :func:`relocate_images` stores paths. Returns how many changed.

    Raises
    ------
    ValueError
        If ``root`` is not a folder, an id leads outside it, or no ``root/<id>`` exists (a mistyped root).
    """
    from ._items import image_path

    store._require_writable()
    if not os.path.isdir(root):
        raise ValueError(f"--image-root {root}: no such folder")
    table = store.items
    ids = table.column("id").to_pylist()
    full = [image_path(i, Path(root), allow_outside, f"id {i!r} under --image-root {root}") for i in ids]
    if not any(os.path.exists(p) for p in full):
        raise ValueError(f"--image-root {root}: none of the {len(ids):,} items' images is there (ROOT/<id>); check the folder")
    relative = store.attrs.get("image_paths") == "relative-to-store"
    base = os.path.abspath(store.path)  # type: ignore[arg-type]  # writable, hence local
    out = [os.path.relpath(p, base) if relative else p for p in full]
    old = table.column("path").to_pylist()
    changed = sum(a != b for a, b in zip(old, out))
    replace_items(store, table.set_column(table.schema.get_field_index("path"), "path", pa.array(out, pa.string())))
    return changed
