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


def test_ramp_loss_resists_flipped_labels_more_than_hinge():
    rng = np.random.default_rng(3)
    n = 400
    y = np.where(rng.random(n) < 0.5, 1, -1)
    X = rng.normal(size=(n, 2)) + 2.5 * y[:, None] * np.array([1.0, 0.0])
    noisy = y.copy()
    far = np.argsort(-np.abs(X[:, 0]))[:40]  # the most confident samples get the wrong label
    noisy[far] *= -1
    acc = {}
    for loss in ("ramp", "hinge"):
        clf = RampTSVM(C=1.0, loss=loss, n_epochs=5, max_iter=10, random_state=0).fit(X, noisy)
        acc[loss] = (clf.predict(X) == y).mean()
    assert acc["ramp"] >= acc["hinge"]


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
