"""Shared machinery of the HIK ensemble concept learners.

Negative Bootstrap and its baselines (random sampling, asymmetric bagging,
sampling positives) differ only in how each iteration picks its training
rows and whether the meta classifiers are averaged. This module holds the
loop of Li et al. (IEEE TMM 2013), Table I, with the first choice as one hook
(:meth:`HIKEnsembleConcept._pool_sampler`, a pool sampler of
:mod:`hardneg.negatives`) and the second as a class attribute (``_average``), the ensemble bookkeeping (one merged support-vector set, Eq.
(9)-(12)), the per-iteration record of selected negatives (Fig. 7), and
compression / persistence of the result.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterator
from numbers import Integral, Real
from pathlib import Path
from typing import Literal

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import average_precision_score
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_array, check_consistent_length, check_is_fitted, column_or_1d, validate_data

from hardneg._typing import ArrayLike
from hardneg._validation import Interval, StrOptions, check_positive_int, check_random_state, is_store
from hardneg.negatives import BasePoolSampler, NegativePool, RandomPoolSampler
from hardneg.svm import HIKBinTable, compress_hik, fit_hik_svm_gram, hik_gram

from ._compressed import CompressedConcept
from ._related import related_tags as related_tags_for

logger = logging.getLogger(__name__)

__all__ = ["HIKEnsembleConcept"]

# Size bounds: beyond them a fit cannot finish on one machine, so refuse up front
# with a clear error instead of swapping or dying (issue 10).
MAX_ITER = 1000
#: Rows of one meta classifier's training set (|B+| plus negatives): the kernel SVM
#: holds an (n, n) Gram matrix in float32 and again in float64, ~4.8 GB at 20,000.
MAX_TRAIN_ROWS = 20_000
#: Bins per dimension of a table: d x (q + 1) float64 values per table.
MAX_BINS = 4096

# One constraint per public parameter; each subclass declares the ones it takes.
_CONSTRAINTS = {
    "n_iter": [Interval(Integral, 1, MAX_ITER, closed="both")],
    "n_candidates": [None, Interval(Integral, 1, None, closed="left")],
    "n_bins": [Interval(Integral, 1, MAX_BINS, closed="both")],
    "C": [Interval(Real, 0, None, closed="neither")],
    "weights": [None, StrOptions({"uniform"}), "array-like"],
    "n_negatives": [None, Interval(Integral, 1, MAX_TRAIN_ROWS, closed="both")],
    "max_negatives": [Interval(Integral, 1, MAX_TRAIN_ROWS, closed="both")],
    "positive_fraction": [Interval(Real, 0, 1, closed="right")],
    "class_weight": [None, StrOptions({"balanced"}), dict],
    "compressed_training": ["boolean"],
    "skip_top": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="left")],
    "random_state": ["random_state", np.random.Generator],
}


def _constraints(*names) -> dict:
    return {name: _CONSTRAINTS[name] for name in names}


def _exclusions(exclude_tags, related_tags) -> list[str]:
    out = []
    for tags in (exclude_tags, related_tags):
        if tags is None:
            continue
        out.extend([tags] if isinstance(tags, str) else [str(t) for t in tags])
    return out


def _second_argument_is_pool(X, second) -> bool:
    """The dispatch rule of :meth:`HIKEnsembleConcept.fit` (see its docstring).

    Labels are 1-D, or an (n, 1) column when X has more than one feature (a
    pool must have X's width, so such a column cannot be one); a FeatureStore,
    a sparse matrix or any other 2-D array is a pool.
    """
    if is_store(second) or sp.issparse(second):
        return True
    shape = _shape(second)
    if shape is None or len(shape) < 2:
        return False
    if len(shape) == 2 and shape[1] == 1:
        x_shape = _shape(X)
        return x_shape is not None and len(x_shape) == 2 and x_shape[1] == 1
    return True


def _shape(obj):
    """Shape of an array-like without validating it; None for ragged input."""
    shape = getattr(obj, "shape", None)  # arrays, DataFrames: no conversion
    if isinstance(shape, tuple):
        return shape
    try:
        return np.asarray(obj).shape
    except (ValueError, TypeError):  # ragged nested lists: let label validation say so
        return None


def _check_non_negative(X, name: str) -> None:
    # sklearn's estimator checks match "Negative values in data"; the rest says why.
    if X.size and X.min() < 0:
        raise ValueError(
            f"Negative values in data passed to {name} (min {X.min():.4g}, shape {X.shape}): "
            "the histogram-intersection kernel needs non-negative features"
        )


def _check_n_bins(q) -> int:
    q = check_positive_int(q, "n_bins")
    if q > MAX_BINS:
        raise ValueError(f"n_bins: must be <= {MAX_BINS}, got {q}")
    return q


def fit_member(K_pp, P, N, *, C: float, class_weight=None):
    """Train one meta classifier g_t on positives ``P`` and negatives ``N`` ([Li13] Table I, step 8).

    Assembles the HIK Gram matrix ([Li13] Eq. (1)) of ``[P; N]`` from the
    positives' block ``K_pp`` (computed once per fit and reused), then solves
    the kernel SVM with ``y = 1`` for ``P`` and ``0`` for ``N``. Returns
    ``(support, dual_coef, intercept)``, ``support`` indexing the rows of
    ``[P; N]``. Shared by the bootstrap loop and
    :meth:`hardneg.concept.NegativeBootstrap.refine` (relevance feedback).
    """
    n_p, n_n = P.shape[0], N.shape[0]
    K = np.empty((n_p + n_n, n_p + n_n), dtype=np.float32)
    K[:n_p, :n_p] = K_pp
    K_pn = hik_gram(P, N, check=False)
    K[:n_p, n_p:] = K_pn
    K[n_p:, :n_p] = K_pn.T
    K[n_p:, n_p:] = hik_gram(N, check=False)
    y = np.r_[np.ones(n_p), np.zeros(n_n)]
    return fit_hik_svm_gram(K, y, C=C, class_weight=class_weight)


def _add_table(acc, table, w):
    """``acc + w * table`` over a table's value arrays and intercept, with the weight sum last."""
    if acc is None:
        return [w * table.values, w * table.below, w * table.above, w * table.intercept, w]
    acc[0] += w * table.values
    acc[1] += w * table.below
    acc[2] += w * table.above
    acc[3] += w * table.intercept
    acc[4] += w
    return acc


def _mean_table(acc, grid_lo, grid_hi) -> HIKBinTable:
    """The weighted mean of the tables summed by :func:`_add_table` ([Li13] Eq. (9)/(10) on the tables)."""
    total = acc[4]
    return HIKBinTable(grid_lo, grid_hi, acc[0] / total, acc[1] / total, acc[2] / total, acc[3] / total)


class _SupportRegistry:
    """Union of support vectors over the ensemble, deduplicated by origin.

    Every meta classifier shares the positives, and bootstrap often picks a
    pool item more than once, so merging by origin keeps M (and the exact
    tables) small: M <= |B+| + distinct selected negatives.
    """

    def __init__(self, n_pos: int):
        self.n_pos = n_pos
        self.slot_of: dict[tuple[str, int], int] = {}
        self.vectors: list[np.ndarray] = []
        self.origin: list[tuple[str, int]] = []

    def slots(self, keys, rows_of_key) -> np.ndarray:
        out = np.empty(len(keys), dtype=np.int64)
        for j, key in enumerate(keys):
            slot = self.slot_of.get(key)
            if slot is None:
                slot = len(self.vectors)
                self.slot_of[key] = slot
                self.vectors.append(rows_of_key(j))
                self.origin.append(key)
            out[j] = slot
        return out


class HIKEnsembleConcept(ClassifierMixin, BaseEstimator):
    """Base class: an ensemble of HIK SVMs trained on B+ and sampled negatives.

    Subclasses define ``__init__`` (their public parameters), their
    ``_parameter_constraints``, and :meth:`_pool_sampler`, the one hook that
    says how each iteration draws its negatives (a pool sampler of
    :mod:`hardneg.negatives`); the class attribute ``_average`` says whether
    the meta classifiers are averaged ([Li13] Eq. (9); otherwise the model is
    the last classifier).

    The estimators are binary rankers in scikit-learn's classifier form:
    ``decision_function`` ranks images (the paper's use), ``predict`` is its
    sign (``classes_[1]`` where ``G(x) > 0``), and ``score`` is the average
    precision of the ranking, so ``GridSearchCV`` tunes them by a ranking
    metric with stratified folds (every fold keeps some positives).
    """

    _average = True
    _parameter_constraints: dict = {}

    # Settings of Table I that not every learner takes as a parameter: a learner without
    # one trains with the value here (a learner that takes it sets it in __init__).
    n_iter: int = 1
    n_negatives: int | None = None
    positive_fraction: float = 1.0
    weights: str | ArrayLike | None = None
    class_weight: str | dict | None = None
    compressed_training: bool = True
    # Parameters every learner takes.
    n_bins: int
    C: float
    random_state: int | np.random.Generator | None

    def _pool_sampler(self, n_neg: int) -> BasePoolSampler:
        """The sampler that draws each iteration's ``n_neg`` negatives ([Li13] Table I, steps 3 and 5-7).

        Each learner implements it. A sampler with ``needs_scorer`` gets the
        compressed ensemble G_{t-1} ([Li13] Eq. (16)) as its scorer from
        iteration 2 on; iteration 1, with no ensemble yet, draws at random.
        Its ``sample`` also receives the spies' scores where
        :meth:`_spy_folds` holds positives out.

        Parameters
        ----------
        n_neg : int
            Negatives per iteration, |B-^(t)| (already capped at the pool's allowed rows).

        Returns
        -------
        BasePoolSampler
        """
        raise NotImplementedError

    def _n_negatives(self) -> int | None:
        """|B-^(t)| as the parameters give it (None: as many as the positives of a meta classifier)."""
        return self.n_negatives

    def _member_sizes(self, n_pos: int, pool: NegativePool) -> tuple[int, int]:
        """``(positives, negatives)`` of one meta classifier for ``n_pos`` positives and ``pool``."""
        n_pos_iter = max(1, int(round(float(self.positive_fraction) * n_pos)))
        n_neg = self._n_negatives()
        return n_pos_iter, min(n_pos_iter if n_neg is None else int(n_neg), pool.n_allowed)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True  # histogram-intersection kernel
        tags.classifier_tags.multi_class = False  # positives vs the unlabeled pool
        return tags

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None, *, pool=None, exclude_tags=None, related_tags=None, pool_tags=None, pool_rows=None,
            progress=None):
        """Learn a concept from positives and a pool of (tagged) candidate negatives.

        Two call forms share this method:

        ``fit(X, y)`` (scikit-learn)
            ``y`` labels each row of ``X``: the greater of its two labels marks
            the positives B+ (1 in {0, 1}, ``True``, 1 in {-1, 1}), the other
            the unlabeled pool S that negatives are sampled from. This is the
            form ``GridSearchCV``, ``cross_val_score`` and ``Pipeline`` use.
        ``fit(positives, pool)`` or ``fit(positives, pool=pool)`` (the paper's)
            B+ and S given separately; the pool may be a ``FeatureStore``,
            read in chunks and by rows.

        Dispatch rule for the second positional argument: a 1-D array (or
        list) is ``y``; so is an (n, 1) column when ``X`` has more than one
        feature (a pool must be as wide as ``X``; scikit-learn warns and
        ravels the column). A ``FeatureStore``, a sparse matrix, or any other
        2-D array is a pool. Passing ``pool=`` by keyword is always the
        paper's form.

        Parameters
        ----------
        X : array-like (n, d), non-negative
            All labeled rows (``fit(X, y)``) or B+, the positive examples.
        y : array-like (n,) of two labels, or a pool
            See the dispatch rule above.
        pool : array-like (n_pool, d) or FeatureStore, keyword only
            The pool S of user-tagged items (paper's form).
        exclude_tags : str or list of str, optional
            The concept's tag(s): pool items carrying them are never negatives.
        related_tags : list of str or "auto", optional
            Further tags to exclude (synonyms, sub-concepts). ``"auto"``
            finds them as in the paper (Section III-A): tags of the pool that
            are WordNet hyponyms of the concept's tag, and tags close to it by
            Normalized Google Distance over the pool's tag co-occurrence
            (:func:`hardneg.concept.related_tags`); they land in
            ``related_tags_`` with the reason for each.
        pool_tags : sequence of (list of str), optional
            Tags per row of an array pool, or per row of ``X`` in ``fit(X, y)``.
        pool_rows : array of int, optional
            Restrict the pool to these rows (e.g. a training split); paper's
            form only (in ``fit(X, y)``, ``y`` already says which rows are pool).
        progress : callable, optional
            Called with 1 after each iteration.

        Returns
        -------
        self

        Notes
        -----
        ``iterations_[t]["rows"]`` index the pool in the paper's form and the
        rows of ``X`` in ``fit(X, y)``; both forms give the same model when
        ``X = vstack([positives, pool])`` and the seed is the same.
        """
        self._validate_params()
        kwargs = dict(exclude_tags=exclude_tags, related_tags=related_tags, pool_tags=pool_tags,
                      pool_rows=pool_rows, progress=progress)
        if pool is not None:
            if y is not None:
                raise TypeError("fit: pass either y (labels of X) or pool=, not both")
            return self._fit_positives_pool(X, pool, **kwargs)
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None: call fit(X, y) with "
                "y = 1 for positives and 0 for the unlabeled pool, or fit(positives, pool)"
            )
        if _second_argument_is_pool(X, y):
            return self._fit_positives_pool(X, y, **kwargs)
        return self._fit_labels(X, y, **kwargs)

    def _fit_positives_pool(self, positives, pool, *, exclude_tags, related_tags, pool_tags, pool_rows, progress):
        P = check_array(positives, dtype=np.float32, order="C", ensure_min_samples=0, estimator=self,
                        input_name="positives")
        if P.shape[0] < 1:
            raise ValueError(f"positives: needs at least 1 row, got shape {P.shape}")
        _check_non_negative(P, "positives")
        validate_data(self, P, skip_check_array=True)  # n_features_in_ (and feature names)
        self._check_n_positives(P.shape[0])
        pool = self._make_pool(pool, pool_tags, exclude_tags, related_tags, pool_rows)
        if pool.dim != P.shape[1]:
            raise ValueError(f"pool: has {pool.dim} features but positives have {P.shape[1]}")
        self.classes_ = np.array([0, 1])
        return self._fit(P, pool, progress)

    def _fit_labels(self, X, y, *, exclude_tags, related_tags, pool_tags, pool_rows, progress):
        X, y = validate_data(self, X, y, dtype=np.float32, order="C")
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y")
        if y_type != "binary":
            raise ValueError(f"Only binary classification is supported. The type of the target is {y_type}: "
                             "y = 1 for positives and 0 for the unlabeled pool")
        _check_non_negative(X, "X")
        classes = np.unique(y)
        if classes.size < 2:
            only = classes[0]
            if isinstance(only, (bool, np.bool_, Integral, Real)) and only > 0:
                what = "no unlabeled pool rows (label 0) to sample negatives from"
            elif isinstance(only, (bool, np.bool_, Integral, Real)):
                what = "no positives (label 1)"
            else:
                what = "positives and pool cannot be told apart"
            raise ValueError(f"y: only one class ({only!r}) is present: {what}; fit(X, y) needs both")
        if pool_rows is not None:
            raise ValueError("pool_rows: only with fit(positives, pool); in fit(X, y) the rows with the "
                             "lower label are the pool")
        is_pos = y == classes[1]
        P = np.ascontiguousarray(X[is_pos])
        self._check_n_positives(P.shape[0])
        pool = self._make_pool(X, pool_tags, exclude_tags, related_tags, np.flatnonzero(~is_pos))
        self.classes_ = classes
        return self._fit(P, pool, progress)

    def _make_pool(self, data, pool_tags, exclude_tags, related_tags, rows) -> NegativePool:
        """The negative pool; ``related_tags="auto"`` finds the paper's related tags first."""
        self.related_tags_ = {}
        if isinstance(related_tags, str) and related_tags == "auto":
            concept = _exclusions(exclude_tags, None)
            if not concept:
                raise ValueError("related_tags='auto': needs exclude_tags (the concept's tag) to find related tags for")
            first = NegativePool(data, tags=pool_tags, exclude_tags=concept, rows=rows)
            within = np.union1d(first.allowed, first.tagged)
            self.related_tags_ = related_tags_for(concept, first.tags_of(within))
            related_tags = sorted(self.related_tags_)
            logger.info("related tags of %s excluded from the negatives: %s", concept, self.related_tags_)
        elif related_tags is not None:
            self.related_tags_ = {t: "given" for t in _exclusions(related_tags, None)}
        return NegativePool(data, tags=pool_tags, exclude_tags=_exclusions(exclude_tags, related_tags), rows=rows)

    @staticmethod
    def _check_n_positives(n_pos: int) -> None:
        if n_pos > MAX_TRAIN_ROWS:
            raise ValueError(
                f"positives: {n_pos} rows, more than the {MAX_TRAIN_ROWS} a kernel SVM can train on here "
                f"(it holds an n x n Gram matrix); use a random subset of the positives"
            )

    def _class_weight(self):
        """``class_weight`` keyed by the internal labels (1 = positive, 0 = pool)."""
        cw = self.class_weight
        if not isinstance(cw, dict):
            return cw
        unknown = [k for k in cw if k not in self.classes_.tolist()]
        if unknown:
            raise ValueError(f"class_weight: labels {unknown!r} are not in y's classes {self.classes_.tolist()!r}")
        return {internal: float(cw.get(label, 1.0)) for internal, label in enumerate(self.classes_.tolist())}

    def _spy_folds(self, n_pos: int, pool: NegativePool) -> int:
        """Folds of B+ held out in turn as spies (0: every member trains on all of B+).

        Subclasses that estimate untagged positives from spies override it.
        """
        return 0

    def _fit(self, P, pool, progress):
        """Table I on validated positives ``P`` (float32) and a :class:`NegativePool`."""
        # Parameters were checked against _parameter_constraints (at fit); what remains
        # depends on the data (sizes, the number of weights) or is not expressible there (finite C).
        T = int(self.n_iter)
        C = float(self.C)
        if not np.isfinite(C):
            raise ValueError(f"C: must be a finite number > 0, got {C}")
        q = int(self.n_bins)
        weights = self._check_weights(T)
        class_weight = self._class_weight()
        rng = check_random_state(self.random_state)

        n_pos_iter, n_neg = self._member_sizes(P.shape[0], pool)
        if n_pos_iter + n_neg > MAX_TRAIN_ROWS:
            raise ValueError(
                f"n_negatives: {n_pos_iter} positives + {n_neg} negatives per meta classifier exceed the "
                f"{MAX_TRAIN_ROWS} training rows a kernel SVM can hold here (an n x n Gram matrix); "
                "use fewer negatives or positives"
            )
        K_pp = hik_gram(P, check=False)
        registry = _SupportRegistry(P.shape[0])
        sampler = self._pool_sampler(n_neg)
        scored = sampler.needs_scorer and T > 1  # candidates scored by G_{t-1} from iteration 2 on
        first = RandomPoolSampler() if sampler.needs_scorer else sampler  # iteration 1 has no ensemble to score with
        train_scorer = None
        # Spies (an extra, see NegativeBootstrap): member t trains without fold (t - 1) mod K of B+;
        # fold k's positives are then scored by the members that never saw them (spy_acc[k]).
        n_folds = self._spy_folds(P.shape[0], pool) if scored else 0
        if n_folds:
            fold_of = np.empty(P.shape[0], dtype=np.int64)
            fold_of[rng.permutation(P.shape[0])] = np.arange(P.shape[0]) % n_folds
            spy_acc: list = [None] * n_folds
        if scored:
            # Fixed grid [0, max] for the training-time tables so that the
            # tables of g_1..g_t add up (H_i is linear in the dual coefficients).
            grid_hi = np.maximum(P.max(axis=0), pool.feature_max()).astype(np.float64)
            grid_lo = np.zeros_like(grid_hi)
            acc = None
        members, records = [], []
        spy_scores = None
        for t in range(1, T + 1):
            # ---- choose training rows (Table I, steps 3 and 5-7)
            if scored and t > 1:
                spy_scores = self._spy_scores(P, fold_of, spy_acc, grid_lo, grid_hi) if n_folds else None
                sample = sampler.sample(pool, n_neg, rng, scorer=train_scorer, reference_scores=spy_scores)
            else:
                sample = first.sample(pool, n_neg, rng)
            pos_idx = (np.sort(rng.choice(P.shape[0], size=n_pos_iter, replace=False))
                       if n_pos_iter < P.shape[0] else np.arange(P.shape[0]))
            held = (t - 1) % n_folds if n_folds else -1
            if n_folds:
                pos_idx = pos_idx[fold_of[pos_idx] != held]
            N = pool.take(sample.rows)
            Pt = P[pos_idx]
            # ---- train g_t on B+ and B-^(t) (step 8)
            n_p = pos_idx.size
            support, coef, b = fit_member(K_pp[np.ix_(pos_idx, pos_idx)], Pt, N, C=C, class_weight=class_weight)
            keys = [("pos", int(pos_idx[j])) if j < n_p else ("pool", int(sample.rows[j - n_p])) for j in support]
            slots = registry.slots(keys, lambda j, support=support: (Pt[support[j]] if support[j] < n_p else N[support[j] - n_p]))
            members.append((slots, coef, b))
            # ---- update the compressed G_t used to score candidates next time ([Li13] Eq. (9), (16))
            if scored and t < T:
                sv_t = np.stack([registry.vectors[s] for s in slots])
                tab = HIKBinTable.on_grid(sv_t, coef, b, grid_lo, grid_hi, q)
                w = weights[t - 1]
                if n_folds:
                    spy_acc[held] = _add_table(spy_acc[held], tab, w)
                acc = _add_table(acc, tab, w)
                train_scorer = self._training_scorer(_mean_table(acc, grid_lo, grid_hi), registry, members, weights)
            tags = pool.tags_of(sample.rows)
            records.append({
                "iteration": t,
                "rows": sample.rows.tolist(),
                "ids": pool.ids_of(sample.rows),
                "tags": tags,
                "scores": None if sample.scores is None else sample.scores.tolist(),
                "n_candidates": int(sample.n_candidates),
                "n_skipped": int(sample.n_skipped),
                "n_spies": 0 if spy_scores is None else int(spy_scores.size),
                "n_support": int(support.size),
            })
            logger.debug("iteration %d: %d support vectors, %d negatives", t, support.size, n_neg)
            if progress is not None:
                progress(1)

        self.support_vectors_ = np.stack(registry.vectors).astype(np.float32)
        self.support_origin_ = list(registry.origin)
        self.member_support_ = [m[0] for m in members]
        self.member_dual_coef_ = [m[1] for m in members]
        self.member_intercept_ = np.array([m[2] for m in members])
        self.weights_ = weights / weights.sum()
        self.dual_coef_, self.intercept_ = self._merge(T)
        self.iterations_ = records
        self.n_positives_ = P.shape[0]
        self.n_negatives_ = n_neg
        self.n_spy_folds_ = n_folds
        later = records[1:]
        self.skipped_fraction_ = (float(np.mean([r["n_skipped"] / r["n_candidates"] for r in later]))
                                  if scored and later else 0.0)
        self.excluded_tags_ = list(pool.exclude_tags)
        self.compressed_ = None
        return self

    @staticmethod
    def _spy_scores(P, fold_of, spy_acc, grid_lo, grid_hi) -> np.ndarray | None:
        """Each spy scored by the averaged members that did not train on it (folds with no such member: none)."""
        out = []
        for k, a in enumerate(spy_acc):
            if a is not None:
                out.append(_mean_table(a, grid_lo, grid_hi).decision_function(P[fold_of == k], check=False))
        return np.concatenate(out) if out else None

    def _training_scorer(self, table, registry, members, weights):
        if self.compressed_training:
            return lambda X: table.decision_function(X, check=False)
        # Exact G_{t-1} (the paper's uncompressed training): slow, for reference.
        sv = np.stack(registry.vectors).astype(np.float32)
        coef, b = self._merge_members(members, weights, sv.shape[0])
        return lambda X: hik_gram(X, sv, check=False).astype(np.float64) @ coef + b

    def _check_weights(self, T: int) -> np.ndarray:
        w = self.weights
        if w is None or (isinstance(w, str) and w == "uniform"):
            return np.ones(T)
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (T,) or not np.isfinite(w).all() or np.any(w < 0) or not w.sum() > 0:
            raise ValueError(f"weights: expected 'uniform' or {T} non-negative weights lambda_t with a positive sum, got shape {w.shape}")
        return w

    @staticmethod
    def _merge_members(members, weights, M):
        """[Li13] Eq. (9)/(10) + (11)-(12): one dual coefficient per merged support vector."""
        coef = np.zeros(M)
        b = 0.0
        w = np.asarray(weights[: len(members)], dtype=np.float64)
        w = w / w.sum()
        for wt, (slots, c, bt) in zip(w, members):
            np.add.at(coef, slots, wt * c)
            b += wt * bt
        return coef, b

    def _members_upto(self, t: int):
        return list(zip(self.member_support_[:t], self.member_dual_coef_[:t], self.member_intercept_[:t]))

    def _merge(self, t: int):
        if not self._average:  # no ensemble: G_t is g_t alone
            coef = np.zeros(self.support_vectors_.shape[0])
            np.add.at(coef, self.member_support_[t - 1], self.member_dual_coef_[t - 1])
            return coef, float(self.member_intercept_[t - 1])
        return self._merge_members(self._members_upto(t), self.weights_, self.support_vectors_.shape[0])

    # ------------------------------------------------------------------ scoring
    def _check_X(self, X):
        check_is_fitted(self, "dual_coef_")
        # Empty X is allowed: scoring an empty block of a collection is not an error.
        X = validate_data(self, X, reset=False, dtype=np.float32, order="C", ensure_min_samples=0)
        _check_non_negative(X, "X")
        return X

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Exact ensemble decision value G_T(x), [Li13] Eq. (9)/(10) with the kernel of [Li13] Eq. (1).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Non-negative features.

        Returns
        -------
        ndarray of float64, shape (n_samples,)
            G_T of every row.
        """
        X = self._check_X(X)
        used = np.flatnonzero(self.dual_coef_)
        return hik_gram(X, self.support_vectors_[used], check=False).astype(np.float64) @ self.dual_coef_[used] + self.intercept_

    def predict(self, X: ArrayLike) -> np.ndarray:
        """``classes_[1]`` (the positive label) where G_T(x) > 0, else ``classes_[0]``.

        The sign of the SVM ensemble; for ranking use :meth:`decision_function`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Non-negative features.

        Returns
        -------
        ndarray of shape (n_samples,)
            A label of ``classes_`` for every row.
        """
        positive = self.decision_function(X) > 0  # first: raises NotFittedError before fit
        return self.classes_[positive.astype(np.intp)]

    def score(self, X, y, sample_weight=None) -> float:
        """Average precision of :meth:`decision_function` against ``y``.

        A ranking metric (concept search ranks a collection), so it is what
        ``GridSearchCV`` and ``cross_val_score`` maximize by default. Rows
        labeled ``classes_[1]`` are the relevant ones; with none in ``y`` the
        average precision is undefined and scikit-learn warns and returns 0.

        Parameters
        ----------
        X : array-like (n, d), non-negative
        y : array-like (n,) with labels from ``classes_``
        sample_weight : array-like (n,), optional

        Returns
        -------
        float
        """
        scores = self.decision_function(X)
        y = column_or_1d(y, warn=True)
        check_consistent_length(scores, y)
        known = np.isin(y, self.classes_)
        if not known.all():
            raise ValueError(f"y: labels {np.unique(y[~known]).tolist()!r} were not seen in fit "
                             f"(classes {self.classes_.tolist()!r})")
        return float(average_precision_score(y == self.classes_[1], scores, sample_weight=sample_weight))

    def staged_decision_function(self, X: ArrayLike) -> Iterator[np.ndarray]:
        """Yield G_1(X), ..., G_T(X) (exact): the mAP-vs-iteration curve, Fig. 2.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Non-negative features.

        Yields
        ------
        ndarray of float64, shape (n_samples,)
            G_t of every row, for t = 1, ..., T.
        """
        X = self._check_X(X)
        K = hik_gram(X, self.support_vectors_, check=False).astype(np.float64)
        for t in range(1, len(self.member_support_) + 1):
            coef, b = self._merge(t)
            yield K @ coef + b

    def compress(self, n_bins: int | Literal["default"] | None = "default", *, n_members: int | None = None) -> CompressedConcept:
        """Model Compression, [Li13] Eq. (11)-(16): one table scorer, O(d) per image.

        ``n_bins`` defaults to the estimator's ``n_bins`` (q); ``None`` gives
        the exact table (binary search per dimension). ``n_members=t``
        compresses G_t instead of the final G_T (for curves over t).

        Parameters
        ----------
        n_bins : int, None or "default", default="default"
            Bins q per dimension of the table; None for the exact table; ``"default"``
            takes the estimator's ``n_bins``.
        n_members : int or None, default=None
            Compress G_t of the first t meta classifiers; None compresses G_T (and keeps
            the result as ``compressed_``).

        Returns
        -------
        CompressedConcept
            The compressed scorer.
        """
        check_is_fitted(self, "dual_coef_")
        q = self.n_bins if (isinstance(n_bins, str) and n_bins == "default") else n_bins
        coef, b = self.dual_coef_, self.intercept_
        if n_members is not None:
            t = check_positive_int(n_members, "n_members")
            if t > len(self.member_support_):
                raise ValueError(f"n_members={t} but the ensemble has {len(self.member_support_)} meta classifiers")
            coef, b = self._merge(t)
        used = np.flatnonzero(coef)
        table = compress_hik(self.support_vectors_[used], coef[used], b, None if q is None else _check_n_bins(q))
        meta = {
            "estimator": type(self).__name__,
            "params": {k: v for k, v in self.get_params().items() if isinstance(v, (int, float, str, bool, type(None)))},
            "n_iter": len(self.member_support_) if n_members is None else int(n_members),
            "n_support": int(used.size),
            "n_positives": int(self.n_positives_),
            "skipped_fraction": float(self.skipped_fraction_),
            "spy_folds": int(self.n_spy_folds_),
            "excluded_tags": self.excluded_tags_,
        }
        model = CompressedConcept(table, meta=meta)
        if n_members is None:
            self.compressed_ = model
        return model

    def save(self, path: str | os.PathLike, n_bins: int | Literal["default"] | None = "default") -> Path:
        """Save the compressed model (a portable ``.npz`` + JSON file, no pickle).

        Parameters
        ----------
        path : str or path-like
            The file to write.
        n_bins : int, None or "default", default="default"
            As for :meth:`compress`; ``"default"`` reuses ``compressed_`` when there is one.

        Returns
        -------
        Path
            The path written.
        """
        model = self.compressed_ if (self.compressed_ is not None and n_bins == "default") else self.compress(n_bins)
        return model.save(path)

    @staticmethod
    def load(path: str | os.PathLike) -> CompressedConcept:
        """Load a model written by :meth:`save`: a :class:`CompressedConcept`, since
        :meth:`save` writes the compressed scorer, not the ensemble (``hardneg.load(path)``
        gives the same); a file of another kind is a :class:`~hardneg.exceptions.ModelFileError` naming both kinds.

        Parameters
        ----------
        path : str or path-like
            A file written by :meth:`save`.

        Returns
        -------
        CompressedConcept
            The compressed scorer.
        """
        return CompressedConcept.load(path)

    def negative_tag_counts(self, top: int | None = None) -> list[list[tuple[str, int]]]:
        """Per iteration, the tags of the selected negatives and how often (Fig. 7's tag clouds).

        Parameters
        ----------
        top : int or None, default=None
            Most frequent tags kept per iteration; None keeps all.

        Returns
        -------
        list of list of (str, int)
            Per iteration, ``(tag, count)`` pairs, most frequent first.
        """
        check_is_fitted(self, "iterations_")
        out = []
        for rec in self.iterations_:
            counts = Counter(tag for tags in rec["tags"] for tag in tags)
            out.append(counts.most_common(top))
        return out
