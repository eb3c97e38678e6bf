"""Contact sheets: search results as an image grid with ranks, scores and hit/miss marks."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ._html import HTMLReport

logger = logging.getLogger(__name__)

__all__ = ["contact_sheet", "relevance_marks", "thumbnail"]

_MISSING = np.full((8, 8), 200, np.uint8)  # a grey square where an image cannot be read


def thumbnail(path: str | Path | None, size: int = 128, *, missing: list | None = None) -> np.ndarray:
    """An image file shrunk to fit ``size`` x ``size`` (uint8 RGB); a grey square if unreadable.

    A contact sheet embeds every image inline: full-size photos would make it
    megabytes per result. A file that does not exist is appended to
    ``missing`` when given (the caller says so once), else warned about.

    Parameters
    ----------
    path : str, Path or None
        The image file; None gives the grey square.
    size : int
        Largest side in pixels.
    missing : list, optional
        Collects the paths of files that do not exist.

    Returns
    -------
    ndarray of uint8, shape (h, w, 3)
    """
    if path is None:
        return _MISSING
    from hardneg._imaging import open_image
    from hardneg.features._images import rgb_image

    try:
        # decoded by content from the allowed formats only (never an external program),
        # JPEG at a reduced DCT scale, others reduced right after decoding
        with open_image(path, target_size=size) as im:
            im = rgb_image(im, path)  # transparency on white, as extraction sees it (black line art stays visible)
            im.thumbnail((size, size))
            return np.asarray(im)
    except Exception as exc:  # noqa: BLE001 - an unreadable file becomes a placeholder, the sheet still renders
        if missing is not None and not Path(path).exists():
            missing.append(str(path))  # said once for the whole sheet: a moved folder is one problem, not N
        else:
            logger.warning("contact sheet: cannot read %s (%s)", path, exc)
        return _MISSING


def relevance_marks(store, rows, *, concept: str | None = None, tag: str | None = None, label=None) -> list[bool | None] | None:
    """Hit (True), miss (False) or not known (None) for each store row, from what the store says.

    ``tag`` / ``label`` name the ground truth the user vouches for: with
    ``tag``, an item tagged with it is a hit and every other item a miss;
    with ``label`` (a class name or number), an item of that class is a hit,
    an item of another class a miss and an unlabeled item not known. Without
    them, ``concept`` (a concept model's tag) marks hits only: an item tagged
    with it, or of the class of that name, is a hit; an item of another
    class a miss; anything else -- an untagged item, an item with other tags
    (tags are not exclusive) -- is not known, drawn neutral, never red (a
    concept trained from 3 tagged mugs finds untagged mugs too). One
    exception: when ``concept`` is a folder the store's tags came from
    (``extract images --tags-from-folders``), an item whose tags hold every
    folder of its id, in another branch of the tree than ``concept``'s folder,
    is a miss, since a file lives in one folder (``food/desserts/cake.png``
    for ``fruit``; ``food/apple.png``, above the ``fruit`` folder, stays not
    known). Returns None when nothing can be judged.
    """
    import numpy as np

    if tag is not None and label is not None:
        raise ValueError(f"tag={tag!r} and label={label!r} both name the relevant items: give one")
    rows = np.asarray(rows, dtype=np.int64)
    n = len(store)
    names = list(store.attrs.get("class_names") or [])
    labels = store.labels()

    def class_of(value, what: str) -> int:
        if isinstance(value, str) and value in names:
            return names.index(value)
        try:
            return int(value)
        except (TypeError, ValueError):
            known = ", ".join(names[:10]) or "none"
            raise ValueError(f"{what} {value!r}: not a class of {store.path} (classes: {known})") from None

    marks = np.full(n, -1, dtype=np.int8)  # -1 not known, 0 miss, 1 hit
    if tag is not None:
        marks[:] = 0
        marks[store.select(tags=[tag])] = 1
    elif label is not None:
        c = class_of(label, "label")
        marks[labels >= 0] = 0
        marks[store.select(labels=[c])] = 1
    elif concept is not None:
        if concept in names:
            marks[labels >= 0] = 0
            marks[store.select(labels=[names.index(concept)])] = 1
        marks[store.select(tags=[concept])] = 1
        marks[(marks < 0) & _in_other_folders(store, concept)] = 0
    else:
        return None
    if not (marks >= 0).any():
        return None
    return [None if m < 0 else bool(m) for m in marks[rows].tolist()]


def _in_other_folders(store, concept: str):
    """Items filed by folder in a folder tree that has a ``concept`` folder, in another
    branch of it: not in the concept's folder, nor in a folder above it (an item left in
    ``food/`` may be fruit nobody sorted; one in ``food/desserts/`` is not)."""
    import numpy as np

    from hardneg.features._extract import folder_tags

    items = store.items.select(["id", "tags"]).to_pydict()
    folders = [tuple(f) for f in folder_tags([str(i) for i in items["id"]])]
    above = {f[:k] for f in folders if concept in f for k in range(f.index(concept) + 1)}
    if not above:
        return np.zeros(len(folders), dtype=bool)  # a tag, not a folder: tags are not exclusive
    return np.array([bool(f) and concept not in f and f not in above and set(f) <= set(t or ())
                     for f, t in zip(folders, items["tags"])], dtype=bool)


def contact_sheet(out: str | Path, *, title: str, groups: list[dict], size: int = 128) -> Path:
    """Write a single-file HTML contact sheet of ranked search results.

    Parameters
    ----------
    out : str or Path
        The HTML file to write.
    title : str
    groups : list of dict
        One per query (or one for a concept search): ``"name"`` (str),
        optionally ``"query_path"`` (image file of the query) and
        ``"results"``: dicts with ``rank``, ``id``, ``path`` (image file or
        None), ``score`` (or ``distance``), optional ``label`` and
        ``relevant`` (True: hit, drawn green; False: miss, red; None or
        absent: not known, drawn neutral). Hit and miss counts are shown
        when any result is marked (see :func:`relevance_marks`).
    size : int
        Thumbnail side in pixels.

    Returns
    -------
    Path
        The file written.

    Examples
    --------
    >>> import tempfile
    >>> from hardneg.report import contact_sheet
    >>> res = [{"rank": 1, "id": "a", "path": None, "score": 0.9, "relevant": True}]
    >>> contact_sheet(tempfile.mkdtemp() + "/s.html", title="t", groups=[{"name": "q", "results": res}]).suffix
    '.html'
    """
    report = HTMLReport(title)
    missing: list[str] = []
    for g in groups:
        results = g.get("results", [])
        marks = [r.get("relevant") for r in results]
        known = [m for m in marks if m is not None]
        head = str(g.get("name", ""))
        if known:
            hits = sum(known)
            head += f" - {hits} hits, {len(known) - hits} misses"
            if len(known) < len(marks):
                head += f", {len(marks) - len(known)} not judged (nothing in the store says; drawn neutral)"
        report.heading(head)
        if g.get("query_path") is not None:
            report.image_grid([thumbnail(g["query_path"], size, missing=missing)], captions=["query"], size=size)
        captions = []
        for r in results:
            if "distance" in r:
                value = f"d={r['distance']:.3g}" if isinstance(r["distance"], float) else f"d={r['distance']}"
            else:
                value = f"{r.get('score', float('nan')):.3f}"
            label = f" {r['label']}" if r.get("label") else ""
            captions.append(f"#{r['rank']} {value}{label}")
        images = [thumbnail(r.get("path"), size, missing=missing) for r in results]
        report.image_grid(images, captions=captions, relevant=marks if known else None, size=size, titles=[str(r.get("id")) for r in results])
    if missing:
        logger.warning("contact sheet: %d image file(s) no longer exist (e.g. %s): if the images were moved, "
                       "'hardneg store relocate STORE --from OLD --to NEW' points the store at their new place", len(missing), missing[0])
    return report.write(out)
