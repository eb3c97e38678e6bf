"""Shared SVM solvers: HIK kernel SVM and its compressed lookup tables.

Examples
--------
>>> import numpy as np
>>> from hardneg.svm import HIKSVC, compress_hik
>>> rng = np.random.default_rng(0)
>>> X = rng.random((40, 6)); y = (X[:, 0] > 0.5).astype(int)
>>> clf = HIKSVC().fit(X, y)
>>> table = compress_hik(clf.support_vectors_, clf.dual_coef_, clf.intercept_, n_bins=None)
>>> bool(np.allclose(table.decision_function(X), clf.decision_function(X), atol=1e-4))
True
"""

from hardneg.svm._exemplar import exemplar_objective, fit_exemplar_svms_liblinear
from hardneg.svm._exemplar_batch import fit_exemplar_svms_batch
from hardneg.svm._exemplar_sgd import fit_exemplar_svms_sgd
from hardneg.svm._exemplar_solvers import fit_exemplar_svms
from hardneg.svm._hik import HIKSVC, fit_hik_svm_gram, hik_gram
from hardneg.svm._hik_tables import HIKBinTable, HIKExactTable, compress_hik, merge_hik_ensemble
from hardneg.svm._linear import LinearSVM, fit_linear_svm
from hardneg.svm._ramp_tsvm import RampTSVM

__all__ = [
    "HIKBinTable",
    "HIKExactTable",
    "HIKSVC",
    "LinearSVM",
    "RampTSVM",
    "compress_hik",
    "exemplar_objective",
    "fit_exemplar_svms",
    "fit_exemplar_svms_batch",
    "fit_exemplar_svms_liblinear",
    "fit_exemplar_svms_sgd",
    "fit_hik_svm_gram",
    "fit_linear_svm",
    "hik_gram",
    "merge_hik_ensemble",
]
