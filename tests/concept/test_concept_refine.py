"""NegativeBootstrap.refine: relevance feedback as a library method (issue 25).

The service's feedback member ([Li13] Table I once more, merged by [Li13] Eq. (9))
moved from hardneg/serve/_concept.py into the concept model. ``_old_train_concept``
below is the service's code before the move, verbatim (only its name changed):
the service, now calling ``refine``, must give the same model on a fixed seed.
"""

import logging
import time

import numpy as np
import pytest

from hardneg.concept import CompressedConcept, NegativeBootstrap
from hardneg.serve._concept import MAX_FEEDBACK_ITEMS, ConceptSpec, _dense, train_concept
from hardneg.svm import fit_hik_svm_gram

logger = logging.getLogger(__name__)


def _old_train_concept(store, spec, *, matrix=None, tags=None, progress=None):
    """Train, merge the feedback member and compress; return ``(model, timings)``.

    ``matrix`` (the store's rows in memory) and ``tags`` (per row) replace the
    store as the pool when given: same rows, same exclusions, no Zarr reads.

    ``progress(n)`` is called with 1 per meta classifier trained (T, plus 1
    with marked negatives).
    """
    from hardneg.concept import CompressedConcept, NegativeBootstrap
    from hardneg.negatives import BootstrapPoolSampler, NegativePool
    from hardneg.svm import HIKExactTable, fit_hik_svm_gram, hik_gram

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
    sv, coef, b = nb.support_vectors_, nb.dual_coef_, float(nb.intercept_)
    used = np.flatnonzero(coef)
    sv, coef = sv[used], coef[used]
    t_train = time.perf_counter() - t0
    n_fb = 0
    if neg.size:
        # Table I steps 5-7 with G_T, the user's negatives prepended to the selection.
        scorer = nb.compress(spec.n_bins)
        pool = NegativePool(data, tags=pool_tags, exclude_tags=exclude + list(spec.related_tags), rows=pool_rows)
        n_hard = min(pos.size, pool.n_allowed)
        hard = BootstrapPoolSampler(n_candidates=spec.n_candidates).sample(
            pool, n_hard, np.random.default_rng([spec.seed, 1]), scorer=lambda X: scorer.table.decision_function(X, check=False))
        N = np.vstack([take(neg), pool.take(hard.rows)])
        n_p = P.shape[0]
        K = np.empty((n_p + N.shape[0],) * 2, np.float32)
        K[:n_p, :n_p] = hik_gram(P, check=False)
        K_pn = hik_gram(P, N, check=False)
        K[:n_p, n_p:], K[n_p:, :n_p] = K_pn, K_pn.T
        K[n_p:, n_p:] = hik_gram(N, check=False)
        X_fb = np.vstack([P, N])
        y = np.r_[np.ones(n_p), np.zeros(N.shape[0])]
        support, a_fb, b_fb = fit_hik_svm_gram(K, y, C=1.0)
        T = len(nb.member_support_)
        # Eq. (9), uniform lambda: G_{T+1} = T/(T+1) G_T + 1/(T+1) g_{T+1}; both are
        # linear in their dual coefficients, so the merged expansion is exact (Eq. (11)-(12)).
        w = T / (T + 1.0)
        sv = np.vstack([sv, X_fb[support]])
        coef = np.r_[w * coef, (1.0 - w) * a_fb]
        b = w * b + (1.0 - w) * b_fb
        n_fb = int(N.shape[0])
        if progress is not None:
            progress(1)
    t_fb = time.perf_counter() - t0 - t_train
    t1 = time.perf_counter()
    exact = HIKExactTable.from_support_vectors(sv, coef, b)
    model = CompressedConcept(exact if spec.n_bins == 0 else exact.to_bins(spec.n_bins), meta={
        "estimator": "NegativeBootstrap" + ("+feedback" if neg.size else ""),
        "params": {"n_iter": spec.n_iter, "n_bins": spec.n_bins, "n_candidates": spec.n_candidates, "seed": spec.seed},
        "n_support": int(sv.shape[0]),
        "n_positives": int(pos.size),
        "n_marked_negatives": int(neg.size),
        "n_feedback_negatives": n_fb,
        "excluded_tags": nb.excluded_tags_,
    })
    timings = {"train_s": t_train, "feedback_s": t_fb, "compress_s": time.perf_counter() - t1}
    logger.info("concept trained: %d positives, %d marked negatives, %.2fs", pos.size, neg.size, t_train + t_fb)
    return model, timings


class _Store:
    """What train_concept reads from a store when the rows come as ``matrix``."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((300, 6)).astype(np.float32)
    X[:40, 0] += 1.0  # the concept
    tags = [["dog"] if i < 25 else ["cat"] for i in range(300)]
    return X, tags


@pytest.mark.parametrize("seed", [0, 3])
def test_service_gives_the_model_it_gave_before_the_move(seed):
    X, tags = _data(seed)
    spec = ConceptSpec(positive_rows=np.arange(0, 12), negative_rows=np.array([200, 201, 202, 250]), tag="dog",
                       related_tags=["puppy"], n_iter=4, n_bins=20, n_candidates=60, seed=seed)
    steps_old, steps_new = [], []
    old, _ = _old_train_concept(_Store(300), spec, matrix=X, tags=tags, progress=steps_old.append)
    new, timings = train_concept(_Store(300), spec, matrix=X, tags=tags, progress=steps_new.append)
    assert steps_new == steps_old == [1] * 5
    for key in ("estimator", "n_support", "n_positives", "n_marked_negatives", "n_feedback_negatives", "excluded_tags"):
        assert new.meta[key] == old.meta[key], key
    assert new.meta["n_feedback_negatives"] == 4 + 12
    np.testing.assert_allclose(new.decision_function(X), old.decision_function(X), rtol=1e-5, atol=1e-5)
    assert set(timings) == {"train_s", "feedback_s", "compress_s"}


def test_refine_matches_the_old_feedback_member_exactly():
    """Same hard negatives (rows), same g_{T+1}, same merged expansion as the service computed."""
    from hardneg.negatives import BootstrapPoolSampler, NegativePool
    from hardneg.svm import hik_gram

    X, tags = _data(1)
    P, marked, pool_rows = X[:10], X[[260, 261]], np.setdiff1d(np.arange(300), np.r_[np.arange(10), 260, 261])
    nb = NegativeBootstrap(n_iter=3, n_bins=16, random_state=0).fit(P, X, pool_tags=tags, exclude_tags=["dog"],
                                                                     pool_rows=pool_rows)
    G_T = nb.decision_function(X)
    # the old service's computation, step by step
    scorer = nb.compress(16)
    pool = NegativePool(X, tags=tags, exclude_tags=["dog"], rows=pool_rows)
    hard = BootstrapPoolSampler(n_candidates=50).sample(pool, 10, np.random.default_rng([0, 1]),
                                                        scorer=lambda B: scorer.table.decision_function(B, check=False))
    N = np.vstack([marked, pool.take(hard.rows)])
    XX = np.vstack([P, N])
    support, a, b = fit_hik_svm_gram(hik_gram(XX, check=False), np.r_[np.ones(10), np.zeros(12)], C=1.0)
    g = hik_gram(X, XX[support], check=False).astype(np.float64) @ a + b

    nb.refine(P, marked, X, pool_tags=tags, exclude_tags=["dog"], pool_rows=pool_rows, n_candidates=50,
              random_state=np.random.default_rng([0, 1]))
    assert nb.iterations_[-1]["rows"] == hard.rows.tolist()
    assert nb.iterations_[-1]["n_negatives"] == 12 and nb.iterations_[-1]["n_marked_negatives"] == 2
    np.testing.assert_allclose(nb.decision_function(X), 3 / 4 * G_T + 1 / 4 * g, rtol=1e-6, atol=1e-6)
    assert isinstance(nb.compress(), CompressedConcept)
    assert len(list(nb.staged_decision_function(X[:3]))) == 4
    # the first T stages are G_1..G_T unchanged
    np.testing.assert_allclose(list(nb.staged_decision_function(X))[2], G_T, rtol=1e-6, atol=1e-6)


def _member(nb, t, X):
    from hardneg.svm import hik_gram

    sv = nb.support_vectors_[nb.member_support_[t]]
    return hik_gram(X, sv, check=False).astype(np.float64) @ nb.member_dual_coef_[t] + nb.member_intercept_[t]


def test_eq9_average_by_hand_on_two_refine_steps():
    rng = np.random.default_rng(5)
    P = rng.random((6, 3)) + np.r_[1.0, 0, 0]
    pool = rng.random((60, 3))
    X = rng.random((20, 3))
    nb = NegativeBootstrap(n_iter=1, random_state=0).fit(P, pool)
    g1 = _member(nb, 0, X)
    np.testing.assert_allclose(nb.decision_function(X), g1, atol=1e-6)
    # step 1: T = 1 -> G_2 = 1/2 G_1 + 1/2 g_2, with marked negatives only (no pool: deterministic)
    N1 = pool[:4]
    nb.refine(P, N1)
    g2 = _member(nb, 1, X)
    # g_2 is the SVM on [P; N1] with the obvious Gram matrix min(x, y) summed
    XX = np.vstack([P, N1]).astype(np.float32)
    K = np.minimum(XX[:, None, :], XX[None, :, :]).sum(-1)
    s, a, b = fit_hik_svm_gram(K, np.r_[np.ones(6), np.zeros(4)], C=1.0)
    ref = np.minimum(X[:, None, :].astype(np.float32), XX[s][None]).sum(-1) @ a + b
    np.testing.assert_allclose(g2, ref, rtol=1e-5, atol=1e-5)
    G2 = 0.5 * g1 + 0.5 * g2
    np.testing.assert_allclose(nb.decision_function(X), G2, rtol=1e-6, atol=1e-6)
    # step 2: T = 2 -> G_3 = 2/3 G_2 + 1/3 g_3
    nb.refine(P, pool[4:9])
    g3 = _member(nb, 2, X)
    np.testing.assert_allclose(nb.decision_function(X), 2 / 3 * G2 + 1 / 3 * g3, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(nb.weights_, [1 / 3] * 3)
    assert not np.allclose(g3, g2)  # the members differ, so the weights matter


def test_refine_with_lambda_weights_scales_G_T():
    rng = np.random.default_rng(2)
    P, pool = rng.random((5, 3)) + 0.5, rng.random((50, 3))
    nb = NegativeBootstrap(n_iter=2, weights=[3.0, 1.0], random_state=0).fit(P, pool)
    G = nb.decision_function(pool)
    nb.refine(P, pool[:3])
    # T = 2: G_3 = 2/3 G_2 + 1/3 g_3, G_2's own lambda_t (3:1) kept inside it
    np.testing.assert_allclose(nb.weights_, [2 / 3 * 0.75, 2 / 3 * 0.25, 1 / 3])
    np.testing.assert_allclose(nb.decision_function(pool), 2 / 3 * G + 1 / 3 * _member(nb, 2, pool), rtol=1e-6, atol=1e-6)


def test_refine_checks_its_input():
    from sklearn.exceptions import NotFittedError

    rng = np.random.default_rng(0)
    P, pool = rng.random((5, 3)) + 0.5, rng.random((50, 3))
    with pytest.raises(NotFittedError):
        NegativeBootstrap().refine(P, pool[:2])
    nb = NegativeBootstrap(n_iter=2, random_state=0).fit(P, pool)
    with pytest.raises(ValueError, match="^negatives: has 2 features"):
        nb.refine(P, pool[:2, :2])
    with pytest.raises(ValueError, match="^negatives: no rows"):
        nb.refine(P, np.zeros((0, 3)))
    with pytest.raises(ValueError, match="Negative values"):
        nb.refine(P, -pool[:2])
    with pytest.raises(ValueError, match="^related_tags"):
        nb.refine(P, pool[:2], pool, related_tags="auto")
    assert len(nb.member_support_) == 2  # nothing changed by the refused calls
    steps = []
    nb.refine(P, np.zeros((0, 3)), pool, random_state=0, progress=steps.append)
    assert steps == [1] and nb.iterations_[-1]["n_negatives"] == 5
