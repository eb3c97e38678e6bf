"""SOLIS: sparse online learning of image similarity (Gao, Hoi et al., ACM TIST 2017).

A diagonal bilinear similarity ``S_w(a, b) = aᵀ diag(w) b`` over bag-of-words
vectors, learned in one pass over triplets ``(x, x⁺, x⁻)`` with the hinge
loss and l1 regularization, by four solvers (one file each): truncated
gradient (:class:`SolisTG`), dual averaging (:class:`SolisDA`), adaptive
FOBOS (:class:`SolisAFB`) and adaptive RDA (:class:`SolisADA`, the default).
The truncation is applied lazily, so a triplet costs O(nnz of its three
rows) at any vocabulary size. Baselines in the same API: TF-IDF cosine
(:class:`TfidfCosine`) and OASIS (:class:`OasisDiagonal`, :class:`OasisFull`).

Examples
--------
>>> import numpy as np, scipy.sparse as sp
>>> from hardneg.similarity import SolisADA, concept_triplets
>>> y = np.repeat([0, 1], 30)
>>> dense = np.random.default_rng(0).random((60, 50)) * (np.random.default_rng(1).random((60, 50)) < 0.2)
>>> dense[y == 0, :5] += 1.0; dense[y == 1, 5:10] += 1.0     # each class shares five words
>>> X = sp.csr_matrix(dense)
>>> t = concept_triplets(y, n_positives=4, n_negatives=10, random_state=0)
>>> model = SolisADA(lam=1e-2).fit(X, triplets=t)
>>> bool(model.w_[:10].min() > 0), model.w_.shape, model.sparsity_ > 0.5
(True, (50,), True)
"""

from hardneg.similarity._ada import SolisADA
from hardneg.similarity._afb import SolisAFB
from hardneg.similarity._base import SOLVERS, DiagonalSimilarity, load_similarity, tfidf_transform
from hardneg.similarity._checks import check_triplets, triplet_loss
from hardneg.similarity._da import SolisDA
from hardneg.similarity._oasis import OasisDiagonal, OasisFull, full_matrix_bytes
from hardneg.negatives import concept_protocol, concept_triplets, random_triplets  # triplet samplers live in hardneg.negatives
from hardneg.similarity._select import heldout_map
from hardneg.similarity._tfidf import TfidfCosine
from hardneg.similarity._tg import SolisTG

def _import_solver_files():
    """Import every module of this package: a solver file registers itself in ``SOLVERS``
    (``@register_solver``), so adding a solver needs no edit here."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


_import_solver_files()
globals().update({cls.__name__: cls for cls in SOLVERS.values()})  # a new solver file's class, by name
BASELINES = {"tfidf": TfidfCosine, "oasis": OasisFull, "oasis-diag": OasisDiagonal}

__all__ = [
    "BASELINES",
    "DiagonalSimilarity",
    "OasisDiagonal",
    "OasisFull",
    "SOLVERS",
    "SolisADA",
    "SolisAFB",
    "SolisDA",
    "SolisTG",
    "TfidfCosine",
    "check_triplets",
    "concept_protocol",
    "concept_triplets",
    "full_matrix_bytes",
    "heldout_map",
    "load_similarity",
    "random_triplets",
    "tfidf_transform",
    "triplet_loss",
]
__all__ += sorted(cls.__name__ for cls in SOLVERS.values() if cls.__name__ not in __all__)
