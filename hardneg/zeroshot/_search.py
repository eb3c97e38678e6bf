"""Zero-shot search: rank the items of a FeatureStore by S to an attribute vector."""

from __future__ import annotations

import numpy as np

from hardneg._validation import check_positive_int

__all__ = ["zero_shot_search"]


def zero_shot_search(model, store, query, k: int = 10, *, chunk_rows: int | None = None, rows=None):
    """The ``k`` items of ``store`` closest to ``query`` by ``S`` (Eq. 1), read chunk by chunk.

    Parameters
    ----------
    model : fitted ZeroShotClassifier
    store : hardneg.store.FeatureStore (dense) or array (n, d)
    query : array-like (n_attributes,) or str
        An attribute vector, or a class description (embedded with the sentence
        model of :func:`hardneg.zeroshot.embed_texts`; only meaningful for a model
        trained on such embeddings).
    k : int
    chunk_rows : int, optional
        Rows per read (default: the store's chunk size).
    rows : array-like of int, optional
        Search only these rows.

    Returns
    -------
    rows : ndarray (k,) item rows, closest first
    distances : ndarray (k,) their ``S``

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.zeroshot import ZeroShotClassifier, zero_shot_search
    >>> rng = np.random.default_rng(0)
    >>> attrs = rng.random((4, 5)); y = np.repeat(np.arange(4), 20)
    >>> X = attrs[y] @ rng.normal(size=(5, 12)) + 0.05 * rng.normal(size=(80, 12))
    >>> clf = ZeroShotClassifier(n_epochs=20, m=8, random_state=0).fit(X, y, attrs)
    >>> top, dist = zero_shot_search(clf, X, attrs[2], k=5)
    >>> bool((y[top] == 2).all()), bool((np.diff(dist) >= 0).all())
    (True, True)
    """
    if isinstance(query, str):
        from ._protocols import embed_texts

        query = embed_texts([query])[0]
    q = np.asarray(query, dtype=np.float32).reshape(1, -1)
    if q.shape[1] != model.prototypes_.shape[1] or not np.isfinite(q).all():
        raise ValueError(f"query: expected a finite attribute vector of length {model.prototypes_.shape[1]}, got shape {np.shape(query)}")
    if hasattr(store, "iter_chunks"):
        if store.is_sparse:
            raise ValueError("store: zero-shot search needs a dense feature store")
        n = len(store) if rows is None else len(rows)
        k = min(check_positive_int(k, "k"), n)
        if rows is None:
            chunks = store.iter_chunks(chunk_rows)
        else:
            rows = np.asarray(rows, dtype=np.int64)
            step = chunk_rows or store.chunk_rows
            chunks = ((rows[s : s + step], store.take(rows[s : s + step])) for s in range(0, rows.size, step))
    else:
        X = np.asarray(store)
        n = X.shape[0]
        k = min(check_positive_int(k, "k"), n)
        chunks = iter([(0, X)])
    best_rows = np.empty(0, dtype=np.int64)
    best_d = np.empty(0)
    for first, block in chunks:
        d = model.distances(block, q)[:, 0]
        ids = np.arange(first, first + len(d)) if np.isscalar(first) or np.ndim(first) == 0 else np.asarray(first)
        best_rows = np.concatenate([best_rows, ids])
        best_d = np.concatenate([best_d, d])
        if best_d.size > k:
            keep = np.argpartition(best_d, k - 1)[:k]
            best_rows, best_d = best_rows[keep], best_d[keep]
    order = np.lexsort((best_rows, best_d))
    return best_rows[order], best_d[order]
