"""PCA-ITQ: iterative quantization (Gong & Lazebnik, CVPR 2011), via FAISS."""

from __future__ import annotations

import faiss

from hardneg.hashing._faiss_base import FaissChainHasher, lsh_stage

__all__ = ["PCAITQHasher"]


class PCAITQHasher(FaissChainHasher):
    """PCA to ``n_bits`` dimensions, then the orthogonal rotation that
    minimizes the quantization error to the binary hypercube.

    FAISS chain: ``ITQTransform(d, n_bits, do_pca=True)`` (centers, PCA,
    ``ITQMatrix`` with ``max_iter`` iterations) -> ``IndexLSH``.
    ``n_bits`` must not exceed the input dimension.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.hashing import PCAITQHasher
    >>> X = np.random.default_rng(0).normal(size=(200, 16))
    >>> PCAITQHasher(n_bits=8, random_state=0).fit(X).transform(X[:3]).shape
    (3, 1)
    """

    _kind = "hash-pca-itq"

    def __init__(self, n_bits=64, max_iter=50, random_state=None):
        self.n_bits = n_bits
        self.max_iter = max_iter
        self.random_state = random_state

    def _build_index(self, d, n_bits, seed):
        if n_bits > d:
            raise ValueError(f"n_bits={n_bits}: PCA-ITQ needs n_bits <= the input dimension ({d})")
        itq = faiss.ITQTransform(d, n_bits, True)
        itq.itq.seed = seed
        itq.itq.max_iter = int(self.max_iter)
        return faiss.IndexPreTransform(itq, lsh_stage(n_bits))
