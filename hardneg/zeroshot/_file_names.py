"""Items' file names as weak captions for search by description (an extra, in no paper).

A collection nobody has tagged often still has names: clip art, stock photos and scans are
saved as ``turkey_on_platter.png`` or ``RedSportsCar.jpg``. The words of an item's file name
(its stem, never its folders: folders are what a user's tags are made of) are a caption the
text index embeds with MiniLM and adds to an item's score as one more cosine
(``hardneg.zeroshot._text_index``). Camera and hash names (``IMG_0042``, ``DSC01234``,
``3fa9c1d2``) carry no word and are skipped; a store where fewer than :data:`MIN_NAMED_SHARE`
of the items have a name with words gets no name captions at all.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["GENERIC_NAME_WORDS", "MIN_NAMED_SHARE", "SAMPLE_ITEMS", "item_name_texts", "name_text", "named_share",
           "store_named_share"]

#: words of camera, phone, scanner and export file names that say nothing about the picture
GENERIC_NAME_WORDS = frozenset({
    "img", "image", "images", "dsc", "dscn", "dscf", "pict", "pic", "pics", "photo", "photos", "scan", "screenshot",
    "screen", "shot", "pxl", "mvimg", "whatsapp", "copy", "untitled", "file", "picture", "jpg", "jpeg", "png", "gif",
    "tif", "tiff", "bmp", "webp", "heic", "svg", "raw", "edit", "edited", "final", "new", "small", "large", "thumb",
    "thumbnail", "export", "frame", "still", "version", "scaled", "resized", "crop", "cropped",
})
#: the share of items whose names carry a word for the store's names to be used
MIN_NAMED_SHARE = 0.5
#: items (evenly spaced rows) that :func:`store_named_share` reads
SAMPLE_ITEMS = 20_000

_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_NOT_LETTERS = re.compile(r"[\W\d_]+")


def name_text(name: str | None) -> str | None:
    """The words of a file name's stem, lower case, or None when it has none.

    Parameters
    ----------
    name : str or None
        A path or an item id (only the part after the last ``/`` or ``\\`` counts, less its extension).

    Returns
    -------
    str or None
        Its words of two letters or more joined by spaces (camelCase split, digits and
        punctuation dropped, :data:`GENERIC_NAME_WORDS` dropped); None when no word of three
        letters or more remains.

    Examples
    --------
    >>> name_text("/photos/animals/turkey_on_platter_01.png")
    'turkey on platter'
    >>> name_text("RedSportsCar.JPG"), name_text("IMG_20230514_1234.jpg"), name_text("3fa9c1d2e4.png")
    ('red sports car', None, None)
    """
    if not name:
        return None
    stem = _EXTENSION.sub("", re.split(r"[\\/]", str(name))[-1])
    words = [w.lower() for w in _NOT_LETTERS.sub(" ", _CAMEL.sub(" ", stem)).split() if len(w) >= 2]
    words = [w for w in words if w not in GENERIC_NAME_WORDS]
    return " ".join(words) if any(len(w) >= 3 for w in words) else None


def item_name_texts(store, rows=None) -> list[str | None]:
    """:func:`name_text` of a store's items (``rows``, default all, in row order): its image path where it
    has one, else its id."""
    import pyarrow as pa

    items = store.items if rows is None else store.items.take(pa.array(np.asarray(rows, dtype=np.int64)))
    paths = items.column("path").to_pylist() if "path" in items.column_names else [None] * items.num_rows
    return [name_text(p if p else i) for p, i in zip(paths, items.column("id").to_pylist())]


def store_named_share(store) -> float:
    """:func:`named_share` of up to :data:`SAMPLE_ITEMS` evenly spaced items of a store: whether the
    text index uses its names (at least :data:`MIN_NAMED_SHARE`), decided the same way wherever asked."""
    n = len(store)
    rows = None if n <= SAMPLE_ITEMS else np.unique(np.linspace(0, n - 1, SAMPLE_ITEMS).astype(np.int64))
    return named_share(item_name_texts(store, rows))


def named_share(texts: list[str | None]) -> float:
    """The share of items with a name that has words; 0 for no items, and when every such name is the
    same text (``item-0001.png``, ``item-0002.png``, ...: a word every item shares says nothing)."""
    if len({t for t in texts if t is not None}) < 2:
        return 0.0
    return float(np.mean([t is not None for t in texts]))
