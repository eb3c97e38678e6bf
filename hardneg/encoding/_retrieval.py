"""Query-by-example scores with exemplar-SVM encodings: symmetric and asymmetric."""

from __future__ import annotations

import numpy as np

from hardneg._typing import ArrayLike

__all__ = ["asymmetric_scores", "esvm_search", "symmetric_scores"]


def _rows(A, name):
    A = np.asarray(A, dtype=np.float32)
    if A.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array, got shape {A.shape}")
    return A


def symmetric_scores(query_codes: ArrayLike, database_codes: ArrayLike) -> np.ndarray:
    """``s_j = w_j . w°`` (Zepeda & Pérez 2015): both sides encoded; shape (n_query, n_database).

    Parameters
    ----------
    query_codes : array-like of shape (n_query, n_features)
        Encoded queries ``w°``.
    database_codes : array-like of shape (n_database, n_features)
        Encoded database items ``w_j``.

    Returns
    -------
    ndarray of shape (n_query, n_database)
        Dot products; higher is more similar.

    Raises
    ------
    ValueError
        If the two sides have different dimensions.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.encoding import symmetric_scores
    >>> symmetric_scores(np.eye(2), np.array([[1.0, 0.0], [0.6, 0.8]])).tolist()
    [[1.0, 0.6000000238418579], [0.0, 0.800000011920929]]
    """
    q, db = _rows(query_codes, "query_codes"), _rows(database_codes, "database_codes")
    if q.shape[1] != db.shape[1]:
        raise ValueError(f"query codes have {q.shape[1]} dimensions, database codes {db.shape[1]}")
    return q @ db.T


def asymmetric_scores(query_codes: ArrayLike, database_features: ArrayLike) -> np.ndarray:
    """``s_j = x_j . w°`` (Malisiewicz et al. 2011): raw database features; shape (n_query, n_database).

    Parameters
    ----------
    query_codes : array-like of shape (n_query, n_features)
        Encoded queries ``w°``.
    database_features : array-like of shape (n_database, n_features)
        Raw (not encoded) database features ``x_j``.

    Returns
    -------
    ndarray of shape (n_query, n_database)
        Dot products; higher is more similar.

    Raises
    ------
    ValueError
        If the two sides have different dimensions.
    """
    q, db = _rows(query_codes, "query_codes"), _rows(database_features, "database_features")
    if q.shape[1] != db.shape[1]:
        raise ValueError(f"query codes have {q.shape[1]} dimensions, database features {db.shape[1]}")
    return q @ db.T


def esvm_search(encoder, store, queries, k: int = 10, *, mode: str = "symmetric", codes=None, runner=None,
                chunk_rows: int = 8192, progress=None):
    """Query by example with exemplar SVMs: the ``k`` database items scored highest by each query's E-SVM.

    Each query (a raw feature row) is encoded by ``encoder`` (its exemplar SVM ``w°``) and the
    database is scanned for the largest inner products, in this process or on a Dask cluster
    (``runner``): ``symmetric`` scores ``s_j = w_j . w°`` against the database's own codes
    (``codes``: the store written by :func:`hardneg.encoding.encode_store` from ``store``, at its
    recorded level), ``asymmetric`` scores ``s_j = x_j . w°`` against the raw features.

    Parameters
    ----------
    encoder : fitted ESVMEncoder
    store : FeatureStore of the database's raw features
    queries : array (n_queries, d) of raw features
    k : int
        At most the database size.
    mode : {"symmetric", "asymmetric"}
    codes : FeatureStore or path, optional
        The database's codes (``symmetric`` only; checked against the encoder's fingerprint).
    runner, chunk_rows, progress
        Where the scan runs, rows scored at a time, ``progress(n_rows)`` per partition.

    Returns
    -------
    TopK
        ``ids``, ``rows`` and ``scores`` (``metric="ip"``) of shape (n_queries, k), best first, ties by row.
    """
    from ..index._flat import knn_topk
    from ..store import FeatureStore

    if mode not in ("symmetric", "asymmetric"):
        raise ValueError(f"mode: expected symmetric or asymmetric, got {mode!r}")
    if store.dim != encoder.n_features_in_:
        raise ValueError(f"{store.path} has {store.dim} features but the encoder was fitted on {encoder.n_features_in_}")
    if mode == "symmetric":
        if codes is None:
            raise ValueError("codes: symmetric mode needs the database encoded by encode_store (`hardneg esvm encode`)")
        db = codes if isinstance(codes, FeatureStore) else FeatureStore.open(codes)
        if len(db) != len(store) or db.dim != store.dim or (db.ids() != store.ids()).any():
            raise ValueError(f"codes {db.path}: does not hold the encodings of {store.path} (rows or ids differ)")
        # the same ids are not enough (the raw features, another encoder's codes): the stamp of encode_store says who wrote them
        stamp = (db.attrs or {}).get("esvm")
        if not isinstance(stamp, dict) or stamp.get("fingerprint") != encoder.fingerprint():
            why = "no E-SVM encoder stamp in its attrs" if not isinstance(stamp, dict) else "another encoder's fingerprint"
            raise ValueError(f"codes {db.path}: was not encoded by this encoder ({why}); encode the database with it first")
        level = stamp.get("n_recursions")
        if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= len(encoder.pools_):
            raise ValueError(f"codes {db.path}: records level {level!r}, not one of the 1..{len(encoder.pools_)} of the encoder")
    else:
        db, level = store, None
    q = queries.toarray() if hasattr(queries, "toarray") else np.asarray(queries)
    w = encoder.transform(q, n_recursions=level)  # queries at the level of the codes
    # the database scan: inner products of the query codes with every row, top k (ties by row)
    return knn_topk(db, np.ascontiguousarray(w, np.float32), min(k, len(db)), metric="ip", block_rows=chunk_rows,
                    runner=runner, progress=progress)
