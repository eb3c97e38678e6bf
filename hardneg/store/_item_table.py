"""Editing the item table of an open store: tags, labels, splits.

An edit never touches the vectors. It builds the whole new item table in
memory, writes it as one new Parquet part under a temporary name, renames it
to a part name no earlier commit has used, and commits by replacing
``meta.json`` atomically with the new part list, its CRC-32 and the new
table's item summary (:func:`summarize_items`) -- the same
commit point as an append. Only after that commit are the old parts removed.
So a writer killed at any point leaves the old table or the new one, never
a mix: before the commit ``meta.json`` still lists the old parts (the new
part is an uncommitted leftover, trimmed by the next writer), after it the
new part. A reader that read the old ``meta.json`` just before the commit
and only then reads the parts finds them gone; it re-reads ``meta.json``
and reads the new table (see ``FeatureStore.items``).

The edit holds the store's writer lock (open it with ``mode="a"``), so
it cannot interleave with an append or another edit.

These functions take an open store and never open one: they read its item
table and write through its :class:`~hardneg.store._writer.StoreWriter` (the
new part, the commit), so ``_feature_store`` imports this module and this
module imports no ``FeatureStore``; :mod:`hardneg.store._edit` (which opens
stores by path: removing items, relocating images) re-exports them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._items import check_label, tag_list
from ._summary import SUMMARY, current_summary, make_summary, top_counts
from ._writer import next_part_name

if TYPE_CHECKING:
    from ._feature_store import FeatureStore

logger = logging.getLogger(__name__)

__all__ = ["edit_items", "next_part_name", "replace_items", "store_summary", "summarize_items"]  # next_part_name: from _writer

def summarize_items(table: pa.Table, parts: Sequence[str], *, cap: bool = True) -> dict:
    """Count the items of ``table`` per split, label and tag: the ``meta.json`` item summary.

    Parameters
    ----------
    table : pyarrow.Table
        An item table (the whole table, or one appended part).
    parts : sequence of str
        The part names the summary covers.
    cap : bool
        As in :func:`hardneg.store._summary.make_summary` (False: every count kept).

    Returns
    -------
    dict
        See :mod:`hardneg.store._summary`; splits in order of first appearance
        (as ``value_counts`` gives them), null included.
    """
    # value_counts and list_flatten only: compute calls with Python scalars (fill_null(x, False))
    # import pandas (~0.5 s), which `hardneg store info` on an older store would pay

    def pairs(counts) -> list:
        return [[d["values"], d["counts"]] for d in counts.to_pylist()]

    return make_summary(
        list(parts),
        table.num_rows,
        splits=pairs(table.column("split").value_counts()),
        labels=[[v, c] for v, c in pairs(table.column("label").value_counts()) if v is not None and v >= 0],
        tags=pairs(pc.list_flatten(table.column("tags")).value_counts()) if table.num_rows else [],
        cap=cap,
    )


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
    writer = store._require_writable()
    old = store.items
    if table.schema != old.schema:
        raise ValueError(f"table: expected the item schema {old.schema.names}, got {table.schema.names}")
    if table.num_rows != old.num_rows or not table.column("id").equals(old.column("id")):
        raise ValueError("table: an edit keeps every item, with the same ids in the same order")
    meta = dict(writer.meta)
    part_name, crc = writer.write_part(table)
    old_parts = list(meta["parts"])
    meta["parts"] = [part_name] if table.num_rows else []
    meta[SUMMARY] = summarize_items(table, meta["parts"])
    sums = meta.get("checksums")
    if sums is not None:
        meta["checksums"] = {**sums, "parts": {part_name: crc} if table.num_rows else {}}
    writer.commit(meta, table.combine_chunks())  # the commit point: before it the old table, after it the new one
    writer.remove_parts([name for name in old_parts if name not in meta["parts"]])
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
    # the counts meta.json keeps (the item table is counted only when it keeps none, or not all)
    summary = current_summary(store._meta) or summarize_items(store.items, store._meta["parts"], cap=False)
    parts = [f"{len(store):,} rows"]
    parts.append("tags: " + top_counts(summary["tags"], top) if summary["tags"] else "no tags")
    labels = summary["labels"]  # ascending class ids
    if labels:
        names = store.attrs.get("class_names") or []
        shown = [f"{names[v] if 0 <= v < len(names) else v} ({c})" for v, c in labels[:top]]
        more = f", ... ({len(labels)} labels)" if len(labels) > top else ""
        parts.append("labels: " + ", ".join(shown) + more)
    else:
        parts.append("no labels")
    splits = sorted((k, c) for k, c in summary["splits"] if k is not None)
    if splits:
        parts.append("splits: " + ", ".join(f"{v} ({c})" for v, c in splits))
    else:
        parts.append("no splits")
    return "; ".join(parts)
