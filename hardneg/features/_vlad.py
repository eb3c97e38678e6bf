"""VLAD: vectors of locally aggregated descriptors (Jégou et al., CVPR 2010).

With ``K`` visual words ``c_1 .. c_K`` (a FAISS k-means :class:`Codebook`),
an image whose local descriptors are ``x_t`` becomes the ``K x d`` vector
of residual sums

    v_k = sum over t with NN(x_t) = k of (x_t - c_k),      k = 1 .. K,

followed by the normalizations Zepeda & Pérez (2015) use for their VLAD-64
base features:

- power normalization ``v <- sign(v) |v|^alpha`` (``alpha = 0.5``, the
  signed square root of Jégou et al., PAMI 2012);
- intra-normalization: each block ``v_k`` divided by its l2 norm
  (Arandjelović & Zisserman, "All about VLAD", CVPR 2013);
- l2 normalization of the whole vector.

A block no descriptor falls into stays zero; an image without descriptors
is all-zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._typing import RandomState
from ._codebook import BagOfWords, Codebook

__all__ = ["VLAD", "vlad"]


def _check_power(power) -> float:
    if isinstance(power, bool) or not isinstance(power, Real) or not 0 < float(power) <= 1:
        raise ValueError(f"power: expected a number in (0, 1], got {power!r}")
    return float(power)


def vlad(descriptor_sets: Sequence[np.ndarray], codebook: Codebook, *, power: float = 0.5, intra: bool = True) -> np.ndarray:
    """VLAD vectors ``(n_images, K * d)`` float32 of ``descriptor_sets`` (one ``(m, d)`` array per image).

    Parameters
    ----------
    descriptor_sets : sequence of ndarray of shape (m, d)
        Each image's local descriptors (m may be 0).
    codebook : Codebook
        A fitted codebook of K words.
    power : float
        Power normalization exponent (signed ``|v| ** power``; 1 leaves it off).
    intra : bool
        l2-normalize each word's residual sum before the global normalization.

    Returns
    -------
    ndarray of float32, shape (n_images, K * d)
        l2-normalized rows (zero for an image without descriptors).

    Raises
    ------
    ValueError
        If a descriptor set does not have the codebook's dimension, or ``power`` is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.features import Codebook
    >>> from hardneg.features._vlad import vlad
    >>> cb = Codebook(2, random_state=0).fit([np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])])
    >>> v = vlad([np.array([[1.0, 0.0], [9.0, 0.0]])], cb, power=1.0, intra=False)
    >>> v.shape, bool(np.isclose(np.linalg.norm(v), 1.0))
    ((1, 4), True)
    """
    _check_power(power)
    C = codebook.centroids_
    K, d = C.shape
    sets = [np.asarray(s, np.float32) for s in descriptor_sets]
    for i, s in enumerate(sets):
        if s.size and (s.ndim != 2 or s.shape[1] != d):
            raise ValueError(f"descriptor set {i}: expected (m, {d}) descriptors for this codebook, got shape {s.shape}")
    n = len(sets)
    lengths = np.array([s.shape[0] if s.size else 0 for s in sets], np.int64)
    if lengths.sum() == 0:
        return np.zeros((n, K * d), np.float32)
    X = np.vstack([s for s in sets if s.size])
    blocks = np.repeat(np.arange(n), lengths) * K + codebook.predict(X)
    # every descriptor added to its (image, word) block by one sparse product
    assign = sp.csr_matrix((np.ones(X.shape[0], np.float32), (blocks, np.arange(X.shape[0]))), shape=(n * K, X.shape[0]))
    V = np.asarray(assign @ X, np.float32).reshape(n, K, d)
    V -= np.bincount(blocks, minlength=n * K).reshape(n, K, 1).astype(np.float32) * C[None]
    if power != 1:
        V = np.sign(V) * np.abs(V) ** np.float32(power)
    if intra:
        norms = np.linalg.norm(V, axis=2, keepdims=True)
        np.divide(V, norms, out=V, where=norms > 0)
    flat = V.reshape(n, K * d)
    norms = np.linalg.norm(flat, axis=1, keepdims=True)
    np.divide(flat, norms, out=flat, where=norms > 0)
    return np.ascontiguousarray(flat, np.float32)


class VLAD(BagOfWords):
    """An extractor: local descriptors -> codebook -> one VLAD vector (``n_words x d``) per image.

    The codebook is learned, saved and resumed as for :class:`BagOfWords`
    (FAISS k-means); only the aggregation differs (:func:`vlad`).

    Parameters
    ----------
    descriptor : object with ``describe(images)``, ``config()`` and ``dim``
        e.g. :class:`DenseSift` (``d = 128``).
    n_words : int
        ``K`` (Zepeda & Pérez: 64).
    power : float in (0, 1]
        Power-normalization exponent (1: none).
    intra : bool
        Intra-normalize each word's block.
    n_iter, max_descriptors, random_state, codebook
        As for :class:`BagOfWords`.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.features import DenseSift, VLAD
    >>> imgs = list(np.random.default_rng(0).integers(0, 255, (4, 48, 48), dtype=np.uint8))
    >>> ext = VLAD(DenseSift(step=8, bin_sizes=(4,)), n_words=4, random_state=0).fit_images(imgs)
    >>> codes = ext.transform(imgs)
    >>> codes.shape, np.linalg.norm(codes, axis=1).round(5).tolist()
    ((4, 512), [1.0, 1.0, 1.0, 1.0])
    """

    def __init__(self, descriptor: Any, *, n_words: int = 64, power: float = 0.5, intra: bool = True, n_iter: int = 20,
                 max_descriptors: int | None = None, random_state: RandomState = None, codebook: Codebook | None = None):
        super().__init__(descriptor, n_words=n_words, weighting="tf", normalize=None, sparse=False, n_iter=n_iter,
                         max_descriptors=max_descriptors, random_state=random_state, codebook=codebook)
        self.power = _check_power(power)
        self.intra = bool(intra)

    @property
    def dim(self) -> int:
        """Length of a VLAD vector: ``n_words * d``."""
        return int(self.n_words) * int(self.descriptor.dim)

    def config(self) -> dict:
        """JSON description of the settings, saved in the store's ``attrs``.

        Returns
        -------
        dict
            ``extractor`` (``"vlad"``), the descriptor's config, ``n_words``, ``power`` and ``intra``.
        """
        return {"extractor": "vlad", "descriptor": self.descriptor.config(), "n_words": int(self.n_words), "power": self.power,
                "intra": self.intra}

    def transform(self, images):
        """VLAD vectors ``(n, n_words * d)``, float32, unit l2 norm (zero for an image without descriptors).

        Parameters
        ----------
        images : sequence
            The images, in the form the descriptor's ``describe`` takes.

        Returns
        -------
        ndarray of shape (n, n_words * d), dtype float32
            One VLAD vector per image.
        """
        return vlad(self.descriptor.describe(images), self._fitted_codebook(), power=self.power, intra=self.intra)
