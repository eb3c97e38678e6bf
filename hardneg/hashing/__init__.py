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

import importlib
from typing import Any

from .._lazy_exports import attach
from ._registry import METHODS, hashers

# resolved on first use: the CLI reads the one list of hashers (``_registry.METHODS``) without importing
# FAISS and scikit-learn; each hasher class is found through that list when it is first asked for
_helpers = {
    "BaseHasher": "._base", "load_hasher": "._registry",
    **dict.fromkeys(("build_hierarchy", "class_similarity", "convex_hull_distances", "normalized_cut"), "._hierarchy"),
}
_attr, _dir = attach(__name__, _helpers)


def __getattr__(name: str) -> Any:
    if name == "HASHERS":  # method name -> class (imports every hasher)
        globals()["HASHERS"] = found = hashers()
        return found
    method = next((m for m in METHODS.values() if m.cls == name), None)
    if method is None:
        return _attr(name)
    globals()[name] = value = getattr(importlib.import_module(method.module), name)
    return value


def __dir__() -> list[str]:
    return sorted({*_dir(), "HASHERS", *(m.cls for m in METHODS.values())})


__all__ = sorted(["HASHERS", *_helpers, *(m.cls for m in METHODS.values())])
