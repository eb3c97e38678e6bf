"""An inverted index over sparse bag-of-words vectors with learned diagonal weights.

Posting lists are the columns of a CSC matrix over the indexed rows (one
column per word, ``scipy.sparse``), holding ``w_j x_ij``. Words whose weight
is zero get no posting list at all, so a sparse SOLIS model makes the index
smaller and a query cheaper: the score of item ``i`` for query ``q`` is

    s(q, x_i) = Σ_{j : q_j != 0, w_j != 0} q_j w_j x_ij

(Gao, Hoi et al., TIST 2017, Figs. 3-6). Query and item vectors first go
through the model's input transform (idf weighting and l2 normalization for
TF-IDF, identity for a model learned on the vectors as stored). The index
saves to one portable ``.npz`` through :mod:`hardneg._persist`.
"""

from __future__ import annotations

import logging
import numbers
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from hardneg._persist import ArraySpec, ModelFileError, load_model, save_model
from hardneg._typing import ArrayLike
from hardneg._validation import check_k

__all__ = ["InvertedIndex"]

logger = logging.getLogger(__name__)

_KIND = "hardneg.InvertedIndex"
_VERSION = 1
_SCHEMA = {
    "indptr": ArraySpec("iu", 1),
    "indices": ArraySpec("iu", 1),
    "data": ArraySpec("f", 1),
    "weights": ArraySpec("f", 1),
    "ids": ArraySpec("US", 1),
    "idf": ArraySpec("f", 1, optional=True),
}
_MAX_VALUE = 1e30  # no honest weight or posting is larger; beyond it scores overflow


@numba.njit(cache=True, nogil=True)
def _accumulate(q_cols, q_vals, indptr, indices, data, scores):
    """``scores[i] += q_j * (w_j x_ij)`` over the posting lists of the query's words:
    O(entries of those lists), no intermediate (queries x items) sparse product."""
    for a in range(q_cols.shape[0]):
        c = q_cols[a]
        v = q_vals[a]
        for p in range(indptr[c], indptr[c + 1]):
            scores[indices[p]] += v * data[p]


def _meta_count(meta: dict, key: str) -> int:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{key} must be a non-negative integer, got {value!r}")
    return int(value)


def _transform(X, n_words, idf, l2, name):
    from hardneg.similarity import tfidf_transform
    from hardneg.similarity._checks import check_bow

    return tfidf_transform(check_bow(X, name, n_features=n_words), idf, l2)


class InvertedIndex:
    """Top-k search by a diagonal similarity through posting lists.

    Parameters
    ----------
    weights : array-like (n_words,)
        The diagonal ``w`` (e.g. a SOLIS model's ``w_``; all ones for TF-IDF).
    idf : array-like (n_words,), optional
        Per-word factor applied to queries and items before scoring.
    l2 : bool
        l2-normalize queries and items (after ``idf``) before scoring.
    meta : dict, optional
        Free-form metadata saved with the index (e.g. the model it came from).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from hardneg.index import InvertedIndex
    >>> X = sp.csr_matrix(np.array([[1.0, 0, 2], [0, 1.0, 1], [3.0, 0, 0]]))
    >>> index = InvertedIndex([1.0, 0.0, 0.5])       # word 1 has no posting list
    >>> index.add(X, ids=["a", "b", "c"])
    >>> res = index.search(X[:1], k=2)                # a tie: broken by row
    >>> res.ids.tolist(), res.scores.tolist(), index.n_postings
    ([['a', 'c']], [[3.0, 3.0]], 4)
    """

    def __init__(self, weights: ArrayLike, *, idf: ArrayLike | None = None, l2: bool = False, meta: dict | None = None):
        w = np.asarray(weights, np.float64)
        if w.ndim != 1 or w.size == 0 or not np.isfinite(w).all():
            raise ValueError(f"weights: expected a finite 1-D vector over the vocabulary, got shape {w.shape}")
        self.weights = w
        self.idf = None if idf is None else np.asarray(idf, np.float32)
        if self.idf is not None and self.idf.shape != w.shape:
            raise ValueError(f"idf: has shape {self.idf.shape}, weights {w.shape}")
        self.l2 = bool(l2)
        self.meta = dict(meta or {})
        self.active = np.flatnonzero(w != 0.0)  # words that get a posting list
        self._blocks: list[sp.csr_matrix] = []
        self._ids: list[np.ndarray] = []
        self._postings: sp.csc_matrix = sp.csc_matrix((0, self.active.size), dtype=np.float32)

    @property
    def n_words(self) -> int:
        """Vocabulary size (length of ``weights``)."""
        return int(self.weights.shape[0])

    def __len__(self) -> int:
        return int(self.postings.shape[0])

    @property
    def postings(self) -> sp.csc_matrix:
        """``(n_items, n_active_words)`` CSC: column ``c`` is the posting list of word ``active[c]``."""
        if self._blocks:
            parts = ([self._postings] if self._postings.shape[0] else []) + self._blocks
            self._postings = sp.csc_matrix(sp.vstack(parts, format="csr"), dtype=np.float32)
            self._postings.sort_indices()
            self._blocks = []
        return self._postings

    @property
    def n_postings(self) -> int:
        """Entries over all posting lists."""
        return int(self.postings.nnz)

    @property
    def ids(self) -> np.ndarray:
        """Item ids of the indexed rows, in the order added (str array of shape (n_items,))."""
        if len(self._ids) > 1:
            self._ids = [np.concatenate(self._ids)]
        return self._ids[0] if self._ids else np.zeros(0, dtype=str)

    @classmethod
    def from_model(cls, model: Any, meta: dict | None = None) -> InvertedIndex:
        """An empty index with a fitted diagonal model's weights and input transform.

        Parameters
        ----------
        model : DiagonalSimilarity
            A fitted diagonal model (``index_weights()``; ``input_idf_`` and ``input_l2_``
            when it has an input transform).
        meta : dict or None, default=None
            Free metadata saved with the index.

        Returns
        -------
        InvertedIndex
            An index holding no rows yet.
        """
        return cls(model.index_weights(), idf=getattr(model, "input_idf_", None), l2=getattr(model, "input_l2_", False), meta=meta)

    def add(self, X: ArrayLike, ids: ArrayLike | None = None) -> None:
        """Append rows (raw bag-of-words; the input transform is applied here).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_rows, n_words)
            Non-negative bag-of-words rows.
        ids : array-like of str, shape (n_rows,), or None, default=None
            Their item ids; None numbers them on from the rows already held.
        """
        X = _transform(X, self.n_words, self.idf, self.l2, "X")
        if ids is None:
            start = self._n_pending()
            ids = np.arange(start, start + X.shape[0]).astype(str)
        ids = np.asarray(ids).astype(str)
        if ids.shape != (X.shape[0],):
            raise ValueError(f"ids: expected {X.shape[0]} ids, got shape {ids.shape}")
        if X.shape[0]:
            block = X[:, self.active] @ sp.diags(self.weights[self.active].astype(np.float32))
            block = sp.csr_matrix(block, dtype=np.float32)
            block.eliminate_zeros()
            self._blocks.append(block)
            self._ids.append(ids)

    def _n_pending(self) -> int:
        return int(self._postings.shape[0]) + sum(b.shape[0] for b in self._blocks)

    def scores(self, Q: ArrayLike) -> np.ndarray:
        """Dense ``(n_queries, n_items)`` scores (for small collections and tests).

        Parameters
        ----------
        Q : {array-like, sparse matrix} of shape (n_queries, n_words)
            Raw bag-of-words queries.

        Returns
        -------
        ndarray of float64, shape (n_queries, n_items)
            Score of every item for every query.
        """
        Q = _transform(Q, self.n_words, self.idf, self.l2, "queries")
        return np.asarray((Q[:, self.active] @ self.postings.T).todense(), np.float64)

    def rank(self, Q: ArrayLike, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows ``(int64 (n, k), float64 scores (n, k))``, best first; ties by row.

        Parameters
        ----------
        Q : {array-like, sparse matrix} of shape (n, n_words)
            Raw bag-of-words queries.
        k : int
            Items per query, at most the number of items held.

        Returns
        -------
        rows : ndarray of int64, shape (n, k)
            Index rows, best first.
        scores : ndarray of float64, shape (n, k)
            Their scores.
        """
        n = len(self)
        if n == 0:
            raise ValueError("the index is empty; add rows first")
        k = check_k(k, n)
        Q = sp.csr_matrix(_transform(Q, self.n_words, self.idf, self.l2, "queries")[:, self.active])
        P = self.postings  # CSC: column c is the posting list of word active[c]
        indptr, indices, data = P.indptr.astype(np.int64, copy=False), P.indices, P.data
        rows = np.empty((Q.shape[0], k), np.int64)
        out = np.empty((Q.shape[0], k), np.float64)
        s = np.zeros(n, np.float64)
        for r in range(Q.shape[0]):
            lo, hi = Q.indptr[r], Q.indptr[r + 1]
            s[:] = 0.0
            _accumulate(Q.indices[lo:hi].astype(np.int64), Q.data[lo:hi].astype(np.float64), indptr, indices, data, s)
            kth = np.partition(s, n - k)[n - k]
            above = np.flatnonzero(s > kth)
            # the ties with the k-th fill the rest in row order (flatnonzero is sorted): with sparse
            # weights most items score 0, and sorting all of those ties per query cost more than the walk
            cand = np.concatenate([above, np.flatnonzero(s == kth)[: k - above.size]])
            order = np.lexsort((cand, -s[cand]))
            rows[r], out[r] = cand[order], s[cand[order]]
        return rows, out

    def search(self, Q: ArrayLike, k: int):
        """Top-``k`` items of each query: a :class:`~hardneg.TopK` with ``ids``, ``rows`` and
        ``scores`` (``metric="similarity"``), shape (n, k), best first, ties by row
        (before hardneg 0.2: the tuple ``(ids, scores)``; unpacking now raises).

        Parameters
        ----------
        Q : {array-like, sparse matrix} of shape (n, n_words)
            Raw bag-of-words queries.
        k : int
            Items per query, at most the number of items held.

        Returns
        -------
        TopK
            ``ids``, ``rows`` and ``scores`` of shape (n, k), ``metric="similarity"``.
        """
        from hardneg._topk import TopK

        rows, scores = self.rank(Q, k)
        return TopK(rows, scores, rows.shape[1], len(self), metric="similarity").with_ids(self.ids)

    # persistence ---------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Write the index to one ``.npz`` model file (atomically, with checksums).

        Parameters
        ----------
        path : str or path-like
            The file to write.

        Returns
        -------
        Path
            The path written.
        """
        P = self.postings
        arrays = {"indptr": P.indptr.astype(np.int64), "indices": P.indices.astype(np.int32), "data": P.data,
                  "weights": self.weights, "ids": self.ids}
        if self.idf is not None:
            arrays["idf"] = self.idf
        meta = {"n_items": len(self), "n_words": self.n_words, "nnz": int(P.nnz), "l2": self.l2, "meta": self.meta}
        return save_model(path, _KIND, _VERSION, arrays, meta)

    @classmethod
    def load(cls, path: str | os.PathLike) -> InvertedIndex:
        """Read an index written by :meth:`save`.

        Beyond the file checks of :func:`hardneg._persist.load_model`, the
        values are checked before use: finite weights, postings and idf; postings
        of their word's sign (``w_j x_ij`` with ``x_ij >= 0``); the
        header's counts agree with the arrays; the CSC structure is valid
        (``indptr`` starts at 0, never decreases and ends at ``nnz``; every
        row index lies in ``[0, n_items)``); one id per item. Anything wrong
        is a one-line :class:`ModelFileError`.

        Parameters
        ----------
        path : str or path-like
            A file written by :meth:`save`.

        Returns
        -------
        InvertedIndex
            The index.
        """
        arrays, meta = load_model(path, _KIND, (_VERSION,), schema=_SCHEMA)
        try:
            n, n_words, nnz = (_meta_count(meta, k) for k in ("n_items", "n_words", "nnz"))
            if not isinstance(meta.get("l2"), bool) or not isinstance(meta.get("meta", {}), dict):
                raise ValueError("l2 or meta has the wrong type")
            weights, data, indices, indptr = arrays["weights"], arrays["data"], arrays["indices"], arrays["indptr"]
            if weights.shape != (n_words,):
                raise ValueError(f"weights of shape {weights.shape} for n_words={n_words}")
            for key in ("weights", "data", "idf"):
                if key in arrays and (not np.isfinite(arrays[key]).all() or np.abs(arrays[key]).max(initial=0.0) > _MAX_VALUE):
                    raise ValueError(f"{key} holds non-finite or absurdly large values")
            if "idf" in arrays and (arrays["idf"].shape != (n_words,) or (arrays["idf"] < 0).any()):
                raise ValueError(f"idf of shape {arrays['idf'].shape} is not {n_words} non-negative factors")
            out = cls(weights, idf=arrays.get("idf"), l2=meta["l2"], meta=meta.get("meta"))
            if indptr.shape != (out.active.size + 1,) or data.shape != (nnz,) or indices.shape != (nnz,):
                raise ValueError(f"indptr {indptr.shape}, indices {indices.shape} and data {data.shape} do not fit "
                                 f"{out.active.size} posting lists of {nnz} entries")
            indptr = indptr.astype(np.int64)
            if indptr[0] != 0 or indptr[-1] != nnz or (np.diff(indptr) < 0).any():
                raise ValueError("indptr does not run monotonically from 0 to nnz")
            if nnz and (int(indices.min()) < 0 or int(indices.max()) >= n):
                raise ValueError(f"posting row indices outside [0, {n})")
            # a posting is w_j x_ij with x_ij >= 0 (a bag of words, idf >= 0): it has its word's sign
            sign = np.repeat(np.sign(weights[out.active]), np.diff(indptr))
            if (data * sign < 0).any():
                raise ValueError("a posting has the opposite sign of its word's weight (postings are w_j x_ij, x_ij >= 0)")
            P = sp.csc_matrix((data.astype(np.float32), indices.astype(np.int32), indptr), shape=(n, out.active.size))
            P.check_format(full_check=True)
            ids = arrays["ids"].astype(str)
            if ids.shape != (n,):
                raise ValueError(f"{ids.shape[0]} ids for {n} items")
        except (KeyError, ValueError, TypeError, OverflowError) as exc:
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise ModelFileError(f"{path}: inconsistent inverted index file ({first})") from None
        out._postings, out._ids = P, [ids]
        return out

    @classmethod
    def from_store(cls, store: Any, model: Any, *, chunk_rows: int = 8192,
                   progress: Callable[[int], object] | None = None) -> InvertedIndex:
        """Index every row of a sparse FeatureStore with a fitted diagonal model,
        reading it in chunks (``progress(n_rows)`` after each).

        Parameters
        ----------
        store : FeatureStore
            A sparse (CSR) store with as many words as the model.
        model : DiagonalSimilarity
            A fitted diagonal model (see :meth:`from_model`).
        chunk_rows : int, default=8192
            Rows read and indexed per block.
        progress : callable or None, default=None
            Called with the number of rows of each block when it is indexed.

        Returns
        -------
        InvertedIndex
            The index of every store row, with the store's ids, in row order.
        """
        if not store.is_sparse:
            raise TypeError(f"store: {str(store.path)!r} is in the dense layout; the inverted index needs a sparse (CSR) store")
        if store.dim != model.n_features_in_:
            raise ValueError(f"store: has {store.dim} words but the model was fitted on {model.n_features_in_}")
        index = cls.from_model(model, {"model": type(model).__name__, "store": str(getattr(store, "path", ""))})
        ids = store.ids()
        for first, block in store.iter_chunks(chunk_rows):
            index.add(block, ids[first : first + block.shape[0]])
            if progress is not None:
                progress(block.shape[0])
        logger.info("indexed %d rows: %d posting entries over %d of %d words", len(index), index.n_postings, index.active.size, index.n_words)
        return index
