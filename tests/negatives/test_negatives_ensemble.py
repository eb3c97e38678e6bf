"""Bootstrap candidates are scored by the ensemble G_{t-1}, not by the last g_{t-1}.

Li et al. (IEEE TMM 2013), Table I step 6 and Eq. (9): iteration t scores its
m random candidates with G_{t-1} = mean(g_1, ..., g_{t-1}). With n_iter = 2
the ensemble and the last meta classifier coincide (G_1 = g_1), so these tests
replay every iteration of longer runs (T = 5) against slow references: the
exact kernel expansion of G_{t-1} (``compressed_training=False``) and a
per-dimension linear interpolation of it on the training grid (the compressed
scorer, Eq. (13)-(16)). ``skip_top=0`` keeps the paper's top-n selection.
"""

import numpy as np
import pytest

from hardneg.concept import NegativeBootstrap


def kernel(X, Y):
    return np.minimum(np.asarray(X, float)[:, None, :], np.asarray(Y, float)[None]).sum(-1)


def data(seed):
    rng = np.random.default_rng(seed)
    d = 5
    pos = (rng.random((10, d)) * 0.6 + np.r_[0.8, 0.4, np.zeros(d - 2)]).astype(np.float32)
    pool = rng.random((240, d)).astype(np.float32)
    pool[::6] += np.r_[0.7, 0.3, np.zeros(d - 2)].astype(np.float32)  # untagged look-alikes
    tags = [["concept"] if i % 12 == 0 else ["other"] for i in range(len(pool))]
    return pos, pool, tags


def ensemble_members(nb, upto):
    """(support rows, coef, b) of G_upto = uniform average of g_1..g_upto (Eq. (9))."""
    M = nb.support_vectors_.shape[0]
    coef, b = np.zeros(M), 0.0
    for s, c, b_ in zip(nb.member_support_[:upto], nb.member_dual_coef_[:upto], nb.member_intercept_[:upto]):
        np.add.at(coef, s, c / upto)
        b += b_ / upto
    return coef, b


def exact_scores(nb, X, upto):
    coef, b = ensemble_members(nb, upto)
    return kernel(X, nb.support_vectors_) @ coef + b


def interpolated_scores(nb, X, upto, hi, q):
    """Slow Eq. (13)-(16): per dimension, h_i on q + 1 grid points over [0, hi_i], linear in between."""
    coef, b = ensemble_members(nb, upto)
    sv = nb.support_vectors_.astype(float)
    out = np.full(len(X), b)
    for i in range(X.shape[1]):
        grid = np.linspace(0.0, hi[i], q + 1)
        h = np.array([np.sum(coef * np.minimum(g, sv[:, i])) for g in grid])
        out += np.interp(np.asarray(X[:, i], float), grid, h)
    return out


def replay_candidates(seed, allowed, n, m, T):
    """The candidate draws of Table I steps 3 and 5, in the estimator's order (all positives kept)."""
    rng = np.random.default_rng(seed)
    draws = [rng.choice(allowed, size=n, replace=False)]
    for _ in range(2, T + 1):
        draws.append(rng.choice(allowed, size=m, replace=False))
    return draws


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_training_scores_candidates_with_the_ensemble(seed):
    pos, pool, tags = data(seed)
    T, m = 5, 60
    nb = NegativeBootstrap(n_iter=T, n_candidates=m, compressed_training=False, skip_top=0.0, random_state=seed)
    nb.fit(pos, pool, exclude_tags="concept", pool_tags=tags)
    allowed = np.array([i for i in range(len(pool)) if i % 12 != 0])
    draws = replay_candidates(seed, allowed, len(pos), m, T)
    assert nb.iterations_[0]["rows"] == draws[0].tolist()
    for t in range(2, T + 1):
        cands = draws[t - 1]
        scores = exact_scores(nb, pool[cands], t - 1)
        order = sorted(range(m), key=lambda j: (-scores[j], j))[: len(pos)]
        assert nb.iterations_[t - 1]["rows"] == cands[order].tolist(), f"iteration {t}"
        np.testing.assert_allclose(nb.iterations_[t - 1]["scores"], scores[order], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compressed_training_scores_candidates_with_the_ensemble_table(seed):
    pos, pool, tags = data(seed)
    T, m, q = 5, 60, 16
    nb = NegativeBootstrap(n_iter=T, n_candidates=m, n_bins=q, skip_top=0.0, random_state=seed)
    nb.fit(pos, pool, exclude_tags="concept", pool_tags=tags)
    hi = np.maximum(pos.max(0), pool.max(0)).astype(float)
    allowed = np.array([i for i in range(len(pool)) if i % 12 != 0])
    draws = replay_candidates(seed, allowed, len(pos), m, T)
    for t in range(2, T + 1):
        cands = draws[t - 1]
        scores = interpolated_scores(nb, pool[cands], t - 1, hi, q)
        order = sorted(range(m), key=lambda j: (-scores[j], j))[: len(pos)]
        assert nb.iterations_[t - 1]["rows"] == cands[order].tolist(), f"iteration {t}"
        np.testing.assert_allclose(nb.iterations_[t - 1]["scores"], scores[order], rtol=1e-5, atol=1e-5)


def test_ensemble_and_last_member_disagree_on_this_data():
    """Guard: the references above would not tell G_{t-1} from g_{t-1} if they ranked alike."""
    pos, pool, tags = data(0)
    nb = NegativeBootstrap(n_iter=5, n_candidates=60, compressed_training=False, skip_top=0.0, random_state=0)
    nb.fit(pos, pool, exclude_tags="concept", pool_tags=tags)
    ens = exact_scores(nb, pool, 3)
    s, c, b = nb.member_support_[2], nb.member_dual_coef_[2], nb.member_intercept_[2]
    last = kernel(pool, nb.support_vectors_[s]) @ c + b
    top = lambda v: set(np.argsort(-v, kind="stable")[:10].tolist())
    assert top(ens) != top(last)
