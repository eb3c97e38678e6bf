"""Search by description learned from per-item captions: nearest-neighbour caption transfer (an extra).

Not from [Bucher16] nor [Norouzi14]: a model of the kind ConSE is, with the captioned items of
the collection in place of ImageNet's classes. Given images ``x_i`` with captions embedded as
``c_i`` (all-MiniLM-L6-v2 of the caption text, centred by the captions' mean ``c̄``), an image
``x`` is placed in the text space as the similarity-weighted mean of the captions of its ``k``
nearest captioned images (cosine of the centred image features):

    f(x) = Σ_{j ∈ N_k(x)} w_j (c_j - c̄),   w_j ∝ exp((cos(x, x_j) - 1) / τ)

and a text query ``q`` scores ``cos(f(x), q)``, as ConSE's [Norouzi14] Eq. (3). A captioned
image is placed by its neighbours, never by its own caption (leave-one-out): every image of
the collection is then mapped the same way, and the words of a caption reach images that have
none. How the defaults of ``k`` and ``τ`` were set: docs/methods/zeroshot.md.

Examples
--------
>>> import numpy as np
>>> from hardneg.zeroshot._captions import CaptionKNN
>>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
>>> C = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
>>> model = CaptionKNN(n_neighbors=1).fit(X, C)
>>> V = model.transform([[1.0, 0.05], [0.05, 1.0]])
>>> (V @ np.array([1.0, -1.0]) > 0).tolist()        # the first image is placed near caption 0
[True, False]
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from hardneg._validation import Interval, validate_params

__all__ = ["CaptionKNN"]


def _unit(A: np.ndarray) -> np.ndarray:
    return (A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), np.float32(1e-12))).astype(np.float32)


class CaptionKNN(BaseEstimator):
    """Images placed in a text-embedding space by the captions of their nearest captioned images.

    Parameters
    ----------
    n_neighbors : int, default 30
        ``k``: the captioned images whose captions are averaged.
    temperature : float, default 0.05
        ``τ`` of the softmax weights over the neighbours' cosine similarities.
    chunk_rows : int, default 1024
        Rows placed at a time (bounds the memory of the similarity block).

    Attributes
    ----------
    mean_ : ndarray (n_features,) float32
        Mean of the captioned images' features (subtracted before the cosine).
    train_ : ndarray (n_captioned, n_features) float32
        The captioned images, centred and unit-norm.
    captions_ : ndarray (n_captioned, n_dims) float32
        Their caption embeddings, centred by ``caption_mean_``.
    caption_mean_ : ndarray (n_dims,) float32
    n_features_in_ : int
    """

    _parameter_constraints = {
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "chunk_rows": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, n_neighbors: int = 30, *, temperature: float = 0.05, chunk_rows: int = 1024):
        self.n_neighbors = n_neighbors
        self.temperature = temperature
        self.chunk_rows = chunk_rows

    def fit(self, X, captions):
        """Keep the captioned images and their caption embeddings.

        Parameters
        ----------
        X : array-like (n_captioned, n_features)
            Images that have a caption.
        captions : array-like (n_captioned, n_dims)
            Each image's caption embedding (e.g. MiniLM of its caption text).

        Returns
        -------
        self : object
        """
        validate_params(self)
        X = np.asarray(X, dtype=np.float32)
        C = np.asarray(captions, dtype=np.float32)
        if X.ndim != 2 or C.ndim != 2 or X.shape[0] != C.shape[0]:
            raise ValueError(f"X, captions: expected one caption row per image row, got shapes {X.shape} and {C.shape}")
        if X.shape[0] < 2:
            raise ValueError(f"X: at least 2 captioned images are needed, got {X.shape[0]}")
        if not (np.isfinite(X).all() and np.isfinite(C).all()):
            raise ValueError("X, captions: must be finite")
        self.mean_ = X.mean(axis=0)
        self.train_ = np.ascontiguousarray(_unit(X - self.mean_))
        self.caption_mean_ = C.mean(axis=0)
        self.captions_ = np.ascontiguousarray(C - self.caption_mean_)
        self.n_features_in_ = int(X.shape[1])
        return self

    def transform(self, X, *, self_rows: Any = None) -> np.ndarray:
        """Each image's place in the text space, ``f(x)`` (unit norm).

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        self_rows : array-like (n_samples,) of int, optional
            For each row of ``X``, the row of the captioned images it is (left out of its own
            neighbours), or -1. Default: none is left out.

        Returns
        -------
        ndarray (n_samples, n_dims) float32
        """
        check_is_fitted(self)
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X: expected shape (n, {self.n_features_in_}), got {X.shape}")
        if not np.isfinite(X).all():
            raise ValueError("X: contains NaN or infinity")
        n_train = self.train_.shape[0]
        own = np.full(X.shape[0], -1, np.int64) if self_rows is None else np.asarray(self_rows, dtype=np.int64).ravel()
        if own.shape != (X.shape[0],) or (own >= n_train).any():
            raise ValueError(f"self_rows: expected {X.shape[0]} rows of the {n_train} captioned images (or -1)")
        k = min(int(self.n_neighbors), n_train - (1 if (own >= 0).any() else 0))
        out = np.empty((X.shape[0], self.captions_.shape[1]), np.float32)
        step = int(self.chunk_rows)
        for lo in range(0, X.shape[0], step):
            S = _unit(X[lo:lo + step] - self.mean_) @ self.train_.T
            mine = own[lo:lo + step]
            hit = np.nonzero(mine >= 0)[0]
            S[hit, mine[hit]] = -np.inf
            top = np.argpartition(-S, k - 1, axis=1)[:, :k]
            s = np.take_along_axis(S, top, axis=1)
            w = np.exp((s - s.max(axis=1, keepdims=True)) / np.float32(self.temperature))
            w /= w.sum(axis=1, keepdims=True)
            out[lo:lo + step] = np.einsum("nk,nkd->nd", w, self.captions_[top])
        return _unit(out)
