"""Hashers built from a FAISS pre-transform chain followed by ``IndexLSH``.

The chain (centering, projections, rotations) is trained by FAISS; the
``IndexLSH`` at the end thresholds at 0, so bit k is the sign of the k-th
output of the chain. The whole index is stored as FAISS's own serialized
bytes inside the portable model file.
"""

from __future__ import annotations

import faiss
import numpy as np

from hardneg._validation import check_random_state
from hardneg.hashing._base import BaseHasher, faiss_bits_to_packed


class FaissChainHasher(BaseHasher):
    """Base of LSH, PCA-ITQ and PCA-RR: subclasses build the untrained index."""

    def _build_index(self, d: int, n_bits: int, seed: int):
        raise NotImplementedError

    def fit(self, X, y=None, X_unlabeled=None):
        """Learn the projection from ``X`` (and ``X_unlabeled``; labels are ignored)."""
        n_bits = self._check_n_bits()
        X = self._check_X(X, fitting=True)
        if X_unlabeled is not None:
            X = np.vstack([X, self._check_X_unlabeled(X_unlabeled, X.shape[1])])
        rng = check_random_state(self.random_state)
        self.n_features_in_ = X.shape[1]
        self.index_ = self._build_index(X.shape[1], n_bits, int(rng.integers(0, 2**31 - 1)))
        self.index_.train(X)
        self.n_bits_ = n_bits
        return self

    @staticmethod
    def _check_X_unlabeled(XU, d):
        from hardneg._validation import check_matrix

        return check_matrix(XU, "X_unlabeled", min_rows=0, n_features=d)

    def transform(self, X):
        X = self._check_X(X)
        if X.shape[0] == 0:
            return np.zeros((0, (self.n_bits_ + 7) // 8), dtype=np.uint8)
        return faiss_bits_to_packed(self.index_.sa_encode(X), self.n_bits_)

    def embed(self, X):
        X = self._check_X(X)
        for i in range(self.index_.chain.size()):
            X = faiss.downcast_VectorTransform(self.index_.chain.at(i)).apply(np.ascontiguousarray(X))
        return X

    def _to_arrays(self):
        return {"faiss_index": faiss.serialize_index(self.index_)}

    def _from_arrays(self, arrays, meta):
        self.index_ = faiss.deserialize_index(np.ascontiguousarray(arrays["faiss_index"], dtype=np.uint8))
        if self.index_.d != self.n_features_in_ or self.index_.sa_code_size() != (self.n_bits_ + 7) // 8:
            raise ValueError("the stored FAISS index does not match the model's dimensions")


def lsh_stage(n_bits: int):
    # thresholds stay at 0: a bit is the sign of the projection
    return faiss.IndexLSH(n_bits, n_bits, False, False)
