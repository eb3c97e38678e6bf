"""Locality-sensitive hashing by random projections (Charikar 2002), via FAISS."""

from __future__ import annotations

import faiss
import numpy as np

from hardneg._validation import RANDOM_STATE
from hardneg.hashing._base import N_BITS
from hardneg.hashing._faiss_base import FaissChainHasher, lsh_stage

__all__ = ["LSHHasher"]


class LSHHasher(FaissChainHasher):
    """Sign of random projections of mean-centered data.

    FAISS chain: ``CenteringTransform`` -> ``RandomRotationMatrix`` (seeded
    from ``random_state``) -> ``IndexLSH`` with zero thresholds.

    Parameters
    ----------
    n_bits : int
        Code length.
    random_state : None, int or Generator
        Seed of the random rotation.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.hashing import LSHHasher
    >>> X = np.random.default_rng(0).normal(size=(100, 16))
    >>> LSHHasher(n_bits=32, random_state=0).fit(X).transform(X[:2]).shape
    (2, 4)
    """

    _kind = "hash-lsh"
    _parameter_constraints = {"n_bits": [N_BITS], "random_state": RANDOM_STATE}

    def __init__(self, n_bits: int = 64, *, random_state: int | np.random.Generator | None = None):
        self.n_bits = n_bits
        self.random_state = random_state

    def _fit_memory_bytes(self, n_samples, n_features, n_bits):
        # the rotation is drawn as a max(d, n_bits)^2 matrix and orthonormalized by QR;
        # training maps the rows through centering (n x d) and rotation (n x n_bits)
        side = max(n_features, n_bits)
        return 8.0 * side * side + 8.0 * n_samples * (n_features + n_bits)

    def _build_index(self, d, n_bits, seed):
        rot = faiss.RandomRotationMatrix(d, n_bits)
        rot.init(seed)
        index = faiss.IndexPreTransform(rot, lsh_stage(n_bits))
        index.prepend_transform(faiss.CenteringTransform(d))
        return index
