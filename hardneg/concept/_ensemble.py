"""Shared machinery of the HIK ensemble concept learners.

Negative Bootstrap and its baselines (random sampling, asymmetric bagging,
sampling positives) differ only in how each iteration picks its training
rows and whether the meta classifiers are averaged. This module holds the
loop of Li et al. (IEEE TMM 2013), Table I, with those two choices as
parameters, the ensemble bookkeeping (one merged support-vector set, Eq.
(9)-(12)), the per-iteration record of selected negatives (Fig. 7), and
compression / persistence of the result.
"""

from __future__ import annotations

import logging
from collections import Counter

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from hardneg._validation import check_matrix, check_positive_int, check_random_state
from hardneg.negatives import BootstrapNegativeSampler, NegativePool, RandomNegativeSampler
from hardneg.svm import HIKBinTable, HIKExactTable, fit_hik_svm_gram, hik_gram

from ._compressed import CompressedConcept

logger = logging.getLogger(__name__)

__all__ = ["HIKEnsembleConcept"]


def _exclusions(exclude_tags, related_tags) -> list[str]:
    out = []
    for tags in (exclude_tags, related_tags):
        if tags is None:
            continue
        out.extend([tags] if isinstance(tags, str) else [str(t) for t in tags])
    return out


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


class HIKEnsembleConcept(BaseEstimator):
    """Base class: an ensemble of HIK SVMs trained on B+ and sampled negatives.

    Subclasses define ``__init__`` (their public parameters) and the class
    attributes ``_bootstrap`` (score candidates with G_{t-1}, Table I step 6),
    ``_average`` (keep an ensemble, Eq. (9); otherwise the last classifier)
    and ``_positive_fraction`` (a random subset of B+ per iteration).
    """

    _bootstrap = False
    _average = True
    _positive_fraction = 1.0

    # Parameters every subclass accepts (read with getattr: sklearn clones via __init__).
    def _param(self, name, default):
        return getattr(self, name, default)

    # ------------------------------------------------------------------ fit
    def fit(self, positives, pool, *, exclude_tags=None, related_tags=None, pool_tags=None, pool_rows=None, progress=None):
        """Learn a concept from positives and a pool of (tagged) candidate negatives.

        Parameters
        ----------
        positives : array-like (n_pos, d), non-negative
            B+, the user's positive examples.
        pool : array-like (n, d) or FeatureStore
            The pool S of user-tagged items; a store is read in chunks / by rows.
        exclude_tags : str or list of str, optional
            The concept's tag(s): pool items carrying them are never negatives.
        related_tags : list of str, optional
            Further tags to exclude (synonyms, sub-concepts).
        pool_tags : sequence of (list of str), optional
            Tags per row of an array pool.
        pool_rows : array of int, optional
            Restrict the pool to these rows (e.g. a training split).
        progress : callable, optional
            Called with 1 after each iteration.
        """
        P = check_matrix(positives, "positives", non_negative=True, min_rows=1)
        pool = NegativePool(pool, tags=pool_tags, exclude_tags=_exclusions(exclude_tags, related_tags), rows=pool_rows)
        if pool.dim != P.shape[1]:
            raise ValueError(f"pool: has {pool.dim} features but positives have {P.shape[1]}")
        T = check_positive_int(self._param("n_iter", 1), "n_iter")
        C = float(self._param("C", 1.0))
        if not C > 0:
            raise ValueError(f"C: must be > 0, got {C}")
        q = check_positive_int(self._param("n_bins", 100), "n_bins")
        weights = self._check_weights(T)
        rng = check_random_state(self._param("random_state", None))

        frac = float(self._param("positive_fraction", self._positive_fraction))
        if not 0 < frac <= 1:
            raise ValueError(f"positive_fraction: must be in (0, 1], got {frac}")
        n_pos_iter = max(1, int(round(frac * P.shape[0])))
        n_neg_param = self._param("n_negatives", None)
        n_neg = n_pos_iter if n_neg_param is None else check_positive_int(n_neg_param, "n_negatives")
        n_neg = min(n_neg, pool.n_allowed)
        K_pp = hik_gram(P, check=False)
        registry = _SupportRegistry(P.shape[0])
        random_sampler = RandomNegativeSampler()
        boot_sampler = BootstrapNegativeSampler(n_candidates=self._param("n_candidates", None))
        train_scorer = None
        if self._bootstrap and T > 1:
            # Fixed grid [0, max] for the training-time tables so that the
            # tables of g_1..g_t add up (H_i is linear in the dual coefficients).
            grid_hi = np.maximum(P.max(axis=0), pool.feature_max()).astype(np.float64)
            grid_lo = np.zeros_like(grid_hi)
            acc = None
        members, records = [], []
        for t in range(1, T + 1):
            # ---- choose training rows (Table I, steps 3 and 5-7)
            if self._bootstrap and t > 1:
                sample = boot_sampler.sample(pool, n_neg, rng, scorer=train_scorer)
            else:
                sample = random_sampler.sample(pool, n_neg, rng)
            pos_idx = (np.sort(rng.choice(P.shape[0], size=n_pos_iter, replace=False))
                       if n_pos_iter < P.shape[0] else np.arange(P.shape[0]))
            N = pool.take(sample.rows)
            Pt = P[pos_idx]
            # ---- train g_t on B+ and B-^(t) (step 8)
            n_p = pos_idx.size
            K = np.empty((n_p + n_neg, n_p + n_neg), dtype=np.float32)
            K[:n_p, :n_p] = K_pp[np.ix_(pos_idx, pos_idx)]
            K_pn = hik_gram(Pt, N, check=False)
            K[:n_p, n_p:] = K_pn
            K[n_p:, :n_p] = K_pn.T
            K[n_p:, n_p:] = hik_gram(N, check=False)
            y = np.r_[np.ones(n_p), np.zeros(n_neg)]
            cw = self._param("class_weight", None)
            support, coef, b = fit_hik_svm_gram(K, y, C=C, class_weight=cw)
            keys = [("pos", int(pos_idx[j])) if j < n_p else ("pool", int(sample.rows[j - n_p])) for j in support]
            slots = registry.slots(keys, lambda j, support=support: (Pt[support[j]] if support[j] < n_p else N[support[j] - n_p]))
            members.append((slots, coef, b))
            # ---- update the compressed G_t used to score candidates next time (Eq. (9), (16))
            if self._bootstrap and t < T:
                sv_t = np.stack([registry.vectors[s] for s in slots])
                tab = HIKBinTable.on_grid(sv_t, coef, b, grid_lo, grid_hi, q)
                w = weights[t - 1]
                if acc is None:
                    acc = [w * tab.values, w * tab.below, w * tab.above, w * tab.intercept, w]
                else:
                    acc[0] += w * tab.values
                    acc[1] += w * tab.below
                    acc[2] += w * tab.above
                    acc[3] += w * tab.intercept
                    acc[4] += w
                total = acc[4]
                train_scorer = self._training_scorer(
                    HIKBinTable(grid_lo, grid_hi, acc[0] / total, acc[1] / total, acc[2] / total, acc[3] / total),
                    registry, members, weights)
            tags = pool.tags_of(sample.rows)
            records.append({
                "iteration": t,
                "rows": sample.rows.tolist(),
                "ids": pool.ids_of(sample.rows),
                "tags": tags,
                "scores": None if sample.scores is None else sample.scores.tolist(),
                "n_candidates": int(sample.n_candidates),
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
        self.n_features_in_ = P.shape[1]
        self.n_positives_ = P.shape[0]
        self.n_negatives_ = n_neg
        self.excluded_tags_ = list(pool.exclude_tags)
        self.compressed_ = None
        return self

    def _training_scorer(self, table, registry, members, weights):
        if self._param("compressed_training", True):
            return lambda X: table.decision_function(X, check=False)
        # Exact G_{t-1} (the paper's uncompressed training): slow, for reference.
        sv = np.stack(registry.vectors).astype(np.float32)
        coef, b = self._merge_members(members, weights, sv.shape[0])
        return lambda X: hik_gram(X, sv, check=False).astype(np.float64) @ coef + b

    def _check_weights(self, T: int) -> np.ndarray:
        w = self._param("weights", None)
        if w is None or (isinstance(w, str) and w == "uniform"):
            return np.ones(T)
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (T,) or not np.isfinite(w).all() or np.any(w < 0) or not w.sum() > 0:
            raise ValueError(f"weights: expected 'uniform' or {T} non-negative weights lambda_t with a positive sum, got shape {w.shape}")
        return w

    @staticmethod
    def _merge_members(members, weights, M):
        """Eq. (9)/(10) + (11)-(12): one dual coefficient per merged support vector."""
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
        return check_matrix(X, "X", non_negative=True, min_rows=0, n_features=self.n_features_in_)

    def decision_function(self, X) -> np.ndarray:
        """Exact ensemble decision value G_T(x), Eq. (9)/(10) with the kernel of Eq. (1)."""
        X = self._check_X(X)
        used = np.flatnonzero(self.dual_coef_)
        return hik_gram(X, self.support_vectors_[used], check=False).astype(np.float64) @ self.dual_coef_[used] + self.intercept_

    def staged_decision_function(self, X):
        """Yield G_1(X), ..., G_T(X) (exact): the mAP-vs-iteration curve, Fig. 2."""
        X = self._check_X(X)
        K = hik_gram(X, self.support_vectors_, check=False).astype(np.float64)
        for t in range(1, len(self.member_support_) + 1):
            coef, b = self._merge(t)
            yield K @ coef + b

    def compress(self, n_bins: int | None = "default", *, n_members: int | None = None) -> CompressedConcept:
        """Model Compression, Eq. (11)-(16): one table scorer, O(d) per image.

        ``n_bins`` defaults to the estimator's ``n_bins`` (q); ``None`` gives
        the exact table (binary search per dimension). ``n_members=t``
        compresses G_t instead of the final G_T (for curves over t).
        """
        check_is_fitted(self, "dual_coef_")
        q = self._param("n_bins", 100) if n_bins == "default" else n_bins
        coef, b = self.dual_coef_, self.intercept_
        if n_members is not None:
            t = check_positive_int(n_members, "n_members")
            if t > len(self.member_support_):
                raise ValueError(f"n_members={t} but the ensemble has {len(self.member_support_)} meta classifiers")
            coef, b = self._merge(t)
        used = np.flatnonzero(coef)
        exact = HIKExactTable.from_support_vectors(self.support_vectors_[used], coef[used], b)
        table = exact if q is None else exact.to_bins(check_positive_int(q, "n_bins"))
        meta = {
            "estimator": type(self).__name__,
            "params": {k: v for k, v in self.get_params().items() if isinstance(v, (int, float, str, bool, type(None)))},
            "n_iter": len(self.member_support_) if n_members is None else int(n_members),
            "n_support": int(used.size),
            "n_positives": int(self.n_positives_),
            "excluded_tags": self.excluded_tags_,
        }
        model = CompressedConcept(table, meta=meta)
        if n_members is None:
            self.compressed_ = model
        return model

    def save(self, path, n_bins: int | None = "default"):
        """Save the compressed model (a portable ``.npz`` + JSON file, no pickle)."""
        model = self.compressed_ if (self.compressed_ is not None and n_bins == "default") else self.compress(n_bins)
        return model.save(path)

    @staticmethod
    def load(path) -> CompressedConcept:
        """Load a model written by :meth:`save` (returns a :class:`CompressedConcept`)."""
        return CompressedConcept.load(path)

    def negative_tag_counts(self, top: int | None = None) -> list[list[tuple[str, int]]]:
        """Per iteration, the tags of the selected negatives and how often (Fig. 7's tag clouds)."""
        check_is_fitted(self, "iterations_")
        out = []
        for rec in self.iterations_:
            counts = Counter(tag for tags in rec["tags"] for tag in tags)
            out.append(counts.most_common(top))
        return out
