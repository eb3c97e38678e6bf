"""PCA-RR: PCA followed by a random orthogonal rotation (Jegou et al. 2010;
the baseline of Gong & Lazebnik 2011), via FAISS."""

from __future__ import annotations

import faiss
import numpy as np

from hardneg._validation import RANDOM_STATE
from hardneg.hashing._base import N_BITS
from hardneg.hashing._faiss_base import FaissChainHasher, lsh_stage

__all__ = ["PCARRHasher"]


class PCARRHasher(FaissChainHasher):
    """Sign of randomly rotated PCA projections.

    FAISS chain: ``PCAMatrix(d, n_bits)`` (centers) ->
    ``RandomRotationMatrix(n_bits, n_bits)`` seeded from ``random_state`` ->
    ``IndexLSH``.

    Parameters
    ----------
    n_bits : int
        Code length, at most the input dimension.
    random_state : None, int or Generator
        Seed of the random rotation.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.hashing import PCARRHasher
    >>> X = np.random.default_rng(0).normal(size=(200, 16))
    >>> PCARRHasher(n_bits=8, random_state=0).fit(X).transform(X[:3]).shape
    (3, 1)
    """

    _kind = "hash-pca-rr"
    _parameter_constraints = {"n_bits": [N_BITS], "random_state": RANDOM_STATE}

    def __init__(self, n_bits: int = 64, *, random_state: int | np.random.Generator | None = None):
        self.n_bits = n_bits
        self.random_state = random_state

    def _fit_memory_bytes(self, n_samples, n_features, n_bits):
        # PCA: a d x d covariance and its eigenvectors in float64; the rows, centered and projected
        return 24.0 * n_features * n_features + 8.0 * n_samples * (n_features + n_bits)

    def _build_index(self, d, n_bits, seed):
        if n_bits > d:
            raise ValueError(
                f"n_bits={n_bits}: PCA-RR needs n_bits <= the number of input features, but X has {d} feature(s)"
            )
        rot = faiss.RandomRotationMatrix(n_bits, n_bits)
        rot.init(seed)
        index = faiss.IndexPreTransform(rot, lsh_stage(n_bits))
        index.prepend_transform(faiss.PCAMatrix(d, n_bits, 0.0, False))
        return index
