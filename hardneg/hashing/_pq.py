"""Product quantization (Jegou, Douze & Schmid, TPAMI 2011), via FAISS.

PQ codes are not Hamming codes: ``transform`` returns FAISS's packed PQ
codes (with the default 8 bits per sub-quantizer, one byte per sub-quantizer)
and :meth:`PQHasher.search` ranks them by asymmetric distance computation
(ADC) with ``faiss.IndexPQ``.
"""

from __future__ import annotations

import warnings
from numbers import Integral

import faiss
import numpy as np

from hardneg._persist import ArraySpec, deserialize_faiss
from hardneg._typing import ArrayLike
from hardneg._validation import RANDOM_STATE, Interval, check_k, check_random_state
from hardneg.hashing._base import N_BITS, BaseHasher

__all__ = ["PQHasher"]


class PQHasher(BaseHasher):
    """Product quantizer with ``n_bits / subquantizer_bits`` sub-quantizers of
    ``2 ** subquantizer_bits`` centroids each (by default ``n_bits / 8``
    sub-quantizers of 256 centroids).

    The input is zero-padded to a multiple of the number of sub-quantizers
    (padding changes no distance).

    Parameters
    ----------
    n_bits : int
        Code length, a multiple of ``subquantizer_bits``.
    subquantizer_bits : int in [1, 16], default 8
        Bits per sub-quantizer. k-means needs at least as many training rows
        as centroids (``2 ** subquantizer_bits``, 256 by default). With fewer
        rows, ``fit`` keeps the code length asked for but learns only one
        centroid per training row (each row's own sub-vectors: what k-means
        with as many centroids as rows converges to), records that number in
        ``n_centroids_`` and warns (a ``UserWarning`` naming the bits the
        data supports); the unused code values repeat the first centroid and
        are never produced. Codes of 8 bits per sub-quantizer are one byte
        each; other sizes are bit-packed by FAISS (``ceil(n_bits / 8)`` bytes).
    random_state : None, int or Generator

    Attributes
    ----------
    n_centroids_ : int
        Distinct centroids per sub-quantizer: ``2 ** subquantizer_bits``, or
        the number of training rows when there were fewer.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.hashing import PQHasher
    >>> X = np.random.default_rng(0).normal(size=(300, 16)).astype("float32")
    >>> pq = PQHasher(n_bits=32, random_state=0).fit(X)
    >>> idx, dist = pq.search(X[:2], pq.transform(X), k=3)
    >>> idx[:, 0].tolist()
    [0, 1]
    """

    _kind = "hash-pq"
    _parameter_constraints = {
        "n_bits": [N_BITS],
        "subquantizer_bits": [Interval(Integral, 1, 16, closed="both")],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, n_bits: int = 64, *, subquantizer_bits: int = 8, random_state: int | np.random.Generator | None = None):
        self.n_bits = n_bits
        self.subquantizer_bits = subquantizer_bits
        self.random_state = random_state

    def _pad(self, X):
        if self.padded_dim_ == X.shape[1]:
            return X
        out = np.zeros((X.shape[0], self.padded_dim_), dtype=np.float32)
        out[:, : X.shape[1]] = X
        return out

    def fit(self, X: ArrayLike, y: ArrayLike | None = None, X_unlabeled: ArrayLike | None = None) -> PQHasher:
        """Train the sub-quantizers' k-means (FAISS ``IndexPQ``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (at least 2).
        y : Ignored
            Not used (unsupervised), present for API consistency.
        X_unlabeled : Ignored
            Not used, present for the API of the semi-supervised hashers.

        Returns
        -------
        PQHasher
            Fitted hasher (``index_`` and ``n_centroids_`` set).
        """
        n_bits = self._check_n_bits()
        b = int(self.subquantizer_bits)
        if n_bits % b:
            raise ValueError(
                f"n_bits={n_bits}: product quantization needs a multiple of {b} "
                f"(subquantizer_bits={b} bits per sub-quantizer)"
            )
        X = self._check_X(X, fitting=True)
        n, d = X.shape
        self._check_fit_memory(X, n_bits)
        rng = check_random_state(self.random_state)
        m = n_bits // b
        self.padded_dim_ = -(-d // m) * m
        index = faiss.IndexPQ(self.padded_dim_, m, b)
        index.pq.cp.seed = int(rng.integers(0, 2**31 - 1))
        index.pq.cp.verbose = False
        index.pq.cp.min_points_per_centroid = 1  # small training sets are fine for a baseline; no warning
        if n >= 2**b:
            index.train(self._pad(X))
            self.n_centroids_ = 2**b
        else:
            # FAISS's k-means would fail with a RuntimeError: k-means with as many centroids as rows
            # ends at the rows themselves, so they are the centroids, and the code length stays as asked
            message = (
                f"PQHasher: X has {n} rows, fewer than the {2**b} centroids per sub-quantizer of "
                f"subquantizer_bits={b}; learned {n} centroids per sub-quantizer (n_centroids_={n}). "
                f"Give at least {2**b} rows, or subquantizer_bits <= {n.bit_length() - 1} for {n} rows"
            )
            warnings.warn(message, UserWarning, stacklevel=2)
            Xp = self._pad(X)
            dsub = self.padded_dim_ // m
            centroids = np.repeat(Xp[:1].reshape(m, 1, dsub), 2**b, axis=1)  # unused code values: row 0 again
            centroids[:, :n] = Xp.reshape(n, m, dsub).transpose(1, 0, 2)
            faiss.copy_array_to_vector(np.ascontiguousarray(centroids, np.float32).ravel(), index.pq.centroids)
            index.is_trained = True
            self.n_centroids_ = n
        self.index_ = index
        self.n_bits_ = n_bits
        return self

    def transform(self, X: ArrayLike) -> np.ndarray:
        """PQ codes of the rows (FAISS ``sa_encode``): not Hamming codes, see :meth:`search`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to encode.

        Returns
        -------
        ndarray of uint8, shape (n_samples, code_size)
            One byte per sub-quantizer with 8 bits each; ``ceil(n_bits / 8)`` bit-packed
            bytes otherwise.
        """
        X = self._check_X(X)
        if X.shape[0] == 0:
            return np.zeros((0, self.index_.code_size), dtype=np.uint8)
        return self.index_.sa_encode(self._pad(X))

    def search(self, X_query, db_codes, k):
        """ADC top-``k`` of raw queries against PQ codes: (indices, squared distances).

        Parameters
        ----------
        X_query : array-like of shape (n_queries, n_features)
            Raw query rows.
        db_codes : ndarray of uint8, shape (n_codes, code_size)
            PQ codes of the database (:meth:`transform`).
        k : int
            Neighbours per query, at most ``n_codes``.

        Returns
        -------
        indices : ndarray of int64, shape (n_queries, k)
            Rows of ``db_codes``, nearest first.
        distances : ndarray of float32, shape (n_queries, k)
            Their squared asymmetric (ADC) distances.
        """
        X_query = self._pad(self._check_X(X_query, "X_query"))
        db_codes = np.ascontiguousarray(db_codes, dtype=np.uint8)
        code_size = self.index_.code_size
        if db_codes.ndim != 2 or db_codes.shape[1] != code_size:
            raise ValueError(f"db_codes: expected shape (n, {code_size}), got {db_codes.shape}")
        k = check_k(k, db_codes.shape[0])
        index = faiss.deserialize_index(faiss.serialize_index(self.index_))
        faiss.copy_array_to_vector(db_codes.ravel(), index.codes)
        index.ntotal = db_codes.shape[0]
        dist, idx = index.search(X_query, k)
        return idx.astype(np.int64), dist

    def _to_arrays(self):
        return {"faiss_index": faiss.serialize_index(self.index_)}

    _schema = {"faiss_index": ArraySpec("u", 1)}

    def _from_arrays(self, arrays, meta):
        d, n_bits, b = self.n_features_in_, self.n_bits_, int(self.subquantizer_bits)
        if n_bits % b:
            raise ValueError(f"n_bits={n_bits} is not a multiple of subquantizer_bits={b}")
        m = n_bits // b
        padded = -(-d // m) * m
        index = deserialize_faiss(arrays["faiss_index"])  # already of its concrete type
        if not isinstance(index, faiss.IndexPQ):
            raise ValueError(f"the stored FAISS index is a {type(index).__name__}, expected an IndexPQ")
        pq = index.pq
        # every size FAISS's PQ search trusts, so a damaged blob cannot make it read out of bounds
        if (
            index.d != padded or pq.d != padded or pq.M != m or pq.nbits != b or pq.ksub != 2**b
            or pq.dsub * m != padded or pq.code_size != index.code_size or index.code_size != (n_bits + 7) // 8
            or pq.centroids.size() != padded * 2**b or index.ntotal != 0 or index.codes.size() != 0
            or not index.is_trained or index.metric_type != faiss.METRIC_L2
            or index.search_type != faiss.IndexPQ.ST_PQ or index.encode_signs
        ):
            raise ValueError(f"the stored FAISS index is not a trained PQ of {m} x {b} bits on {padded} dimensions")
        if not np.isfinite(faiss.vector_to_array(pq.centroids)).all():
            raise ValueError("the stored PQ centroids hold NaN or infinite values")
        self.index_ = index
        self.padded_dim_ = padded
        first = faiss.vector_to_array(pq.centroids).reshape(m, 2**b, -1)[0]
        self.n_centroids_ = int(np.unique(first, axis=0).shape[0])
