"""The item summary kept in ``meta.json``: what ``hardneg store info`` shows, without reading the item table.

``meta["item_summary"]`` counts, over the whole item table, the items per
split, per label and per tag::

    {"parts": [part names it covers], "rows": n,
     "splits": [[name or null, count], ...],   # in order of first appearance
     "labels": [[class id, count], ...],       # ascending; unlabeled rows are not counted
     "tags":   [[tag, count], ...]}            # ascending; every occurrence counts

It is written in the same atomic ``meta.json`` commit as the item parts it
describes (an append merges the new part's counts in, an edit counts the new
table), so it never disagrees with a committed table. ``parts`` ties it to the
table it counts: an older hardneg, which knows nothing of the summary, keeps
the key when it appends or edits, but always commits a new part name (names
are never reused), so its summary no longer lists ``meta["parts"]`` and is
ignored as stale; the next writer counts the table again. A field with more
than :data:`MAX_VALUES` distinct values is ``null`` (not kept: ``meta.json``
is rewritten on every append). ``hardneg store info`` then reads the table.

This module is plain Python (no NumPy, no Arrow): ``hardneg store info``
imports it and nothing heavier.
"""

from __future__ import annotations

SUMMARY = "item_summary"
FIELDS = ("splits", "labels", "tags")
MAX_VALUES = 10_000
"""Most distinct values a field keeps (beyond: ``null``)."""


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _key_ok(field: str, key) -> bool:
    if field == "splits":
        return key is None or isinstance(key, str)
    if field == "labels":
        return isinstance(key, int) and not isinstance(key, bool) and 0 <= key < 2**63
    return isinstance(key, str)


def check_summary(summary, parts: list, n_rows: int) -> str | None:
    """What is wrong with a ``meta.json`` item summary, or None if it is well formed.

    The shape is always checked; the counts against ``n_rows`` only when the
    summary covers ``parts`` (a stale one, see the module docstring, counts
    another table and is ignored by readers).

    Parameters
    ----------
    summary : object
        The value of ``meta["item_summary"]`` as read from JSON.
    parts : list of str
        ``meta["parts"]``.
    n_rows : int
        ``meta["n_rows"]``.

    Returns
    -------
    str or None
        The problem, in a few words, or None.
    """
    if not isinstance(summary, dict) or set(summary) != {"parts", "rows", *FIELDS}:
        return f"must be an object with the keys parts, rows, {', '.join(FIELDS)}"
    if not isinstance(summary["parts"], list) or not all(isinstance(p, str) for p in summary["parts"]):
        return "parts must be a list of part names"
    rows = summary["rows"]
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
        return f"rows must be an integer >= 0, got {rows!r}"[:120]
    for field in FIELDS:
        pairs = summary[field]
        if pairs is None:
            continue
        if not isinstance(pairs, list) or len(pairs) > MAX_VALUES:
            return f"{field} must be null or a list of at most {MAX_VALUES} [value, count] pairs"
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2 and _key_ok(field, pair[0]) and _is_count(pair[1])):
                return f"{field} holds {pair!r}, not a [value, count] pair with a count >= 1"[:160]
        if len({p[0] for p in pairs}) != len(pairs):
            return f"{field} lists a value twice"
    if summary["parts"] != parts:
        return None  # stale: the counts describe another table
    if rows != n_rows:
        return f"counts {rows} rows but the store has {n_rows}"
    if summary["splits"] is not None and sum(c for _, c in summary["splits"]) != rows:
        return f"split counts add up to {sum(c for _, c in summary['splits'])}, not to the {rows} rows"
    if summary["labels"] is not None and sum(c for _, c in summary["labels"]) > rows:
        return f"label counts add up to {sum(c for _, c in summary['labels'])}, more than the {rows} rows"
    return None


def current_summary(meta: dict) -> dict | None:
    """The item summary of a checked ``meta``, if it counts the committed table and keeps every field.

    Parameters
    ----------
    meta : dict
        A ``meta.json`` that passed :func:`hardneg.store._meta.check_meta`.

    Returns
    -------
    dict or None
        The summary, or None (none recorded, stale, or a field not kept).
    """
    summary = meta.get(SUMMARY)
    if summary is None or summary["parts"] != meta["parts"] or any(summary[f] is None for f in FIELDS):
        return None
    return summary


def top_counts(pairs: list, top: int = 12, noun: str = "tags") -> str:
    """``"a (3), b (2), ... (N tags)"``: the ``top`` most frequent values of ``[value, count]`` pairs.

    Ties keep value order. What ``hardneg store info`` and the one-line store
    summary of error messages show.

    Parameters
    ----------
    pairs : list of [value, count]
        Counts, e.g. a summary's ``tags``.
    top : int
        Most values listed.
    noun : str
        What the values are, for the "... (N tags)" tail.

    Returns
    -------
    str
        The listed values with their counts ("" for no pairs).
    """
    ranked = sorted(pairs, key=lambda kv: (-kv[1], kv[0]))
    more = f", ... ({len(ranked)} {noun})" if len(ranked) > top else ""
    return ", ".join(f"{v} ({c})" for v, c in ranked[:top]) + more


def _capped(pairs: list, cap: bool = True) -> list | None:
    return pairs if not cap or len(pairs) <= MAX_VALUES else None


def make_summary(parts: list, rows: int, splits: list, labels: list, tags: list, *, cap: bool = True) -> dict:
    """A summary from counts (pairs ``[value, count]``, splits in order of first appearance).

    Parameters
    ----------
    parts : list of str
        The part names it covers.
    rows : int
        Rows counted.
    splits, labels, tags : list of [value, count]
        The counts; labels and tags are sorted here.
    cap : bool
        Whether a field with more than :data:`MAX_VALUES` values becomes ``None``
        (what ``meta.json`` keeps); False keeps every count.

    Returns
    -------
    dict
        The summary.
    """
    return {
        "parts": list(parts),
        "rows": int(rows),
        "splits": _capped([[k, int(c)] for k, c in splits], cap),
        "labels": _capped(sorted([int(k), int(c)] for k, c in labels), cap),
        "tags": _capped(sorted([str(k), int(c)] for k, c in tags), cap),
    }


def merge_summaries(old: dict, new: dict, parts: list) -> dict:
    """The summary of two tables one after the other (an append): counts added, split order kept.

    Parameters
    ----------
    old, new : dict
        Summaries of the committed table and of the appended part.
    parts : list of str
        The part names the result covers.

    Returns
    -------
    dict
        The merged summary; a field that either side does not keep stays ``None``.
    """
    out: dict = {"parts": list(parts), "rows": old["rows"] + new["rows"]}
    for field in FIELDS:
        if old[field] is None or new[field] is None:
            out[field] = None
            continue
        counts: dict = {k: c for k, c in old[field]}
        for k, c in new[field]:
            counts[k] = counts.get(k, 0) + c
        pairs = [[k, c] for k, c in counts.items()]
        out[field] = _capped(pairs if field == "splits" else sorted(pairs))
    return out
