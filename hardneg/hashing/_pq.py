"""Product quantization (Jegou, Douze & Schmid, TPAMI 2011), via FAISS.

PQ codes are not Hamming codes: ``transform`` returns one byte per
sub-quantizer (``n_bits / 8`` bytes, 8 bits each) and :meth:`PQHasher.search`
ranks them by asymmetric distance computation (ADC) with ``faiss.IndexPQ``.
"""

from __future__ import annotations

import faiss
import numpy as np

from hardneg._validation import check_k, check_random_state
from hardneg.hashing._base import BaseHasher

__all__ = ["PQHasher"]


class PQHasher(BaseHasher):
    """Product quantizer with ``n_bits / 8`` sub-quantizers of 256 centroids.

    The input is zero-padded to a multiple of the number of sub-quantizers
    (padding changes no distance).

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

    def __init__(self, n_bits=64, random_state=None):
        self.n_bits = n_bits
        self.random_state = random_state

    def _pad(self, X):
        if self.padded_dim_ == X.shape[1]:
            return X
        out = np.zeros((X.shape[0], self.padded_dim_), dtype=np.float32)
        out[:, : X.shape[1]] = X
        return out

    def fit(self, X, y=None, X_unlabeled=None):
        n_bits = self._check_n_bits()
        if n_bits % 8:
            raise ValueError(f"n_bits={n_bits}: product quantization needs a multiple of 8 (8 bits per sub-quantizer)")
        X = self._check_X(X, fitting=True)
        rng = check_random_state(self.random_state)
        m = n_bits // 8
        d = X.shape[1]
        self.padded_dim_ = -(-d // m) * m
        self.n_features_in_ = d
        index = faiss.IndexPQ(self.padded_dim_, m, 8)
        index.pq.cp.seed = int(rng.integers(0, 2**31 - 1))
        index.pq.cp.verbose = False
        index.pq.cp.min_points_per_centroid = 1  # small training sets are fine for a baseline; no warning
        index.train(self._pad(X))
        self.index_ = index
        self.n_bits_ = n_bits
        return self

    def transform(self, X):
        X = self._check_X(X)
        if X.shape[0] == 0:
            return np.zeros((0, self.n_bits_ // 8), dtype=np.uint8)
        return self.index_.sa_encode(self._pad(X))

    def search(self, X_query, db_codes, k):
        """ADC top-``k`` of raw queries against PQ codes: (indices, squared distances)."""
        X_query = self._pad(self._check_X(X_query, "X_query"))
        db_codes = np.ascontiguousarray(db_codes, dtype=np.uint8)
        if db_codes.ndim != 2 or db_codes.shape[1] != self.n_bits_ // 8:
            raise ValueError(f"db_codes: expected shape (n, {self.n_bits_ // 8}), got {db_codes.shape}")
        k = check_k(k, db_codes.shape[0])
        index = faiss.deserialize_index(faiss.serialize_index(self.index_))
        faiss.copy_array_to_vector(db_codes.ravel(), index.codes)
        index.ntotal = db_codes.shape[0]
        dist, idx = index.search(X_query, k)
        return idx.astype(np.int64), dist

    def _to_arrays(self):
        return {"faiss_index": faiss.serialize_index(self.index_)}

    def _from_arrays(self, arrays, meta):
        self.index_ = faiss.deserialize_index(np.ascontiguousarray(arrays["faiss_index"], dtype=np.uint8))
        self.padded_dim_ = int(self.index_.d)
        if self.padded_dim_ < self.n_features_in_:
            raise ValueError("the stored FAISS index is smaller than the model's input dimension")
