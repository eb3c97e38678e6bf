"""Locality-sensitive hashing by random projections (Charikar 2002), via FAISS."""

from __future__ import annotations

import faiss

from hardneg.hashing._faiss_base import FaissChainHasher, lsh_stage

__all__ = ["LSHHasher"]


class LSHHasher(FaissChainHasher):
    """Sign of random projections of mean-centered data.

    FAISS chain: ``CenteringTransform`` -> ``RandomRotationMatrix`` (seeded
    from ``random_state``) -> ``IndexLSH`` with zero thresholds.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.hashing import LSHHasher
    >>> X = np.random.default_rng(0).normal(size=(100, 16))
    >>> LSHHasher(n_bits=32, random_state=0).fit(X).transform(X[:2]).shape
    (2, 4)
    """

    _kind = "hash-lsh"

    def __init__(self, n_bits=64, random_state=None):
        self.n_bits = n_bits
        self.random_state = random_state

    def _build_index(self, d, n_bits, seed):
        rot = faiss.RandomRotationMatrix(d, n_bits)
        rot.init(seed)
        index = faiss.IndexPreTransform(rot, lsh_stage(n_bits))
        index.prepend_transform(faiss.CenteringTransform(d))
        return index
