"""Hashers built from a FAISS pre-transform chain followed by ``IndexLSH``.

The chain (centering, projections, rotations) is trained by FAISS; the
``IndexLSH`` at the end thresholds at 0, so bit k is the sign of the k-th
output of the chain. The whole index is stored as FAISS's own serialized
bytes inside the portable model file.
"""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np

from hardneg._persist import ArraySpec, deserialize_faiss
from hardneg._validation import check_matrix, check_random_state
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
        self._check_fit_memory(X, n_bits)
        rng = check_random_state(self.random_state)
        self.index_ = self._build_index(X.shape[1], n_bits, int(rng.integers(0, 2**31 - 1)))
        self.index_.train(X)
        self.n_bits_ = n_bits
        return self

    def _check_X_unlabeled(self, XU, d):
        return check_matrix(XU, "X_unlabeled", min_rows=0, n_features=d, estimator=self)

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

    _schema = {"faiss_index": ArraySpec("u", 1)}

    def _from_arrays(self, arrays, meta):
        d, n_bits = self.n_features_in_, self.n_bits_
        # FAISS bounds a transform by the square of its larger side (a rotation to more
        # bits than inputs is drawn square), so a genuine chain needs max(d, n_bits)^2 floats
        index = deserialize_faiss(arrays["faiss_index"], vector_bytes=4 * max(d, n_bits) ** 2)
        self.index_ = check_chain(index, d, n_bits)
        # any NaN or infinity in a projection, mean or bias makes every output of a row of ones non-finite
        if not np.isfinite(self.embed(np.ones((1, d), np.float32))).all():
            raise ValueError("the stored FAISS projections hold NaN or infinite values")


def _check_vector(vector, size: int, what: str) -> None:
    if vector.size() != size:
        raise ValueError(f"the stored FAISS {what} holds {vector.size()} values, expected {size}")
    if size and not np.isfinite(faiss.vector_to_array(vector)).all():
        raise ValueError(f"the stored FAISS {what} holds NaN or infinite values")


def _check_linear(vt, what: str) -> None:
    _check_vector(vt.A, vt.d_in * vt.d_out, f"{what} matrix")
    if vt.have_bias:
        _check_vector(vt.b, vt.d_out, f"{what} bias")


def check_chain(index, d: int, n_bits: int):
    """The deserialized index if it is a pre-transform chain from ``d``
    to ``n_bits`` dimensions ending in a zero-threshold ``IndexLSH``, with every
    array of the size its dimensions imply (FAISS would read past a short one)."""
    # deserialize_index gives the concrete type already; a downcast proxy does not own
    # the index, so the caller keeps and uses the original
    if not isinstance(index, faiss.IndexPreTransform):
        raise ValueError(f"the stored FAISS index is a {type(index).__name__}, expected an IndexPreTransform chain")
    lsh = faiss.downcast_index(index.index)
    # faiss 1.15's stub lacks IndexLSH.rotate_data and types chain as a list (it is a SWIG
    # vector: size() and at(i))
    if (
        not isinstance(lsh, faiss.IndexLSH) or lsh.rotate_data or lsh.train_thresholds  # type: ignore[attr-defined]
        or lsh.d != n_bits or lsh.nbits != n_bits or lsh.code_size != (n_bits + 7) // 8
    ):
        raise ValueError(f"the stored FAISS index does not end in an IndexLSH of {n_bits} bits")
    chain: Any = index.chain
    if index.d != d or not index.is_trained or index.ntotal != 0 or not 1 <= chain.size() <= 4:
        raise ValueError(f"the stored FAISS chain does not match the model ({index.d}-d input, expected {d})")
    dim = d
    for i in range(chain.size()):
        vt = faiss.downcast_VectorTransform(chain.at(i))
        if vt.d_in != dim or vt.d_out < 1 or not vt.is_trained:
            raise ValueError(f"the stored FAISS chain's step {i} maps {vt.d_in} to {vt.d_out} dimensions after {dim}")
        if isinstance(vt, faiss.LinearTransform):
            _check_linear(vt, f"step {i}")
        elif isinstance(vt, faiss.CenteringTransform):
            if vt.d_out != vt.d_in:
                raise ValueError(f"the stored FAISS centering step maps {vt.d_in} to {vt.d_out} dimensions")
            _check_vector(vt.mean, vt.d_in, "mean")
        elif isinstance(vt, faiss.ITQTransform):
            pt = vt.pca_then_itq
            if pt.d_in != vt.d_in or pt.d_out != vt.d_out:
                raise ValueError("the stored FAISS ITQ transform has inconsistent dimensions")
            _check_vector(vt.mean, vt.d_in, "ITQ mean")
            _check_linear(pt, "ITQ")
        else:
            raise ValueError(f"the stored FAISS chain holds an unexpected {type(vt).__name__}")
        dim = vt.d_out
    if dim != n_bits:
        raise ValueError(f"the stored FAISS chain gives {dim} dimensions, expected {n_bits}")
    return index


def lsh_stage(n_bits: int):
    # thresholds stay at 0: a bit is the sign of the projection
    return faiss.IndexLSH(n_bits, n_bits, False, False)
