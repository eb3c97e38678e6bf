"""Robust transductive SVM (RTSVM) with ramp losses, solved by CCCP + SGD.

Cevikalp, Elmas & Ozkan, "Large-scale image retrieval using transductive
support vector machines", CVIU 2017, [Cevikalp17] Eq. (4)-(8) and Algorithms 1-2.

The primal problem ([Cevikalp17] Eq. (4)-(6)) with f(x) = w.x + b is::

    min  1/2 ||w||^2 + C  sum_{i in L} R_s(y_i f(x_i))
                     + C* sum_{j in U} [R_s(f(x_j)) + R_s(-f(x_j))]
    s.t. 1/|U| sum_{j in U} f(x_j) = 1/|L| sum_{i in L} y_i       (balancing)

with the ramp loss R_s(t) = H_1(t) - H_s(t), H_a(t) = max(0, a - t), and
s in (-1, 0]. Every unlabeled sample enters twice, once with y = +1 and once
with y = -1 (the symmetric ramp loss SR_s). Splitting R_s into its convex
part H_1 and concave part -H_s gives a difference of convex functions; CCCP
(Algorithm 1) linearizes the concave part at the current solution, which
yields the weights ([Cevikalp17] Eq. (7))::

    beta_i = C  if y_i f(x_i) < s else 0        (labeled, and each unlabeled copy with C*)

and the convex problem ([Cevikalp17] Eq. (8))::

    min 1/2 ||w||^2 + sum_k c_k H_1(y_k f(x_k)) + sum_k beta_k y_k f(x_k)   s.t. balancing.

Samples with y f < s (outliers, flipped labels) get beta = c, so their hinge
gradient and their linear term cancel: the ramp loss ignores them. The convex
problem is solved by stochastic (sub)gradient descent (Algorithm 2) with step
lambda_t = lambda0 / t and, after every update, the Euclidean projection of
(w, b) onto the balancing hyperplane {w.m_U + b = mean(y_L)}, m_U being the
mean unlabeled sample. The per-epoch cost is linear in the number of samples.
Epochs repeat until Algorithm 2's stopping rule holds, ||Delta w|| < epsilon
over one epoch (``sgd_tol``, measured relative to ||(w, b)|| so that it does
not depend on the feature scale), or until the cap ``n_epochs``.

Departures of the step schedule from Algorithm 2 as printed (kept because
they are the Pegasos schedule for this objective, and measured to converge:
``docs/methods/hashing.md``, node convergence):

* lambda decays per visited sample (t counts samples, not epochs) and the
  counter carries over between CCCP rounds (warm start);
* lambda0 = |L| + |U| (= M) and t starts at M, so the first step is 1;
* the gradient of the loss terms is not scaled by 1 / (L + 2U): one visit
  takes the full C-weighted loss gradient of its sample and 1/M of the
  regularizer's (objective [Cevikalp17] Eq. (8) divided by M, times lambda0 = M).

``loss="hinge"`` keeps the hinge loss on the labeled samples (no beta, the
classical TSVM) and is the baseline for the robustness study.
"""

from __future__ import annotations

import logging
from numbers import Integral, Real

import numba
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from hardneg._validation import (
    RANDOM_STATE,
    Interval,
    StrOptions,
    check_binary_target,
    check_matrix,
    check_random_state,
    validate_params,
    validate_X,
)
from hardneg.svm._linear import LinearDecisionMixin, _check_sample_weight, fit_linear_svm

__all__ = ["RampTSVM"]

logger = logging.getLogger(__name__)

_LOSSES = ("ramp", "hinge")
# Algorithm 2's stopping rule and its cap (benchmarks/hashing_node_convergence.py)
SGD_TOL = 5e-3
SGD_MAX_EPOCHS = 50
# the dual coordinate descent solver's stopping rule (projected-gradient spread, margin units) and cap
DCD_TOL = 0.1
DCD_MAX_EPOCHS = 1000


@numba.njit(cache=True, nogil=True)
def _sgd_epoch(XL, yL, cL, betaL, XU, cU, betaUp, betaUm, m, xm_L, xm_U, r, w, b, order, t, lam0, inv_M, project):
    """One pass of Algorithm 2 over ``order``; updates ``w`` in place, returns (b, t).

    ``w`` is kept as ``a * v + g * m`` so that the decay of the regularizer
    (scale ``a``) and the projection onto the balancing hyperplane (a step
    along ``m``, coefficient ``g``) cost O(1); only the dot product and a
    non-zero gradient touch the ``d`` features. ``w.m`` is tracked through the
    precomputed ``x.m`` of every sample.
    """
    d = w.shape[0]
    nL = XL.shape[0]
    v = w.copy()
    a = 1.0
    g = 0.0
    mm = 0.0
    vm = 0.0
    for k in range(d):
        mm += m[k] * m[k]
        vm += v[k] * m[k]
    for idx in order:
        eta = lam0 / t
        t += 1.0
        if idx < nL:
            x = XL[idx]
            vx = 0.0
            for k in range(d):
                vx += v[k] * x[k]
            f = a * vx + g * xm_L[idx] + b
            y = yL[idx]
            # d(loss)/df of c H_1(y f) + beta y f
            gf = betaL[idx] * y
            if y * f < 1.0:
                gf -= cL[idx] * y
            xm = xm_L[idx]
        else:
            j = idx - nL
            x = XU[j]
            vx = 0.0
            for k in range(d):
                vx += v[k] * x[k]
            f = a * vx + g * xm_U[j] + b
            # the two copies (y = +1 and y = -1) of the symmetric ramp loss
            gf = betaUp[j] - betaUm[j]
            if f < 1.0:
                gf -= cU
            if -f < 1.0:
                gf += cU
            xm = xm_U[j]
        # w <- (1 - eta / M) w - eta * gf * x
        shrink = 1.0 - eta * inv_M
        if shrink < 1e-9:
            shrink = 1e-9
        a *= shrink
        g *= shrink
        if gf != 0.0:
            step = eta * gf / a
            for k in range(d):
                v[k] -= step * x[k]
            vm -= step * xm
            b -= eta * gf
        if project:
            # Euclidean projection of (w, b) onto {w.m + b = r}
            wm = a * vm + g * mm
            delta = (wm + b - r) / (mm + 1.0)
            g -= delta
            b -= delta
        if a < 1e-6:
            for k in range(d):
                v[k] = a * v[k]
            vm *= a
            a = 1.0
    for k in range(d):
        w[k] = a * v[k] + g * m[k]
    return b, t


@numba.njit(cache=True, nogil=True)
def _dcd_primal(XL, yL, gL, XU, gP, gM, w):
    """w = sum_k gamma_k y_k x_k (in place); returns s = sum_k gamma_k y_k."""
    d = w.shape[0]
    for k in range(d):
        w[k] = 0.0
    s = 0.0
    for i in range(XL.shape[0]):
        c = gL[i] * yL[i]
        if c != 0.0:
            x = XL[i]
            for k in range(d):
                w[k] += c * x[k]
            s += c
    for j in range(XU.shape[0]):
        c = gP[j] - gM[j]
        if c != 0.0:
            x = XU[j]
            for k in range(d):
                w[k] += c * x[k]
            s += c
    return s


@numba.njit(cache=True, nogil=True)
def _dcd_coord(g, G, lo, hi, q):
    """One coordinate of the box-constrained dual: (new gamma, projected gradient)."""
    pg = G
    if g <= lo:
        pg = min(G, 0.0)
    elif g >= hi:
        pg = max(G, 0.0)
    if pg == 0.0:
        return g, 0.0
    return min(max(g - G / q, lo), hi), pg


@numba.njit(cache=True, nogil=True)
def _dcd_solve(XL, yL, loL, hiL, gL, QL, XU, loP, hiP, gP, loM, hiM, gM, QU, w, s, b0, rho, max_epochs, tol, seed):
    """Dual coordinate descent on the dual of [Cevikalp17] Eq. (8) (see :func:`solve_convex_dcd`); ``w`` and the
    gammas are updated in place. ``rho > 0``: the bias is free, found by the method of multipliers
    (``b0`` is the multiplier of sum_k gamma_k y_k = 0, the effective bias ``b0 + rho * s``);
    ``rho = 0``: the bias is fixed at ``b0``. Returns ``(b0, s, epochs, pg_spread)``."""
    np.random.seed(seed)
    nL, nU, d = XL.shape[0], XU.shape[0], w.shape[0]
    order = np.arange(nL + nU)
    epochs = 0
    spread = np.inf
    for _ in range(max_epochs):
        epochs += 1
        for i in range(nL + nU - 1, 0, -1):
            j = np.random.randint(0, i + 1)
            order[i], order[j] = order[j], order[i]
        pmax, pmin = -np.inf, np.inf
        for idx in order:
            if idx < nL:
                lo, hi = loL[idx], hiL[idx]
                if lo >= hi or QL[idx] == np.inf:  # an all-zero row (balance): its gamma moves neither w nor s
                    continue
                x = XL[idx]
                y = yL[idx]
                f = b0 + rho * s
                for k in range(d):
                    f += w[k] * x[k]
                g = gL[idx]
                gn, pg = _dcd_coord(g, y * f - 1.0, lo, hi, QL[idx])
                pmax, pmin = max(pmax, pg), min(pmin, pg)
                if gn != g:
                    gL[idx] = gn
                    c = (gn - g) * y
                    for k in range(d):
                        w[k] += c * x[k]
                    s += c
            else:
                j = idx - nL
                if (loP[j] >= hiP[j] and loM[j] >= hiM[j]) or QU[j] == np.inf:
                    continue  # an unlabeled row at the unlabeled mean (balance) is all zero once centred: 0 * inf below
                x = XU[j]
                f = b0 + rho * s
                for k in range(d):
                    f += w[k] * x[k]
                q = QU[j]
                c = 0.0
                if loP[j] < hiP[j]:  # the copy labeled +1
                    g = gP[j]
                    gn, pg = _dcd_coord(g, f - 1.0, loP[j], hiP[j], q)
                    pmax, pmin = max(pmax, pg), min(pmin, pg)
                    gP[j] = gn
                    c += gn - g
                    f += (gn - g) * q
                if loM[j] < hiM[j]:  # the copy labeled -1
                    g = gM[j]
                    gn, pg = _dcd_coord(g, -f - 1.0, loM[j], hiM[j], q)
                    pmax, pmin = max(pmax, pg), min(pmin, pg)
                    gM[j] = gn
                    c -= gn - g
                if c != 0.0:
                    for k in range(d):
                        w[k] += c * x[k]
                    s += c
        spread = pmax - pmin if pmax >= pmin else 0.0
        if spread < tol and abs(rho * s) < 0.5 * tol:
            break
        b0 += rho * s  # multiplier step: the bias moves to where sum_k gamma_k y_k = 0
    return b0, s, epochs, spread


def solve_convex_dcd(XL, yL, cL, betaL, XU, cU, betaUp, betaUm, *, gammas=None, balance=True, r=None, tol=DCD_TOL,
                     max_epochs=DCD_MAX_EPOCHS, seed=0):
    """[Cevikalp17] Eq. (8) solved exactly (to ``tol``) through its dual, by dual coordinate descent.

    The convex problem of a CCCP round ([Cevikalp17] Eq. (8), the weights of [Cevikalp17] Eq. (7)), with one
    term per labeled sample and two per unlabeled one (labels +1 and -1, cost ``cU``)::

        min_{w,b} 1/2 ||w||^2 + sum_k c_k H_1(y_k f_k) + sum_k beta_k y_k f_k,   f_k = w.x_k + b

    is a linear SVM only when every beta is 0: the linear terms shift each sample's dual box. Its
    dual (as for Collobert et al.'s CCCP-TSVM) is::

        min_gamma 1/2 ||sum_k gamma_k y_k x_k||^2 - sum_k gamma_k
        s.t. -beta_k <= gamma_k <= c_k - beta_k,   sum_k gamma_k y_k = 0 (the free bias b)

    with ``w = sum_k gamma_k y_k x_k``. A sample beyond its ramp (beta_k = c_k) gets the box
    [-c_k, 0]: it pulls only if it reaches y_k f_k > 1 (the CCCP bound of the flat ramp), so this is
    not LinearSVC with sample weights (nor is the bias, which liblinear regularizes). Coordinates
    are visited in random order with the exact one-variable minimizer (Hsieh et al. 2008); the two
    copies of an unlabeled sample share one dot product. The bias: with ``balance`` ([Cevikalp17] Eq. (6), the
    constraint w.m_U + b = r, r the mean label) b = r - w.m_U, so f_k = w.(x_k - m_U) + r and the
    features are centered (no equality in the dual); otherwise the equality is kept by the method
    of multipliers (b is its multiplier; penalty rho = mean ||x||^2, folded into the coordinate
    steps as a constant feature). Epochs stop when the projected gradient's spread over one epoch
    (margin units) and the bias step are below ``tol``, or after ``max_epochs``.

    ``gammas``: ``(gL, gP, gM)`` of a previous round (a warm start: clipped to the new boxes),
    or None (zeros). Returns ``(w, b, (gL, gP, gM), epochs)``.
    """
    nL, nU = XL.shape[0], XU.shape[0]
    d = XL.shape[1]
    cU = float(cU)
    project = balance and nU > 0
    XL = np.ascontiguousarray(XL)
    XU = np.ascontiguousarray(XU) if nU else np.zeros((0, d), XL.dtype)
    if project:
        m = XU.mean(axis=0, dtype=np.float64)
        r = float(np.mean(yL)) if r is None else float(r)
        XL = (XL - m).astype(XL.dtype)
        XU = (XU - m).astype(XU.dtype)
    loL, hiL = -np.asarray(betaL, np.float64), np.asarray(cL, np.float64) - betaL
    loP, hiP = -np.asarray(betaUp, np.float64), cU - np.asarray(betaUp, np.float64)
    loM, hiM = -np.asarray(betaUm, np.float64), cU - np.asarray(betaUm, np.float64)
    if gammas is None:
        gL, gP, gM = np.zeros(nL), np.zeros(nU), np.zeros(nU)
    else:
        gL, gP, gM = (np.clip(g, lo, hi) for g, lo, hi in zip(gammas, (loL, loP, loM), (hiL, hiP, hiM)))
    sqL = np.einsum("ij,ij->i", XL, XL, dtype=np.float64)
    sqU = np.einsum("ij,ij->i", XU, XU, dtype=np.float64)
    if project:
        rho, b0 = 0.0, r
    else:
        rho = float(np.mean(np.concatenate([sqL, sqU]))) or 1.0
        b0 = 0.0
    QL, QU = sqL + rho, sqU + rho
    QL[QL <= 0] = np.inf  # an all-zero row (balance) is a constant: its gamma stays where it is
    QU[QU <= 0] = np.inf
    yL = np.asarray(yL, np.float64)
    w = np.zeros(d)
    s = _dcd_primal(XL, yL, gL, XU, gP, gM, w)
    if gammas is not None and not project:
        b0 = float(gammas[3]) if len(gammas) > 3 else 0.0
    b0, s, epochs, _ = _dcd_solve(XL, yL, loL, hiL, gL, QL, XU, loP, hiP, gP, loM, hiM, gM, QU, w, s, float(b0), rho,
                                  int(max_epochs), float(tol), int(seed))
    b = r - float(w @ m) if project else b0 + rho * s
    return w, b, (gL, gP, gM, b0), int(epochs)


def _as_float32(X):
    return np.ascontiguousarray(X, dtype=np.float32)


def solve_convex_tsvm(
    XL, yL, cL, betaL, XU, cU, betaUp, betaUm, w0, b0, *, n_epochs, lambda0=None, t0=None, rng, balance=True,
    tol=0.0,
):
    """Algorithm 2: SGD on the convex problem [Cevikalp17] Eq. (8) from (w0, b0).

    Returns ``(w, b, t)``. ``lambda0`` defaults to ``M = |L| + |U|``, the
    inverse strong-convexity modulus of one visit's objective (the Pegasos
    step); the step counter starts at ``t0`` (default ``M``) because the
    solver is warm-started, so the first steps do not wipe the start point.
    Epochs stop at Algorithm 2's rule, when one epoch moves (w, b) by less
    than ``tol`` times its norm, or after ``n_epochs`` (``tol=0``: always
    ``n_epochs``); ``(t - t0) / M`` is the number of epochs run.
    """
    nL, nU = XL.shape[0], XU.shape[0]
    M = nL + nU
    d = XL.shape[1]
    lam0 = float(M if lambda0 is None else lambda0)
    t = float(M if t0 is None else t0)
    project = balance and nU > 0
    if nU > 0:
        m = XU.mean(axis=0, dtype=np.float64)
        r = float(np.mean(yL))
    else:
        m = np.zeros(d)
        r = 0.0
    xm_L = XL @ m
    xm_U = XU @ m if nU else np.zeros(0)
    w = np.array(w0, dtype=np.float64, copy=True)
    b = float(b0)
    if project:
        delta = (w @ m + b - r) / (m @ m + 1.0)
        w -= delta * m
        b -= delta
    for _ in range(n_epochs):
        order = rng.permutation(M).astype(np.int64)
        w_old, b_old = w.copy(), b
        b, t = _sgd_epoch(
            XL, yL, cL, betaL, XU, float(cU), betaUp, betaUm, m, xm_L, xm_U, r, w, b, order, t, lam0, 1.0 / M, project
        )
        if tol > 0:
            moved = np.sqrt(np.sum((w - w_old) ** 2) + (b - b_old) ** 2)
            if moved < tol * max(np.sqrt(w @ w + b * b), 1e-12):
                break
    return w, b, t


def cccp_weights(yL, fL, cL, fU, C_star, s, loss="ramp"):
    """[Cevikalp17] Eq. (7): the CCCP weights at the current outputs ``fL`` (labeled) and ``fU`` (unlabeled).

    Returns ``(betaL, betaUp, betaUm)``: ``betaL_i = c_i`` where y_i f(x_i) < s
    (all zero for ``loss="hinge"``); ``betaUp_j = C*`` where f(x_j) < s (the
    copy labeled +1 is beyond its ramp) and ``betaUm_j = C*`` where
    -f(x_j) < s (the copy labeled -1). They are the slopes of the concave
    parts -c H_s(y f) linearized at the current solution, so the convex
    problem [Cevikalp17] Eq. (8) is an upper bound of [Cevikalp17] Eq. (4) that touches it there.

    Examples
    --------
    >>> import numpy as np
    >>> bl, bp, bm = cccp_weights(np.array([1.0, -1.0]), np.array([-0.5, -0.1]), np.ones(2),
    ...                           np.array([-0.3, 0.1, 0.5]), 0.5, -0.2)
    >>> bl.tolist(), bp.tolist(), bm.tolist()
    ([1.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.5])
    """
    if loss == "ramp":
        betaL = np.where(yL * fL < s, cL, 0.0)
    else:
        betaL = np.zeros(np.shape(fL))
    betaUp = np.where(fU < s, C_star, 0.0)
    betaUm = np.where(-fU < s, C_star, 0.0)
    return betaL, betaUp, betaUm


@numba.njit(cache=True, nogil=True)
def _outputs(X, w, b):
    """f = X w + b in float64 (X float32, no float64 copy of X)."""
    n, d = X.shape
    out = np.empty(n)
    for i in range(n):
        x = X[i]
        acc = 0.0
        for k in range(d):
            acc += w[k] * x[k]
        out[i] = acc + b
    return out


def tsvm_objective(XL, yL, XU, w, b, C, C_star, s, loss="ramp", sample_weight=None, *, outputs=None):
    """The non-convex objective [Cevikalp17] Eq. (4) (without the constraint), for monitoring and tests."""
    fL, fU = (XL @ w + b, None) if outputs is None else outputs
    ramp = lambda z, s_: np.maximum(0, 1 - z) - np.maximum(0, s_ - z)  # noqa: E731
    if loss == "ramp":
        lab = ramp(yL * fL, s)
    else:
        lab = np.maximum(0, 1 - yL * fL)
    lab = (lab if sample_weight is None else sample_weight * lab).sum()
    unl = 0.0
    if XU.shape[0]:
        fU = XU @ w + b if fU is None else fU
        unl = (ramp(fU, s) + ramp(-fU, s)).sum()
    return 0.5 * float(w @ w) + C * float(lab) + C_star * float(unl)


class RampTSVM(LinearDecisionMixin, ClassifierMixin, BaseEstimator):
    """Robust transductive linear SVM (RTSVM), [Cevikalp17] Eq. (4)-(8), Algorithms 1-2.

    Parameters
    ----------
    C : float
        Cost of the labeled samples.
    C_star : float, optional
        Cost of each unlabeled copy; default ``C * min(1, |L| / |U|)`` so the
        unlabeled pool cannot outweigh the labels.
    s : float in (-1, 0]
        Ramp-loss truncation point ([Cevikalp17] Eq. (5)); samples with y f(x) < s stop
        pulling the hyperplane.
    lambda0 : float, optional
        SGD step scale, lambda_t = lambda0 / t (default: |L| + |U|).
    loss : {"ramp", "hinge"}
        ``"hinge"`` drops the truncation on labeled samples (classical TSVM).
    n_epochs : int
        Cap on the SGD (or dual coordinate descent) epochs per CCCP iteration.
    sgd_tol : float
        Algorithm 2's stopping rule: an epoch that moves (w, b) by less than
        ``sgd_tol * ||(w, b)||`` ends the SGD of this CCCP iteration
        (0: always run ``n_epochs``).
    solver : {"sgd", "dcd"}
        The solver of the convex problem [Cevikalp17] Eq. (8) of each CCCP round: ``"sgd"``,
        Algorithm 2 (``lambda0``, ``n_epochs``, ``sgd_tol``); ``"dcd"``, dual
        coordinate descent (:func:`solve_convex_dcd`), exact to ``dcd_tol``
        and warm-started from the previous round's duals (also the start
        point: the supervised SVM is solved by it, so liblinear is not called).
        TSVMHashing uses ``"dcd"``: the same objective in fewer passes
        (measured in ``docs/methods/hashing.md``, node convergence).
    dcd_tol : float
        ``solver="dcd"``: stop when the projected gradient's spread over one
        epoch (in margin units, y f - 1) and the bias step are below it.
    max_iter : int
        Maximum CCCP iterations (Algorithm 1).
    tol : float
        Stop when beta is unchanged and ||w - w_prev|| <= tol * ||w_prev||.
    init_C : float, optional
        C of the supervised linear SVM that initializes the solver (default C).
    balance : bool
        Enforce the balancing constraint ([Cevikalp17] Eq. (6)) by projecting after every
        SGD step. It keeps the unlabeled samples from all landing on one side
        and helps when labels are scarce, but it ties the bias to the mean
        label: with many labels or unbalanced classes it can cost accuracy
        (see the hashing benchmark), so it can be turned off.
    random_state : None, int or Generator

    Attributes
    ----------
    coef_, intercept_ : the hyperplane f(x) = coef_.x + intercept_
    classes_ : ndarray of shape (2,), ``classes_[1]`` is the positive class
    n_iter_ : CCCP iterations run
    n_epochs_ : SGD (or dual coordinate descent) epochs run, summed over the CCCP iterations
    objective_path_ : ndarray of shape (n_iter_ + 1,)
        The objective [Cevikalp17] Eq. (4) at the start (the supervised SVM) and after
        every CCCP iteration; CCCP does not increase it (up to the SGD's
        inexactness).
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.svm import RampTSVM
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(-2, 1, (50, 2)), rng.normal(2, 1, (50, 2))])
    >>> y = np.repeat([0, 1], 50)
    >>> U = np.vstack([rng.normal(-2, 1, (200, 2)), rng.normal(2, 1, (200, 2))])
    >>> clf = RampTSVM(random_state=0).fit(X[::10], y[::10], X_unlabeled=U)
    >>> float((clf.predict(X) == y).mean()) > 0.9
    True
    """

    def __init__(
        self, C: float = 1.0, *, C_star: float | None = None, s: float = -0.2, lambda0: float | None = None, loss: str = "ramp",
        n_epochs: int = SGD_MAX_EPOCHS, max_iter: int = 10, tol: float = 1e-3, init_C: float | None = None, balance: bool = True,
        random_state: int | np.random.Generator | None = None, sgd_tol: float = SGD_TOL, solver: str = "sgd", dcd_tol: float = DCD_TOL,
    ):
        self.C = C
        self.C_star = C_star
        self.s = s
        self.lambda0 = lambda0
        self.loss = loss
        self.n_epochs = n_epochs
        self.max_iter = max_iter
        self.tol = tol
        self.init_C = init_C
        self.balance = balance
        self.random_state = random_state
        self.sgd_tol = sgd_tol
        self.solver = solver
        self.dcd_tol = dcd_tol

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "C_star": [Interval(Real, 0, None, closed="left"), None],
        "s": [Interval(Real, -1, 0, closed="right")],
        "lambda0": [Interval(Real, 0, None, closed="neither"), None],
        "loss": [StrOptions(set(_LOSSES))],
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "init_C": [Interval(Real, 0, None, closed="neither"), None],
        "balance": ["boolean"],
        "random_state": RANDOM_STATE,
        "sgd_tol": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions({"sgd", "dcd"})],
        "dcd_tol": [Interval(Real, 0, None, closed="neither")],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X, y, X_unlabeled=None, sample_weight=None):
        """Fit on labeled ``(X, y)`` and optional unlabeled ``X_unlabeled``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Labeled training rows, at least 2.
        y : array-like of shape (n_samples,)
            Binary labels; ``classes_[1]`` (the larger) is the positive class.
        X_unlabeled : array-like of shape (n_unlabeled, n_features), optional
            Unlabeled rows (the transductive part, weighted by ``C_star``);
            None fits the supervised ramp-loss SVM only.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative per-sample multipliers of ``C`` for the labeled rows.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        validate_params(self)
        XL = validate_X(self, X, reset=True, min_rows=2)
        y, classes = check_binary_target(self, y, XL.shape[0])
        self.classes_ = classes
        yL = np.where(y == classes[1], 1.0, -1.0)
        d = XL.shape[1]
        if X_unlabeled is None:
            XU = np.zeros((0, d), dtype=np.float32)
        else:
            XU = check_matrix(X_unlabeled, "X_unlabeled", min_rows=0, n_features=d, estimator=self)
        nL, nU = XL.shape[0], XU.shape[0]
        rng = check_random_state(self.random_state)
        C = float(self.C)
        C_star = float(C * min(1.0, nL / nU) if (self.C_star is None and nU) else (self.C_star or 0.0))
        sample_weight = _check_sample_weight(sample_weight, nL)
        cL = np.full(nL, C) if sample_weight is None else C * sample_weight

        dcd = self.solver == "dcd"
        if dcd:
            # Algorithm 1, step 1 by the same dual solver (no unlabeled terms): its duals warm-start round 1
            zL, zU = np.zeros(nL), np.zeros(nU)
            C0 = float(self.init_C or C)
            w, b, gammas, n_dcd = solve_convex_dcd(
                XL, yL, np.full(nL, C0) if sample_weight is None else C0 * sample_weight, zL, XU, 0.0, zU, zU,
                balance=self.balance, tol=float(self.dcd_tol), max_epochs=self.n_epochs,
                seed=int(rng.integers(2**31)),
            )
        else:
            # Algorithm 1, step 1: start from the supervised linear SVM
            # (a loose tolerance: SGD refines the start point, and liblinear's last digits cost half its time)
            w, b = fit_linear_svm(
                XL, yL, C=float(self.init_C or C), sample_weight=sample_weight, tol=1e-2, random_state=rng
            )
        betaL = np.zeros(nL)
        betaUp = np.zeros(nU)
        betaUm = np.zeros(nU)
        t = None
        t_start = float(nL + nU)
        fL, fU = _outputs(XL, w, float(b)), _outputs(XU, w, float(b))  # reused by [Cevikalp17] Eq. (7) and the objective
        objective_path = [tsvm_objective(XL, yL, XU, w, b, C, C_star, self.s, self.loss, sample_weight=sample_weight,
                                         outputs=(fL, fU))]
        self.converged_ = False
        it = 0
        for it in range(1, self.max_iter + 1):
            # [Cevikalp17] Eq. (7): linearize the concave parts -H_s at the current solution
            new_betaL, new_betaUp, new_betaUm = cccp_weights(yL, fL, cL, fU, C_star, self.s, self.loss)
            beta_same = (
                it > 1 and np.array_equal(new_betaL, betaL) and np.array_equal(new_betaUp, betaUp)
                and np.array_equal(new_betaUm, betaUm)
            )
            betaL, betaUp, betaUm = new_betaL, new_betaUp, new_betaUm
            w_prev = w
            if dcd:
                # [Cevikalp17] Eq. (8) exactly, through its dual; the previous round's duals are the start point
                w, b, gammas, e = solve_convex_dcd(
                    XL, yL, cL, betaL, XU, C_star, betaUp, betaUm, gammas=gammas, balance=self.balance,
                    tol=float(self.dcd_tol), max_epochs=self.n_epochs, seed=int(rng.integers(2**31)),
                )
                n_dcd += e
            else:
                # [Cevikalp17] Eq. (8) by Algorithm 2; the step counter carries over between CCCP rounds
                w, b, t = solve_convex_tsvm(
                    XL, yL, cL, betaL, XU, C_star, betaUp, betaUm, w, b, n_epochs=self.n_epochs,
                    lambda0=self.lambda0, t0=t, rng=rng, balance=self.balance, tol=float(self.sgd_tol),
                )
            fL, fU = _outputs(XL, w, float(b)), _outputs(XU, w, float(b))
            objective_path.append(
                tsvm_objective(XL, yL, XU, w, b, C, C_star, self.s, self.loss, sample_weight=sample_weight,
                               outputs=(fL, fU))
            )
            change = np.linalg.norm(w - w_prev) / max(np.linalg.norm(w_prev), 1e-12)
            logger.debug("RTSVM CCCP iteration %d: relative change of w %.3g, beta unchanged %s", it, change, beta_same)
            if beta_same and change <= self.tol:
                self.converged_ = True
                break
        self.coef_, self.intercept_ = w, float(b)
        self.n_iter_ = it
        self.objective_path_ = np.array(objective_path)
        if dcd:
            self.n_epochs_ = int(n_dcd)
        else:
            self.n_epochs_ = int(round((t - t_start) / (nL + nU))) if t is not None else 0
        self.C_star_ = C_star
        return self

