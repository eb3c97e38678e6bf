"""RampTSVM's dual coordinate descent solver (``solver="dcd"``) against slow references.

The convex problem of a CCCP round ([Cevikalp17] Eq. (8), weights of Eq. (7)) is solved by
its dual; the reference is the primal Eq. (8) in its slack form minimized by scipy's SLSQP
(tiny problems), and the SGD solver (Algorithm 2) run long. Each test can fail: a wrong box
(the beta shift), a wrong sign of an unlabeled copy, a bias that ignores sum gamma y = 0 or
the balancing constraint each move the objective by far more than the tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from hardneg.svm import RampTSVM
from hardneg.svm._ramp_tsvm import cccp_weights, solve_convex_dcd, solve_convex_tsvm, tsvm_objective


def _problem(seed, nL=30, nU=20, d=4):
    rng = np.random.default_rng(seed)
    yL = np.where(rng.random(nL) < 0.5, 1.0, -1.0)
    XL = rng.normal(size=(nL, d)).astype(np.float32)
    XL[:, 0] += yL
    XU = rng.normal(size=(nU, d)).astype(np.float32)
    w0 = rng.normal(size=d)  # a CCCP point: some samples beyond their ramp, so some beta != 0
    cL = np.full(nL, 1.0)
    betaL, betaUp, betaUm = cccp_weights(yL, XL @ w0, cL, XU @ w0, 0.5, -0.2)
    return XL, yL, cL, betaL, XU, 0.5, betaUp, betaUm


def _primal(w, b, XL, yL, cL, betaL, XU, cU, betaUp, betaUm):
    """Eq. (8) as written: hinge terms plus the linear terms of the linearized concave part."""
    XL, XU = XL.astype(float), XU.astype(float)
    fL, fU = XL @ w + b, XU @ w + b
    return (0.5 * w @ w + (cL * np.maximum(0, 1 - yL * fL)).sum() + (betaL * yL * fL).sum()
            + cU * (np.maximum(0, 1 - fU) + np.maximum(0, 1 + fU)).sum() + (betaUp * fU).sum() - (betaUm * fU).sum())


def _reference_primal_min(XL, yL, cL, betaL, XU, cU, betaUp, betaUm, balance):
    """min of Eq. (8) by SLSQP on the smooth slack form (w, b, xi), slow and obvious."""
    X = np.vstack([XL, XU, XU]).astype(float)
    y = np.concatenate([yL, np.ones(len(XU)), -np.ones(len(XU))])
    c = np.concatenate([cL, np.full(len(XU), cU), np.full(len(XU), cU)])
    beta = np.concatenate([betaL, betaUp, betaUm])
    n, d = X.shape

    def obj(z):
        w, b, xi = z[:d], z[d], z[d + 1:]
        return 0.5 * w @ w + c @ xi + (beta * y) @ (X @ w + b)

    def jac(z):
        w = z[:d]
        g = np.concatenate([w + X.T @ (beta * y), [(beta * y).sum()], c])
        return g

    cons = [{"type": "ineq", "fun": lambda z: y * (X @ z[:d] + z[d]) - 1 + z[d + 1:]},
            {"type": "ineq", "fun": lambda z: z[d + 1:]}]
    if balance:
        m, r = XU.mean(axis=0).astype(float), float(np.mean(yL))
        cons.append({"type": "eq", "fun": lambda z: np.array([z[:d] @ m + z[d] - r])})
    z0 = np.concatenate([np.zeros(d + 1), np.full(n, 2.0)])
    res = minimize(obj, z0, jac=jac, constraints=cons, method="SLSQP", options={"maxiter": 2000, "ftol": 1e-12})
    return res.x[:d], res.x[d]


@pytest.mark.parametrize("balance", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dcd_reaches_the_optimum_of_eq8(seed, balance):
    args = _problem(seed)
    assert args[3].any() and (args[6].any() or args[7].any())  # the beta shifts are exercised
    w, b, _, epochs = solve_convex_dcd(*args, balance=balance, tol=1e-6, max_epochs=5000, seed=0)
    w_ref, b_ref = _reference_primal_min(*args, balance)
    J, J_ref = _primal(w, b, *args), _primal(w_ref, b_ref, *args)
    assert J <= J_ref + 1e-4 * abs(J_ref) + 1e-6  # never worse than the reference (up to its own precision)
    assert J >= J_ref - 1e-3 * abs(J_ref) - 1e-6  # and not below a true minimum: the problem is the same one
    if balance:
        assert XU_mean_output(args[4], w, b) == pytest.approx(np.mean(args[1]), abs=1e-9)


def XU_mean_output(XU, w, b):
    return float((XU.astype(float) @ w + b).mean())


def test_dcd_warm_start_and_tolerance():
    args = _problem(3, nL=60, nU=40)
    w1, b1, gammas, e1 = solve_convex_dcd(*args, balance=False, tol=1e-4, max_epochs=5000, seed=0)
    # restarting from its own duals: (nearly) converged already, a few epochs, the same solution
    w2, b2, _, e2 = solve_convex_dcd(*args, gammas=gammas, balance=False, tol=1e-4, max_epochs=5000, seed=1)
    assert e2 <= 5 and 3 * e2 < e1
    np.testing.assert_allclose(w2, w1, atol=1e-3)
    # the cap holds
    _, _, _, e3 = solve_convex_dcd(*args, balance=False, tol=1e-12, max_epochs=3, seed=0)
    assert e3 == 3


def test_dcd_agrees_with_the_sgd_solver_on_eq8():
    """The two solvers of the same convex problem reach the same objective (SGD slowly)."""
    args = _problem(4, nL=40, nU=30, d=3)
    w_d, b_d, _, _ = solve_convex_dcd(*args, balance=False, tol=1e-6, max_epochs=5000, seed=0)
    XL, yL, cL, betaL, XU, cU, betaUp, betaUm = args
    w_s, b_s, _ = solve_convex_tsvm(XL, yL, cL, betaL, XU, cU, betaUp, betaUm, np.zeros(3), 0.0, n_epochs=2000,
                                    rng=np.random.default_rng(0), balance=False)
    J_d, J_s = _primal(w_d, b_d, *args), _primal(w_s, b_s, *args)
    assert J_d <= J_s + 1e-6
    assert J_s <= J_d * 1.02 + 1e-6


def test_rampsvm_dcd_reaches_the_sgd_objective():
    """The whole CCCP with either solver ends at the same objective Eq. (4), within 1 %."""
    rng = np.random.default_rng(0)
    y = np.where(rng.random(200) < 0.5, 1, -1)
    X = (rng.normal(size=(200, 5)) + 0.8 * y[:, None] * np.eye(5)[0]).astype(np.float32)
    U = (rng.normal(size=(200, 5)) + 0.8 * np.where(rng.random(200) < 0.5, 1, -1)[:, None] * np.eye(5)[0])
    kw = dict(C=1.0, balance=False, random_state=0)
    ref = RampTSVM(**kw, n_epochs=200, max_iter=15, sgd_tol=0.0).fit(X, y, X_unlabeled=U)
    dcd = RampTSVM(**kw, solver="dcd").fit(X, y, X_unlabeled=U)

    def J(m):
        return tsvm_objective(X.astype(float), y.astype(float), U, m.coef_, m.intercept_, 1.0, m.C_star_, m.s)

    assert J(dcd) <= J(ref) * 1.01
    assert dcd.objective_path_[-1] == pytest.approx(J(dcd), rel=1e-6)
    assert dcd.n_epochs_ >= dcd.n_iter_  # at least one epoch per round
    with pytest.raises(ValueError, match="solver"):
        RampTSVM(solver="newton").fit(X, y)
