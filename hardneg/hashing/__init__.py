"""Compact binary codes for query-by-example: TSVM hashing on binary
hierarchical trees (Cevikalp et al., CVIU 2017) and the baselines it is
compared against (LSH, PCA-ITQ, PCA-RR, SKLSH, product quantization).

All hashers share one API: ``fit(X, y=None, X_unlabeled=None)``,
``transform(X)`` -> packed uint8 codes (``np.packbits`` order), ``save(path)``
and ``Class.load(path)`` (or :func:`load_hasher` for any kind). ``HASHERS``
maps each method name (the CLI's ``--method``) to its class.

Examples
--------
>>> from sklearn.datasets import load_digits
>>> from hardneg.hashing import TSVMHashing
>>> from hardneg.eval import hamming_rank
>>> X, y = load_digits(return_X_y=True)
>>> h = TSVMHashing(n_bits=9, random_state=0).fit(X[:500], y[:500], X_unlabeled=X[500:1000])
>>> codes = h.transform(X)
>>> idx, dist = hamming_rank(codes[:1], codes, k=5)
>>> idx.shape
(1, 5)
"""

from typing import Any

from .._lazy_exports import attach
from ._registry import METHODS, hashers

# resolved on first use, from the one list of hashers (``_registry.METHODS``): the CLI reads that list
# without importing FAISS and scikit-learn
_exports = {
    **{m.cls: m.module.removeprefix(__name__) for m in METHODS.values()},
    "BaseHasher": "._base", "load_hasher": "._registry",
    **dict.fromkeys(("build_hierarchy", "class_similarity", "convex_hull_distances", "normalized_cut"), "._hierarchy"),
}
_attr, __dir__ = attach(__name__, _exports)


def __getattr__(name: str) -> Any:
    if name == "HASHERS":  # method name -> class (imports every hasher)
        globals()["HASHERS"] = found = hashers()
        return found
    return _attr(name)


__all__ = sorted(["HASHERS", *_exports])
