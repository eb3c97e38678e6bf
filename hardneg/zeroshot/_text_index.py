"""One search by description for users: a text index built once per store state, then queried in milliseconds.

What ranks the store for a text query (``method``):

- ``"conse"``: no training ([Norouzi14], :class:`~hardneg.zeroshot.ConSE`): every item's
  semantic vector ``f(x)`` ([Norouzi14] Eq. (2)) from EfficientNet-Lite0's ImageNet head; a query scores
  ``cos(f(x), s(text))`` ([Norouzi14] Eq. (3)). Needs the store's vectors to be that network's pooled
  features; the store's tags are not used.
- ``"eszsl"``: ESZSL trained on the store's tags, each described by text (WordNet gloss or a
  CSV) embedded by MiniLM; an item's vector is ``Vᵀ x`` (its image in the description
  space), normalised, so that a query scores the cosine ``cos(Vᵀx, s(text))``. (ESZSL's own
  score is ``xᵀ V s``; the cosine is a departure that puts it on ConSE's scale.)
- ``"captions"``: :class:`~hardneg.zeroshot._captions.CaptionKNN` (an extra, in neither paper):
  every tagged item's tags, in words, are its caption, embedded by MiniLM; an item's vector is
  the similarity-weighted mean caption of its nearest tagged items (never its own).
- ``"conse+eszsl"``, ``"conse+captions"``, ``"conse+eszsl+captions"``: the sum of the cosines (extras).
- ``"bucher16"``: the [Bucher16] model trained on the tags (``-S(x, s(text))``).

Two extras for every method but ``bucher16``, in neither paper, measured beside the plain
versions in docs/methods/zeroshot.md:

- ConSE's class prior (:class:`~hardneg.zeroshot.ConSE` ``prior_power``,
  :data:`CONSE_PRIOR_POWER`), estimated on up to :data:`SAMPLE_ROWS` of the store's rows; for
  ``"conse"`` alone the query is also centred on the class embeddings' mean before the cosine
  (``query_offset``): every class text shares a component that says nothing about the query.
- Pseudo-relevance feedback (average query expansion, as [Chum07] does for visual words, here
  from text to image): the :data:`FEEDBACK_TOP` best items of the first ranking (at most 1 % of
  the rows searched, at least one) are averaged in
  the store's own feature space (centred, reduced to :data:`FEEDBACK_DIMS` principal directions
  estimated on the same sample), and the final score is ``z(text score) + FEEDBACK_WEIGHT ·
  z(cosine with that mean)``, each z-scored over the rows searched. The CNN features carry what
  the 1,000 ImageNet classes (or the tags) do not; the text picks the examples.
- File names as captions (:mod:`hardneg.zeroshot._file_names`): the words of each item's file
  name (``turkey_on_platter.png``: "turkey on platter"; never its folders) embedded by MiniLM,
  one more cosine added to the first ranking (weight :data:`NAMES_WEIGHT`, as every part's), when
  at least half of the store's items have a name with words (camera and hash names have none).

[Chum07] Chum, Philbin, Sivic, Isard & Zisserman, "Total recall: automatic query expansion with a
generative feature model for object retrieval", ICCV 2007.

If ``"auto"``, on a store with ConSE's features: :data:`AUTO_WITH_NAMES` (``"conse"``, with
the file names) when the items' file names are used; else :data:`AUTO_WITH_DESCRIBED_TAGS`
(``"conse+eszsl+captions"``) when at least two of its tags can be described (WordNet glosses or
the descriptions file), :data:`AUTO_WITH_TAGS` (``"conse+captions"``) when at least two items are
tagged but the tags cannot be described, ``"conse"`` with no tags; on a store of other features,
``"eszsl"`` when it has described tags; otherwise a one-line error saying what to add. Why this
choice (validation categories only): docs/methods/zeroshot.md.

The index (one unit-norm vector per item, or the trained [Bucher16] model) is cached beside a
local store in ``<store>.models/text-index/`` (where the service keeps its models), else under
``$HARDNEG_CACHE/text-index`` (default ``~/.cache/hardneg/text-index``), keyed by the store's
content fingerprint (the checksums of its vectors and item table, so tagging or appending
items makes a new one), the method and its settings, and the descriptions file's bytes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hardneg._persist import ArraySpec, ModelFileError, load_model, save_model
from hardneg._topk import TopK, topk_of
from hardneg._validation import check_positive_int

__all__ = ["TEXT_METHODS", "TextIndex", "build_text_index", "cached_text_index", "check_text_descriptions", "default_cache_dir",
           "check_text_request", "open_text_index", "resolve_method", "store_fingerprint", "text_index_cache_dir", "text_index_file"]

logger = logging.getLogger(__name__)

TEXT_METHODS = ("auto", "conse", "eszsl", "conse+eszsl", "captions", "conse+captions", "conse+eszsl+captions", "bucher16")
#: what ``auto`` stands for on a store with ConSE's features and described tags (the validated choice, see the module docstring)
AUTO_WITH_DESCRIBED_TAGS = "conse+eszsl+captions"
#: ... and with tags that cannot be described (ESZSL needs a description per class)
AUTO_WITH_TAGS = "conse+captions"
#: ... on a store whose file names carry words, tagged or not (they outrank what the tags add: the validated choice)
AUTO_WITH_NAMES = "conse"
_KIND = "hardneg.zeroshot.TextIndex"
_VERSION = 1
#: bumped when what an index holds for the same inputs changes (old cache files are then ignored)
_ALGORITHM = 5
#: ``a`` of ConSE's class-prior correction in the index (0 is [Norouzi14] Eq. (2); chosen on validation categories)
CONSE_PRIOR_POWER = 0.5
#: rows of the store read to estimate ConSE's class prior and the feedback space
SAMPLE_ROWS = 20_000
#: pseudo-relevance feedback: the best items averaged, the dimensions of the feedback space, and the weight of its z-score
FEEDBACK_TOP = 10
FEEDBACK_DIMS = 128
FEEDBACK_WEIGHT = 4.0
_MINILM_DIM = 384
#: weight of the file-name cosine in the first ranking: the same as each method's part (a sum of cosines)
NAMES_WEIGHT = 1.0

#: count of indexes built in this process (tests check that a second query does not rebuild)
BUILDS = {"n": 0}


def text_index_cache_dir() -> Path:
    """``$HARDNEG_CACHE/text-index`` or ``~/.cache/hardneg/text-index``."""
    base = os.environ.get("HARDNEG_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "hardneg") / "text-index"


def store_fingerprint(store) -> str:
    """A digest of the store's content: the checksums of its vector chunks and item-table parts.

    A store written before checksums existed is fingerprinted by its ids, tags and shape
    (its vectors are then assumed unchanged while those are).
    """
    meta = getattr(store, "_meta", None) or {}
    sums = meta.get("checksums")
    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps({"shape": list(store.shape), "sparse": bool(store.is_sparse)}, sort_keys=True).encode())
    if sums:
        h.update(json.dumps(sums, sort_keys=True).encode())
    else:
        h.update("\0".join(map(str, store.ids())).encode())
        h.update(json.dumps(store.items.column("tags").to_pylist()).encode())
    return h.hexdigest()


def _file_digest(path) -> str:
    return hashlib.blake2b(Path(path).read_bytes(), digest_size=16).hexdigest()


def _conse_ready(store) -> str | None:
    """None when ConSE can read the store, else the reason (one line)."""
    from ._conse import check_conse_store

    try:
        check_conse_store(store)
    except ValueError as exc:
        return str(exc)
    return None


def check_text_descriptions(descriptions, store=None) -> None:
    """Refuse, before any training, a descriptions file that search by text cannot use.

    A text query is compared with descriptions embedded by MiniLM: the file must hold text rows
    (``class,text``), not attribute vectors (``class,a1,a2,...``), and, with a store, describe at
    least two of its tags.
    """
    from ._descriptions import read_descriptions_csv

    classes, values = read_descriptions_csv(descriptions)
    if isinstance(values, np.ndarray):
        raise ValueError(f"{descriptions}: holds numeric attribute vectors ('class,a1,...'); search by text compares the "
                         "query's words with words: give one description in words per class, a header 'class,text'")
    if store is not None:
        tags = set(_class_counts(store))
        hit = [c for c in classes if c in tags]
        if len(hit) < 2:
            raise ValueError(f"{descriptions}: describes {len(hit)} of the store's tags; training needs at least 2 "
                             f"(its classes: {', '.join(classes[:5])}{', ...' if len(classes) > 5 else ''})")


def _class_counts(store) -> dict:
    """Items per class as a learned model would see them: tags when any item has one, else label names."""
    from collections import Counter

    tag_lists = store.items.column("tags").to_pylist()
    if any(tag_lists):
        return Counter(t for ts in tag_lists for t in dict.fromkeys(ts or ()))
    names = list((store.attrs or {}).get("class_names") or [])
    return Counter(names[v] if v < len(names) else str(v) for v in store.labels().tolist() if v >= 0)


def _usable_tags(store, descriptions, min_items: int = 2) -> str | None:
    """None when at least two classes (tags, else labels) with ``min_items`` items have a description, else why not."""
    tags = [t for t, n in _class_counts(store).items() if n >= min_items]
    if len(tags) < 2:
        return "tag at least two kinds of items (hardneg store tag) to train a model on the tags"
    if descriptions is not None:
        from ._descriptions import read_descriptions_csv

        classes, _ = read_descriptions_csv(descriptions)
        return None if len(set(classes) & set(tags)) >= 2 else f"{descriptions} describes fewer than 2 of the store's tags"
    why = ("its tags have no WordNet noun to describe them: the command line takes a 'class,text' CSV "
           "(hardneg concept search auto STORE --text ... --descriptions FILE)")
    try:
        from hardneg.concept._related import load_wordnet

        from ._descriptions import wordnet_gloss

        wn = load_wordnet()
    except (ImportError, OSError, LookupError, ValueError) as exc:
        return f"its tags cannot be described without WordNet ({str(exc).splitlines()[0]})"
    n = 0
    for t in tags:
        if wordnet_gloss(t, wn) is not None:
            n += 1
            if n >= 2:
                return None
    return why


def check_text_request(store, method: str = "auto", descriptions=None) -> None:
    """The checks that need no training and no WordNet: a one-line ``ValueError`` for a method name,
    a sparse store, descriptions that search by text cannot use, or a forced ConSE on a store it cannot read."""
    if method not in TEXT_METHODS:
        raise ValueError(f"method: expected one of {', '.join(TEXT_METHODS)}, got {method!r}")
    if store.is_sparse:
        raise ValueError(f"{store.path}: search by description needs a dense feature store (CNN features), not bag-of-words")
    if descriptions is not None:
        check_text_descriptions(descriptions, store)
    if "conse" in method.split("+"):
        no_conse = _conse_ready(store)
        if no_conse:
            raise ValueError(no_conse)


def resolve_method(store, method: str = "auto", descriptions=None, file_names: bool = True) -> str:
    """The method ``auto`` stands for on this store (see the module docstring); others are checked.
    ``file_names=False``: as for a store whose file names carry no word."""
    check_text_request(store, method, descriptions)
    if method != "auto":
        return method
    no_conse = _conse_ready(store)
    if no_conse is None:
        from ._file_names import MIN_NAMED_SHARE, store_named_share

        if file_names and store_named_share(store) >= MIN_NAMED_SHARE:
            return AUTO_WITH_NAMES
        if sum(1 for ts in store.items.column("tags").to_pylist() if ts) < 2:
            return "conse"
        return AUTO_WITH_DESCRIBED_TAGS if _usable_tags(store, descriptions) is None else AUTO_WITH_TAGS
    no_tags = _usable_tags(store, descriptions)
    if no_tags is None:
        return "eszsl"
    raise ValueError(f"{no_conse}; or {no_tags}")


def _unit(A: np.ndarray) -> np.ndarray:
    A = np.asarray(A, dtype=np.float32)
    return A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), np.float32(1e-12))


def _zscore(s: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``s`` standardised by its mean and deviation over the rows ``idx``."""
    mu, sd = float(s[idx].mean()), float(s[idx].std())
    return (s - np.float32(mu)) / np.float32(max(sd, 1e-12))


class TextIndex:
    """Every item of a store placed in the space of MiniLM text embeddings (or a trained [Bucher16] model).

    Parameters
    ----------
    vectors : ndarray (n_items, 384) float32 or None
        Unit-norm (or, for ``conse+eszsl``, the sum of two unit-norm) vectors; a query's score
        is ``vectors @ q`` with ``q`` its unit-norm embedding. None for ``bucher16``.
    ids : ndarray (n_items,) of str
    method : str
    key : str
        The cache key it was built for.
    model : fitted ZeroShotClassifier, optional
        ``bucher16`` only: the model that scores the store's rows.
    info : dict, optional
        What it was built from (``n_classes``: the described tags a learned model saw).
    query_offset : ndarray (384,), optional
        Subtracted from a query's embedding before it is normalised (see the module docstring).
    feedback : ndarray (n_items, n_dims), optional
        The items in the feedback space (unit rows), for pseudo-relevance feedback. Saved as
        float16 (half the file), held as float32: NumPy has no BLAS product for float16, and every
        query multiplies the whole array.
    names : ndarray (n_items, 384), optional
        Each item's file-name caption embedded (unit rows; zero for an item whose name has no
        word); a query adds ``NAMES_WEIGHT · names @ q`` to its first ranking. Saved as float16.
    """

    def __init__(self, vectors: np.ndarray | None, ids: Any, method: str, key: str = "", model: Any = None, info: dict | None = None,
                 query_offset: np.ndarray | None = None, feedback: np.ndarray | None = None, names: np.ndarray | None = None):
        self.info = dict(info or {})
        self.vectors = None if vectors is None else np.ascontiguousarray(vectors, dtype=np.float32)
        self.ids = np.asarray(ids).astype(str)
        self.method = method
        self.key = key
        self.model = model
        self.query_offset = None if query_offset is None else np.asarray(query_offset, dtype=np.float32).ravel()
        self.feedback = None if feedback is None else np.ascontiguousarray(feedback, dtype=np.float32)
        if self.feedback is not None and self.feedback.shape[0] != self.ids.size:
            raise ValueError(f"feedback: expected one row per item ({self.ids.size}), got {self.feedback.shape[0]}")
        self.names = None if names is None else np.ascontiguousarray(names, dtype=np.float32)
        if self.names is not None and (self.names.shape[0] != self.ids.size or self.vectors is None
                                       or self.names.shape[1] != self.vectors.shape[1]):
            raise ValueError(f"names: expected one {0 if self.vectors is None else self.vectors.shape[1]}-d row per item "
                             f"({self.ids.size}), got {self.names.shape}")

    def __len__(self) -> int:
        return int(self.ids.size)

    def scores(self, query: Any, data: Any = None, *, rows: Any = None, feedback: bool = True, names: bool = True) -> np.ndarray:
        """The score of every item for one query (larger is closer).

        Parameters
        ----------
        query : array (384,)
            The query's unit-norm embedding.
        data : FeatureStore or array, optional
            The store's rows (``bucher16`` only).
        rows : array of int, optional
            The rows searched: the feedback's best items are taken among them and its z-scores
            computed over them (the other rows' scores are on that scale too).
        feedback : bool, default True
            Apply the index's pseudo-relevance feedback, when it has one (False: the first ranking).
        names : bool, default True
            Add the file-name cosine, when the index has file names (False: without them).

        Returns
        -------
        ndarray (n_items,)
            ``vectors @ query`` (plus ``NAMES_WEIGHT · names @ query``), or ``-S(x, query)``
            ([Bucher16] Eq. (1)) for ``bucher16``; with feedback, ``z(that) + FEEDBACK_WEIGHT ·
            z(feedback @ mean of the best)``.
        """
        q = np.asarray(query, dtype=np.float32).ravel()
        if self.model is not None:
            from ._text_search import TextQueryScorer

            if data is None:
                raise ValueError("data: a bucher16 text index scores the store's rows; pass the store or its matrix")
            X = data.to_numpy() if hasattr(data, "to_numpy") else data
            return TextQueryScorer(self.model, q).decision_function(np.asarray(X, dtype=np.float32))
        if self.vectors is None or q.shape[0] != self.vectors.shape[1] or not np.isfinite(q).all():
            raise ValueError(f"text: expected a finite {0 if self.vectors is None else self.vectors.shape[1]}-d query vector, got {q.shape}")
        s = self.vectors @ (q if self.query_offset is None else _unit((q - self.query_offset)[None, :])[0])
        if names and self.names is not None:  # the raw query: the offset is ConSE's class texts', not the names'
            s += np.float32(self.info.get("names_weight", NAMES_WEIGHT)) * (self.names @ q)
        if not feedback or self.feedback is None:
            return s
        idx = np.arange(len(self)) if rows is None else np.asarray(rows, dtype=np.int64)
        # at most 1 % of the rows searched: the best few of a small set would mix the query's items with others
        m = max(1, min(int(self.info.get("feedback_top", FEEDBACK_TOP)), idx.size // 100))
        best = idx[np.argpartition(-s[idx], m - 1)[:m]]
        centre = _unit(self.feedback[best].mean(axis=0, keepdims=True))[0]
        weight = float(self.info.get("feedback_weight", FEEDBACK_WEIGHT))
        return (_zscore(s, idx) + weight * _zscore(self.feedback @ centre, idx)).astype(np.float32)

    def search(self, text, k: int = 10, *, rows=None, data=None, feedback: bool = True, names: bool = True) -> TopK:
        """The ``k`` items closest to ``text`` (a string, embedded by MiniLM, or a vector), best first.

        Parameters
        ----------
        text : str or array (384,)
        k : int
            At most the number of items searched.
        rows : array of int, optional
            Search only these rows.
        data : FeatureStore or array, optional
            The store's rows (``bucher16`` only).
        feedback, names : bool, default True
            As :meth:`scores`.

        Returns
        -------
        TopK
            ``rows``, ``ids``, ``scores`` (``metric="decision"``), ties by row.
        """
        if isinstance(text, str):
            from ._descriptions import embed_query_text

            q = embed_query_text(text)
        else:
            q = np.asarray(text, dtype=np.float32).ravel()
        n = len(self)
        idx = np.arange(n) if rows is None else np.unique(np.asarray(rows, dtype=np.int64))
        if idx.size and (idx[0] < 0 or idx[-1] >= n):
            raise IndexError(f"rows: out of range for a collection of {n} items")
        k = min(check_positive_int(k, "k"), idx.size)
        if k == 0:
            raise ValueError("data: no rows to search")
        s = self.scores(q, data, rows=None if rows is None else idx, feedback=feedback, names=names)
        res = topk_of(idx, s[idx].astype(np.float64), k, metric="decision").for_query(0)
        res.ids = [str(self.ids[r]) for r in res.rows]
        return res

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> Path:
        """Write the index to a portable ``.npz`` file (a bucher16 index: its model beside it, ``PATH.model.npz``).

        Parameters
        ----------
        path : str or Path
            The file to write (atomically).

        Returns
        -------
        Path
            ``path``.
        """
        path = Path(path)
        if self.model is not None:
            self.model.save(str(path) + ".model.npz")
        arrays = {"ids": self.ids.astype(str)}
        if self.vectors is not None:
            arrays["vectors"] = self.vectors
        if self.query_offset is not None:
            arrays["query_offset"] = self.query_offset
        if self.feedback is not None:
            arrays["feedback"] = self.feedback.astype(np.float16)
        if self.names is not None:
            arrays["names"] = self.names.astype(np.float16)
        return save_model(path, _KIND, _VERSION, arrays, {"method": self.method, "key": self.key, "info": self.info})

    @classmethod
    def load(cls, path: str | os.PathLike) -> "TextIndex":
        """Read an index written by :meth:`save`.

        Parameters
        ----------
        path : str or Path
            A file written by :meth:`save`.

        Returns
        -------
        TextIndex
        """
        arrays, meta = load_model(path, _KIND, {_VERSION}, schema={
            "ids": ArraySpec("U", 1), "vectors": ArraySpec("f", 2, optional=True), "query_offset": ArraySpec("f", 1, optional=True),
            "feedback": ArraySpec("f", 2, optional=True), "names": ArraySpec("f", 2, optional=True)})
        method = meta.get("method")
        model = None
        if method == "bucher16":
            from hardneg._load import load

            model = load(str(path) + ".model.npz")
        elif "vectors" not in arrays or arrays["vectors"].shape[0] != arrays["ids"].shape[0]:
            raise ModelFileError(f"{path}: text index without one vector per item")
        offset, feedback, names = arrays.get("query_offset"), arrays.get("feedback"), arrays.get("names")
        vectors = arrays.get("vectors")
        if (offset is not None and (vectors is None or offset.shape[0] != vectors.shape[1])) or (
                feedback is not None and feedback.shape[0] != arrays["ids"].shape[0]) or (
                names is not None and (vectors is None or names.shape != vectors.shape)):
            raise ModelFileError(f"{path}: text index with a query offset, feedback or name rows of the wrong size")
        return cls(vectors, arrays["ids"], str(method), str(meta.get("key", "")), model, meta.get("info") or {},
                   query_offset=offset, feedback=feedback, names=names)


def _scan(store, fn, progress, rows_per_step: int = 1024) -> np.ndarray:
    """``fn(block, first_row)`` over the store's rows, chunk by chunk, stacked; ``progress(n_rows)`` after each."""
    outs = []
    for first, block in store.iter_chunks(rows_per_step):
        outs.append(fn(np.asarray(block, dtype=np.float32), int(first)))
        if progress is not None:
            progress(int(block.shape[0]))
    return np.concatenate(outs) if outs else np.zeros((0, 384), np.float32)


def build_text_index(store, *, method: str = "auto", descriptions=None, n_top: int = 10, class_text: str = "lemma_definition",
                     progress: Callable[[int], object] | None = None, random_state: int = 0, extras: bool = True,
                     file_names: bool = True) -> TextIndex:
    """Build the text index of a store (no cache; see :func:`open_text_index`).

    Parameters
    ----------
    store : FeatureStore (dense)
    method : {"auto", "conse", "eszsl", "conse+eszsl", "captions", "conse+captions", "conse+eszsl+captions", "bucher16"}
        See the module docstring.
    descriptions : str or Path, optional
        A ``class,text`` CSV describing the tags (learned methods); default each tag's WordNet gloss.
    n_top, class_text
        ConSE's ``T`` and class texts (:class:`~hardneg.zeroshot.ConSE`).
    progress : callable, optional
        ``progress(n_rows)`` as the store's rows are mapped.
    random_state : int
        Seed of the learned models' row sampling and training, and of the sample of rows.
    extras : bool, default True
        ConSE's class prior, the query offset, the pseudo-relevance feedback and the file names
        (see the module docstring); False builds the papers' versions (for comparison).
    file_names : bool, default True
        With ``extras``: use the items' file names as captions when at least
        :data:`~hardneg.zeroshot._file_names.MIN_NAMED_SHARE` of them have words (False: never).

    Returns
    -------
    TextIndex
    """
    from ._conse import ConSE
    from ._eszsl import ESZSL
    from ._text_search import fit_text_search

    method = resolve_method(store, method, descriptions, file_names=extras and file_names)
    BUILDS["n"] += 1
    ids = store.ids()
    if method == "bucher16":
        model = fit_text_search(store, None, descriptions=descriptions, random_state=random_state)
        if progress is not None:
            progress(len(store))
        return TextIndex(None, ids, method, model=model, info={"n_classes": int(model.classes_.size)})
    parts = []
    info: dict = {}
    offset = None
    sample = None
    if extras:  # a sample of rows estimates ConSE's class prior and the feedback space
        n_sample = min(len(store), SAMPLE_ROWS)
        picked = np.sort(np.random.default_rng(random_state).choice(len(store), size=n_sample, replace=False))
        sample = np.asarray(store.take(picked), dtype=np.float32)
    if "conse" in method.split("+"):
        conse = ConSE(n_top=n_top, class_text=class_text, prior_power=CONSE_PRIOR_POWER if extras else 0.0).fit(sample)
        parts.append(lambda X, first: conse.transform(X))
        if extras and method == "conse":
            offset = conse.class_embeddings_.mean(axis=0)
    if "eszsl" in method.split("+"):
        eszsl = fit_text_search(store, None, descriptions=descriptions, estimator=ESZSL(), random_state=random_state)
        info["n_classes"] = int(eszsl.classes_.size)

        def eszsl_vectors(X, first, m=eszsl):
            return (((X - m.mean_) / m.scale_) @ m.V_).astype(np.float32)

        parts.append(eszsl_vectors)
    if "captions" in method.split("+"):
        captioned, model = fit_captions(store)
        info["n_captioned"] = int(captioned.size)
        where = np.full(len(store), -1, np.int64)
        where[captioned] = np.arange(captioned.size)

        def caption_vectors(X, first, m=model):
            return m.transform(X, self_rows=where[first:first + X.shape[0]])

        parts.append(caption_vectors)

    space = _feedback_space(sample, random_state) if sample is not None and sample.shape[0] >= 2 else None
    name_texts = None
    if extras and file_names:
        from ._file_names import MIN_NAMED_SHARE, item_name_texts, store_named_share

        info["named_share"] = share = store_named_share(store)
        if share >= MIN_NAMED_SHARE:
            name_texts = item_name_texts(store)
            info.update(names_weight=NAMES_WEIGHT)

    embedded: dict[str, np.ndarray] = {}  # each distinct name is embedded once, whichever block it is in

    def fn(X, first):
        cols = [np.sum([_unit(f(X, first)) for f in parts], axis=0).astype(np.float32)]
        if name_texts is not None:
            cols.append(_name_vectors(name_texts[first:first + X.shape[0]], embedded))
        if space is not None:
            mean, basis = space
            cols.append(_unit((X - mean) @ basis))
        return np.hstack(cols)

    out = _scan(store, fn, progress)
    n_names = 0 if name_texts is None else _MINILM_DIM
    n_feedback = 0 if space is None else space[1].shape[1]
    n_vectors = out.shape[1] - n_names - n_feedback
    # the extras' rows are rounded to float16 as saved: a built index ranks as the same index read back from its file
    vectors = out[:, :n_vectors]
    names = out[:, n_vectors:n_vectors + n_names].astype(np.float16) if n_names else None
    feedback = out[:, n_vectors + n_names:].astype(np.float16) if n_feedback else None
    if feedback is not None:
        info.update(feedback_top=FEEDBACK_TOP, feedback_weight=FEEDBACK_WEIGHT, feedback_dims=int(feedback.shape[1]))
    return TextIndex(np.ascontiguousarray(vectors), ids, method, info=info, query_offset=offset, feedback=feedback, names=names)


def _name_vectors(texts: list[str | None], embedded: dict[str, np.ndarray]) -> np.ndarray:
    """MiniLM embeddings of file-name captions, zero rows for None; ``embedded`` (text -> float16 row) holds
    the names embedded so far and gains the new ones, so that a name shared by many blocks is embedded once."""
    from ._descriptions import embed_texts

    new = sorted({t for t in texts if t is not None and t not in embedded})
    if new:
        # not the disk cache (the names are kept in the index), and the float graph (index texts, not a one-off query)
        embedded.update(zip(new, embed_texts(new, cache=False).astype(np.float16)))
    out = np.zeros((len(texts), _MINILM_DIM), np.float32)
    for r, t in enumerate(texts):
        if t is not None:
            out[r] = embedded[t]
    return out


def _feedback_space(sample: np.ndarray, random_state: int) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, basis (n_features, k))``: the sample's mean and its top ``k <= FEEDBACK_DIMS`` principal directions."""
    from sklearn.utils.extmath import randomized_svd

    mean = sample.mean(axis=0)
    k = min(FEEDBACK_DIMS, sample.shape[1], sample.shape[0] - 1)
    _, _, Vt = randomized_svd(sample - mean, n_components=k, random_state=random_state)
    return mean.astype(np.float32), np.ascontiguousarray(Vt.T, dtype=np.float32)


def item_captions(tag_lists) -> list[str | None]:
    """Each item's caption for :class:`~hardneg.zeroshot._captions.CaptionKNN`: its tags, in words, joined
    by commas (``"birds, eagle, flying"``); None for an item with no tag."""
    return [", ".join(str(t).replace("_", " ").strip() for t in dict.fromkeys(ts)) if ts else None for ts in tag_lists]


def fit_captions(store) -> tuple[np.ndarray, Any]:
    """``(rows, model)``: the store's tagged rows and a :class:`~hardneg.zeroshot._captions.CaptionKNN`
    fitted on them, each row's caption its tags (:func:`item_captions`) embedded by MiniLM."""
    from ._captions import CaptionKNN
    from ._descriptions import embed_texts

    caps = item_captions(store.items.column("tags").to_pylist())
    rows = np.asarray([r for r, c in enumerate(caps) if c], dtype=np.int64)
    if rows.size < 2:
        raise ValueError("captions: tag at least two items (hardneg store tag) to learn search by description from them")
    C = embed_texts([caps[r] for r in rows.tolist()])
    return rows, CaptionKNN().fit(np.asarray(store.take(rows), dtype=np.float32), C)


def default_cache_dir(store) -> Path:
    """Where a store's text indexes are cached: ``<store>.models/text-index`` beside a local store
    (as the service's models; both then share them), else :func:`text_index_cache_dir`."""
    try:
        local = Path(str(store.path))
        if local.is_dir():
            folder = local.resolve().with_name(local.resolve().name + ".models") / "text-index"
            probe = folder if folder.exists() else folder.parent if folder.parent.exists() else folder.parent.parent
            if os.access(probe, os.W_OK):
                return folder
    except (OSError, TypeError, ValueError):
        pass
    return text_index_cache_dir()


def text_index_file(store, *, method: str = "auto", descriptions=None, n_top: int = 10, class_text: str = "lemma_definition",
                    cache_dir=None, random_state: int = 0, file_names: bool = True) -> tuple[Path, str, str]:
    """``(path, key, method)``: where the store's index for these settings is cached, its key, and the method asked for.

    The key is a digest of the store's content fingerprint (:func:`store_fingerprint`), the
    method (``auto`` included: what it resolves to is a function of the store's content) and
    its settings, and the descriptions file's bytes. Bad descriptions are refused here, before any work.
    """
    check_text_request(store, method, descriptions)
    # keyed by the method asked for: resolving "auto" reads WordNet, which a cached query must not wait for
    spec = {"algorithm": _ALGORITHM, "store": store_fingerprint(store), "method": method,
            "descriptions": None if descriptions is None else _file_digest(descriptions), "seed": int(random_state),
            "file_names": bool(file_names)}
    if method == "auto" or "conse" in method.split("+"):
        spec.update(n_top=int(n_top), class_text=class_text)
    key = hashlib.blake2b(json.dumps(spec, sort_keys=True).encode(), digest_size=16).hexdigest()
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir(store)
    return folder / f"{key}.npz", key, method


def cached_text_index(store, **settings) -> TextIndex | None:
    """The cached index for these settings (as :func:`open_text_index`), or None when it must be built."""
    path, key, _ = text_index_file(store, **settings)
    if not path.is_file():
        return None
    try:
        index = TextIndex.load(path)
    except (ModelFileError, OSError, ValueError) as exc:
        logger.warning("text index cache %s unreadable (%s); it will be built again", path, exc)
        return None
    if index.key != key or not np.array_equal(index.ids, store.ids().astype(str)):
        return None
    return index


def open_text_index(store: Any, *, method: str = "auto", descriptions: str | os.PathLike | None = None, n_top: int = 10,
                    class_text: str = "lemma_definition", cache_dir: str | os.PathLike | None = None, progress: Callable[[int], object] | None = None,
                    random_state: int = 0, file_names: bool = True) -> tuple[TextIndex, bool]:
    """The store's text index from the cache, or built and cached: ``(index, built)``.

    The first query after the store changes (vectors, items or tags) builds a new index
    (:func:`text_index_file` names it); every later one reads it.

    Parameters
    ----------
    store, method, descriptions, n_top, class_text, progress, random_state, file_names
        As :func:`build_text_index`.
    cache_dir : str or Path, optional
        Default :func:`default_cache_dir`.

    Returns
    -------
    index : TextIndex
    built : bool
        True when it was built by this call.
    """
    settings: dict[str, Any] = {"method": method, "descriptions": descriptions, "n_top": n_top, "class_text": class_text,
                "cache_dir": cache_dir, "random_state": random_state, "file_names": file_names}
    index = cached_text_index(store, **settings)
    if index is not None:
        return index, False
    path, key, _ = text_index_file(store, **settings)
    index = build_text_index(store, method=method, descriptions=descriptions, n_top=n_top, class_text=class_text,
                             progress=progress, random_state=random_state, file_names=file_names)
    index.key = key
    path.parent.mkdir(parents=True, exist_ok=True)
    index.save(path)
    return index, True
