"""Contact sheets: search results as an image grid with ranks, scores and hit/miss marks."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ._html import HTMLReport

logger = logging.getLogger(__name__)

__all__ = ["contact_sheet", "thumbnail"]

_MISSING = np.full((8, 8), 200, np.uint8)  # a grey square where an image cannot be read
_MAX_PIXELS = 40_000_000  # larger images are not decoded (a decompression bomb would take GBs)


def thumbnail(path, size: int = 128) -> np.ndarray:
    """An image file shrunk to fit ``size`` x ``size`` (uint8 RGB); a grey square if unreadable.

    A contact sheet embeds every image inline: full-size photos would make it
    megabytes per result.
    """
    if path is None:
        return _MISSING
    from hardneg._imaging import open_image

    try:
        # decoded by content from the allowed formats only (never an external program),
        # JPEG at a reduced DCT scale, others reduced right after decoding
        with open_image(path, max_pixels=_MAX_PIXELS, target_size=size) as im:
            im = im.convert("RGB")
            im.thumbnail((size, size))
            return np.asarray(im)
    except Exception as exc:  # noqa: BLE001 - an unreadable file becomes a placeholder, the sheet still renders
        logger.warning("contact sheet: cannot read %s (%s)", path, exc)
        return _MISSING


def contact_sheet(out, *, title: str, groups: list[dict], size: int = 128) -> Path:
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
        absent: not known). Hit counts are shown when any result is marked.
    size : int
        Thumbnail side in pixels.

    Examples
    --------
    >>> import tempfile
    >>> from hardneg.report import contact_sheet
    >>> res = [{"rank": 1, "id": "a", "path": None, "score": 0.9, "relevant": True}]
    >>> contact_sheet(tempfile.mkdtemp() + "/s.html", title="t", groups=[{"name": "q", "results": res}]).suffix
    '.html'
    """
    report = HTMLReport(title)
    for g in groups:
        results = g.get("results", [])
        marks = [r.get("relevant") for r in results]
        known = [m for m in marks if m is not None]
        head = str(g.get("name", ""))
        if known:
            head += f" - {sum(known)} hits of {len(known)}"
        report.heading(head)
        if g.get("query_path") is not None:
            report.image_grid([thumbnail(g["query_path"], size)], captions=["query"], size=size)
        captions = []
        for r in results:
            if "distance" in r:
                value = f"d={r['distance']:.3g}" if isinstance(r["distance"], float) else f"d={r['distance']}"
            else:
                value = f"{r.get('score', float('nan')):.3f}"
            label = f" {r['label']}" if r.get("label") else ""
            captions.append(f"#{r['rank']} {value}{label}")
        images = [thumbnail(r.get("path"), size) for r in results]
        report.image_grid(images, captions=captions, relevant=marks if known else None, size=size, titles=[str(r.get("id")) for r in results])
    return report.write(out)
