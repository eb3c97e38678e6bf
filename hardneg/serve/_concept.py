"""Concept training for the service: Negative Bootstrap, plus one feedback member.

A first search trains :class:`~hardneg.concept.NegativeBootstrap` over the
store exactly as ``hardneg concept train`` does (items carrying the concept's
tag, or related tags, are never negatives). Relevance feedback retrains:

* marked-relevant items join the positives B+ (and leave the pool);
* marked-not-relevant items join the hard negatives: after the T bootstrap
  iterations, :meth:`NegativeBootstrap.refine <hardneg.concept.NegativeBootstrap.refine>`
  trains one more meta classifier g_{T+1} on B+ against
  B-^(T+1) = (marked negatives) ∪ (the |B+| hardest of m random pool
  candidates under G_T) -- [Li13] Table I, steps 5-8, with the user's
  negatives prepended to the selection -- and averages it in by [Li13] Eq. (9):
  G_{T+1} = (T/(T+1)) G_T + (1/(T+1)) g_{T+1}.

The merged model is one support-vector expansion ([Li13] Eq. (11)-(12)), compressed
to one table ([Li13] Eq. (13)-(16)) like every concept model. The feedback member is
an extra of this service (the paper has no relevance feedback); without marked
negatives the model is the paper's G_T unchanged.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from ..concept import DEFAULT_N_ITER

logger = logging.getLogger(__name__)

#: Positives and marked negatives one request may name (a kernel SVM holds an n x n Gram matrix).
MAX_FEEDBACK_ITEMS = 2000


@dataclass
class ConceptSpec:
    """What to learn: seed positives (rows) and the user's feedback."""

    positive_rows: np.ndarray
    negative_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tag: str | None = None
    related_tags: list[str] = field(default_factory=list)
    split: str | None = None
    n_iter: int = DEFAULT_N_ITER
    n_bins: int = 100
    n_candidates: int | None = None
    seed: int = 0


def _dense(block) -> np.ndarray:
    return np.ascontiguousarray(block.toarray() if hasattr(block, "toarray") else block, dtype=np.float32)


def train_concept(store, spec: ConceptSpec, *, matrix=None, tags=None, progress=None):
    """Train, merge the feedback member and compress; return ``(model, timings)``.

    ``matrix`` (the store's rows in memory) and ``tags`` (per row) replace the
    store as the pool when given: same rows, same exclusions, no Zarr reads.

    ``progress(n)`` is called with 1 per meta classifier trained (T, plus 1
    with marked negatives).
    """
    from hardneg.concept import CompressedConcept, NegativeBootstrap
    from hardneg.svm import compress_hik

    t0 = time.perf_counter()
    pos = np.unique(np.asarray(spec.positive_rows, np.int64))
    neg = np.setdiff1d(np.unique(np.asarray(spec.negative_rows, np.int64)), pos)
    if pos.size == 0:
        raise ValueError("positives: at least one positive item is needed")
    if pos.size + neg.size > MAX_FEEDBACK_ITEMS:
        raise ValueError(f"positives + negatives: {pos.size + neg.size} items, more than {MAX_FEEDBACK_ITEMS}")
    base = store.select(split=spec.split) if spec.split else np.arange(len(store))
    # Positives and marked negatives are never drawn from the pool (the marked ones
    # enter the feedback member directly).
    pool_rows = np.setdiff1d(base, np.concatenate([pos, neg]))
    exclude = [spec.tag] if spec.tag else []
    data = store if matrix is None else matrix
    pool_tags = None if matrix is None else tags
    take = (lambda r: _dense(store.take(r))) if matrix is None else (lambda r: matrix[r])
    P = take(pos)
    nb = NegativeBootstrap(n_iter=spec.n_iter, n_candidates=spec.n_candidates, n_bins=spec.n_bins,
                           random_state=spec.seed)
    nb.fit(P, data, pool_tags=pool_tags, exclude_tags=exclude, related_tags=list(spec.related_tags), pool_rows=pool_rows,
           progress=progress)
    t_train = time.perf_counter() - t0
    n_fb = 0
    if neg.size:
        # [Li13] Table I steps 5-8 once more with G_T, the user's negatives prepended to the selection.
        nb.refine(P, take(neg), data, pool_tags=pool_tags, exclude_tags=exclude, related_tags=list(spec.related_tags),
                  pool_rows=pool_rows, n_candidates=spec.n_candidates, random_state=np.random.default_rng([spec.seed, 1]),
                  progress=progress)
        n_fb = int(nb.iterations_[-1]["n_negatives"])
    used = np.flatnonzero(nb.dual_coef_)
    sv, coef, b = nb.support_vectors_[used], nb.dual_coef_[used], float(nb.intercept_)
    t_fb = time.perf_counter() - t0 - t_train
    t1 = time.perf_counter()
    model = CompressedConcept(compress_hik(sv, coef, b, None if spec.n_bins == 0 else spec.n_bins), meta={
        "estimator": "NegativeBootstrap" + ("+feedback" if neg.size else ""),
        "params": {"n_iter": spec.n_iter, "n_bins": spec.n_bins, "n_candidates": spec.n_candidates, "seed": spec.seed},
        "n_support": int(sv.shape[0]),
        "n_positives": int(pos.size),
        "n_marked_negatives": int(neg.size),
        "n_feedback_negatives": n_fb,
        "skipped_fraction": float(nb.skipped_fraction_),  # estimated untagged positives among the candidates
        "spy_folds": int(nb.n_spy_folds_),
        "excluded_tags": nb.excluded_tags_,
    })
    timings = {"train_s": t_train, "feedback_s": t_fb, "compress_s": time.perf_counter() - t1}
    logger.info("concept trained: %d positives, %d marked negatives, %.2fs", pos.size, neg.size, t_train + t_fb)
    return model, timings
