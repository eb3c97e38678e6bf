"""The estimator shape every diagonal similarity learner shares.

A learner holds a weight vector ``w_`` over the vocabulary and scores
``S_w(a, b) = aᵀ diag(w) b`` ([Gao17] Eq. (4), (7)). ``fit(X, y=None, *, triplets=None)``
and ``partial_fit`` follow metric-learn's convention: ``X`` is a sparse (or
dense) matrix or a sparse FeatureStore; class labels ``y`` are turned into
``n_triplets`` random triplets inside (:func:`random_triplets`, seeded by
``random_state``), or explicit triplets are given as ``triplets=``, row
indices into ``X``. ``score(X, y)`` is the retrieval mAP of the learned
similarity (:meth:`DiagonalSimilarity.score`), so model selection tools
(``cross_val_score``, ``GridSearchCV``) work on labels.
Models save to a portable ``.npz`` through :mod:`hardneg._persist`, with the
solver state, so a loaded model can go on learning with ``partial_fit``.

Registries: every model class registers itself in its own file
(``@_register`` for loading by class name; a SOLIS solver with
:func:`register_solver`, which also hands its per-word rules to the shared
loop of :mod:`._lazy` and lists it in :data:`SOLVERS`), so adding a solver
is one file. Parameters are declared once per class (``_parameter_constraints``)
and checked by scikit-learn's ``_validate_params`` when ``fit`` /
``partial_fit`` start and when a model file is loaded.
"""

from __future__ import annotations

import logging
import math
import numbers
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from .._persist import ArraySpec, ModelFileError, load_model, save_model
from .._validation import RANDOM_STATE, Interval, check_random_state
from ._checks import check_bow, resolve_rows
from ._lazy import SolverRule, stream, weights
from ._prox import N_PARAMS

logger = logging.getLogger(__name__)

KIND = "hardneg.Similarity"
VERSION = 1
_REGISTRY: dict[str, type[DiagonalSimilarity]] = {}
# Every array any similarity model stores; each class says which it needs (``_array_names``).
_SCHEMA = {
    "w": ArraySpec("f", 1, optional=True),
    "state": ArraySpec("f", 2, optional=True),
    "glob": ArraySpec("f", 1, optional=True),
    "W": ArraySpec("f", 2, optional=True),
    "input_idf": ArraySpec("f", 1, optional=True),
}
_MAX_VALUE = 1e30  # larger weights or sums overflow the float32 / float64 scores; no honest model has them


#: SOLIS solvers by short name (``"ada"``, ...), filled by :func:`register_solver` in each solver's file.
SOLVERS: dict[str, type] = {}


def _register(cls):
    """Class decorator: :func:`load_similarity` finds ``cls`` by its name in a model file."""
    if _REGISTRY.get(cls.__name__, cls) is not cls:
        raise TypeError(f"similarity model class name {cls.__name__!r} is registered twice")
    _REGISTRY[cls.__name__] = cls
    return cls


def register_solver(name: str, *, weight, update, gravity: bool = False):
    """Class decorator for a :class:`SolisBase` solver, in that solver's own file.

    Lists the class in :data:`SOLVERS` under ``name`` (what ``hardneg
    similarity train --solver`` accepts), registers it for
    :func:`load_similarity`, and gives the shared lazy loop its per-word
    rules ``weight`` / ``update`` (Numba functions; see
    :class:`._lazy.SolverRule`).
    """

    def deco(cls):
        if SOLVERS.get(name, cls) is not cls:
            raise TypeError(f"SOLIS solver name {name!r} is registered twice ({SOLVERS[name].__name__}, {cls.__name__})")
        cls._rule = SolverRule(weight, update, gravity)
        SOLVERS[name] = cls
        return _register(cls)

    return deco


def _iter_batches(triplets):
    """An ``(n, 3)`` array is one batch; any other iterable yields batches."""
    if triplets is None:
        return None
    if isinstance(triplets, np.ndarray) or (isinstance(triplets, (list, tuple)) and (len(triplets) == 0 or np.ndim(triplets[0]) == 1)):
        return iter([triplets])
    return iter(triplets)


def _n_rows(X) -> int:
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) >= 1 else len(X)


def _labels_for_sampling(y, n_rows: int) -> np.ndarray:
    """Integer labels for the triplet sampler: integer ``y`` as given (``-1`` is
    unlabeled), any other labels (strings, floats) as codes of their sorted values."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y: expected 1-D class labels, got shape {y.shape}")
    if y.shape[0] != n_rows:
        raise ValueError(f"y: has {y.shape[0]} labels for X with {n_rows} rows")
    if y.dtype.kind not in "iu":
        y = np.unique(y, return_inverse=True)[1].reshape(-1)
    return y


def tfidf_transform(X: sp.spmatrix, idf: np.ndarray | None = None, l2: bool = False) -> sp.csr_matrix:
    """``X * idf`` per word, then rows scaled to unit l2 norm (all-zero rows stay zero).

    Parameters
    ----------
    X : sparse matrix of shape (n_rows, n_words)
        Bag-of-words counts.
    idf : ndarray of shape (n_words,), optional
        Per-word weights; None leaves the counts unweighted.
    l2 : bool
        Scale each row to unit l2 norm.

    Returns
    -------
    scipy.sparse.csr_matrix of float32, shape (n_rows, n_words)
        With sorted indices.

    Raises
    ------
    ValueError
        If ``idf`` does not have one entry per word.
    """
    if idf is not None:
        if idf.shape != (X.shape[1],):
            raise ValueError(f"idf: has {idf.shape[0]} entries for {X.shape[1]} words")
        X = sp.csr_matrix(X @ sp.diags(np.asarray(idf, np.float32)), dtype=np.float32)
    if l2:
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        X = sp.csr_matrix(sp.diags(scale.astype(np.float32)) @ X, dtype=np.float32)
    if not X.has_sorted_indices:
        X.sort_indices()
    return X


class DiagonalSimilarity(BaseEstimator):
    """Common scoring, checks and persistence of diagonal models (``w_``)."""

    _w_all_ones: bool = False  # a fixed (not learned) w of ones: loading refuses any other

    def _check_fitted(self):
        if not self.__sklearn_is_fitted__():
            # NotFittedError is a ValueError and an AttributeError (so hasattr(model, "w_") is False)
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit() or load a model")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True  # bag-of-words histograms
        tags.target_tags.required = False  # TfidfCosine needs no labels; the learners say so in fit
        return tags

    def _triplets(self, X, y, triplets, method: str):
        """The triplets ``fit`` / ``partial_fit`` learn from: ``triplets=`` as given,
        or ``n_triplets`` drawn from the labels ``y`` (:func:`random_triplets`)."""
        if triplets is not None:
            if y is not None:
                raise ValueError(f"{method}: give class labels y (triplets are drawn from them) or triplets=, not both")
            return triplets
        if y is None:
            raise ValueError(f"{method}: give class labels y (triplets are drawn from them) or triplets= (row indices into X)")
        from hardneg.negatives import random_triplets

        labels = _labels_for_sampling(y, _n_rows(X))
        if getattr(self, "_triplet_rng", None) is None:
            self._triplet_rng = check_random_state(self.random_state)
        return random_triplets(labels, self.n_triplets, random_state=self._triplet_rng)

    def score(self, X, y) -> float:
        """Retrieval mean average precision of the learned similarity on labeled rows.

        Every row of ``X`` is a query that ranks all the other rows by
        :meth:`similarity`; the rows of its class are the relevant ones (ties
        are broken against them, so a similarity that scores everything
        equal earns no credit). The score is the AP averaged over the queries
        whose class has another row, in [0, 1], larger is better. It costs an
        ``(n, n)`` similarity matrix: use it on a held-out sample, as
        ``cross_val_score`` or ``GridSearchCV`` do.

        Parameters
        ----------
        X : sparse or dense matrix (n_samples, n_words)
        y : array-like (n_samples,)
            Class labels (any values; equal labels are relevant to each other).

        Returns
        -------
        float
            The mean average precision, in [0, 1].
        """
        self._check_fitted()
        S = self.similarity(X)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != S.shape[0]:
            raise ValueError(f"y: expected {S.shape[0]} class labels (one per row of X), got shape {y.shape}")
        codes = np.unique(y, return_inverse=True)[1].reshape(-1)
        relevant = codes[:, None] == codes[None, :]
        np.fill_diagonal(relevant, False)
        queries = np.flatnonzero(relevant.any(axis=1))
        if queries.size == 0:
            raise ValueError("y: no class has 2 rows, so no query has a relevant row to retrieve")
        ap = np.empty(queries.size)
        for k, q in enumerate(queries):
            others = np.delete(np.arange(S.shape[0]), q)
            rel = relevant[q, others]
            order = np.lexsort((rel, -S[q, others]))  # by score, ties: irrelevant rows first
            hits = rel[order]
            ranks = np.flatnonzero(hits) + 1
            ap[k] = np.mean(np.arange(1, ranks.size + 1) / ranks)
        return float(ap.mean())

    def __sklearn_is_fitted__(self) -> bool:
        return getattr(self, "_w", None) is not None or getattr(self, "_state", None) is not None

    @property
    def n_features_in_(self) -> int:
        """Number of words (the length of ``w_``) the model was fitted on."""
        self._check_fitted()
        return int(self.w_.shape[0])

    @property
    def sparsity_(self) -> float:
        """Fraction of exactly-zero weights."""
        return float(np.mean(self.w_ == 0.0))

    # scoring -------------------------------------------------------------
    def prepare(self, X):
        """Vectors as the model scores them.

        Identity for a model fitted on the vectors as given; a model whose
        ``input_idf_`` / ``input_l2_`` are set (TF-IDF, or a learner trained
        on TF-IDF vectors by ``hardneg similarity train``) weights each word
        by its idf and l2-normalizes each row first.

        Parameters
        ----------
        X : sparse or dense matrix of shape (n_samples, n_words)
            Non-negative bag-of-words vectors.

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_samples, n_words), dtype float32
            The vectors the model scores, with sorted indices.
        """
        X = check_bow(X, "X", n_features=self.n_features_in_, estimator=self)
        return tfidf_transform(X, getattr(self, "input_idf_", None), getattr(self, "input_l2_", False))

    def set_input_transform(self, idf: np.ndarray | None = None, l2: bool = False) -> DiagonalSimilarity:
        """Declare that the model was fitted on ``l2norm(X * idf)`` rather than ``X``.

        Parameters
        ----------
        idf : ndarray of shape (n_words,), optional
            Per-word weights applied by :meth:`prepare`; None for none.
        l2 : bool, default=False
            :meth:`prepare` scales each row to unit l2 norm.

        Returns
        -------
        self : object
            The model, with ``input_idf_`` and ``input_l2_`` set.
        """
        self.input_idf_ = None if idf is None else np.asarray(idf, np.float32)
        self.input_l2_ = bool(l2)
        return self

    def index_weights(self) -> np.ndarray:
        """The diagonal that an inverted index multiplies the postings by.

        Returns
        -------
        ndarray of shape (n_words,), dtype float64
            ``w_``.
        """
        return np.asarray(self.w_, np.float64)

    def similarity(self, X, Y=None) -> np.ndarray:
        """Dense ``(n_x, n_y)`` matrix ``S(x_i, y_j) = x_iᵀ diag(w) y_j``.

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
        return np.asarray(((A @ sp.diags(self.index_weights())) @ B.T).todense(), dtype=np.float64)

    def score_pairs(self, X, pairs) -> np.ndarray:
        """Similarity of each pair ``(i, j)`` of rows of ``X``: shape ``(n_pairs,)``.

        Parameters
        ----------
        X : sparse or dense matrix of shape (n_samples, n_words)
            Non-negative bag-of-words vectors.
        pairs : array-like of shape (n_pairs, 2), dtype int
            Row indices ``(i, j)`` into ``X``.

        Returns
        -------
        ndarray of shape (n_pairs,), dtype float64
            ``S(x_i, x_j)`` for each pair.
        """
        self._check_fitted()
        A = self.prepare(X)
        pairs = np.asarray(pairs)
        if pairs.ndim != 2 or pairs.shape[1] != 2 or (pairs.size and pairs.dtype.kind not in "iu"):
            raise ValueError(f"pairs: expected an (n, 2) integer array of row indices, got shape {pairs.shape} dtype {pairs.dtype}")
        if pairs.size and (pairs.min() < 0 or pairs.max() >= A.shape[0]):
            raise ValueError(f"pairs: row indices must lie in [0, {A.shape[0] - 1}]")
        return self._pair_scores(A[pairs[:, 0]], A[pairs[:, 1]])

    def _pair_scores(self, left, right) -> np.ndarray:
        """``S(left_k, right_k)`` of matching rows of two prepared CSR blocks (the model's own product)."""
        left = left @ sp.diags(self.index_weights())
        return np.asarray(left.multiply(right).sum(axis=1)).ravel()

    # persistence ---------------------------------------------------------
    def _arrays(self) -> dict:
        return {"w": np.asarray(self.w_, np.float64)}

    _array_names: tuple = ("w",)

    def _restore(self, arrays: dict, meta: dict) -> None:
        self._w = np.asarray(arrays["w"], np.float64)

    def save(self, path: str | Path) -> Path:
        """Write the model to a portable ``.npz`` file (no pickle).

        Parameters
        ----------
        path : str or Path
            The file to write (atomically: a temporary file, then renamed).

        Returns
        -------
        Path
            The path written.
        """
        self._check_fitted()
        params = {k: (None if v is None else v) for k, v in self.get_params().items() if isinstance(v, (int, float, str, bool, type(None)))}
        meta = {"class": type(self).__name__, "params": params, "n_features": self.n_features_in_}
        meta.update(self._extra_meta())
        meta["input_l2"] = bool(getattr(self, "input_l2_", False))
        arrays = self._arrays()
        if getattr(self, "input_idf_", None) is not None:
            arrays["input_idf"] = self.input_idf_
        return save_model(path, KIND, VERSION, arrays, meta)

    def _extra_meta(self) -> dict:
        return {}

    @classmethod
    def load(cls, path: str | Path) -> DiagonalSimilarity:
        """Read a model of this class written by :meth:`save`.

        Parameters
        ----------
        path : str or Path
            A model file written by :meth:`save`.

        Returns
        -------
        DiagonalSimilarity
            The fitted model, an instance of ``cls``.

        Raises
        ------
        ModelFileError
            If the file is not a valid similarity model, or holds another class.
        """
        model = load_similarity(path)
        if not isinstance(model, cls):
            raise ModelFileError(f"{path}: holds a {type(model).__name__}, expected {cls.__name__}")
        return model


def _finite(arr, what: str) -> np.ndarray:
    if not np.isfinite(arr).all() or np.abs(arr).max(initial=0.0) > _MAX_VALUE:
        raise ValueError(f"{what} holds non-finite or absurdly large values")
    return arr


def _count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
    return int(value)


def load_similarity(path: str | Path) -> BaseEstimator:
    """Load any similarity model written by ``save`` (the class is in the file).

    The file is checked as :func:`hardneg._persist.load_model` does (schema,
    sizes, checksums), then its values: finite weights, shapes that agree with
    ``n_features``, valid hyper-parameters, and for a SOLIS solver a state
    from which the stored ``w`` is recomputed exactly. Anything wrong is a
    one-line :class:`ModelFileError`.

    Parameters
    ----------
    path : str or Path
        A similarity model file.

    Returns
    -------
    DiagonalSimilarity or OasisFull
        The fitted model of the class the file records.

    Raises
    ------
    ModelFileError
        If the file is not a valid similarity model.
    """
    arrays, meta = load_model(path, KIND, (VERSION,), schema=_SCHEMA)
    name = meta.get("class")
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ModelFileError(f"{path}: unknown similarity model class {name!r}")
    cls = _REGISTRY[name]
    try:
        params = meta.get("params", {})
        if not isinstance(params, dict):
            raise TypeError("params is not a mapping")
        expected = set(cls._array_names) | {"input_idf"}
        if set(arrays) - expected or set(cls._array_names) - set(arrays):
            raise ValueError(f"arrays {sorted(arrays)} are not those of a {name} ({sorted(cls._array_names)})")
        n_features = meta.get("n_features")
        if _count(n_features, "n_features") == 0:
            raise ValueError("n_features is 0")
        for key, shape in (("w", (n_features,)), ("W", (n_features, n_features))):
            if key in arrays:
                if arrays[key].shape != shape:
                    raise ValueError(f"{key} of shape {arrays[key].shape} does not match n_features={n_features}")
                _finite(arrays[key], key)
        if cls._w_all_ones and not np.all(arrays["w"] == 1.0):
            raise ValueError(f"w of a {name} must be all ones (TF-IDF weighs words through input_idf), got values in "
                             f"[{arrays['w'].min():.4g}, {arrays['w'].max():.4g}]")
        idf = arrays.get("input_idf")
        if idf is not None:
            if idf.shape != (n_features,) or (idf < 0).any():
                raise ValueError(f"input_idf of shape {idf.shape} is not {n_features} non-negative factors")
            _finite(idf, "input_idf")
        if not isinstance(meta.get("input_l2", False), bool):
            raise TypeError("input_l2 is not a bool")
        model = cls(**params)
        model._validate_params()  # the file's hyper-parameters must be valid ones
        model._restore(arrays, meta)
        model.set_input_transform(idf, bool(meta.get("input_l2", False)))
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise ModelFileError(f"{path}: invalid {name} model file ({first})") from None
    return model


class SolisBase(DiagonalSimilarity):
    """Shared ``fit`` / ``partial_fit`` of the four SOLIS solvers.

    A solver's file defines its per-word rules, registers them with
    :func:`register_solver`, and sets ``_n_state``, ``_param_slots`` (which
    slot of the kernel's parameter vector each hyper-parameter fills) and
    ``_parameter_constraints``; the loop lives in :mod:`._lazy`.
    """

    _rule: SolverRule | None = None  # set by register_solver
    _n_state: int = 1
    _param_slots: dict = {}
    _parameter_constraints: dict = {
        "lam": [Interval(Real, 0, None, closed="left")],
        "w_init": [Interval(Real, None, None, closed="neither")],
        "n_triplets": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def _param_vector(self) -> np.ndarray:
        """The hyper-parameters as the kernel reads them (checked by ``_validate_params`` first)."""
        p = np.zeros(N_PARAMS, np.float64)
        for name, slot in self._param_slots.items():
            p[slot] = float(getattr(self, name))
        return p

    def _init_state(self, n_words: int, w0: float) -> np.ndarray:
        return np.zeros((self._n_state, n_words), np.float64)

    #: What the clock ``t`` counts (:mod:`._lazy`): S-TG and S-AFB count updates; S-DA and S-ADA
    #: take ``clock=`` as a parameter, which sets this per estimator.
    clock: str = "updates"

    @property
    def n_features_in_(self) -> int:
        self._check_fitted()
        return int(self._state.shape[1])

    @property
    def w_(self) -> np.ndarray:
        """Learned diagonal weights (all owed truncation paid)."""
        w = getattr(self, "_w", None)  # a cache: None when the state has moved on since
        if w is None:
            self._check_fitted()
            w = self._w = self._weights()
        return w

    def _weights(self) -> np.ndarray:
        if self._rule is None:  # only the solvers register_solver made have rules
            raise TypeError(f"{type(self).__name__} is not a registered SOLIS solver")
        return weights(self._rule, self._state, self._glob, self._param_vector())

    def fit(self, X, y=None, *, triplets=None):
        """Learn from one pass over a triplet stream, starting from ``w_init``.

        Parameters
        ----------
        X : scipy.sparse matrix or 2-D array (n_samples, n_words), or sparse FeatureStore
            Non-negative bag-of-words vectors (a dense array is converted to CSR).
        y : array-like (n_samples,), optional
            Class labels: ``n_triplets`` triplets are drawn from them with
            :func:`random_triplets` (the large-scale protocol), seeded by
            ``random_state``. Integer labels ``-1`` are unlabeled rows.
        triplets : (n, 3) int array, or an iterable of such arrays, keyword only
            Explicit rows ``(anchor, positive, negative)`` of ``X``, instead of ``y``.
        """
        self._validate_params()  # before anything changes
        for name in ("_state", "_glob", "_w", "_triplet_rng"):
            setattr(self, name, None)
        self.n_updates_ = 0
        self.n_triplets_seen_ = 0
        return self._consume(X, self._triplets(X, y, triplets, "fit"))

    def partial_fit(self, X, y=None, *, triplets=None):
        """Continue the same pass with more triplets (a stream, feedback, query logs):
        ``triplets=`` explicitly, or ``n_triplets`` more drawn from labels ``y``."""
        self._validate_params()
        return self._consume(X, self._triplets(X, y, triplets, "partial_fit"))

    def _consume(self, X, triplets):
        batches = _iter_batches(triplets)
        if batches is None:
            raise TypeError("triplets: expected an (n, 3) array of row indices or an iterable of them, got None")
        params = self._param_vector()
        clock = self.clock
        n_features = self.n_features_in_ if self.__sklearn_is_fitted__() else None
        seen = 0
        for batch in batches:
            Xb, tb = resolve_rows(X, batch, n_features=n_features, estimator=self)
            if getattr(self, "_state", None) is None:
                n_features = Xb.shape[1]
                self._state = self._init_state(n_features, params[-1])
                self._glob = np.zeros(2, np.float64)
                self.n_updates_ = 0
                self.n_triplets_seen_ = 0
            self._w = None
            self.n_updates_ += stream(self._rule, Xb, tb, self._state, self._glob, params, clock)
            self.n_triplets_seen_ += tb.shape[0]
            seen += tb.shape[0]
        if seen == 0:
            raise ValueError("triplets: the triplet stream is empty")
        logger.info("%s: %d of %d triplets violated", type(self).__name__, self.n_updates_, self.n_triplets_seen_)
        return self

    def _arrays(self) -> dict:
        self._check_fitted()
        return {"w": self.w_, "state": self._state, "glob": self._glob}

    def _extra_meta(self) -> dict:
        return {"n_updates": int(self.n_updates_), "n_triplets_seen": int(self.n_triplets_seen_)}

    _array_names = ("w", "state", "glob")
    # State rows that are sums of squares or clocks (never negative), and rows that
    # record a clock value (``glob[i]``) and so never exceed it: a forged value there
    # would turn into a NaN (√ of a negative) or a truncation that is never paid.
    _nonneg_rows: tuple = ()
    _clock_rows: tuple = ()  # (state row, glob index)
    _inv_h_row: int | None = None  # a cache of 1 / (δ + √G) (row 1), recomputed on load, never trusted

    def _restore(self, arrays: dict, meta: dict) -> None:
        if "clock" in self._get_param_names() and "clock" not in meta.get("params", {}):
            self.clock = "updates"  # a file written before ``clock`` existed: its t counted updates
        state, glob, w = (np.asarray(arrays[k], np.float64) for k in ("state", "glob", "w"))
        if state.shape != (self._n_state, w.shape[0]) or glob.shape != (2,):
            raise ValueError(f"solver state of shape {state.shape} / {glob.shape} does not fit {type(self).__name__} over {w.shape[0]} words")
        _finite(state, "state")
        _finite(glob, "glob")
        if glob[0] < 0 or glob[0] != math.floor(glob[0]) or glob[1] < 0:
            raise ValueError(f"solver clock {glob.tolist()} is not a non-negative update count")
        for row in self._nonneg_rows:
            if (state[row] < 0).any():
                raise ValueError(f"state row {row} of {type(self).__name__} must be non-negative")
        for row, at in self._clock_rows:
            if (state[row] < 0).any() or (state[row] > glob[at]).any():
                raise ValueError(f"state row {row} of {type(self).__name__} must lie in [0, {glob[at]}]")
        if self._inv_h_row is not None:
            state = state.copy()
            state[self._inv_h_row] = 1.0 / (self.delta + np.sqrt(state[1]))
        self._state, self._glob = np.ascontiguousarray(state), np.ascontiguousarray(glob)
        self._w = again = self._weights()  # the weights the state implies must be the stored ones
        if not np.allclose(again, w, rtol=1e-9, atol=1e-12):
            raise ValueError("the stored weights are not those the solver state implies")
        self.n_updates_ = _count(meta.get("n_updates", 0), "n_updates")
        self.n_triplets_seen_ = _count(meta.get("n_triplets_seen", 0), "n_triplets_seen")
        ticks = self.n_triplets_seen_ if self.clock == "triplets" else self.n_updates_
        if self.n_updates_ > self.n_triplets_seen_ or ticks != glob[0]:
            raise ValueError(f"n_updates={self.n_updates_} disagrees with n_triplets_seen={self.n_triplets_seen_} or the clock {glob[0]:.0f}")
