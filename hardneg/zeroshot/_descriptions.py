"""Class descriptions for zero-shot models: a CSV of texts or attribute vectors, or WordNet glosses.

The side information of a zero-shot model ([Bucher16] Section 2: one attribute
vector ``Y`` per class) comes from one of three places:

- a CSV with a header, ``class,text`` — one free-text description per class,
  embedded by the all-MiniLM-L6-v2 sentence model (384-d, unit norm; the
  ``text`` extra);
- a CSV with a header, ``class,a1,a2,...`` — one numeric attribute vector per
  class, used as given;
- no CSV: the gloss of the first WordNet 3.0 noun sense of each class name
  (offline, Debian ``wordnet-base``, the ``wordnet`` extra), embedded by the
  same sentence model.

:func:`embed_query_text` embeds free text into the same space, so that a text
query can be compared with images by a model trained on text descriptions.
"""

from __future__ import annotations

import csv as _csv
import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hardneg._extras import install_hint
from hardneg._validation import reads_as_number

__all__ = ["read_descriptions_csv", "class_descriptions", "embed_query_text", "wordnet_gloss", "embed_texts"]

#: Longest description text accepted (characters): far beyond what the sentence model reads (256 tokens).
MAX_TEXT_CHARS = 10_000


def embed_texts(texts, *, cache: bool = True, quantized: bool = False) -> np.ndarray:
    """Unit-norm 384-d all-MiniLM-L6-v2 embeddings (n, 384) float32, cached on disk unless ``cache=False``
    (``quantized``: the int8 graph of one-off queries, :func:`hardneg.zeroshot._protocols.embed_texts`);
    one-line ImportError naming the install command when the ``text`` extra is missing."""
    from ._protocols import embed_texts as _embed

    try:
        return _embed(texts, cache=cache, quantized=quantized)
    except ImportError:
        raise ImportError(f"text descriptions need the sentence model (the 'text' extra): {install_hint('text')}") from None


def read_descriptions_csv(path: str | Path) -> tuple[list[str], list[str] | np.ndarray]:
    """Read class descriptions from a CSV file with a header row.

    Parameters
    ----------
    path : str or Path
        Rows ``class,text`` (one description per class) or ``class,a1,a2,...``
        (a numeric attribute vector per class). The header's first cell names
        the class column; the rest name the text column or the attributes.

    Returns
    -------
    classes : list of str
        Class names, in file order.
    values : list of str or ndarray (n_classes, n_attributes) float32
        The descriptions (text rows) or the attribute matrix (numeric rows).

    Raises
    ------
    ValueError
        One line naming the file and row: a missing file, no header, no rows, a
        row of the wrong length, an empty class or text, a duplicated class,
        a number that is NaN or infinite, or text mixed with numbers.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "classes.csv")
    >>> _ = open(p, "w").write("class,description\\nzebra,a striped horse\\ncat,a small feline\\n")
    >>> read_descriptions_csv(p)
    (['zebra', 'cat'], ['a striped horse', 'a small feline'])
    >>> _ = open(p, "w").write("class,stripes,legs\\nzebra,1,4\\nbird,0,2\\n")
    >>> classes, A = read_descriptions_csv(p); classes, A.tolist()
    (['zebra', 'bird'], [[1.0, 4.0], [0.0, 2.0]])
    """
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = list(_csv.reader(fh))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such descriptions file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the descriptions file ({str(exc).splitlines()[0]})") from None
    except _csv.Error as exc:
        raise ValueError(f"{path}: not a valid CSV file ({exc})") from None
    # blank lines are skipped; line numbers below are 1-based file rows, the header being row 1
    numbered = [(i + 1, r) for i, r in enumerate(rows) if any(c.strip() for c in r)]
    if not numbered:
        raise ValueError(f"{path}: empty descriptions file; expected a header 'class,text' or 'class,a1,a2,...' and one row per class")
    (_, header), body = numbered[0], numbered[1:]
    width = len(header)
    if width < 2:
        raise ValueError(f"{path}: row 1 (header): expected at least 2 columns ('class,text' or 'class,a1,...'), got {width}")
    if not body:
        raise ValueError(f"{path}: no class rows after the header")
    # two columns: a text column, unless every filled cell is a number (a 1-attribute table)
    cells = [r[1].strip() for _, r in body if len(r) > 1 and r[1].strip()]
    numeric = width > 2 or (bool(cells) and all(reads_as_number(c) for c in cells))
    classes: list[str] = []
    seen: dict[str, int] = {}
    values: list = []
    for line, r in body:
        if len(r) != width:
            raise ValueError(f"{path}: row {line}: expected {width} columns as the header, got {len(r)}")
        name = r[0].strip()
        if not name:
            raise ValueError(f"{path}: row {line}: empty class name")
        if name in seen:
            raise ValueError(f"{path}: row {line}: class {name!r} is described twice (first on row {seen[name]})")
        seen[name] = line
        if numeric:
            try:
                vec = [float(c) for c in r[1:]]
            except ValueError:
                raise ValueError(f"{path}: row {line}: class {name!r}: attribute values must be numbers, "
                                 f"got {[c for c in r[1:] if not reads_as_number(c)][:1][0]!r}") from None
            if not all(math.isfinite(v) for v in vec):
                raise ValueError(f"{path}: row {line}: class {name!r}: attribute values must be finite (NaN or infinity found)")
            values.append(vec)
        else:
            text = r[1].strip()
            if not text:
                raise ValueError(f"{path}: row {line}: class {name!r} has an empty description")
            if len(text) > MAX_TEXT_CHARS:
                raise ValueError(f"{path}: row {line}: class {name!r}: description longer than {MAX_TEXT_CHARS} characters")
            values.append(text)
        classes.append(name)
    if numeric:
        return classes, np.asarray(values, dtype=np.float32).reshape(len(classes), width - 1)
    return classes, values


def _lemma(word: str) -> str:
    return re.sub(r"[\s\-_]+", "_", word.strip().lower()).strip("_")


def wordnet_gloss(name: str, wordnet=None) -> str | None:
    """The gloss of the first WordNet noun sense of a class name, or None.

    Spaces, hyphens and underscores are interchangeable ("ice cream",
    "ice-cream", "ice_cream"); plurals are found by WordNet's morphology; a
    path ``"animals/mammals"`` is named by its last component; a compound
    with no entry of its own falls back to its last word ("sports_cars" to
    "car").
    """
    from hardneg.concept._related import load_wordnet

    wn = load_wordnet() if wordnet is None else wordnet
    leaf = _lemma(str(name).replace("\\", "/").rstrip("/").split("/")[-1])
    tries = [leaf]
    if "_" in leaf:
        tries.append(leaf.rsplit("_", 1)[-1])
    for word in tries:
        synsets = wn.synsets(word, pos="n") if word else []
        if synsets:
            return synsets[0].definition()
    return None


def _check_classes(classes) -> list[str]:
    if isinstance(classes, str):
        raise TypeError(f"classes: expected a list of class names, got the string {classes!r}")
    out = [str(c) for c in classes]
    if not out:
        raise ValueError("classes: is empty")
    dup = sorted({c for c in out if out.count(c) > 1})
    if dup:
        raise ValueError(f"classes: names repeated: {dup[:5]}")
    return out


def class_descriptions(classes: Sequence[str], *, csv: str | Path | None = None, missing: str = "raise") -> np.ndarray:
    """One description vector per class, as a zero-shot model's class attributes.

    Parameters
    ----------
    classes : list of str
        Class names (tags or label names).
    csv : str or Path, optional
        A descriptions file (:func:`read_descriptions_csv`); it may describe
        more classes than asked. Text rows are embedded by all-MiniLM-L6-v2;
        numeric rows are used as given. Without it, each class's WordNet gloss
        (:func:`wordnet_gloss`) is embedded.
    missing : {"raise", "nan"}
        A class with no description: a one-line ``ValueError`` (the default),
        or a row of NaN (callers that drop such classes).

    Returns
    -------
    ndarray (n_classes, d) float32
        ``d`` = 384 for texts and glosses, the number of attributes for numeric rows.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "a.csv")
    >>> _ = open(p, "w").write("class,stripes,legs\\nzebra,1,4\\nbird,0,2\\n")
    >>> class_descriptions(["bird", "zebra"], csv=p).tolist()
    [[0.0, 2.0], [1.0, 4.0]]
    """
    names = _check_classes(classes)
    if missing not in ("raise", "nan"):
        raise ValueError(f"missing: expected 'raise' or 'nan', got {missing!r}")
    if csv is not None:
        have, values = read_descriptions_csv(csv)
        where = {c: i for i, c in enumerate(have)}
        absent = [c for c in names if c not in where]
        if absent and missing == "raise":
            raise ValueError(f"{csv}: no description for classes {absent[:10]}"
                             f"{f' (and {len(absent) - 10} more)' if len(absent) > 10 else ''}; add a row for each")
        if isinstance(values, np.ndarray):
            out = np.full((len(names), values.shape[1]), np.nan, np.float32)
            for i, c in enumerate(names):
                if c in where:
                    out[i] = values[where[c]]
            return out
        texts = [values[where[c]] if c in where else None for c in names]
    else:
        from hardneg.concept._related import load_wordnet

        wn = load_wordnet()
        texts = [wordnet_gloss(c, wn) for c in names]
        absent = [c for c, t in zip(names, texts) if t is None]
        if absent and missing == "raise":
            raise ValueError(f"classes: no WordNet noun for {absent[:10]}; give their descriptions in a CSV "
                             f"(csv=, or --descriptions FILE: a header 'class,text', then one row per class)")
    have_text = [t for t in texts if t is not None]
    out = np.full((len(names), 384), np.nan, np.float32)
    if have_text:
        E = embed_texts(have_text)
        out[[i for i, t in enumerate(texts) if t is not None]] = E
    return out


def embed_query_text(text: str) -> np.ndarray:
    """Free text embedded as a description: unit-norm (384,) float32 (all-MiniLM-L6-v2).

    Parameters
    ----------
    text : str
        The query, in words.

    Returns
    -------
    ndarray of float32, shape (384,)
        Its embedding.

    Raises
    ------
    TypeError
        ``text`` is not a string.
    ValueError
        ``text`` is empty or too long.
    ImportError
        The ``text`` extra is missing (the message gives the install command).
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected a string, got {type(text).__name__}")
    text = text.strip()
    if not text:
        raise ValueError("text: is empty; describe what to find, e.g. 'a striped animal with four legs'")
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"text: longer than {MAX_TEXT_CHARS} characters")
    return embed_texts([text], cache=False, quantized=True)[0]  # one-off queries: no file per query in the cache, the int8 graph
