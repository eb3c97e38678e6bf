"""One entry point for every exemplar-SVM solver: :func:`fit_exemplar_svms`.

It sits above the solvers (it imports :mod:`._exemplar_batch`,
:mod:`._exemplar_sgd` and :mod:`._exemplar`; none of them imports it), so
the solvers and the checks they share in :mod:`._exemplar` form no import
circle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._typing import ArrayLike
from ._exemplar import fit_exemplar_svms_liblinear
from ._exemplar_batch import fit_exemplar_svms_batch
from ._exemplar_sgd import fit_exemplar_svms_sgd

__all__ = ["EXEMPLAR_SOLVERS", "fit_exemplar_svms"]

#: Solver name -> function ``(X, Z, **kwargs) -> W``; every one solves [Zepeda15] Eq. (1).
EXEMPLAR_SOLVERS: dict[str, Callable[..., np.ndarray]] = {"batch": fit_exemplar_svms_batch, "sgd": fit_exemplar_svms_sgd, "liblinear": fit_exemplar_svms_liblinear}


def fit_exemplar_svms(X: ArrayLike, Z: ArrayLike, *, solver: str = "batch", **kwargs: Any) -> np.ndarray:
    """Solve [Zepeda15] Eq. (1) for every row of ``X`` against the negatives ``Z``; return ``w~`` rows.

    Parameters
    ----------
    X : array of shape (n, d)
        Exemplars (the single positive of each SVM).
    Z : array of shape (N, d)
        Negatives shared by every exemplar.
    solver : {"batch", "sgd", "liblinear"}
        ``"batch"``: the exact hard-negative active-set solver
        (:func:`hardneg.svm.fit_exemplar_svms_batch`); ``"sgd"``: Pegasos
        (:func:`hardneg.svm.fit_exemplar_svms_sgd`); ``"liblinear"``: one
        ``LinearSVC`` per exemplar (:func:`fit_exemplar_svms_liblinear`).
    **kwargs
        ``lam``, ``alpha_pos``, ``alpha_neg``, ``exclude``, ``drop_duplicates``,
        ``progress`` and the solver's own options.

    Returns
    -------
    W : ndarray of shape (n, d)

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.svm import exemplar_objective, fit_exemplar_svms
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(300, 8)); X = rng.normal(size=(3, 8))
    >>> a = fit_exemplar_svms(X, Z, solver="batch", lam=0.1, alpha_pos=1.0, alpha_neg=0.01, tol=1e-7)
    >>> b = fit_exemplar_svms(X, Z, solver="liblinear", lam=0.1, alpha_pos=1.0, alpha_neg=0.01)
    >>> fa = exemplar_objective(a, X, Z, lam=0.1, alpha_pos=1.0, alpha_neg=0.01)
    >>> fb = exemplar_objective(b, X, Z, lam=0.1, alpha_pos=1.0, alpha_neg=0.01)
    >>> bool(np.all(fa <= fb * (1 + 1e-4)))
    True
    """
    if solver not in EXEMPLAR_SOLVERS:
        raise ValueError(f"solver: expected one of {sorted(EXEMPLAR_SOLVERS)}, got {solver!r}")
    return EXEMPLAR_SOLVERS[solver](X, Z, **kwargs)


