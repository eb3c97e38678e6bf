"""Exemplar-SVM feature encoding, E-SVM and recursive RE-SVM (Zepeda & Pérez, CVPR 2015).

Every feature ``x`` is replaced by the ℓ2-normalized weight vector of a
linear SVM trained with ``x`` as its only positive against a pool of generic
negatives ``N`` ([Zepeda15] Eq. (1), solved by :func:`hardneg.svm.fit_exemplar_svms`),
``w = w~ / ||w~||`` ([Zepeda15] Eq. (2)). The recursion, [Zepeda15] Eq. (3)-(4)::

    w^k = w(w^{k-1}, N^{k-1}),      N^k = { w(z, N^{k-1}) : z in N^{k-1} }

with ``w^0 = x`` and ``N^0 = N``. E-SVM is RE-SVM-1.
"""

from __future__ import annotations

import logging
import os
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._persist import ArraySpec, ModelFileError, array_digest, load_model, save_model
from .._validation import RANDOM_STATE, Interval, StrOptions, check_random_state, validate_params, validate_X
from ..svm import fit_exemplar_svms
from ._lda import lda_encode, lda_statistics

__all__ = ["ESVMEncoder", "load_esvm_encoder"]

logger = logging.getLogger(__name__)

_KIND = "esvm_encoder"
_VERSION = 1
MAX_RECURSIONS = 4
#: ``alpha_neg="auto"``: the negatives' total weight relative to the regularization, in units of the pool's
#: mean squared norm, ``alpha_neg * n_pool * mean ||z||^2 / lam`` (see :class:`ESVMEncoder`).
AUTO_TOTAL_WEIGHT = 2.0
SOLVERS = ("batch", "sgd", "liblinear", "lda")
_SCHEMA = {
    **{f"pool_{k}": ArraySpec("f", 2, optional=k > 0) for k in range(MAX_RECURSIONS)},
    "lda_mean": ArraySpec("f", 2, optional=True),
    "lda_precision": ArraySpec("f", 3, optional=True),
}


def _normalize(W) -> np.ndarray:
    """[Zepeda15] Eq. (2): rows divided by their ℓ2 norm (float32)."""
    W = np.asarray(W, dtype=np.float32)
    norms = np.linalg.norm(W, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError("an exemplar SVM came out as w = 0 (no direction to encode); raise alpha_pos or lower lam")
    return W / norms


def _check_no_zero_rows(X, name: str) -> None:
    zero = np.flatnonzero(~np.asarray(X).any(axis=1))
    if zero.size:
        raise ValueError(f"{name}: row {int(zero[0])} is all zeros ({zero.size} such rows); an all-zero feature has no direction to encode")


class ESVMEncoder(TransformerMixin, BaseEstimator):
    """Encode features as exemplar-SVM weights: E-SVM (``n_recursions=1``) and RE-SVM-k.

    ``fit(X)`` takes the negatives pool (a random sample of ``n_negatives``
    rows of ``X``, or all of it); ``transform(X)`` returns the ℓ2-normalized
    encodings ``w^k`` ([Zepeda15] Eq. (2)-(4)), of the same dimension as ``X``.

    For ``n_recursions = k > 1``, ``fit`` also encodes the pool itself
    ``k - 1`` times ([Zepeda15] Eq. (4)) and keeps the encoded pools ``N^1 .. N^{k-1}``
    (``pools_``), so transforming never re-encodes a pool, and
    :meth:`grow` adds a level without recomputing the ones before it. When a
    negative ``z`` of ``N^{k-1}`` is itself encoded, it is left out of its own
    negative set (an SVM with ``z`` as both its positive and a negative has
    no meaningful solution). The same rule leaves out of any exemplar's set
    the negatives identical to it (e.g. a query that is also in the pool).

    Parameters
    ----------
    n_recursions : int
        ``k`` of RE-SVM-k (1: E-SVM).
    solver : {"batch", "sgd", "liblinear", "lda"}
        ``"batch"``: exact hard-negative active-set solver (default);
        ``"sgd"``: Pegasos, as in the paper; ``"liblinear"``: one
        scikit-learn ``LinearSVC`` per exemplar (slow baseline); ``"lda"``:
        whitened LDA, ``w ∝ Σ⁻¹(x − μ_N)`` (Hariharan et al. 2012), an extra
        that is not an SVM.
    lam, alpha_pos : float
        [Zepeda15] Eq. (1)'s regularization and positive hinge weight.
    alpha_neg : float or "auto"
        [Zepeda15] Eq. (1)'s weight of each negative's hinge. What matters is the
        negatives' total weight relative to the regularization and to the
        features' scale, ``T = alpha_neg * n_pool * mean ||z||^2 / lam``.

        - If ``"auto"`` (default), ``T = 2``: ``alpha_neg = 2 * lam / (n_pool *
          mean ||z||^2)`` over the pool's rows ``z``.
        - If float, that weight per negative (the total then grows with the pool).

        At ``T = 2`` on l2 features the encoding is close to a re-centring by the
        pool mean (compare :class:`~hardneg.encoding.CentringEncoder`). Why
        ``T = 2``: see ``docs/methods/esvm.md``, "Why these defaults".
    n_negatives : int
        Size of the random pool drawn from the rows given to ``fit``.
    min_negatives : int
        Smallest pool accepted: a smaller one is an error (a pool of a few
        rows gives encodings that mostly describe the pool).
    tol : float
        Solver tolerance (``"batch"``: optimality; ``"sgd"``: relative progress).
    lda_reg : float
        Covariance ridge of the LDA mode, relative to the mean variance.
    batch_size : int
        Exemplars solved together.
    random_state : None, int or Generator
        Pool sampling (and SGD order).

    Attributes
    ----------
    pools_ : list of ndarray of shape (n_pool, n_features)
        ``N^0`` (the sampled negatives) and the encoded pools ``N^1 ..``.
    pool_rows_ : ndarray or None
        Rows of the fit input drawn into the pool (None: all of them).
    alpha_neg_ : float
        The ``alpha_neg`` in use (``"auto"`` resolved for the pool's size).
    lda_mean_, lda_precision_ : ndarray, only for ``solver="lda"``
        Per level, ``μ`` and ``Σ⁻¹`` of the pool.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.encoding import ESVMEncoder
    >>> rng = np.random.default_rng(0)
    >>> negatives = rng.normal(size=(300, 32)).astype(np.float32)
    >>> enc = ESVMEncoder(lam=0.01, alpha_pos=1.0, alpha_neg=0.01, random_state=0).fit(negatives)
    >>> codes = enc.transform(rng.normal(size=(5, 32)))
    >>> codes.shape, bool(np.allclose(np.linalg.norm(codes, axis=1), 1.0, atol=1e-5))
    ((5, 32), True)
    """

    _parameter_constraints = {
        "n_recursions": [Interval(Integral, 1, MAX_RECURSIONS, closed="both")],
        "solver": [StrOptions(set(SOLVERS))],
        "lam": [Interval(Real, 0, None, closed="neither")],
        "alpha_pos": [Interval(Real, 0, None, closed="neither")],
        "alpha_neg": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "n_negatives": [Interval(Integral, 1, 10_000_000, closed="both")],
        "min_negatives": [Interval(Integral, 1, 10_000_000, closed="both")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "lda_reg": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, 1_000_000, closed="both")],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        n_recursions: int = 1,
        *,
        solver: str = "batch",
        lam: float = 0.1,
        alpha_pos: float = 1.0,
        alpha_neg: float | str = "auto",
        n_negatives: int = 20_000,
        min_negatives: int = 200,
        tol: float = 1e-3,
        lda_reg: float = 0.1,
        batch_size: int = 256,
        random_state: int | np.random.Generator | None = None,
    ):
        self.n_recursions = n_recursions
        self.solver = solver
        self.lam = lam
        self.alpha_pos = alpha_pos
        self.alpha_neg = alpha_neg
        self.n_negatives = n_negatives
        self.min_negatives = min_negatives
        self.tol = tol
        self.lda_reg = lda_reg
        self.batch_size = batch_size
        self.random_state = random_state

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None, *, progress=None):
        """Take the negatives pool from ``X`` (array or :class:`hardneg.store.FeatureStore`) and encode it
        ``n_recursions - 1`` times. ``progress(n)`` is called as pool rows are encoded.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or FeatureStore
            The negatives pool; at most ``n_negatives`` rows (a seeded sample) are
            kept. No row may be all zeros.
        y : None
            Ignored (scikit-learn's transformer API).
        progress : callable, optional
            Called as ``progress(n)`` with the number of pool rows just encoded.

        Returns
        -------
        self : object
            Fitted encoder.

        Raises
        ------
        ValueError
            If the pool has fewer than ``min_negatives`` rows or holds a zero row.
        """
        validate_params(self)
        if self.min_negatives > self.n_negatives:
            raise ValueError(f"min_negatives={self.min_negatives} is larger than n_negatives={self.n_negatives}")
        rng = check_random_state(self.random_state)
        X, rows = self._pool_input(X, rng)
        X = validate_X(self, X, reset=True, min_rows=1)
        if rows is None and X.shape[0] > self.n_negatives:
            rows = np.sort(rng.choice(X.shape[0], self.n_negatives, replace=False))
            X = X[rows]
        if X.shape[0] < self.min_negatives:
            raise ValueError(
                f"X: the negatives pool has {X.shape[0]} rows, fewer than min_negatives={self.min_negatives}; "
                "give a larger pool (the paper uses 20,000), or lower min_negatives knowingly"
            )
        # refused: RE-SVM encodes the pool's rows as exemplars, and a zero exemplar has no direction
        _check_no_zero_rows(X, "X (negatives)")
        self.pool_rows_ = rows
        self.pools_ = [np.ascontiguousarray(X, dtype=np.float32)]
        self.alpha_neg_ = self._alpha_neg(self.pools_[0])
        self.lda_mean_, self.lda_precision_ = [], []
        self._seed = int(rng.integers(0, 2**31 - 1))
        self._extend_pools(self.n_recursions, progress)
        return self

    def _alpha_neg(self, pool) -> float:
        """The ``alpha_neg`` used: the given value, or ``T * lam / (n_pool * mean ||z||^2)`` for ``"auto"``."""
        if not isinstance(self.alpha_neg, str):
            return float(self.alpha_neg)
        mean_sq = float(np.einsum("ij,ij->i", pool, pool, dtype=np.float64).mean())
        return AUTO_TOTAL_WEIGHT * self.lam / (pool.shape[0] * mean_sq)

    def _legacy_auto(self) -> bool:
        """Whether ``alpha_neg_`` equals what ``"auto"`` gave before it was scaled by the pool's norm."""
        return isinstance(self.alpha_neg, str) and np.isclose(self.alpha_neg_, 2.0 * self.lam / self.pools_[0].shape[0], rtol=1e-6)

    def _pool_input(self, X, rng):
        from ..store import FeatureStore

        if not isinstance(X, FeatureStore):
            return X, None
        n = len(X)
        if n > self.n_negatives:
            rows = np.sort(X.sample(self.n_negatives, random_state=rng))
        else:
            rows = np.arange(n)
        block = X.take(rows)
        return (block.toarray() if hasattr(block, "toarray") else block), rows

    def _extend_pools(self, levels: int, progress=None) -> None:
        """Compute the missing pools ``N^1 .. N^{levels-1}`` (and LDA statistics up to level ``levels``)."""
        while True:
            if self.solver == "lda" and len(self.lda_mean_) < min(len(self.pools_), levels):
                mu, P = lda_statistics(self.pools_[len(self.lda_mean_)], self.lda_reg)
                self.lda_mean_.append(mu)
                self.lda_precision_.append(P)
            elif len(self.pools_) < levels:
                prev = self.pools_[-1]
                # [Zepeda15] Eq. (4): each negative is encoded against N^{k-1} without itself
                self.pools_.append(
                    self._encode_level(prev, len(self.pools_) - 1, exclude=np.arange(prev.shape[0]), progress=progress)
                )
            else:
                break

    def grow(self, n_recursions: int, progress=None):
        """Raise ``n_recursions`` of a fitted encoder, encoding only the pools it lacks; returns self.

        Parameters
        ----------
        n_recursions : int
            The new number of levels, in ``1..MAX_RECURSIONS``; pools already
            encoded are kept.
        progress : callable, optional
            Called as ``progress(n)`` with the number of pool rows just encoded.

        Returns
        -------
        self : object
            The encoder, with ``n_recursions`` set.
        """
        check_is_fitted(self)
        if isinstance(n_recursions, bool) or not isinstance(n_recursions, Integral) or not 1 <= n_recursions <= MAX_RECURSIONS:
            raise ValueError(f"n_recursions: expected an integer in 1..{MAX_RECURSIONS}, got {n_recursions!r}")
        self._extend_pools(int(n_recursions), progress)
        self.n_recursions = int(n_recursions)
        return self

    def _encode_level(self, X, k: int, *, exclude=None, progress=None) -> np.ndarray:
        """``w(X, N^k)`` normalized ([Zepeda15] Eq. (1)-(2)), or the LDA encoding with level ``k``'s statistics."""
        if self.solver == "lda":
            if progress is not None:
                progress(X.shape[0])
            return _normalize(lda_encode(X, self.lda_mean_[k], self.lda_precision_[k]))
        options = {"tol": self.tol, "batch_size": self.batch_size}
        W = fit_exemplar_svms(
            X, self.pools_[k], solver=self.solver, lam=self.lam, alpha_pos=self.alpha_pos, alpha_neg=self.alpha_neg_,
            exclude=exclude, progress=progress, random_state=self._seed + k,
            **(options if self.solver != "liblinear" else {}),
        )
        return _normalize(W)

    # ------------------------------------------------------------------ encoding
    def transform(self, X, *, n_recursions=None, progress=None):
        """Encodings ``w^k`` of the rows of ``X`` ([Zepeda15] Eq. (2)-(3)), float32, unit ℓ2 norm.

        ``n_recursions`` (default: the fitted one) picks a level ``<=`` it,
        e.g. E-SVM codes from an encoder fitted for RE-SVM-2.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows to encode; no row may be all zeros.
        n_recursions : int, optional
            Level of the codes, in ``1..`` the levels fitted; default the fitted
            ``n_recursions``.
        progress : callable, optional
            Called as ``progress(n)`` with the number of rows encoded at the last level.

        Returns
        -------
        ndarray of shape (n_samples, n_features), dtype float32
            The codes ``w^k``, one per row, each of unit l2 norm.
        """
        check_is_fitted(self)
        levels = self.n_recursions if n_recursions is None else n_recursions
        if isinstance(levels, bool) or not isinstance(levels, Integral) or not 1 <= int(levels) <= len(self.pools_):
            raise ValueError(f"n_recursions: expected an integer in 1..{len(self.pools_)} (the levels fitted), got {levels!r}")
        X = validate_X(self, X, reset=False, min_rows=0)
        if X.shape[0] == 0:
            return np.empty((0, self.n_features_in_), np.float32)
        _check_no_zero_rows(X, "X")
        H = X
        for k in range(int(levels)):
            H = self._encode_level(H, k, progress=progress if k == levels - 1 else None)
        return H

    def separation_fraction(self, X, *, n_recursions=None, codes=None) -> float:
        """Share of the rows of ``X`` whose exemplar SVM scores them above every one of their negatives.

        An exemplar SVM is defined as the hyperplane that separates its
        exemplar from the negatives ([Zepeda15] Eq. (1)); this measures whether
        the encodings still do: the fraction of rows ``x`` with
        ``w . x > max_z w . z`` over the negatives ``z`` of ``x``'s SVM. At
        level ``k`` (RE-SVM-k) the exemplar is ``w^{k-1}`` and the negatives are
        the encoded pool ``N^{k-1}`` ([Zepeda15] Eq. (3)-(4)). Negatives left out of an
        exemplar's set (identical to it) are left out here too.

        ``codes``: the encodings of ``X`` at that level, if already computed.
        1.0 means every exemplar is separated; a re-centring by the pool mean
        (all negatives at their bound) separates few of them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The exemplars (at least one row; no row all zeros).
        n_recursions : int, optional
            The level measured; default the fitted ``n_recursions``.
        codes : array-like of shape (n_samples, n_features), optional
            The encodings of ``X`` at that level, if already computed.

        Returns
        -------
        float
            The fraction, in ``[0, 1]``, of rows whose SVM separates them from their negatives.
        """
        from ..svm._exemplar import exclusion_mask

        check_is_fitted(self)
        levels = self.n_recursions if n_recursions is None else n_recursions
        if isinstance(levels, bool) or not isinstance(levels, Integral) or not 1 <= int(levels) <= len(self.pools_):
            raise ValueError(f"n_recursions: expected an integer in 1..{len(self.pools_)} (the levels fitted), got {levels!r}")
        X = validate_X(self, X, reset=False, min_rows=1)
        _check_no_zero_rows(X, "X")
        H = X
        for k in range(int(levels) - 1):
            H = self._encode_level(H, k)
        Z = self.pools_[int(levels) - 1]
        if codes is None:
            W = self._encode_level(H, int(levels) - 1)
        else:
            W = np.asarray(codes, dtype=np.float32)
            if W.shape != H.shape:
                raise ValueError(f"codes: expected shape {H.shape} (the encodings of X), got {W.shape}")
        separated = 0
        step = max(1, int(self.batch_size))
        for lo in range(0, H.shape[0], step):
            h, w = H[lo : lo + step].astype(np.float32), W[lo : lo + step]
            left_out = exclusion_mask(h, Z, h @ Z.T, np.full(h.shape[0], -1, np.int64))
            neg = w @ Z.T
            neg[left_out] = -np.inf
            separated += int((np.einsum("ij,ij->i", w, h) > neg.max(axis=1)).sum())
        return separated / H.shape[0]

    def retrieval_scores(self, X_query, X_database, *, symmetric: bool = True, database_codes=None):
        """Retrieval scores (n_query, n_database) of encoded queries.

        ``symmetric=True``: ``s_j = w_j . w°`` with the database encoded too
        (pass ``database_codes`` to reuse them); ``False``: the asymmetric
        ``s_j = x_j . w°`` of Malisiewicz et al., on the raw database features.

        Parameters
        ----------
        X_query : array-like of shape (n_query, n_features)
            The queries, encoded by :meth:`transform`.
        X_database : array-like of shape (n_database, n_features)
            The database's raw features (encoded too when ``symmetric``, unless
            ``database_codes`` is given).
        symmetric : bool, default=True
            Score against the database's codes (True) or its raw features (False).
        database_codes : array-like of shape (n_database, n_features), optional
            The database's codes, to reuse them (``symmetric`` only).

        Returns
        -------
        ndarray of shape (n_query, n_database)
            Dot products; higher is more similar.
        """
        from ._retrieval import asymmetric_scores, symmetric_scores

        q = self.transform(X_query)
        if symmetric:
            db = self.transform(X_database) if database_codes is None else database_codes
            return symmetric_scores(q, db)
        return asymmetric_scores(q, validate_X(self, X_database, reset=False, name="X_database", min_rows=0))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float32"]  # codes are float32 whatever comes in
        return tags

    # ------------------------------------------------------------------ persistence
    def fingerprint(self) -> str:
        """A digest of the fitted pools and parameters (stores encoded with it record it).

        Returns
        -------
        str
            A digest that changes whenever the pools, LDA statistics or parameters change.
        """
        check_is_fitted(self)
        arrays, meta = self._arrays_and_meta()
        parts = [array_digest(k, v) for k, v in sorted(arrays.items())]
        if isinstance(self.alpha_neg, str) and not self._legacy_auto():
            parts.append(f"alpha_neg_={self.alpha_neg_!r}")  # "auto" scaled by the pool's norm differs from the old "auto"
        return array_digest("esvm", np.frombuffer(repr((parts, sorted(meta["params"].items()))).encode(), np.uint8))

    def _arrays_and_meta(self):
        arrays = {f"pool_{k}": p for k, p in enumerate(self.pools_)}
        if self.solver == "lda":
            arrays["lda_mean"] = np.stack(self.lda_mean_)
            arrays["lda_precision"] = np.stack(self.lda_precision_)
        params = {k: v for k, v in self.get_params().items() if k != "random_state"}
        params["random_state"] = self.random_state if isinstance(self.random_state, int) else None
        meta = {"params": params, "n_features_in": int(self.n_features_in_), "seed": int(self._seed),
                "alpha_neg_resolved": float(self.alpha_neg_)}
        return arrays, meta

    def save(self, path: str | os.PathLike):
        """Write the fitted encoder (pools, LDA statistics, parameters) to a ``.npz`` model file.

        Parameters
        ----------
        path : str or path-like
            The file to write (atomically: a temporary file, then renamed).

        Returns
        -------
        Path
            The path written.
        """
        check_is_fitted(self)
        arrays, meta = self._arrays_and_meta()
        return save_model(path, _KIND, _VERSION, arrays, meta)

    @classmethod
    def load(cls, path: str | os.PathLike) -> ESVMEncoder:
        """Read an encoder written by :meth:`save`; :class:`hardneg._persist.ModelFileError` (one line) if
        the file is damaged, edited or impossible (NaN values, inconsistent shapes, bad parameters).

        Parameters
        ----------
        path : str or path-like
            A model file written by :meth:`save`.

        Returns
        -------
        ESVMEncoder
            The fitted encoder.
        """
        arrays, meta = load_model(path, _KIND, (_VERSION,), schema=_SCHEMA)
        try:
            return cls._from_file(arrays, meta)
        except (ValueError, TypeError, KeyError) as exc:
            raise ModelFileError(f"{path}: invalid E-SVM encoder ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None

    @classmethod
    def _from_file(cls, arrays, meta):
        params = dict(meta["params"])
        d = meta["n_features_in"]
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise ValueError(f"n_features_in {d!r} is not a positive integer")
        enc = cls(**params)
        validate_params(enc)
        pools = []
        for k in range(MAX_RECURSIONS):
            if f"pool_{k}" not in arrays:
                break
            p = arrays[f"pool_{k}"]
            if p.shape[1] != d or p.shape[0] < 1 or (pools and p.shape != pools[0].shape):
                raise ValueError(f"pool_{k} has shape {p.shape}, inconsistent with {d} features and pool_0")
            if not np.isfinite(p).all():
                raise ValueError(f"pool_{k} holds NaN or infinite values")
            _check_no_zero_rows(p, f"pool_{k}")  # fit refuses them: an all-zero negative has no direction
            if k > 0 and not np.allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-3):
                raise ValueError(f"pool_{k} rows are not unit-norm encodings")
            pools.append(np.ascontiguousarray(p, dtype=np.float32))
        if len(pools) != len(arrays) - sum(k in arrays for k in ("lda_mean", "lda_precision")):
            raise ValueError("the pools are not numbered 0, 1, ... without gaps")
        if enc.n_recursions > len(pools):
            raise ValueError(f"n_recursions={enc.n_recursions} needs {enc.n_recursions} pools, the file has {len(pools)}")
        enc.lda_mean_, enc.lda_precision_ = [], []
        if enc.solver == "lda":
            mu, P = arrays.get("lda_mean"), arrays.get("lda_precision")
            if mu is None or P is None or mu.shape[1:] != (d,) or P.shape[1:] != (d, d) or mu.shape[0] != P.shape[0]:
                raise ValueError("LDA statistics are missing or of the wrong shape")
            if mu.shape[0] < enc.n_recursions or not (np.isfinite(mu).all() and np.isfinite(P).all()):
                raise ValueError("LDA statistics are incomplete or hold NaN / infinite values")
            for k, Pk in enumerate(P[: mu.shape[0]].astype(np.float64)):
                if not np.allclose(Pk, Pk.T, rtol=1e-5, atol=1e-8 * max(np.abs(Pk).max(), 1e-300)):
                    raise ValueError(f"lda_precision[{k}] is not symmetric (a precision matrix is)")
                try:
                    np.linalg.cholesky(Pk)
                except np.linalg.LinAlgError:
                    raise ValueError(f"lda_precision[{k}] is not positive definite (a precision matrix is)") from None
            enc.lda_mean_, enc.lda_precision_ = list(mu.astype(np.float64)), list(P.astype(np.float64))
        elif "lda_mean" in arrays or "lda_precision" in arrays:
            raise ValueError(f"LDA statistics in a {enc.solver!r} encoder")
        seed = meta.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed {seed!r} is not an integer")
        enc._seed = seed
        enc.pools_ = pools
        resolved = meta.get("alpha_neg_resolved")
        if resolved is None:
            # files written before "auto" was scaled by the pool's norm: keep the value they were encoded with
            resolved = 2.0 * enc.lam / pools[0].shape[0] if isinstance(enc.alpha_neg, str) else float(enc.alpha_neg)
        if isinstance(resolved, bool) or not isinstance(resolved, (int, float)) or not np.isfinite(resolved) or resolved <= 0:
            raise ValueError(f"alpha_neg_resolved {resolved!r} is not a positive number")
        if not isinstance(enc.alpha_neg, str) and not np.isclose(resolved, float(enc.alpha_neg), rtol=1e-12):
            raise ValueError(f"alpha_neg_resolved {resolved!r} differs from alpha_neg={enc.alpha_neg!r}")
        enc.alpha_neg_ = float(resolved)
        enc.pool_rows_ = None
        enc.n_features_in_ = d
        return enc


def load_esvm_encoder(path: str | os.PathLike) -> ESVMEncoder:
    """Load an encoder saved by :meth:`ESVMEncoder.save`.

    Parameters
    ----------
    path : str or path-like
        The model file.

    Returns
    -------
    ESVMEncoder
        The fitted encoder.

    Raises
    ------
    ModelFileError
        If the file is not a valid E-SVM encoder model.
    """
    return ESVMEncoder.load(path)

