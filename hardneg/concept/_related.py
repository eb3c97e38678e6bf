"""Related-tag exclusion: WordNet hyponyms and tags close by Normalized Google Distance.

Li et al. (IEEE TMM 2013), Section III-A: pool images tagged with the concept
are likely positives, and so are images tagged with a *related* tag -- a
more specific word for the concept (a WordNet hyponym: "sneaker" for
"footwear") or a tag that keeps company with the concept's tag in the
collection. Those are excluded from the negatives too.

* Hyponyms come from WordNet 3.0, read by nltk's WordNet reader from the
  files of the Debian packages ``wordnet-base`` and ``wordnet-sense-index``
  (no nltk download at run time). :func:`load_wordnet` copies them into an
  ``NLTK_DATA``-style root under the cache folder (nltk >= 3.10 reads corpora
  only under its data roots) and writes the ``lexnames`` file Debian lacks.
* Co-occurrence closeness is the Normalized Google Distance (Cilibrasi &
  Vitanyi 2007) over the pool's own tag table, with image counts in place of
  web page counts::

      NGD(x, y) = (max(log f(x), log f(y)) - log f(x, y))
                  / (log N - min(log f(x), log f(y)))

  0 when the tags always come together, about 1 when they are independent.
  The paper does not print a threshold; ``ngd_threshold=0.3`` here, with at
  least ``min_cooccurrence`` images carrying both tags.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import warnings
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from hardneg.exceptions import WordNetUnavailable  # defined there, re-exported here
from hardneg._extras import install_hint

logger = logging.getLogger(__name__)

__all__ = ["WordNetUnavailable", "load_wordnet", "ngd", "ngd_related_tags", "related_tags", "wordnet_hyponym_tags"]

#: Where Debian's wordnet-base puts the WordNet 3.0 database.
DEBIAN_WORDNET = Path("/usr/share/wordnet")

# WordNet 3.0's lexicographer files, lexnames(5WN): number, name, syntactic category.
_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_CATEGORY = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}

_cache: dict[str, object] = {}


def _lexnames_text() -> str:
    return "".join(f"{i:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(_LEXNAMES))


def _default_root() -> Path:
    base = os.environ.get("HARDNEG_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "hardneg") / "nltk_data"


def load_wordnet(source: str | os.PathLike | None = None, root: str | os.PathLike | None = None) -> Any:
    """nltk's WordNet reader over the Debian WordNet 3.0 files, without a download.

    Parameters
    ----------
    source : path, optional
        Folder with ``data.noun``, ``index.noun``, ... (default
        ``/usr/share/wordnet``, Debian's ``wordnet-base``).
    root : path, optional
        The ``NLTK_DATA``-style root the files are copied into (default
        ``$HARDNEG_CACHE/nltk_data`` or ``~/.cache/hardneg/nltk_data``).

    Returns
    -------
    nltk.corpus.reader.wordnet.WordNetCorpusReader
        The reader (one per ``source`` and ``root``, cached).

    Raises
    ------
    WordNetUnavailable
        nltk is not installed or the WordNet files are missing.

    Examples
    --------
    >>> from hardneg.concept import load_wordnet
    >>> wn = load_wordnet()  # doctest: +SKIP
    >>> wn.synsets("footwear")[0].name()  # doctest: +SKIP
    'footwear.n.01'
    """
    src = DEBIAN_WORDNET if source is None else Path(source)
    dest_root = (_default_root() if root is None else Path(root)).resolve()
    key = f"{src}|{dest_root}"
    if key in _cache:
        return _cache[key]
    try:
        import nltk.data
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
    except ImportError as exc:
        raise WordNetUnavailable(f"nltk is not installed: {install_hint('wordnet')}") from exc
    if not (src / "data.noun").is_file() or not (src / "index.noun").is_file():
        raise WordNetUnavailable(
            f"no WordNet database in {src}: install the Debian packages wordnet-base and wordnet-sense-index "
            "(apt-get install wordnet-base wordnet-sense-index) or pass source= a folder with data.noun, index.noun, ..."
        )
    target = dest_root / "corpora" / "wordnet"
    target.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.iterdir()):
        if f.is_file() and (f.name.startswith(("data.", "index.")) or f.suffix == ".exc"):
            out = target / f.name
            if not out.exists() or out.stat().st_size != f.stat().st_size:
                shutil.copyfile(f, out)
    lex = target / "lexnames"
    if not lex.exists():
        lex.write_text(_lexnames_text())
    # nltk >= 3.10 opens corpus files only under its data roots.
    if str(dest_root) not in [str(p) for p in nltk.data.path]:
        nltk.data.path.append(str(dest_root))
    with warnings.catch_warnings():  # "multilingual functions not available": no OMW wanted
        warnings.simplefilter("ignore", UserWarning)
        _cache[key] = WordNetCorpusReader(str(target), None)
    return _cache[key]


def wordnet_hyponym_tags(concept: str, vocabulary: Iterable[str], wordnet: Any = None) -> list[str]:
    """Tags of ``vocabulary`` naming a hyponym (a kind of) of any noun sense of ``concept``.

    Multi-word tags match with spaces, hyphens or underscores ("ankle boot",
    "ankle-boot", "ankle_boot"); case is ignored. The concept itself is not
    returned.

    Parameters
    ----------
    concept : str
        The concept's name (a WordNet noun).
    vocabulary : iterable of str
        The candidate tags.
    wordnet : WordNet reader, optional
        Default :func:`load_wordnet`'s.

    Returns
    -------
    list of str
        The matching tags, sorted.

    Raises
    ------
    WordNetUnavailable
        If ``wordnet`` is None and WordNet cannot be loaded.
    """
    wn = load_wordnet() if wordnet is None else wordnet
    below: set[str] = set()
    for syn in wn.synsets(_lemma(concept), pos="n"):
        for hypo in syn.closure(lambda s: s.hyponyms() + s.instance_hyponyms()):
            below.update(_lemma(name) for name in hypo.lemma_names())
    own = _lemma(concept)
    return sorted({t for t in vocabulary if _lemma(t) in below and _lemma(t) != own})


def _lemma(tag: str) -> str:
    return str(tag).strip().lower().replace(" ", "_").replace("-", "_")


def ngd(f_x: int, f_y: int, f_xy: int, n: int) -> float:
    """Normalized Google Distance from image counts (inf when the tags never co-occur).

    Parameters
    ----------
    f_x, f_y : int
        Images tagged x, images tagged y.
    f_xy : int
        Images tagged both.
    n : int
        Images in all.

    Returns
    -------
    float
        ``(max(log f_x, log f_y) - log f_xy) / (log n - min(log f_x, log f_y))``; inf
        when a count is 0 or a tag is on every image.
    """
    if f_xy <= 0 or f_x <= 0 or f_y <= 0:
        return math.inf
    lx, ly = math.log(f_x), math.log(f_y)
    denom = math.log(n) - min(lx, ly)
    if denom <= 0:  # a tag on every image: no information
        return math.inf
    return (max(lx, ly) - math.log(f_xy)) / denom


def ngd_related_tags(
    concept_tags: str | Iterable[str], tag_lists: Iterable[Iterable[str] | None], threshold: float = 0.3, min_cooccurrence: int = 2
) -> dict[str, float]:
    """Tags whose NGD to the concept's tag(s) is at most ``threshold``: {tag: NGD}.

    ``tag_lists`` holds one list of tags per image. An image counts for the
    concept when it carries any of ``concept_tags``.

    Parameters
    ----------
    concept_tags : str or iterable of str
        The concept's tag(s).
    tag_lists : iterable of list of str
        The pool's tags, one list (or None) per image.
    threshold : float
        Largest NGD kept.
    min_cooccurrence : int
        Fewest images carrying both the concept and the tag.

    Returns
    -------
    dict of str to float
        ``{tag: NGD}``, sorted by tag.
    """
    concept = {str(t) for t in ([concept_tags] if isinstance(concept_tags, str) else concept_tags)}
    n, f_c = 0, 0
    f: Counter[str] = Counter()
    f_both: Counter[str] = Counter()
    for tags in tag_lists:
        n += 1
        tags = set(tags or ())
        has = bool(concept & tags)
        f_c += has
        for t in tags - concept:
            f[t] += 1
            if has:
                f_both[t] += 1
    out = {}
    for t, both in f_both.items():
        if both >= min_cooccurrence:
            d = ngd(f_c, f[t], both, n)
            if d <= threshold:
                out[t] = d
    return dict(sorted(out.items()))


def related_tags(concept_tags: str | Iterable[str], tag_lists: Iterable[Any], *, wordnet: Any = "auto",
                 ngd_threshold: float = 0.3, min_cooccurrence: int = 2) -> dict[str, str]:
    """The paper's related tags for a concept: {tag: "wordnet" or "ngd=0.xx"}.

    Parameters
    ----------
    concept_tags : str or list of str
        The concept's tag(s).
    tag_lists : iterable of list of str
        The pool's tags, one list per image.
    wordnet : "auto", bool or a WordNet reader
        ``"auto"`` uses WordNet when it can be loaded and otherwise logs a
        warning and keeps only the NGD part; ``True`` requires it.
    ngd_threshold, min_cooccurrence : see :func:`ngd_related_tags`.

    Returns
    -------
    dict of str to str
        ``{tag: "wordnet" or "ngd=0.xx"}``, sorted by tag.

    Raises
    ------
    WordNetUnavailable
        If ``wordnet=True`` and WordNet cannot be loaded.

    Examples
    --------
    >>> tags = [["shoe", "sneaker"]] * 3 + [["shoe"]] + [["dress"]] * 6
    >>> related_tags("shoe", tags, wordnet=False)
    {'sneaker': 'ngd=0.24'}
    """
    tag_lists = [list(t or ()) for t in tag_lists]
    concept = [concept_tags] if isinstance(concept_tags, str) else [str(t) for t in concept_tags]
    out: dict[str, str] = {}
    if wordnet is not False:
        wn = None
        if wordnet is True or (isinstance(wordnet, str) and wordnet == "auto"):
            try:
                wn = load_wordnet()
            except WordNetUnavailable as exc:
                if wordnet is True:
                    raise
                logger.warning("related tags: WordNet unavailable (%s); using tag co-occurrence only", exc)
        else:
            wn = wordnet
        if wn is not None:
            vocab = {t for tags in tag_lists for t in tags} - set(concept)
            for c in concept:
                for t in wordnet_hyponym_tags(c, vocab, wn):
                    out[t] = "wordnet"
    for t, d in ngd_related_tags(concept, tag_lists, ngd_threshold, min_cooccurrence).items():
        out.setdefault(t, f"ngd={d:.2f}")
    return dict(sorted(out.items()))
