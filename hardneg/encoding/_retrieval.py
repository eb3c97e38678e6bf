"""Query-by-example scores with exemplar-SVM encodings: symmetric and asymmetric."""

from __future__ import annotations

import numpy as np

__all__ = ["asymmetric_scores", "symmetric_scores"]


def _rows(A, name):
    A = np.asarray(A, dtype=np.float32)
    if A.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array, got shape {A.shape}")
    return A


def symmetric_scores(query_codes, database_codes) -> np.ndarray:
    """``s_j = w_j . w°`` (Zepeda & Pérez 2015): both sides encoded; shape (n_query, n_database).

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


def asymmetric_scores(query_codes, database_features) -> np.ndarray:
    """``s_j = x_j . w°`` (Malisiewicz et al. 2011): raw database features; shape (n_query, n_database)."""
    q, db = _rows(query_codes, "query_codes"), _rows(database_features, "database_features")
    if q.shape[1] != db.shape[1]:
        raise ValueError(f"query codes have {q.shape[1]} dimensions, database features {db.shape[1]}")
    return q @ db.T
