"""One loader for every model and index file hardneg writes: :func:`load`.

Every ``save(path)`` in the library writes a portable ``.npz`` model file
(:mod:`hardneg._persist`: arrays plus JSON metadata naming the model *kind*,
never pickle), except the Hamming index, which is a FAISS binary index file
with a ``<path>.ids.npz`` model file beside it. :func:`load` reads the kind
from the metadata alone and hands the file to that kind's own loader, which
checks everything else (schema, checksums, values). Only the module of the
kind found is imported.

:data:`LOADERS` is the one table of kinds, except the hashers': every kind
that starts with ``"hash-"`` goes to :func:`hardneg.hashing.load_hasher`,
which finds the class in the hashers' own list (``hardneg.hashing._registry``),
so a new hasher needs no entry here. ``tests/core/test_load.py`` checks that
the tables agree with the kind each class writes and that every kind has a
save/load round trip.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from hardneg.exceptions import ModelFileError

__all__ = ["FAMILY_LOADERS", "LOADERS", "load"]

HAMMING_KIND = "hamming-index"
_SIDECAR = ".ids.npz"

#: model kind (as written in the file) -> (module, attribute): a class with a
#: ``load`` classmethod, or a function ``f(path)``.
LOADERS: dict[str, tuple[str, str]] = {
    # concept classifiers (NegativeBootstrap.save writes its compressed model)
    "hardneg.concept.CompressedConcept": ("hardneg.concept._compressed", "CompressedConcept"),
    # similarity models: one kind, the class (SOLIS solvers, OASIS, TF-IDF) is in the metadata
    "hardneg.Similarity": ("hardneg.similarity", "load_similarity"),
    # encoders (E-SVM, RE-SVM and the LDA solver)
    "esvm_encoder": ("hardneg.encoding._esvm", "ESVMEncoder"),
    # zero-shot classifiers
    "hardneg.zeroshot.ZeroShotClassifier": ("hardneg.zeroshot._classifier", "ZeroShotClassifier"),
    "hardneg.zeroshot.ConSE": ("hardneg.zeroshot._conse", "ConSE"),
    # indexes
    "hardneg.InvertedIndex": ("hardneg.index._inverted", "InvertedIndex"),
    HAMMING_KIND: ("hardneg.index._hamming", "HammingIndex"),
    # feature extraction: codebooks (flat or vocabulary tree) of BagOfWords / VLAD extractors
    "hardneg.Codebook": ("hardneg.features._codebook", "Codebook"),
}


#: a prefix of model kinds -> the loader of that family (which reads its own list of classes)
FAMILY_LOADERS: dict[str, tuple[str, str]] = {
    "hash-": ("hardneg.hashing._registry", "load_hasher"),
}


def _family(kind: str) -> tuple[str, str] | None:
    return next((loader for prefix, loader in FAMILY_LOADERS.items() if kind.startswith(prefix)), None)


def _loader(kind: str):
    found = LOADERS.get(kind) or _family(kind)
    if found is None:
        raise KeyError(kind)
    module, name = found
    obj = getattr(importlib.import_module(module), name)
    return getattr(obj, "load", obj)


def load(path: str | Path) -> Any:
    """Load any model or index file written by a hardneg ``save(path)``.

    Parameters
    ----------
    path : str or Path
        A model file (``.npz``), or a Hamming index file (its
        ``<path>.ids.npz`` sidecar must lie beside it; the sidecar's own path
        loads the same index).

    Returns
    -------
    object
        The model, of the class that saved it (a ``NegativeBootstrap`` saves,
        and so loads as, its :class:`~hardneg.concept.CompressedConcept`).

    Raises
    ------
    ModelFileError
        In one line, for a file that is missing, is not a hardneg model file
        (a foreign ``.npz``, a pickle, random bytes), holds a kind this
        version does not know, or is damaged.

    Examples
    --------
    >>> import numpy as np, tempfile, os, hardneg
    >>> from hardneg.hashing import LSHHasher
    >>> X = np.random.default_rng(0).normal(size=(50, 8))
    >>> path = os.path.join(tempfile.mkdtemp(), "lsh.npz")
    >>> _ = LSHHasher(n_bits=16, random_state=0).fit(X).save(path)
    >>> type(hardneg.load(path)).__name__
    'LSHHasher'
    """
    from hardneg._persist import model_kind

    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"model file {str(path)!r} does not exist")
    sidecar = path.with_name(path.name + _SIDECAR)
    try:
        kind = model_kind(path)
    except ModelFileError:
        if sidecar.is_file():  # a FAISS index file: the sidecar says what it is
            return _loader(HAMMING_KIND)(path)
        raise
    if kind == HAMMING_KIND:
        if not path.name.endswith(_SIDECAR) or len(path.name) == len(_SIDECAR):
            raise ModelFileError(f"{path}: holds a Hamming index's ids; load the index file it is named after (<index>{_SIDECAR})")
        path = path.with_name(path.name[: -len(_SIDECAR)])
    elif kind not in LOADERS and _family(kind) is None:
        raise ModelFileError(
            f"{path}: holds a {kind!r} model, which this hardneg does not know (a newer version's file, or edited)"
        )
    return _loader(kind)(path)
