"""SVM solvers: contracts a user relies on that no other test pinned.

* ``fit_exemplar_svms`` hands every keyword to the solver it dispatches to (a hand-worked
  exemplar SVM whose optimum depends on ``lam``; an unknown keyword is refused).
* ``fit_exemplar_svms_batch`` names the argument in its errors: ``warm_start``, and which of
  ``X`` / ``Z`` holds NaN or infinity.
* ``fit_exemplar_svms_sgd``: one epoch is ``N / minibatch`` Pegasos steps on disjoint
  minibatches, and ``max_epochs=1`` returns the mean of that epoch's iterates (checked
  against a plain-Python replay of the documented update rule).
* ``compress_hik`` and the bin tables name ``support_vectors`` in the negative-value error.
* ``solve_convex_dcd`` solves [Cevikalp17] Eq. (8) with non-zero CCCP weights on the
  unlabeled copies (compared with ``scipy.optimize`` on the primal QP); ``RampTSVM`` with the
  balancing constraint keeps it with a single unlabeled row.
* ``solve_convex_tsvm`` stops at Algorithm 2's rule as documented: the first epoch that
  moves (w, b) by less than ``tol`` times the norm of (w, b).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from hardneg.svm import RampTSVM, compress_hik, fit_exemplar_svms, fit_exemplar_svms_batch, fit_exemplar_svms_sgd
from hardneg.svm._hik_tables import HIKBinTable
from hardneg.svm._ramp_tsvm import solve_convex_dcd, solve_convex_tsvm


# --------------------------------------------------------------------------- exemplar SVMs
@pytest.mark.parametrize("solver", ["batch", "liblinear"])
def test_fit_exemplar_svms_passes_the_weights_to_the_solver(solver):
    # x = (1, 0) and z = (-1, 0): both hinges are max(0, 1 - w1), so [Zepeda15] Eq. (1) is
    # lam/2 w1^2 + (alpha_pos + alpha_neg) max(0, 1 - w1), minimized at w1 = min(1, (alpha_pos + alpha_neg) / lam)
    X, Z = np.array([[1.0, 0.0]]), np.array([[-1.0, 0.0]])
    W = fit_exemplar_svms(X, Z, solver=solver, lam=10.0, alpha_pos=1.0, alpha_neg=1.0)
    np.testing.assert_allclose(W, [[0.2, 0.0]], atol=2e-3)
    W = fit_exemplar_svms(X, Z, solver=solver, lam=20.0, alpha_pos=1.0, alpha_neg=1.0)
    np.testing.assert_allclose(W, [[0.1, 0.0]], atol=2e-3)


def test_fit_exemplar_svms_refuses_an_unknown_keyword():
    with pytest.raises(TypeError, match="lamda"):
        fit_exemplar_svms(np.ones((1, 2)), -np.ones((3, 2)), solver="batch", lamda=1.0)


def test_batch_solver_names_a_bad_warm_start():
    with pytest.raises(ValueError, match=r"^warm_start: expected 'subsample' or None, got 'full'$"):
        fit_exemplar_svms_batch(np.ones((1, 2)), -np.ones((3, 2)), warm_start="full")


@pytest.mark.parametrize("where", ["X", "Z"])
def test_exemplar_solvers_name_the_array_holding_nan(where):
    X, Z = np.ones((2, 3)), -np.ones((4, 3))
    (X if where == "X" else Z)[1, 2] = np.nan
    with pytest.raises(ValueError, match=rf"^{where}: contains NaN or infinity \(shape"):
        fit_exemplar_svms_batch(X, Z)


def _pegasos_one_epoch(x, z, N, m, lam, alpha_pos, alpha_neg):
    """The module docstring's update rule, one epoch, for N identical negatives z (so the
    minibatches do not depend on the shuffle): N // m steps, the mean iterate returned."""
    eta0 = 1.0 / (alpha_pos * (x @ x) + alpha_neg * N * (z @ z))
    radius = np.sqrt(2.0 * (alpha_pos + alpha_neg * N) / lam)
    w = np.zeros_like(x)
    iterates = []
    for t in range(1, N // m + 1):
        pos = float(x @ w < 1.0)
        hinge = float(1.0 + z @ w > 0.0)
        grad = lam * w - alpha_pos * pos * x + alpha_neg * (N / m) * (m * hinge) * z
        w = w - eta0 / (1.0 + lam * eta0 * t) * grad
        w = w * min(1.0, radius / max(np.linalg.norm(w), 1e-30))
        iterates.append(w)
    return np.mean(iterates, axis=0)


@pytest.mark.parametrize("N, m", [(4, 2), (6, 3), (4, 4)])
def test_sgd_epoch_is_n_over_minibatch_steps(N, m):
    x = np.array([1.0, 0.5])
    z = np.array([0.3, -0.8])
    Z = np.tile(z, (N, 1))
    kw = dict(lam=0.5, alpha_pos=1.0, alpha_neg=0.2)
    W = fit_exemplar_svms_sgd(x[None], Z, max_epochs=1, minibatch=m, random_state=0, **kw)
    np.testing.assert_allclose(W[0], _pegasos_one_epoch(x, z, N, m, **kw), rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- HIK tables
@pytest.mark.parametrize("build", [
    lambda sv: compress_hik(sv, [1.0, -1.0], 0.0, n_bins=None),
    lambda sv: compress_hik(sv, [1.0, -1.0], 0.0, n_bins=4),
    lambda sv: HIKBinTable.on_grid(sv, [1.0, -1.0], 0.0, lo=[0.0, 0.0], hi=[1.0, 1.0], n_bins=4),
])
def test_hik_tables_name_negative_support_vectors(build):
    with pytest.raises(ValueError, match=r"^support_vectors: Negative values"):
        build(np.array([[0.5, 0.2], [0.1, -0.3]]))


# --------------------------------------------------------------------------- RTSVM convex step
def test_dcd_matches_scipy_with_cccp_weights_on_the_unlabeled_copies():
    XL = np.array([[-2.0, 0.5], [-1.0, -0.5], [1.0, 0.3], [2.0, -0.2]])
    yL = np.array([-1.0, -1.0, 1.0, 1.0])
    cL, betaL = np.ones(4), np.zeros(4)
    XU = np.array([[3.0, 0.0], [-0.5, 1.0]])
    cU = 1.0
    # the first unlabeled row has both copies beyond their ramps (beta = C*): it only pulls back where |f| > 1
    betaUp, betaUm = np.array([1.0, 0.0]), np.array([1.0, 0.0])

    X = np.vstack([XL, XU, XU])
    y = np.concatenate([yL, [1.0, 1.0], [-1.0, -1.0]])
    c = np.concatenate([cL, [cU, cU], [cU, cU]])
    beta = np.concatenate([betaL, betaUp, betaUm])

    def primal(w, b):  # [Cevikalp17] Eq. (8): 1/2 ||w||^2 + sum_k c_k H_1(y_k f_k) + beta_k y_k f_k
        f = X @ w + b
        return 0.5 * w @ w + c @ np.maximum(0.0, 1.0 - y * f) + beta @ (y * f)

    # the same problem as a QP in (w, b, slacks), by scipy
    d, n = 2, X.shape[0]
    ref = minimize(
        lambda v: 0.5 * v[:d] @ v[:d] + c @ v[d + 1:] + beta @ (y * (X @ v[:d] + v[d])),
        np.zeros(d + 1 + n), method="SLSQP", options={"ftol": 1e-12, "maxiter": 1000},
        constraints=[{"type": "ineq", "fun": lambda v: v[d + 1:] - (1.0 - y * (X @ v[:d] + v[d]))},
                     {"type": "ineq", "fun": lambda v: v[d + 1:]}],
    )
    assert ref.success
    w, b, _, _ = solve_convex_dcd(XL, yL, cL, betaL, XU, cU, betaUp, betaUm, balance=False, tol=1e-9, max_epochs=100_000)
    assert primal(w, b) == pytest.approx(ref.fun, rel=1e-7)
    np.testing.assert_allclose(w, ref.x[:d], atol=1e-5)


def test_balance_holds_with_a_single_unlabeled_row():
    X = np.array([[-2.0, 0.5], [-1.0, -0.5], [-1.5, 0.0], [1.0, 0.3], [2.0, -0.2]])
    y = np.array([0, 0, 0, 1, 1])  # mean label (-1 / +1) = -0.2
    U = np.array([[3.0, 1.0]])
    # [Cevikalp17] Eq. (6): the mean output on the unlabeled rows is the mean label; C_star=0 weighs them
    # nothing, so the constraint alone ties the bias
    for solver in ("dcd", "sgd"):
        clf = RampTSVM(solver=solver, balance=True, C_star=0.0, random_state=0).fit(X, y, X_unlabeled=U)
        assert clf.decision_function(U)[0] == pytest.approx(-0.2, abs=1e-6), solver


# --------------------------------------------------------------------------- RTSVM Algorithm 2
@pytest.mark.parametrize("tol", [1e-1, 3e-2, 1e-3])
def test_sgd_stops_at_the_first_epoch_moving_less_than_tol_times_the_norm(tol):
    rng = np.random.default_rng(0)
    XL = (rng.normal(size=(20, 3)) * 0.05).astype(np.float32)
    yL = np.where(XL[:, 0] > 0, 1.0, -1.0)
    XU = (rng.normal(size=(10, 3)) * 0.05).astype(np.float32)
    M = 30
    args = (XL, yL, np.full(20, 5.0), np.zeros(20), XU, 0.5, np.zeros(10), np.zeros(10), np.zeros(3), 0.0)

    def run(n_epochs, tol):
        return solve_convex_tsvm(*args, n_epochs=n_epochs, rng=np.random.default_rng(1), balance=False, tol=tol)

    w, b, t = run(300, tol)
    epochs = int(round((t - M) / M))
    assert 1 <= epochs < 300
    # replay the same epochs without the rule (tol=0 runs every epoch asked for)
    path = [run(k, 0.0)[:2] for k in range(epochs + 1)]
    np.testing.assert_array_equal(path[-1][0], w)
    for k in range(1, epochs + 1):
        (w0, b0), (w1, b1) = path[k - 1], path[k]
        moved = np.sqrt(np.sum((w1 - w0) ** 2) + (b1 - b0) ** 2)
        size = np.sqrt(w1 @ w1 + b1 * b1)
        assert (moved < tol * size) == (k == epochs), (k, moved, size)
