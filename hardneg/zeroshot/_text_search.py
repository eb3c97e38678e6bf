"""Search by description: rank a collection against free text with a zero-shot model.

A zero-shot model ([Bucher16], or ESZSL) trained on a store's tagged classes,
each described by text (a CSV, or the WordNet gloss of its name) embedded by
all-MiniLM-L6-v2, compares any image with any vector of that text space. A
query text embedded the same way is one more "class description": every row
is scored by the model's compatibility with it — ``-S(X, Y)`` of
[Bucher16] Eq. (1) (negated, so that larger is closer), or ``xᵀ V s`` for
ESZSL — and the top ``k`` come back as a :class:`hardneg.TopK`, by the same
store scan as concept search (:func:`hardneg.concept.search`: chunk by chunk,
in process or on a Dask cluster).

Examples
--------
>>> import numpy as np
>>> from hardneg.zeroshot import ESZSL
>>> from hardneg.zeroshot._text_search import fit_text_search, text_search
>>> rng = np.random.default_rng(0)
>>> D = rng.normal(size=(10, 5)); y = np.repeat(np.arange(10), 20)   # 10 classes, 5-d descriptions
>>> X = D[y] @ rng.normal(size=(5, 20)) + 0.05 * rng.normal(size=(200, 20))
>>> tags = [[f"c{c}"] for c in y]
>>> model = fit_text_search(X[y < 8], [t for t, c in zip(tags, y) if c < 8],
...                         descriptions={f"c{c}": D[c] for c in range(8)}, estimator=ESZSL())
>>> res = text_search(model, X, D[9], k=10)   # unseen class 9's vector; a str is embedded by MiniLM
>>> bool((y[res.rows] == 9).all()), res.metric
(True, 'decision')
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from hardneg._topk import TopK, topk_of
from hardneg._typing import ArrayLike
from hardneg._validation import check_positive_int
from .._parallel._partition import is_store

__all__ = ["TextQueryScorer", "fit_text_search", "store_classes", "text_search"]

logger = logging.getLogger(__name__)


class TextQueryScorer:
    """One query vector as a ``decision_function`` over images (larger is closer), for the store scans.

    ``-S(X, q)`` ([Bucher16] Eq. (1)) for a :class:`ZeroShotClassifier`; ``xᵀ V q`` for ESZSL
    (any model whose ``decision_function(X, class_attributes)`` is a compatibility).
    """

    def __init__(self, model, query):
        self.model = model
        self.query = np.asarray(query, dtype=np.float32).reshape(1, -1)
        self.n_features_in_ = getattr(model, "n_features_in_", None)

    def decision_function(self, X) -> np.ndarray:
        if callable(getattr(self.model, "distances", None)):  # a metric model: smaller S is closer
            return -np.asarray(self.model.distances(X, self.query), dtype=np.float64)[:, 0]
        return np.asarray(self.model.decision_function(X, class_attributes=self.query), dtype=np.float64)[:, 0]


def store_classes(store, *, source: str = "auto", min_items: int = 2, max_per_class: int | None = None,
                  rows=None, random_state=0):
    """The (row, class) training pairs of a store's tagged or labelled items.

    Parameters
    ----------
    store : FeatureStore
    source : {"auto", "tags", "labels"}
        ``"tags"``: every tag is a class and an item with several tags counts once for each;
        ``"labels"``: the single labels (named by the store's ``class_names`` where it has them);
        ``"auto"``: tags when any item has one, else labels.
    min_items : int
        Classes with fewer items are left out.
    max_per_class : int, optional
        At most this many items per class (a seeded random subset), to bound training time.
    rows : array of int, optional
        Only these rows (e.g. a train split).

    Returns
    -------
    rows : ndarray (n_pairs,) int64
    y : ndarray (n_pairs,) of str
    """
    if source not in ("auto", "tags", "labels"):
        raise ValueError(f"source: expected 'auto', 'tags' or 'labels', got {source!r}")
    allowed = None if rows is None else set(np.asarray(rows, dtype=np.int64).tolist())
    tag_lists = store.items.column("tags").to_pylist()
    if source == "auto":
        source = "tags" if any(tag_lists) else "labels"
    by_class: dict[str, list[int]] = {}
    if source == "tags":
        for r, tags in enumerate(tag_lists):
            if allowed is None or r in allowed:
                for t in dict.fromkeys(tags or ()):
                    by_class.setdefault(str(t), []).append(r)
    else:
        names = list(store.attrs.get("class_names") or [])
        for r, lab in enumerate(store.labels().tolist()):
            if lab >= 0 and (allowed is None or r in allowed):
                by_class.setdefault(names[lab] if lab < len(names) else str(lab), []).append(r)
    rng = np.random.default_rng(random_state)
    out_rows, out_y = [], []
    for c in sorted(by_class):
        rs = np.asarray(by_class[c], dtype=np.int64)
        if rs.size < min_items:
            continue
        if max_per_class is not None and rs.size > max_per_class:
            rs = np.sort(rng.choice(rs, size=max_per_class, replace=False))
        out_rows.append(rs)
        out_y.extend([c] * rs.size)
    if not out_rows:
        raise ValueError(f"store: no {source[:-1]} has {min_items} or more items; tag the items (`hardneg store tag`) "
                         "or give a model file")
    return np.concatenate(out_rows), np.asarray(out_y, dtype=str)


def _descriptions_table(classes, descriptions) -> dict:
    """``{class: vector}`` for the classes that have a description (others left out, logged)."""
    from ._descriptions import class_descriptions

    if isinstance(descriptions, dict):
        table = {str(c): np.asarray(v, dtype=np.float32) for c, v in descriptions.items()}
        return {c: table[c] for c in classes if c in table}
    V = class_descriptions(classes, csv=descriptions, missing="nan")
    keep = np.isfinite(V).all(axis=1)
    dropped = [c for c, k in zip(classes, keep) if not k]
    if dropped:
        logger.warning("no description for %d classes, left out of training: %s", len(dropped), ", ".join(dropped[:20]))
    return {c: V[i] for i, c in enumerate(classes) if keep[i]}


def fit_text_search(X: Any, classes: list[list[str]] | None, *, descriptions: Any = None, estimator: Any = None,
                    source: str = "auto", min_items: int = 2, max_per_class: int | None = 200, rows: ArrayLike | None = None,
                    random_state: int | np.random.Generator | None = 0) -> Any:
    """Train a zero-shot model whose class attributes are the classes' description vectors.

    Parameters
    ----------
    X : FeatureStore, or array (n, d)
        The images. For a store, the training classes are its tags or labels
        (:func:`store_classes`); ``classes`` must then be None.
    classes : list of lists of str, or None
        For an array: each row's classes (tags); a row may have several or none.
    descriptions : str / Path (a CSV), dict ``{class: vector}``, or None
        A descriptions file (:func:`hardneg.zeroshot.read_descriptions_csv`:
        texts embedded by MiniLM, or attribute vectors), given vectors, or
        None for the WordNet gloss of each class name. Classes with no
        description are left out (logged); at least 2 must remain.
    estimator : unfitted zero-shot estimator, optional
        Default ``ZeroShotClassifier(sampler="uncertainty", n_negatives=2,
        random_state=random_state)``, trained to its stopping rule ([Bucher16] Eq. (8)); ``ESZSL()`` is the closed-form alternative.
    source, min_items, max_per_class, rows
        How classes are read from a store (:func:`store_classes`); ``max_per_class`` also
        caps the rows per class of an array.
    random_state : None, int or Generator
        Seed of the row sampling and of the default estimator.

    Returns
    -------
    The fitted estimator (a :class:`ZeroShotClassifier` saves with ``save`` and opens with
    :func:`hardneg.load`).
    """

    from ._classifier import ZeroShotClassifier

    min_items = check_positive_int(min_items, "min_items")
    if is_store(X):
        if classes is not None:
            raise ValueError("classes: a store's classes are its tags or labels; give classes=None")
        if X.is_sparse:
            raise ValueError(f"{X.path}: search by description needs a dense feature store")
        pair_rows, y = store_classes(X, source=source, min_items=min_items, max_per_class=max_per_class, rows=rows,
                                     random_state=random_state)
        uniq, inv = np.unique(pair_rows, return_inverse=True)
        feats = np.asarray(X.take(uniq), dtype=np.float32)[inv]
    else:
        data = np.asarray(X, dtype=np.float32)
        if data.ndim != 2:
            raise ValueError(f"X: expected a 2-D array (n, d), got shape {data.shape}")
        if classes is None or len(classes) != data.shape[0]:
            raise ValueError(f"classes: expected one list of classes per row of X ({data.shape[0]}), "
                             f"got {None if classes is None else len(classes)}")
        pairs = [(r, str(c)) for r, cs in enumerate(classes) for c in ([cs] if isinstance(cs, str) else cs or ())]
        counts = Counter(c for _, c in pairs)
        rng = np.random.default_rng(random_state)
        kept: list[tuple[int, str]] = []
        for c in sorted(counts):
            if counts[c] < min_items:
                continue
            rs = [r for r, cc in pairs if cc == c]
            if max_per_class is not None and len(rs) > max_per_class:
                rs = sorted(rng.choice(rs, size=max_per_class, replace=False).tolist())
            kept.extend((r, c) for r in rs)
        if not kept:
            raise ValueError(f"classes: no class has {min_items} or more rows")
        feats = data[[r for r, _ in kept]]
        y = np.asarray([c for _, c in kept], dtype=str)
    table = _descriptions_table(sorted(set(y.tolist())), descriptions)
    if len(table) < 2:
        raise ValueError(f"descriptions: {len(table)} class(es) with a description; training needs at least 2 "
                         "(give a CSV with --descriptions / descriptions=)")
    keep = np.isin(y, list(table))
    est = estimator if estimator is not None else ZeroShotClassifier(sampler="uncertainty", n_negatives=2,
                                                                      random_state=random_state)
    logger.info("training %s on %d images of %d described classes", type(est).__name__, int(keep.sum()), len(table))
    return est.fit(feats[keep], y[keep], table)


def text_search(model: Any, data: Any, text: str, k: int = 10, *, rows: ArrayLike | None = None, chunk_rows: int | None = None,
                runner: Any = None, progress: Callable[[int], object] | None = None) -> TopK:
    """Rank the rows of ``data`` by a zero-shot model's compatibility with a text query.

    Parameters
    ----------
    model : fitted ZeroShotClassifier or ESZSL, or the path of a saved ZeroShotClassifier
        Trained on description vectors of the space of ``text``'s embedding
        (:func:`fit_text_search`, or ``hardneg zsl train`` on a store).
    data : FeatureStore (dense) or array (n, d)
    text : str, or array (n_attributes,)
        Free text, embedded by all-MiniLM-L6-v2 (:func:`hardneg.zeroshot.embed_query_text`),
        or a description vector given directly.
    k : int
        Number of results (at most the rows searched).
    rows : array of int, optional
        Search only these rows.
    chunk_rows, runner, progress
        As :func:`hardneg.concept.search` (a store is scanned chunk by chunk, in process or on Dask).

    Returns
    -------
    TopK
        ``(k,)`` arrays ``rows``, ``ids``, ``scores`` (``metric="decision"``: ``-S`` of
        [Bucher16] Eq. (1), or ESZSL's ``xᵀ V s``), best first, ties by row.
    """

    if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
        from hardneg._load import load

        model = load(model)
    if not hasattr(model, "prototypes_"):
        raise TypeError(f"model: expected a fitted zero-shot model (ZeroShotClassifier or ESZSL), got {type(model).__name__}")
    n_attr = model.prototypes_.shape[1]
    if isinstance(text, str):
        from ._descriptions import embed_query_text

        q = embed_query_text(text)
    else:
        q = np.asarray(text, dtype=np.float32).ravel()
    if q.shape[0] != n_attr or not np.isfinite(q).all():
        raise ValueError(f"text: the model compares images with {n_attr}-d description vectors, the query is "
                         f"{q.shape[0]}-d{'' if isinstance(text, str) else ' (or not finite)'}; "
                         "use a model trained on text descriptions (MiniLM, 384-d)")
    scorer = TextQueryScorer(model, q)
    if is_store(data):
        from hardneg.concept import search

        if data.is_sparse:
            raise ValueError(f"{data.path}: search by description needs a dense feature store")
        return search(scorer, data, k, rows=rows, chunk_rows=chunk_rows, runner=runner, progress=progress)
    X = np.asarray(data, dtype=np.float32)
    if X.ndim != 2:
        raise ValueError(f"data: expected a 2-D array (n, d), got shape {X.shape}")
    idx = np.arange(X.shape[0]) if rows is None else np.unique(np.asarray(rows, dtype=np.int64))
    if idx.size and (idx[0] < 0 or idx[-1] >= X.shape[0]):
        raise IndexError(f"rows: out of range for a collection of {X.shape[0]} items")
    k = min(check_positive_int(k, "k"), idx.size)
    if k == 0:
        raise ValueError("data: no rows to search")
    res = topk_of(idx, scorer.decision_function(X[idx]), k, metric="decision").for_query(0)
    if progress is not None:
        progress(int(idx.size))
    res.ids = [str(int(r)) for r in res.rows]
    return res
