"""Baseline: OASIS (Chechik, Sharma, Shalit & Bengio, JMLR 2010).

Passive-aggressive updates on the same triplets and hinge loss:
``τ = min(C, L / ||V||²)``, ``W ← W + τ V`` with ``V = x (x⁺ - x⁻)ᵀ`` (full
matrix) or ``v = x ⊙ (x⁺ - x⁻)`` (diagonal). ``W`` starts at the identity.
The full matrix is ``n_words²`` float32 and is refused with the memory it
would need when that exceeds ``max_memory_gb``; an update costs
``nnz(x) * nnz(x⁺ - x⁻)`` either way.
"""

from __future__ import annotations

import logging
from numbers import Integral, Real

import numba
import numpy as np

from hardneg._typing import RandomState
from .._validation import RANDOM_STATE, Interval
from ._base import DiagonalSimilarity, _iter_batches, _register
from ._checks import resolve_rows
from ._lazy import csr_buffers, gather_v

logger = logging.getLogger(__name__)

__all__ = ["OasisDiagonal", "OasisFull", "full_matrix_bytes"]


def full_matrix_bytes(n_words: int) -> int:
    """Bytes of a full float32 OASIS matrix over ``n_words`` words.

    Parameters
    ----------
    n_words : int
        Vocabulary size.

    Returns
    -------
    int
        ``4 * n_words ** 2``.
    """
    return 4 * int(n_words) ** 2


@numba.njit(cache=True, nogil=True)
def _oasis_diag(indptr, indices, data, triplets, w, C, scratch, touched, vals):
    n_updates = 0
    for r in range(triplets.shape[0]):
        nt = gather_v(triplets[r, 0], triplets[r, 1], triplets[r, 2], indptr, indices, data, scratch, touched, vals)
        margin = 0.0
        norm2 = 0.0
        for q in range(nt):
            margin += w[touched[q]] * vals[q]
            norm2 += vals[q] * vals[q]
        loss = 1.0 - margin
        if loss > 0.0 and norm2 > 0.0:
            tau = min(C, loss / norm2)
            for q in range(nt):
                w[touched[q]] += tau * vals[q]
            n_updates += 1
    return n_updates


@numba.njit(cache=True, nogil=True)
def _oasis_full(indptr, indices, data, triplets, W, C, diff, mark, cols):
    n_updates = 0
    for r in range(triplets.shape[0]):
        a, pos, neg = triplets[r, 0], triplets[r, 1], triplets[r, 2]
        nc = 0
        for k in range(indptr[pos], indptr[pos + 1]):
            j = indices[k]
            diff[j] += data[k]
            if mark[j] == 0:
                mark[j] = 1
                cols[nc] = j
                nc += 1
        for k in range(indptr[neg], indptr[neg + 1]):
            j = indices[k]
            diff[j] -= data[k]
            if mark[j] == 0:
                mark[j] = 1
                cols[nc] = j
                nc += 1
        margin = 0.0
        xa2 = 0.0
        for k in range(indptr[a], indptr[a + 1]):
            i = indices[k]
            xa2 += data[k] * data[k]
            s = 0.0
            for q in range(nc):
                s += W[i, cols[q]] * diff[cols[q]]
            margin += data[k] * s
        d2 = 0.0
        for q in range(nc):
            d2 += diff[cols[q]] * diff[cols[q]]
        loss = 1.0 - margin
        if loss > 0.0 and xa2 * d2 > 0.0:
            tau = min(C, loss / (xa2 * d2))
            for k in range(indptr[a], indptr[a + 1]):
                i = indices[k]
                for q in range(nc):
                    W[i, cols[q]] += tau * data[k] * diff[cols[q]]
            n_updates += 1
        for q in range(nc):
            diff[cols[q]] = 0.0
            mark[cols[q]] = 0
    return n_updates


class _OasisBase(DiagonalSimilarity):
    _parameter_constraints: dict = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "n_triplets": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def fit(self, X, y=None, *, triplets=None):
        """One passive-aggressive pass from the identity, as SOLIS's ``fit``:
        labels ``y`` (``n_triplets`` triplets drawn from them, seeded by
        ``random_state``) or explicit ``triplets=`` (row indices into ``X``)."""
        self._validate_params()
        self._w = None
        self._triplet_rng = None
        self.n_updates_ = 0
        return self._partial_fit(X, y, triplets)

    def partial_fit(self, X, y=None, *, triplets=None):
        """Continue with more triplets: ``triplets=``, or ``n_triplets`` more drawn from ``y``."""
        self._validate_params()
        return self._partial_fit(X, y, triplets)

    def _partial_fit(self, X, y, triplets):
        C = float(self.C)
        batches = _iter_batches(self._triplets(X, y, triplets, "partial_fit"))
        if batches is None:
            raise TypeError("triplets: expected an (n, 3) array of row indices or an iterable of them, got None")
        seen = 0
        for batch in batches:
            n_features = self._n_words() if self.__sklearn_is_fitted__() else None
            Xb, tb = resolve_rows(X, batch, n_features=n_features, estimator=self)
            if not self.__sklearn_is_fitted__():
                self._allocate(Xb.shape[1])
                self.n_updates_ = 0
            self.n_updates_ = getattr(self, "n_updates_", 0) + self._run(Xb, tb, C)
            seen += tb.shape[0]
        if seen == 0:
            raise ValueError("triplets: the triplet stream is empty")
        return self


@_register
class OasisDiagonal(_OasisBase):
    """OASIS restricted to a diagonal matrix: O(nnz) per triplet at any size.

    Parameters
    ----------
    C : float
        Aggressiveness (PA-I cap on the step).
    n_triplets : int
        Triplets drawn from ``y`` when ``fit`` gets labels rather than ``triplets=``.
    random_state : int, Generator or None
        Seeds the triplets drawn from ``y`` (the pass is deterministic given the triplets).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from hardneg.similarity import OasisDiagonal
    >>> X = sp.csr_matrix(np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]))
    >>> OasisDiagonal(C=0.1).fit(X, triplets=[[0, 1, 2]]).w_.tolist()   # loss 1, τ = min(0.1, 1/2)
    [1.1, 0.9]
    """

    def __init__(self, C: float = 0.1, *, n_triplets: int = 100_000, random_state: RandomState = None):
        self.C = C
        self.n_triplets = n_triplets
        self.random_state = random_state

    @property
    def w_(self) -> np.ndarray:
        """The learned diagonal ``w`` (one weight per word), float64."""
        self._check_fitted()
        return self._w

    def _n_words(self) -> int:
        return self._w.shape[0]

    def _allocate(self, n_words: int) -> None:
        self._w = np.ones(n_words, np.float64)

    def _restore(self, arrays: dict, meta: dict) -> None:
        self._w = np.asarray(arrays["w"], np.float64)

    def _run(self, X, triplets, C) -> int:
        indptr, indices, data, scratch, touched, vals = csr_buffers(X)
        return int(_oasis_diag(indptr, indices, data, triplets, self._w, C, scratch, touched, vals))


@_register
class OasisFull(_OasisBase):
    """OASIS with a full ``n_words x n_words`` matrix (where it fits in memory).

    Parameters
    ----------
    C : float
        Aggressiveness (PA-I cap on the step).
    max_memory_gb : float
        Refuse (``MemoryError``-free, with a ``ValueError`` naming the need)
        vocabularies whose float32 matrix would exceed this.
    n_triplets : int
        Triplets drawn from ``y`` when ``fit`` gets labels rather than ``triplets=``.
    random_state : int, Generator or None
        Seeds the triplets drawn from ``y``.
    """

    _parameter_constraints = {**_OasisBase._parameter_constraints, "max_memory_gb": [Interval(Real, 0, None, closed="neither")]}

    def __init__(self, C: float = 0.1, *, max_memory_gb: float = 2.0, n_triplets: int = 100_000, random_state: RandomState = None):
        self.C = C
        self.max_memory_gb = max_memory_gb
        self.n_triplets = n_triplets
        self.random_state = random_state

    def __sklearn_is_fitted__(self) -> bool:
        return getattr(self, "W_", None) is not None

    def _n_words(self) -> int:
        return self.W_.shape[0]

    @property
    def n_features_in_(self) -> int:
        """Number of words (the side of ``W_``) the model was fitted on."""
        self._check_fitted()
        return self._n_words()

    def _allocate(self, n_words: int) -> None:
        need = full_matrix_bytes(n_words)
        cap = self.max_memory_gb * 2**30
        if need > cap:
            raise ValueError(
                f"OasisFull: a full matrix over {n_words:,} words needs {need / 2**30:,.1f} GiB of float32, "
                f"more than max_memory_gb={self.max_memory_gb}; use OasisDiagonal or raise max_memory_gb"
            )
        self.W_ = np.eye(n_words, dtype=np.float32)

    def _run(self, X, triplets, C) -> int:
        m = X.shape[1]
        row_nnz = np.diff(X.indptr)
        width = max(1, 2 * int(row_nnz.max()) if row_nnz.size else 1)
        return int(_oasis_full(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, triplets, self.W_, C,
                               np.zeros(m, np.float64), np.zeros(m, np.uint8), np.empty(width, np.int64)))

    def fit(self, X, y=None, *, triplets=None):
        """One passive-aggressive pass from the identity matrix, over triplets drawn from ``y`` or given.

        Parameters
        ----------
        X : sparse or dense matrix of shape (n_samples, n_words), or FeatureStore
            Non-negative bag-of-words vectors (a sparse store is read only at the
            triplets' rows).
        y : array-like of shape (n_samples,), optional
            Class labels, from which ``n_triplets`` triplets are drawn; or None with ``triplets``.
        triplets : array-like of shape (n_triplets, 3) or iterable of them, optional
            Row indices ``(query, more similar, less similar)`` into ``X``.

        Returns
        -------
        self : object
            Fitted model.
        """
        self.W_ = None
        return super().fit(X, y, triplets=triplets)

    @property
    def w_(self):
        """The diagonal of ``W_`` (for reports; scoring uses the full matrix)."""
        self._check_fitted()
        return np.diag(self.W_).astype(np.float64)

    @property
    def sparsity_(self) -> float:
        """Fraction of exactly-zero entries of ``W_``."""
        return float(np.mean(self.W_ == 0.0))

    def index_weights(self) -> np.ndarray:
        """Refused: a full matrix has no diagonal an inverted index could use.

        Raises
        ------
        TypeError
            Always.
        """
        raise TypeError("OasisFull: a full-matrix similarity cannot use the diagonal inverted index")

    def similarity(self, X, Y=None) -> np.ndarray:
        """Dense ``(n_x, n_y)`` matrix ``S(x_i, y_j) = x_iᵀ W y_j``.

        Parameters
        ----------
        X : sparse or dense matrix of shape (n_x, n_words)
            Non-negative bag-of-words vectors (prepared by :meth:`prepare`).
        Y : sparse or dense matrix of shape (n_y, n_words), optional
            The other side; default ``X`` itself.

        Returns
        -------
        ndarray of shape (n_x, n_y), dtype float64
            ``S(x_i, y_j)`` for every pair of rows; larger is more similar.
        """
        self._check_fitted()
        A = self.prepare(X)
        B = A if Y is None else self.prepare(Y)
        left = np.asarray(A @ self.W_, np.float64)  # queries first: (n_x, m) dense, small
        return np.asarray(B @ left.T).T

    def _pair_scores(self, left, right) -> np.ndarray:
        """``x_iᵀ W x_j`` of matching rows of two prepared CSR blocks."""
        left = np.asarray(left @ self.W_, np.float64)
        return np.asarray(right.multiply(left).sum(axis=1)).ravel()

    def _arrays(self) -> dict:
        return {"W": self.W_}

    _array_names = ("W",)

    def _restore(self, arrays: dict, meta: dict) -> None:
        # load_similarity has checked the parameters, and that W is finite and (n_features, n_features)
        self.W_ = np.ascontiguousarray(arrays["W"], np.float32)
