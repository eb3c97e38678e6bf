"""Negative Bootstrap (Li, Snoek, Worring, Koelma & Smeulders, IEEE TMM 2013)."""

from __future__ import annotations

import copy
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_array, check_is_fitted

from hardneg._typing import ArrayLike
from hardneg._validation import Interval, StrOptions, check_positive_int, check_random_state
from hardneg.eval import average_precision
from hardneg.negatives import BootstrapPoolSampler, NegativePool
from hardneg.svm import hik_gram

from ._ensemble import MAX_TRAIN_ROWS, HIKEnsembleConcept, _check_non_negative, _constraints, _exclusions, fit_member

__all__ = ["NegativeBootstrap"]

#: default ``near_duplicate``: cosine at which a pool item counts as a copy of a positive
NEAR_DUPLICATE = None

#: ``n_candidates="cv"``: the m / |B-| factors compared (10 is the default m), the folds of B+, the T of
#: each fold's model (AP levels off by T = 10) and the held-out pool rows each fold is scored on.
CV_FACTORS = (3, 10)
CV_FOLDS = 3
CV_ITER = 10
CV_NEGATIVES = 1000

#: ``skip_top="auto"`` on a pool with fewer tagged items than :data:`SPY_MIN_TAGGED`: B+ is split in
#: :data:`SPY_FOLDS` folds, member t trains without fold (t - 1) mod K, and each fold's positives are
#: the spies, scored by the members that never saw them (needs |B+| >= SPY_FOLDS).
SPY_FOLDS = 5
SPY_MIN_TAGGED = 10


class NegativeBootstrap(HIKEnsembleConcept):
    """Learn a concept from a few positives by bootstrapping relevant negatives.

    Table I of the paper: iteration 1 trains a HIK SVM g_1 ([Li13] Eq. (1)-(4)) on
    B+ and |B+| random pool negatives; iteration t samples m random
    candidates, scores them with the compressed ensemble G_{t-1} ([Li13] Eq. (16)),
    keeps the |B+| highest-scoring (the most misclassified, "relevant"
    negatives), trains g_t on them and averages,
    G_t = ((t-1)/t) G_{t-1} + (1/t) g_t ([Li13] Eq. (9)), or with weights lambda_t
    ([Li13] Eq. (10)). Pool items tagged with the concept (``exclude_tags``) or
    related tags are never negatives.

    Departure from the paper (an extra, on by default): the pool is treated
    as positive-unlabelled data. The highest-scoring candidates are skipped
    before the |B+| are kept (``skip_top="auto"``), because where the
    concept's other members carry no tag -- a collection where the user
    tagged a handful of items, or social tags that miss some -- they are
    mostly those untagged positives. How many to skip is estimated each
    iteration from held-out positives: the pool items that carry the
    concept's tag, or, where the pool has fewer than
    :data:`SPY_MIN_TAGGED` of them, spies (Liu, Lee, Yu & Li, ICML 2002):
    B+ is split in :data:`SPY_FOLDS` folds, member g_t trains on B+ without
    fold (t - 1) mod 5, and each fold is scored by the members that never
    saw it. ``skip_top=0`` restores [Li13] Eq. (6)-(8) exactly (every member
    on all of B+).

    Parameters
    ----------
    n_iter : int, default=50
        T, the number of meta classifiers, from 1 to 1000; 50 as in the paper.
    n_candidates : int, "cv" or None, default=None
        m, the random candidates scored per iteration, capped at the pool's
        allowed rows.

        - If None, ``10 * |B-|`` (|B-| the negatives per iteration).
        - If int, that many.
        - If ``"cv"`` (an extra, not in the paper), m = 3 or 10 x |B-|, chosen
          per concept by 3-fold validation on B+ with held-out pool rows as
          negatives (T = 10 fold models, about 2x the training time at T = 50);
          the choice and the fold APs are in ``cv_results_``.

        The kept |B-| are the top |B-|/m of a random draw, so a smaller m picks
        softer negatives. Why the default is ``10 * |B-|``: see
        `docs/methods/concept.md`, "Why these defaults".
    n_bins : int, default=100
        q, bins per dimension of the compressed tables (training-time
        candidate scoring and :meth:`compress`), 1 to 4096.
    C : float, default=1.0
        SVM cost (the paper: 1).
    weights : "uniform", array of n_iter floats or None, default=None
        lambda_t of [Li13] Eq. (10). If None or ``"uniform"``, uniform averaging
        ([Li13] Eq. (9)).
    n_negatives : int or None, default=None
        |B-^(t)|. If None, |B+| as in the paper; capped at the pool size.
        |B+| plus ``n_negatives`` may not exceed 20,000 rows (the kernel SVM's
        Gram matrix).
    compressed_training : bool, default=True
        If True, score candidates with the compressed G_{t-1}; if False, with
        the exact kernel expansion (the paper's slow variant).
    skip_top : float in [0, 1) or "auto", default="auto"
        An extra, not in the paper: a rank window. The top-ranked candidates
        are skipped before |B-^(t)| are kept, because with missing tags the
        highest-scoring candidates are mostly positives that lack the tag.

        - If float, skip that fraction of the m candidates; 0 is the paper's
          selection, [Li13] Eq. (6)-(8).
        - If ``"auto"``, estimate the number of untagged positives among them
          from the scores of held-out positives: the pool items that carry the
          concept's tag, or spies held out of B+ in turn when the pool has
          fewer than :data:`SPY_MIN_TAGGED` tagged items and |B+| >=
          :data:`SPY_FOLDS` (then each meta classifier trains on 4/5 of B+);
          see :meth:`hardneg.negatives.BootstrapPoolSampler.n_skip`.

        Measured in `docs/methods/concept.md` (the untagged collection).
    near_duplicate : float in (0, 1] or None, default=None
        An extra, not in the paper. If float, pool items whose cosine
        similarity to a positive (B+ or a pool item carrying the concept's
        tag) is at least this are never negatives
        (:meth:`hardneg.negatives.NegativePool.exclude_near_duplicates`). If
        None, off. Why it is off: see `docs/methods/concept.md`, "Why these
        defaults".
    random_state : int, Generator or None

    Attributes
    ----------
    support_vectors_, dual_coef_, intercept_ : merged ensemble, [Li13] Eq. (11)-(12)
    member_support_, member_dual_coef_, member_intercept_ : the meta classifiers
    weights_ : normalized lambda_t
    skipped_fraction_ : float
        Mean share of the m candidates that ``skip_top`` passed over in
        iterations 2..T (0 for the paper's selection): the estimated share
        of untagged positives (and negatives scoring like positives).
    n_spy_folds_ : int
        Folds of B+ held out in turn as spies (0: the estimate came from the
        pool's tagged items, or nothing was estimated).
    n_near_duplicates_ : int
        Pool items ``near_duplicate`` kept out of the negatives (0 when off).
    cv_results_ : dict or None
        With ``n_candidates="cv"``: ``factor`` (the chosen m / |B-|), ``ap``
        (fold APs per factor) and ``n_folds`` (0: too few positives to
        validate, the default factor kept); None otherwise.
    iterations_ : list of dict
        Per iteration: selected pool rows, their ids, tags and ensemble
        scores, and ``n_skipped`` (top candidates passed over by ``skip_top``).
    related_tags_ : dict
        Related tags excluded besides ``exclude_tags``, with the reason for
        each ("wordnet", "ngd=0.12", or "given" for a list passed in).
    classes_ : ndarray of shape (2,)
        The two labels of ``y``; ``classes_[1]`` marks the positives
        (``[0, 1]`` after ``fit(positives, pool)``).
    n_features_in_ : int

    Notes
    -----
    ``fit`` takes the paper's form ``fit(positives, pool)`` (the pool may be
    a ``FeatureStore``) or scikit-learn's ``fit(X, y)`` with y = 1 for
    positives and 0 for the unlabeled pool; see
    :meth:`HIKEnsembleConcept.fit` for the rule that tells them apart.
    ``score`` is the average precision of ``decision_function``, so
    ``GridSearchCV`` tunes the estimator by a ranking metric.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.concept import NegativeBootstrap
    >>> rng = np.random.default_rng(0)
    >>> pos = rng.random((20, 8)) + np.r_[1.0, np.zeros(7)]
    >>> pool = rng.random((500, 8))
    >>> nb = NegativeBootstrap(n_iter=5, random_state=0).fit(pos, pool)
    >>> len(nb.iterations_), nb.decision_function(pos[:3]).shape
    (5, (3,))

    The same model from scikit-learn's form, and a grid search scored by
    average precision:

    >>> X, y = np.vstack([pos, pool]), np.r_[np.ones(20), np.zeros(500)]
    >>> same = NegativeBootstrap(n_iter=5, random_state=0).fit(X, y)
    >>> bool(np.array_equal(same.dual_coef_, nb.dual_coef_))
    True
    >>> from sklearn.model_selection import GridSearchCV
    >>> gs = GridSearchCV(NegativeBootstrap(n_iter=2, random_state=0), {"C": [0.1, 1.0]}, cv=3).fit(X, y)
    >>> sorted(gs.best_params_)
    ['C']
    """

    _parameter_constraints = {
        **_constraints("n_iter", "n_candidates", "n_bins", "C", "weights", "n_negatives", "compressed_training",
                       "skip_top", "random_state"),
        "n_candidates": [None, Interval(Integral, 1, None, closed="left"), StrOptions({"cv"})],
        "near_duplicate": [None, Interval(Real, 0, 1, closed="right")],
    }

    def __init__(self, n_iter: int = 50, *, n_candidates: int | str | None = None, n_bins: int = 100, C: float = 1.0,
                 weights: str | ArrayLike | None = None, n_negatives: int | None = None, compressed_training: bool = True,
                 skip_top: float | str = "auto", near_duplicate: float | None = NEAR_DUPLICATE,
                 random_state: int | np.random.Generator | None = None):
        self.n_iter = n_iter
        self.n_candidates = n_candidates
        self.n_bins = n_bins
        self.C = C
        self.weights = weights
        self.n_negatives = n_negatives
        self.compressed_training = compressed_training
        self.skip_top = skip_top
        self.near_duplicate = near_duplicate
        self.random_state = random_state

    def _fit(self, P, pool, progress):
        if self.near_duplicate is not None:
            # the extra guard: near-copies of B+ or of the pool's tagged items are never negatives
            refs = P if pool.tagged.size == 0 else np.vstack([P, pool.take(pool.tagged)])
            self.n_near_duplicates_ = int(pool.exclude_near_duplicates(refs, self.near_duplicate).size)
        else:
            self.n_near_duplicates_ = 0
        self.cv_results_ = self._choose_factor(P, pool) if isinstance(self.n_candidates, str) else None  # "cv"
        return super()._fit(P, pool, progress)

    def _spy_folds(self, n_pos: int, pool) -> int:
        """Spies only for ``skip_top="auto"`` where the pool's tagged items are too few to estimate from."""
        auto = isinstance(self.skip_top, str)
        return SPY_FOLDS if auto and pool.tagged.size < SPY_MIN_TAGGED and n_pos >= SPY_FOLDS else 0

    def _pool_sampler(self, n_neg: int) -> BootstrapPoolSampler:
        """The hardest of m scored candidates, past the ``skip_top`` window ([Li13] Table I, steps 5-7)."""
        m = self.n_candidates
        if isinstance(m, str):  # "cv": the factor _choose_factor picked, times this fit's |B-|
            m = int(self.cv_results_["factor"]) * n_neg
        return BootstrapPoolSampler(n_candidates=m, skip_top=self.skip_top)

    def _choose_factor(self, P, pool) -> dict:
        """``n_candidates="cv"``: the factor of :data:`CV_FACTORS` (m = factor x |B-|) whose fold models
        rank held-out positives best.

        B+ is split in :data:`CV_FOLDS`; for each fold, :data:`CV_NEGATIVES` random allowed pool rows
        are held out of the pool, a model with T = :data:`CV_ITER` is trained per factor on the other
        positives and the rest of the pool, and it ranks the fold's positives among the held-out rows
        (average precision). The factor with the best mean AP wins; ties go to the larger factor (the
        default's). With fewer than 2 positives per fold the default factor is kept without a search.

        Known bias: untagged positives among the held-out rows count as negatives, so the harder
        selection (10 x) gains validation AP for ranking them lower (measured in
        ``docs/methods/concept.md``, "Why these defaults").
        """
        n_pos = P.shape[0]
        out: dict = {"factor": max(CV_FACTORS), "ap": {}, "n_folds": 0}
        n_val = min(CV_NEGATIVES, pool.n_allowed // (CV_FOLDS + 1))
        if n_pos < 2 * CV_FOLDS or n_val < 1:
            return out
        seed = self.random_state
        rng = np.random.default_rng([seed, 1] if isinstance(seed, Integral) else check_random_state(seed).integers(2**63))
        folds = np.array_split(rng.permutation(n_pos), CV_FOLDS)
        held_rows = rng.choice(pool.allowed, size=n_val * CV_FOLDS, replace=False).astype(np.int64)
        pool.feature_max()  # computed once here, then shared by the fold pools (shallow copies) and the final fit
        ap: dict = {f: [] for f in CV_FACTORS}
        for i, held in enumerate(folds):
            V = np.sort(held_rows[i * n_val : (i + 1) * n_val])
            sub = copy.copy(pool)  # the same data and tags; only the allowed rows differ
            sub.allowed = np.setdiff1d(pool.allowed, V)
            train = np.setdiff1d(np.arange(n_pos), held)
            X_val = np.vstack([P[held], pool.take(V).astype(np.float32, copy=False)])
            y_val = np.r_[np.ones(held.size), np.zeros(V.size)]
            n_neg = self._member_sizes(train.size, sub)[1]  # this fold's |B-|
            for f in CV_FACTORS:
                est = clone(self).set_params(n_iter=min(CV_ITER, self.n_iter), n_candidates=f * n_neg,
                                             near_duplicate=None, random_state=int(rng.integers(2**31)))
                est.n_features_in_, est.classes_ = P.shape[1], np.array([0, 1])
                est._fit(P[train], sub, None)
                ap[f].append(float(average_precision(y_val, est.decision_function(X_val))))
        mean = {f: float(np.mean(v)) for f, v in ap.items()}
        out.update(factor=max(CV_FACTORS, key=lambda f: (mean[f], f)), ap=ap, n_folds=CV_FOLDS)
        return out

    def refine(self, positives, negatives, pool=None, *, pool_tags=None, exclude_tags=None, related_tags=None,
               pool_rows=None, n_hard=None, n_candidates=None, skip_top=0.0, random_state=None, progress=None):
        """Relevance feedback: add one meta classifier g_{T+1} and average it in by [Li13] Eq. (9).

        An extra, not in [Li13] (the paper has no relevance feedback); the
        search service's feedback loop calls it. After ``fit`` (T meta
        classifiers, G_T), one more Table I iteration trains g_{T+1} on the
        positives B+ against B-^(T+1) = (``negatives``, the user's marked
        not-relevant items) ∪ (the ``n_hard`` highest-scoring of
        ``n_candidates`` random ``pool`` rows under the compressed G_T,
        [Li13] Table I steps 5-7, the paper's selection when ``skip_top=0``),
        then merges

            G_{T+1} = T/(T+1) G_T + 1/(T+1) g_{T+1}     ([Li13] Eq. (9))

        (with weights lambda_t, G_T's weights are scaled by T/(T+1)). The
        result is one support-vector expansion again ([Li13] Eq. (11)-(12)),
        so ``compress`` and ``save`` work as after ``fit``. Each call adds
        one member; call it again with the next round of feedback.

        Not scikit-learn's ``partial_fit``: it needs a fitted ensemble (it
        refines G_T, it does not learn from a stream), so it has its own name
        and the scikit-learn estimator checks never call it.

        Parameters
        ----------
        positives : array-like (n_pos, d), non-negative
            B+, usually the positives ``fit`` saw, plus items marked relevant.
        negatives : array-like (n_neg, d), non-negative
            Marked not-relevant items (may have 0 rows when ``pool`` is given).
        pool : array-like (n_pool, d) or FeatureStore, optional
            Where the hard negatives come from; None: the marked ones only.
        pool_tags, exclude_tags, related_tags, pool_rows
            As in :meth:`fit` (a list of related tags; not ``"auto"``).
        n_hard : int, optional
            Hard pool negatives; default |B+| as in the paper, capped at the pool.
        n_candidates : int, optional
            m, candidates scored; default ``10 * n_hard``.
        skip_top : float or "auto", default 0.0
            The rank window of :class:`~hardneg.negatives.BootstrapPoolSampler`.
        random_state : int, Generator or None
            Seeds the candidate draw.
        progress : callable, optional
            ``progress(1)`` once the meta classifier is trained (unit: meta
            classifiers; total 1), the protocol of :mod:`hardneg._progress`.

        Returns
        -------
        self

        Examples
        --------
        >>> import numpy as np
        >>> from hardneg.concept import NegativeBootstrap
        >>> rng = np.random.default_rng(0)
        >>> pos, pool = rng.random((10, 4)) + 0.5, rng.random((200, 4))
        >>> nb = NegativeBootstrap(n_iter=3, random_state=0).fit(pos, pool)
        >>> nb = nb.refine(pos, pool[:2], pool, random_state=0)
        >>> len(nb.member_support_), nb.weights_.round(3).tolist()
        (4, [0.25, 0.25, 0.25, 0.25])
        """
        check_is_fitted(self, "dual_coef_")
        d = self.n_features_in_
        P = check_array(positives, dtype=np.float32, order="C", input_name="positives")
        N = check_array(negatives, dtype=np.float32, order="C", ensure_min_samples=0, input_name="negatives")
        for name, A in (("positives", P), ("negatives", N)):
            if A.shape[1] != d:
                raise ValueError(f"{name}: has {A.shape[1]} features but the model was fitted with {d}")
            _check_non_negative(A, name)
        record = {"iteration": len(self.member_support_) + 1, "rows": [], "ids": [], "tags": [], "scores": None,
                  "n_candidates": 0, "n_skipped": 0, "n_marked_negatives": int(N.shape[0])}
        if pool is not None:
            if isinstance(related_tags, str) and related_tags == "auto":
                raise ValueError("related_tags: refine takes the list fit found (related_tags_), not 'auto'")
            pool = NegativePool(pool, tags=pool_tags, exclude_tags=_exclusions(exclude_tags, related_tags), rows=pool_rows)
            if pool.dim != d:
                raise ValueError(f"pool: has {pool.dim} features but the model was fitted with {d}")
            n = P.shape[0] if n_hard is None else check_positive_int(n_hard, "n_hard")
            table = self.compress().table  # G_T, compressed ([Li13] Eq. (16)), scores the candidates
            hard = BootstrapPoolSampler(n_candidates=n_candidates, skip_top=skip_top).sample(
                pool, min(n, pool.n_allowed), check_random_state(random_state),
                scorer=lambda X: table.decision_function(X, check=False))
            N = np.vstack([N, pool.take(hard.rows)])
            record.update(rows=hard.rows.tolist(), ids=pool.ids_of(hard.rows), tags=pool.tags_of(hard.rows),
                          scores=hard.scores.tolist(), n_candidates=int(hard.n_candidates), n_skipped=int(hard.n_skipped))
        if N.shape[0] == 0:
            raise ValueError("negatives: no rows, and no pool to draw hard negatives from; pass either")
        if P.shape[0] + N.shape[0] > MAX_TRAIN_ROWS:
            raise ValueError(f"positives + negatives: {P.shape[0] + N.shape[0]} rows, more than the {MAX_TRAIN_ROWS} "
                             "a kernel SVM can train on here")
        support, coef, b = fit_member(hik_gram(P, check=False), P, N, C=float(self.C), class_weight=self._class_weight())
        T = len(self.member_support_)
        M = self.support_vectors_.shape[0]
        # The new member's support vectors are appended, not merged by origin: its rows
        # need not index the arrays fit saw.
        self.support_vectors_ = np.vstack([self.support_vectors_, np.vstack([P, N])[support]]).astype(np.float32)
        self.support_origin_ = list(self.support_origin_) + [(f"refine{T + 1}", int(j)) for j in support]
        self.member_support_ = list(self.member_support_) + [np.arange(M, M + support.size)]
        self.member_dual_coef_ = list(self.member_dual_coef_) + [coef]
        self.member_intercept_ = np.r_[self.member_intercept_, b]
        self.weights_ = np.r_[T / (T + 1.0) * self.weights_, 1.0 / (T + 1.0)]  # [Li13] Eq. (9)
        self.dual_coef_, self.intercept_ = self._merge(T + 1)
        record.update(n_negatives=int(N.shape[0]), n_support=int(support.size))
        self.iterations_ = list(self.iterations_) + [record]
        self.compressed_ = None
        if progress is not None:
            progress(1)
        return self
