"""Baseline: TF-IDF weighting with cosine similarity (no learning from triplets)."""

from __future__ import annotations

import numpy as np

from hardneg._typing import RandomState
from .._validation import RANDOM_STATE, is_store
from ._base import DiagonalSimilarity, _register
from ._checks import check_bow

__all__ = ["TfidfCosine"]


@_register
class TfidfCosine(DiagonalSimilarity):
    """``S(a, b) = cos(a * idf, b * idf)`` with ``idf_j = log((1 + N) / (1 + df_j)) + 1``.

    ``fit`` counts document frequencies over ``X`` (a sparse or dense matrix,
    or a sparse FeatureStore read in chunks); labels ``y`` and ``triplets=``
    are accepted and ignored, so it fits the same harness as the learners
    (and ``score(X, y)``, the retrieval mAP, scores it like them). Every word
    keeps weight 1 (``w_`` is all ones: no sparsity).

    Parameters
    ----------
    random_state : None, int or Generator
        Unused (nothing is random); accepted so every similarity learner takes it.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from hardneg.similarity import TfidfCosine
    >>> X = sp.csr_matrix(np.array([[1.0, 1.0], [2.0, 0.0]]))
    >>> S = TfidfCosine().fit(X).similarity(X)
    >>> np.allclose(np.diag(S), 1.0)
    True
    """

    _array_names = ("w", "input_idf")
    _w_all_ones = True
    _parameter_constraints: dict = {"random_state": RANDOM_STATE}  # unused: kept so every learner takes it

    def __init__(self, random_state: RandomState = None):
        self.random_state = random_state

    def fit(self, X, y=None, *, triplets=None):
        """Count document frequencies over ``X`` and set ``idf_`` (``w_`` is all ones).

        Parameters
        ----------
        X : sparse or dense matrix of shape (n_samples, n_words), or FeatureStore
            Non-negative bag-of-words vectors; a store must be sparse (read in chunks).
        y : array-like of shape (n_samples,), optional
            Ignored (accepted so TF-IDF fits the learners' harness).
        triplets : array-like, optional
            Ignored, as ``y``.

        Returns
        -------
        self : object
            Fitted model.
        """
        self._validate_params()
        if is_store(X):
            if not X.is_sparse:
                raise TypeError(f"X: the store {str(X.path)!r} is in the dense layout; TF-IDF needs a sparse (CSR) store")
            df = np.zeros(X.dim, np.int64)
            n = 0
            for _, block in X.iter_chunks():
                block = check_bow(block, "X")
                df += np.bincount(block.indices, minlength=X.dim)
                n += block.shape[0]
            if n == 0:
                raise ValueError("X: the store is empty")
        else:
            X = check_bow(X, "X")
            df = np.bincount(X.indices, minlength=X.shape[1])
            n = X.shape[0]
        idf = (np.log((1.0 + n) / (1.0 + df)) + 1.0).astype(np.float32)
        self._w = np.ones(idf.shape[0], np.float64)
        self.set_input_transform(idf, l2=True)
        return self

    @property
    def w_(self) -> np.ndarray:
        """The diagonal ``w``: all ones (TF-IDF learns no per-word weight)."""
        self._check_fitted()
        return self._w

    @property
    def idf_(self) -> np.ndarray:
        """Per-word ``idf_j = log((1 + N) / (1 + df_j)) + 1``, float32, shape (n_words,)."""
        idf = self.input_idf_
        if idf is None:  # set_input_transform(None) removed it
            raise AttributeError(f"idf_: this {type(self).__name__} has no input idf (set_input_transform(None) removed it)")
        return idf
