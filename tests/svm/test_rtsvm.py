import numpy as np
import pytest
from scipy.optimize import minimize

from hardneg.svm import RampTSVM
from hardneg.svm._ramp_tsvm import _sgd_epoch, solve_convex_tsvm


def _reference_epoch(XL, yL, cL, betaL, XU, cU, betaUp, betaUm, m, r, w, b, order, t, lam0, inv_M, project):
    """Algorithm 2 written out plainly with a dense w."""
    w = w.copy()
    nL = XL.shape[0]
    for idx in order:
        eta = lam0 / t
        t += 1
        if idx < nL:
            x, y = XL[idx].astype(float), yL[idx]
            f = w @ x + b
            gf = betaL[idx] * y - (cL[idx] * y if y * f < 1 else 0.0)
        else:
            j = idx - nL
            x = XU[j].astype(float)
            f = w @ x + b
            gf = betaUp[j] - betaUm[j] - (cU if f < 1 else 0.0) + (cU if -f < 1 else 0.0)
        w = (1 - eta * inv_M) * w - eta * gf * x
        b = b - eta * gf
        if project:
            delta = (w @ m + b - r) / (m @ m + 1)
            w = w - delta * m
            b = b - delta
    return w, b, t


def _data(seed, n=30, nu=20, d=3, sep=2.0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    XL = (rng.normal(size=(n, d)) + sep * y[:, None] * np.eye(d)[0]).astype(np.float32)
    XU = (rng.normal(size=(nu, d)) + sep * np.where(rng.random(nu) < 0.5, 1, -1)[:, None] * np.eye(d)[0]).astype(np.float32)
    return XL, y, XU


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numba_epoch_matches_reference(seed):
    XL, y, XU = _data(seed)
    rng = np.random.default_rng(seed)
    nL, nU = len(XL), len(XU)
    cL = rng.uniform(0.5, 2, nL)
    betaL = np.where(rng.random(nL) < 0.2, cL, 0.0)
    betaUp = np.where(rng.random(nU) < 0.2, 0.3, 0.0)
    betaUm = np.where(rng.random(nU) < 0.2, 0.3, 0.0)
    m = XU.mean(0, dtype=np.float64)
    r = float(y.mean())
    w0 = rng.normal(size=3)
    order = rng.permutation(nL + nU).astype(np.int64)
    args = (XL, y, cL, betaL, XU, 0.3, betaUp, betaUm, m)
    w = w0.copy()
    b, t = _sgd_epoch(*args, XL @ m, XU @ m, r, w, 0.5, order, 50.0, 50.0, 1 / 50, True)
    w_ref, b_ref, t_ref = _reference_epoch(*args, r, w0, 0.5, order, 50.0, 50.0, 1 / 50, True)
    np.testing.assert_allclose(w, w_ref, rtol=1e-7, atol=1e-9)
    assert b == pytest.approx(b_ref, abs=1e-9)
    assert t == t_ref


@pytest.mark.parametrize("seed", range(5))
def test_projection_keeps_balancing_constraint(seed):
    XL, y, XU = _data(seed, sep=0.5)
    rng = np.random.default_rng(seed)
    nL, nU = len(XL), len(XU)
    w, b, _ = solve_convex_tsvm(
        XL, y, np.ones(nL), np.zeros(nL), XU, 0.5, np.zeros(nU), np.zeros(nU), rng.normal(size=3), 3.0,
        n_epochs=3, rng=rng,
    )
    assert np.mean(XU.astype(float) @ w + b) == pytest.approx(np.mean(y), abs=1e-8)


def _primal(XL, y, XU, C, Cs, w, b):
    fL = XL @ w + b
    fU = XU @ w + b
    return 0.5 * w @ w + C * np.maximum(0, 1 - y * fL).sum() + Cs * (np.maximum(0, 1 - fU) + np.maximum(0, 1 + fU)).sum()


def _reference_qp(XL, y, XU, C, Cs):
    """Eq. (8) with beta = 0 as a QP with slacks, solved by SLSQP."""
    XL, XU = XL.astype(float), XU.astype(float)
    nL, nU, d = len(XL), len(XU), XL.shape[1]
    m, r = XU.mean(0), y.mean()
    nv = d + 1 + nL + 2 * nU

    def obj(z):
        return 0.5 * z[:d] @ z[:d] + C * z[d + 1 : d + 1 + nL].sum() + Cs * z[d + 1 + nL :].sum()

    def ineq(z):
        w, b, xi = z[:d], z[d], z[d + 1 :]
        fL, fU = XL @ w + b, XU @ w + b
        return np.concatenate([y * fL - 1 + xi[:nL], fU - 1 + xi[nL : nL + nU], -fU - 1 + xi[nL + nU :], xi])

    cons = [{"type": "ineq", "fun": ineq}, {"type": "eq", "fun": lambda z: z[:d] @ m + z[d] - r}]
    z0 = np.zeros(nv)
    z0[d + 1 :] = 2.0
    res = minimize(obj, z0, constraints=cons, method="SLSQP", options={"maxiter": 500, "ftol": 1e-10})
    return res.x[:d], res.x[d]


@pytest.mark.parametrize("sep", [4.0, 0.7])  # separable and overlapping
def test_sgd_matches_reference_qp(sep):
    XL, y, XU = _data(7, n=30, nu=10, d=2, sep=sep)
    C, Cs = 1.0, 0.1
    w_ref, b_ref = _reference_qp(XL, y, XU, C, Cs)
    rng = np.random.default_rng(0)
    w, b, _ = solve_convex_tsvm(
        XL, y, np.full(len(y), C), np.zeros(len(y)), XU, Cs, np.zeros(len(XU)), np.zeros(len(XU)),
        np.zeros(2), 0.0, n_epochs=400, rng=rng,
    )
    J, J_ref = _primal(XL, y, XU, C, Cs, w, b), _primal(XL, y, XU, C, Cs, w_ref, b_ref)
    assert J <= J_ref * 1.03 + 1e-6
    assert np.linalg.norm(w - w_ref) <= 0.15 * np.linalg.norm(w_ref) + 0.05


def test_deterministic_and_uses_unlabeled():
    XL, y, XU = _data(4, n=20, nu=200, d=2)
    a = RampTSVM(random_state=5).fit(XL, y, X_unlabeled=XU)
    b = RampTSVM(random_state=5).fit(XL, y, X_unlabeled=XU)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert np.mean(XU @ a.coef_ + a.intercept_) == pytest.approx(np.mean(y), abs=1e-6)


def test_balance_off_leaves_the_mean_output_free():
    # labeled classes balanced, unlabeled pool 80% positive: the constraint forces mean f(U) = 0
    rng = np.random.default_rng(6)
    XL = np.vstack([rng.normal(-2, 0.5, (20, 2)), rng.normal(2, 0.5, (20, 2))])
    y = np.repeat([-1, 1], 20)
    XU = np.vstack([rng.normal(-2, 0.5, (40, 2)), rng.normal(2, 0.5, (160, 2))])
    on = RampTSVM(random_state=0).fit(XL, y, X_unlabeled=XU)
    off = RampTSVM(balance=False, random_state=0).fit(XL, y, X_unlabeled=XU)
    assert np.mean(XU @ on.coef_ + on.intercept_) == pytest.approx(0.0, abs=1e-6)
    f_off = XU @ off.coef_ + off.intercept_
    assert np.mean(f_off) > 0.3  # free to follow the unlabeled majority
    assert ((f_off > 0) == (XU[:, 0] > 0)).mean() == 1.0


@pytest.mark.parametrize("kwargs", [{"s": 0.5}, {"s": -1.0}, {"C": 0.0}, {"loss": "log"}, {"n_epochs": 0}, {"lambda0": -1.0}])
def test_bad_params(kwargs):
    XL, y, _ = _data(0)
    with pytest.raises((ValueError, TypeError)):
        RampTSVM(**kwargs).fit(XL, y)


def test_bad_unlabeled_shape():
    XL, y, XU = _data(0)
    with pytest.raises(ValueError, match="features"):
        RampTSVM().fit(XL, y, X_unlabeled=XU[:, :2])


# --- Eq. (7) weights: hand-worked values and the CCCP upper bound -------------------------------

def test_cccp_weights_hand_worked():
    from hardneg.svm._ramp_tsvm import cccp_weights

    yL = np.array([1.0, 1.0, -1.0, -1.0])
    fL = np.array([-0.5, 0.3, 0.1, -2.0])  # y f = -0.5 (beyond s), 0.3, -0.1 (inside the ramp), 2.0
    cL = np.array([1.0, 2.0, 3.0, 4.0])
    fU = np.array([-0.5, -0.1, 0.0, 0.1, 0.5])
    bl, bp, bm = cccp_weights(yL, fL, cL, fU, 0.25, -0.2)
    np.testing.assert_array_equal(bl, [1.0, 0.0, 0.0, 0.0])
    # the +1 copy of an unlabeled sample is beyond its ramp where f < s, the -1 copy where f > -s
    np.testing.assert_array_equal(bp, [0.25, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(bm, [0.0, 0.0, 0.0, 0.0, 0.25])
    bl_h, _, _ = cccp_weights(yL, fL, cL, fU, 0.25, -0.2, loss="hinge")
    np.testing.assert_array_equal(bl_h, 0.0)


def _surrogate(XL, y, cL, XU, Cs, s, w0, b0, w, b, betas):
    """Eq. (8) at (w, b) with the weights taken at (w0, b0), plus the constant that makes it touch Eq. (4) there."""
    betaL, betaUp, betaUm = betas
    H = lambda a, z: np.maximum(0.0, a - z)  # noqa: E731
    zL0, fU0 = y * (XL @ w0 + b0), XU @ w0 + b0
    zL, fU = y * (XL @ w + b), XU @ w + b
    const = -(cL * H(s, zL0)).sum() - (betaL * zL0).sum()
    const += -(Cs * (H(s, fU0) + H(s, -fU0))).sum() - (betaUp * fU0).sum() + (betaUm * fU0).sum()
    return (0.5 * w @ w + (cL * H(1, zL)).sum() + (betaL * zL).sum() + (Cs * (H(1, fU) + H(1, -fU))).sum()
            + (betaUp * fU).sum() - (betaUm * fU).sum() + const)


@pytest.mark.parametrize("seed", range(3))
def test_cccp_surrogate_bounds_the_ramp_objective(seed):
    # CCCP's convex problem must lie above the non-convex objective and touch it at the linearization point
    from hardneg.svm._ramp_tsvm import cccp_weights, tsvm_objective

    XL, y, XU = _data(seed, n=40, nu=30, d=3, sep=0.5)
    XL, XU = XL.astype(float), XU.astype(float)
    rng = np.random.default_rng(seed)
    cL, Cs, s = np.ones(len(y)), 0.7, -0.3
    w0, b0 = 1.5 * rng.normal(size=3), 0.3
    betas = cccp_weights(y, XL @ w0 + b0, cL, XU @ w0 + b0, Cs, s)
    assert betas[0].any() and betas[1].any() and betas[2].any()  # every kind of weight is exercised
    J = lambda w, b: tsvm_objective(XL, y, XU, w, b, 1.0, Cs, s)  # noqa: E731
    assert _surrogate(XL, y, cL, XU, Cs, s, w0, b0, w0, b0, betas) == pytest.approx(J(w0, b0), rel=1e-12)
    for _ in range(200):
        w, b = w0 + rng.normal(size=3), b0 + rng.normal()
        assert _surrogate(XL, y, cL, XU, Cs, s, w0, b0, w, b, betas) >= J(w, b) - 1e-9


def test_sgd_weights_enter_with_the_sign_of_eq8():
    # with the betas of a point, the solver's fixed point is the minimizer of Eq. (8): a labeled sample
    # beyond the ramp (beta = c) exerts no pull, so the solution equals the one without that sample
    rng = np.random.default_rng(0)
    XL = np.vstack([rng.normal(-2, 0.5, (30, 2)), rng.normal(2, 0.5, (30, 2)), [[6.0, 0.0]]]).astype(np.float32)
    y = np.concatenate([-np.ones(30), np.ones(30), [-1.0]])  # the last sample is a gross outlier
    nL = len(y)
    kw = dict(n_epochs=300, rng=None, balance=False)
    empty = np.zeros((0, 2), np.float32)
    betaL = np.zeros(nL)
    betaL[-1] = 1.0
    w1, b1, _ = solve_convex_tsvm(XL, y, np.ones(nL), betaL, empty, 0.0, np.zeros(0), np.zeros(0), np.zeros(2), 0.0,
                                  **{**kw, "rng": np.random.default_rng(1)})
    w2, b2, _ = solve_convex_tsvm(XL[:-1], y[:-1], np.ones(nL - 1), np.zeros(nL - 1), empty, 0.0, np.zeros(0),
                                  np.zeros(0), np.zeros(2), 0.0, **{**kw, "rng": np.random.default_rng(1)})
    w3, b3, _ = solve_convex_tsvm(XL, y, np.ones(nL), np.zeros(nL), empty, 0.0, np.zeros(0), np.zeros(0),
                                  np.zeros(2), 0.0, **{**kw, "rng": np.random.default_rng(1)})
    assert np.linalg.norm(w1 - w2) < 0.05 * np.linalg.norm(w2)
    assert np.linalg.norm(w3 - w2) > 0.2 * np.linalg.norm(w2)  # the hinge is pulled by the outlier


# --- the whole CCCP ---------------------------------------------------------------------------

def _flipped(seed=3, n=400, n_flip=40):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1, -1)
    X = rng.normal(size=(n, 2)) + 2.5 * y[:, None] * np.array([1.0, 0.0])
    noisy = y.copy()
    far = np.argsort(-np.abs(X[:, 0]))[:n_flip]  # the most confident samples get the wrong label
    noisy[far] *= -1
    return X, y, noisy


def test_ramp_loss_beats_hinge_under_flipped_labels_strictly():
    # digits {3, 5, 8} vs the rest, 30% of the training labels flipped, clean test labels; strict, with a
    # margin, over three fixed splits (a tie, e.g. the ramp turned into a hinge, fails)
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X - X.mean(axis=0)
    X /= np.linalg.norm(X, axis=1).mean()
    yb = np.where(np.isin(y, (3, 5, 8)), 1, -1)
    gaps = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(X))
        tr, te = perm[:1000], perm[1000:]
        noisy = yb[tr] * np.where(rng.random(tr.size) < 0.3, -1, 1)
        acc = {loss: (RampTSVM(C=1.0, loss=loss, random_state=0).fit(X[tr], noisy).predict(X[te]) == yb[te]).mean()
               for loss in ("ramp", "hinge")}
        gaps.append(acc["ramp"] - acc["hinge"])
    assert np.mean(gaps) >= 0.008, gaps


def test_ramp_ignores_labeled_outliers():
    # the ramp solution equals the hinge solution on the data without the samples it put beyond s
    X, _, noisy = _flipped(3)
    ramp = RampTSVM(C=1.0, random_state=0, sgd_tol=0.0, n_epochs=40, max_iter=15).fit(X, noisy)
    f = X @ ramp.coef_ + ramp.intercept_
    keep = noisy * f >= ramp.s
    assert (~keep).sum() >= 30  # most flipped samples are beyond the ramp
    clean = RampTSVM(C=1.0, loss="hinge", random_state=0, sgd_tol=0.0, n_epochs=200, max_iter=1).fit(X[keep], noisy[keep])
    full = RampTSVM(C=1.0, loss="hinge", random_state=0, sgd_tol=0.0, n_epochs=200, max_iter=1).fit(X, noisy)
    assert np.linalg.norm(ramp.coef_ - clean.coef_) < 0.1 * np.linalg.norm(clean.coef_)
    assert np.linalg.norm(full.coef_ - clean.coef_) > 0.3 * np.linalg.norm(clean.coef_)


def test_unlabeled_data_change_the_solution_toward_the_gap():
    # two labeled points per class put the supervised boundary at a slant through the clusters;
    # the unlabeled clusters pull it into the empty gap between them (the cluster assumption)
    rng = np.random.default_rng(0)
    XL = np.array([[-1.0, 2.0], [-1.0, 2.5], [1.0, -2.0], [1.0, -2.5]], np.float32)
    y = np.array([-1, -1, 1, 1])
    U = np.vstack([rng.normal([-3.0, 0.0], [0.6, 3.0], (300, 2)), rng.normal([3.0, 0.0], [0.6, 3.0], (300, 2))])
    truth = np.repeat([-1, 1], 300)
    sup = RampTSVM(C=1.0, random_state=0).fit(XL, y)
    for balance in (True, False):
        tsvm = RampTSVM(C=1.0, balance=balance, random_state=0).fit(XL, y, X_unlabeled=U)
        acc_sup = (sup.predict(U) == truth).mean()
        acc_tsvm = (tsvm.predict(U) == truth).mean()
        assert acc_tsvm >= 0.85 and acc_tsvm >= acc_sup + 0.12
        # the normal turns toward the first axis, across the gap
        cos = abs(tsvm.coef_[0]) / np.linalg.norm(tsvm.coef_)
        assert cos > 0.7 > 0.5 > abs(sup.coef_[0]) / np.linalg.norm(sup.coef_)


@pytest.mark.parametrize("seed", range(3))
def test_cccp_does_not_increase_the_objective(seed):
    XL, y, XU = _data(seed, n=60, nu=80, d=3, sep=1.0)
    y[:5] *= -1  # some outliers, so the ramp's weights change between rounds
    clf = RampTSVM(C=1.0, sgd_tol=1e-4, n_epochs=300, max_iter=6, balance=False, random_state=seed)
    clf.fit(XL, y, X_unlabeled=XU)
    path = clf.objective_path_
    assert path.shape == (clf.n_iter_ + 1,)
    from hardneg.svm._ramp_tsvm import tsvm_objective

    assert path[-1] == pytest.approx(tsvm_objective(XL, y, XU, clf.coef_, clf.intercept_, 1.0, clf.C_star_, clf.s))
    assert (np.diff(path) <= 2e-3 * path[0]).all()
    assert path[-1] < path[0]


def test_sgd_stopping_rule_and_cap():
    XL, y, XU = _data(1, n=50, nu=50, d=3)
    nL, nU = len(XL), len(XU)
    args = (XL, y, np.ones(nL), np.zeros(nL), XU, 0.5, np.zeros(nU), np.zeros(nU), np.zeros(3), 0.0)
    M = nL + nU
    _, _, t = solve_convex_tsvm(*args, n_epochs=7, rng=np.random.default_rng(0), tol=0.0)
    assert t == M + 7 * M  # no rule: always the cap
    _, _, t = solve_convex_tsvm(*args, n_epochs=7, rng=np.random.default_rng(0), tol=10.0)
    assert t == 2 * M  # a loose rule stops after one epoch
    _, _, t_mid = solve_convex_tsvm(*args, n_epochs=500, rng=np.random.default_rng(0), tol=1e-2)
    assert 2 * M < t_mid < M + 500 * M
    clf = RampTSVM(n_epochs=4, max_iter=3, sgd_tol=0.0, random_state=0).fit(XL, y, X_unlabeled=XU)
    assert clf.n_epochs_ == 4 * clf.n_iter_
