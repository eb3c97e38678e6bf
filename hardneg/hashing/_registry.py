"""The hashers by method name: the one list that the package, the CLI, :func:`hardneg.load` and the
tests read.

It imports no hasher (each entry names its module), so the CLI builds its ``--method`` choices and
help from it before FAISS and scikit-learn are imported. A new hasher is its own module plus one
entry here (docs/contributing.md lists the steps).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any

__all__ = ["KIND_PREFIX", "MAX_BITS", "METHODS", "HasherMethod", "hasher_class", "hashers", "load_hasher"]

# Hash codes are meant to be compact: 4,096 bits is already 512 bytes per item, and training memory
# and time grow with dim x bits (100,000 bits took 5.8 GB, then crashed).
MAX_BITS = 4096

#: every hasher's model kind starts with this: :func:`hardneg.load` hands such files to :func:`load_hasher`
KIND_PREFIX = "hash-"


@dataclass(frozen=True)
class HasherMethod:
    """One hasher: where its class is, and what the CLI says and checks about it."""

    module: str  #: the module defining the class (imported on first use)
    cls: str  #: the class name, exported by :mod:`hardneg.hashing`
    summary: str  #: one phrase for the CLI's help
    hamming: bool = True  #: its codes go into a Hamming index (product-quantization codes do not)
    bits_at_most_dim: bool = False  #: at most one bit per input dimension (the PCA-based ones)
    labels: bool = False  #: fit uses labels


METHODS: dict[str, HasherMethod] = {
    "tsvm": HasherMethod("hardneg.hashing._tsvm_hashing", "TSVMHashing",
                         "TSVM hashing on binary hierarchical trees [Cevikalp17]", labels=True),
    "lsh": HasherMethod("hardneg.hashing._lsh", "LSHHasher", "random hyperplanes"),
    "pca-itq": HasherMethod("hardneg.hashing._itq", "PCAITQHasher", "PCA + iterative quantization", bits_at_most_dim=True),
    "pca-rr": HasherMethod("hardneg.hashing._pca_rr", "PCARRHasher", "PCA + a random rotation", bits_at_most_dim=True),
    "sklsh": HasherMethod("hardneg.hashing._sklsh", "SKLSHHasher", "shift-invariant kernel LSH"),
    "pq": HasherMethod("hardneg.hashing._pq", "PQHasher", "product quantization (not Hamming codes)", hamming=False),
}


def hasher_class(name: str) -> Any:
    """The class of the method ``name`` (a key of :data:`METHODS`)."""
    method = METHODS[name]
    return getattr(importlib.import_module(method.module), method.cls)


def hashers() -> dict[str, Any]:
    """Method name -> class, for every hasher (imports them all)."""
    return {name: hasher_class(name) for name in METHODS}


def load_hasher(path: str | os.PathLike) -> Any:
    """Load any hasher model file, whatever its kind.

    Parameters
    ----------
    path : str or path-like
        A model file saved by a hasher's ``save``.

    Returns
    -------
    BaseHasher
        The fitted hasher of the kind the file records.

    Raises
    ------
    ModelFileError
        If the file is not a hasher model (or is damaged).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from hardneg.hashing import LSHHasher, load_hasher
    >>> X = np.random.default_rng(0).normal(size=(50, 8))
    >>> path = os.path.join(tempfile.mkdtemp(), "lsh.npz")
    >>> _ = LSHHasher(n_bits=16, random_state=0).fit(X).save(path)
    >>> type(load_hasher(path)).__name__
    'LSHHasher'
    """
    from hardneg._persist import ModelFileError, model_kind

    kind = model_kind(path)
    for cls in hashers().values():
        if cls._kind == kind:
            return cls.load(path)
    if kind.startswith(KIND_PREFIX):
        raise ModelFileError(f"{path}: holds a {kind!r} model, which this hardneg does not know (a newer version's file, or edited)")
    raise ModelFileError(f"{path}: holds a {kind!r} model, not a hasher")
