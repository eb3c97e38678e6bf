"""PCA-ITQ: iterative quantization (Gong & Lazebnik, CVPR 2011), via FAISS."""

from __future__ import annotations

from numbers import Integral

import faiss
import numpy as np

from hardneg._validation import RANDOM_STATE, Interval
from hardneg.hashing._base import N_BITS
from hardneg.hashing._faiss_base import FaissChainHasher, lsh_stage

__all__ = ["PCAITQHasher"]


class PCAITQHasher(FaissChainHasher):
    """PCA to ``n_bits`` dimensions, then the orthogonal rotation that
    minimizes the quantization error to the binary hypercube.

    FAISS chain: ``ITQTransform(d, n_bits, do_pca=True)`` (centers, PCA,
    ``ITQMatrix`` with ``max_iter`` iterations) -> ``IndexLSH``.
    ``n_bits`` must not exceed the input dimension.

    Parameters
    ----------
    n_bits : int
        Code length, at most the input dimension.
    max_iter : int
        ITQ iterations.
    random_state : None, int or Generator
        Seed of ITQ's initial rotation.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.hashing import PCAITQHasher
    >>> X = np.random.default_rng(0).normal(size=(200, 16))
    >>> PCAITQHasher(n_bits=8, random_state=0).fit(X).transform(X[:3]).shape
    (3, 1)
    """

    _kind = "hash-pca-itq"
    _parameter_constraints = {
        "n_bits": [N_BITS],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, n_bits: int = 64, *, max_iter: int = 50, random_state: int | np.random.Generator | None = None):
        self.n_bits = n_bits
        self.max_iter = max_iter
        self.random_state = random_state

    def _fit_memory_bytes(self, n_samples, n_features, n_bits):
        # PCA: a d x d covariance and its eigenvectors in float64; the rows, centered and projected
        return 24.0 * n_features * n_features + 8.0 * n_samples * (n_features + n_bits)

    def _build_index(self, d, n_bits, seed):
        if n_bits > d:
            raise ValueError(
                f"n_bits={n_bits}: PCA-ITQ needs n_bits <= the number of input features, but X has {d} feature(s)"
            )
        itq = faiss.ITQTransform(d, n_bits, True)
        itq.itq.seed = seed
        itq.itq.max_iter = int(self.max_iter)
        self.n_iter_ = int(self.max_iter)  # FAISS's ITQ always runs max_iter rotations
        return faiss.IndexPreTransform(itq, lsh_stage(n_bits))
