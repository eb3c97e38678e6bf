"""Feature encoders: exemplar-SVM encoding, E-SVM and recursive RE-SVM (Zepeda & Pérez, CVPR 2015).

The baselines E-SVM is measured against: :class:`CentringEncoder` (mean-centring, then l2) and
:class:`WhiteningEncoder` (centring, PCA-whitening, then l2).

Examples
--------
>>> import numpy as np
>>> from hardneg.encoding import ESVMEncoder, symmetric_scores
>>> rng = np.random.default_rng(0)
>>> enc = ESVMEncoder(lam=0.01, alpha_neg=0.01, min_negatives=100, random_state=0).fit(rng.normal(size=(200, 16)))
>>> X = rng.normal(size=(3, 16))
>>> codes = enc.transform(X)
>>> int(symmetric_scores(codes, codes).argmax(axis=1).tolist() == [0, 1, 2])
1
"""

from hardneg.encoding._centring import CentringEncoder, WhiteningEncoder
from hardneg.encoding._esvm import ESVMEncoder, load_esvm_encoder
from hardneg.encoding._retrieval import asymmetric_scores, symmetric_scores
from hardneg.encoding._store import encode_store

__all__ = ["CentringEncoder", "ESVMEncoder", "WhiteningEncoder", "asymmetric_scores", "encode_store", "load_esvm_encoder", "symmetric_scores"]
