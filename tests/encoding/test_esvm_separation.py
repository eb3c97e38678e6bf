"""E-SVM protocol: the encoder's default separates each exemplar from its negatives; the centring baselines.

An exemplar SVM is, by definition, the hyperplane that puts its exemplar
above the negatives ([Zepeda15] Eq. (1)). ``separation_fraction`` measures
that; the default ``alpha_neg="auto"`` must reach it on separable data of any
scale (it once depended on the features' norm and separated 9 % of unit
Gaussians in 64-d).
"""

import numpy as np
import pytest

from hardneg.encoding import CentringEncoder, ESVMEncoder, WhiteningEncoder, load_esvm_encoder


def gaussians(seed=0, n_neg=400, n_ex=40, d=32, scale=1.0):
    rng = np.random.default_rng(seed)
    return (scale * rng.normal(size=(n_neg, d))).astype(np.float32), (scale * rng.normal(size=(n_ex, d))).astype(np.float32)


def slow_separation(W, X, Z):
    """The obvious loop: exemplar i is separated when w_i . x_i > w_i . z for every z (no z equal to x_i here)."""
    return float(np.mean([W[i] @ X[i] > max(W[i] @ z for z in Z) for i in range(len(X))]))


@pytest.mark.parametrize("scale", [1.0, 0.1, 10.0])
def test_default_esvm_ranks_its_exemplar_above_all_negatives(scale):
    Z, X = gaussians(scale=scale)
    enc = ESVMEncoder(min_negatives=100, random_state=0).fit(Z)
    assert enc.separation_fraction(X) >= 0.95


def test_former_auto_did_not_separate_unnormalized_data():
    # the former "auto", alpha_neg = 2 lam / N whatever the features' norm: what the new default fixes
    Z, X = gaussians()
    old = ESVMEncoder(alpha_neg=2 * 0.1 / len(Z), min_negatives=100, random_state=0).fit(Z)
    assert old.separation_fraction(X) < 0.5


def test_auto_is_scale_invariant_and_unchanged_on_l2_features():
    Z, X = gaussians()
    a = ESVMEncoder(min_negatives=100, random_state=0).fit(Z)
    b = ESVMEncoder(min_negatives=100, random_state=0).fit(10 * Z)
    np.testing.assert_allclose(a.transform(X), b.transform(10 * X), atol=1e-4)
    Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    assert ESVMEncoder(min_negatives=100).fit(Zn).alpha_neg_ == pytest.approx(2 * 0.1 / len(Z), rel=1e-6)


def test_separation_fraction_matches_slow_reference():
    Z, X = gaussians(seed=1)
    for alpha in (2 * 0.1 / len(Z), 1e-3):
        enc = ESVMEncoder(alpha_neg=alpha, min_negatives=100, random_state=0).fit(Z)
        W = enc.transform(X)
        assert enc.separation_fraction(X) == pytest.approx(slow_separation(W, X, Z))
        assert enc.separation_fraction(X, codes=W) == pytest.approx(slow_separation(W, X, Z))


def test_separation_fraction_at_level_two_uses_encoded_pool():
    Z, X = gaussians(seed=2)
    enc = ESVMEncoder(n_recursions=2, min_negatives=100, random_state=0).fit(Z)
    H = enc.transform(X, n_recursions=1)
    W = enc.transform(X, n_recursions=2)
    assert enc.separation_fraction(X) == pytest.approx(slow_separation(W, H, enc.pools_[1]))


def test_save_load_keeps_resolved_alpha(tmp_path):
    Z, X = gaussians()
    enc = ESVMEncoder(min_negatives=100, random_state=0).fit(3 * Z)
    back = load_esvm_encoder(enc.save(tmp_path / "e.npz"))
    assert back.alpha_neg_ == enc.alpha_neg_
    assert back.fingerprint() == enc.fingerprint()
    np.testing.assert_allclose(back.transform(X), enc.transform(X), atol=1e-6)


def test_centring_encoder_formula():
    rng = np.random.default_rng(0)
    P, X = rng.normal(size=(50, 6)), rng.normal(size=(5, 6))
    C = CentringEncoder().fit(P).transform(X)
    ref = X - P.mean(0)
    np.testing.assert_allclose(C, ref / np.linalg.norm(ref, axis=1, keepdims=True), atol=1e-5)


def test_whitening_encoder_matches_sklearn_pca_whiten():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(0)
    P = rng.normal(size=(300, 10)) @ rng.normal(size=(10, 10))
    X = rng.normal(size=(7, 10)) @ rng.normal(size=(10, 10))
    ours = WhiteningEncoder(n_components=4, eps=0).fit(P).transform(X)
    ref = PCA(n_components=4, whiten=True, svd_solver="full").fit(P).transform(X)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    # the same up to each direction's sign
    signs = np.sign((ours * ref).sum(0))
    np.testing.assert_allclose(ours, ref * signs, atol=1e-4)
    # before the l2 step, the pool's whitened coordinates have identity covariance
    enc = WhiteningEncoder(n_components=4, eps=0).fit(P)
    Zp = ((P - enc.mean_) @ enc.components_.T) / np.sqrt(enc.explained_variance_)
    np.testing.assert_allclose(np.cov(Zp.T), np.eye(4), atol=1e-3)


def test_whitening_caps_components_to_the_rows():
    P = np.random.default_rng(0).normal(size=(5, 10))
    enc = WhiteningEncoder(n_components=8).fit(P)
    assert enc.n_components_ == 4
    assert enc.transform(P).shape == (5, 4)
