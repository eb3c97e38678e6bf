"""Attribute tables: the one place where class and per-image attribute vectors enter.

A class-attribute table is given as a dict ``{class: vector}``, as a 2-D array
whose row ``c`` is the vector of integer class ``c``, or as a pair
``(labels, matrix)``. Per-image attribute vectors (one row per training image)
are given separately, as ``sample_attributes``. Every entry point converts
through :func:`as_attribute_table`, so every error names the argument.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_attribute_table", "check_sample_attributes", "class_means", "check_disjoint"]


def _check_vectors(M, name: str, n_attributes: int | None) -> np.ndarray:
    try:
        M = np.asarray(M, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: attribute vectors must be numeric ({exc})") from None
    if M.ndim != 2 or M.shape[0] == 0 or M.shape[1] == 0:
        raise ValueError(f"{name}: expected a non-empty 2-D table of attribute vectors, got shape {M.shape}")
    if n_attributes is not None and M.shape[1] != n_attributes:
        raise ValueError(f"{name}: attribute vectors have length {M.shape[1]}, the model expects {n_attributes}")
    if not np.isfinite(M).all():
        bad = np.flatnonzero(~np.isfinite(M).all(axis=1))
        raise ValueError(f"{name}: attribute vector(s) of row(s) {bad[:5].tolist()} hold NaN or infinity")
    return M.astype(np.float32)


def as_attribute_table(class_attributes: Any, name: str = "class_attributes", n_attributes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(labels, vectors)``: class labels (1-D) and float32 vectors (n_classes, n_attributes).

    Parameters
    ----------
    class_attributes : dict, 2-D array-like or (labels, matrix)
        ``{class: vector}``; a matrix whose row ``c`` is class ``c``; or a pair.
    name : str
        Argument name for error messages.
    n_attributes : int, optional
        Required vector length (a fitted model's).

    Returns
    -------
    labels : ndarray of shape (n_classes,)
    vectors : ndarray of float32, shape (n_classes, n_attributes)

    Raises
    ------
    TypeError
        No table (None) or a string.
    ValueError
        An empty table, vectors of different lengths, labels that repeat or do not match the rows.

    Examples
    --------
    >>> labels, vectors = as_attribute_table({"cat": [1, 0], "dog": [0, 1]})
    >>> labels.tolist(), vectors.shape
    (['cat', 'dog'], (2, 2))
    """
    if class_attributes is None:
        raise TypeError(f"{name}: attribute vectors are required, got None")
    if isinstance(class_attributes, dict):
        if not class_attributes:
            raise ValueError(f"{name}: is empty")
        names = list(class_attributes)
        lengths = {np.size(v) for v in class_attributes.values()}
        if len(lengths) != 1:
            raise ValueError(f"{name}: attribute vectors have different lengths {sorted(lengths)}")
        vectors = [np.ravel(np.asarray(v, dtype=np.float64)) for v in class_attributes.values()]
        return np.asarray(names), _check_vectors(np.stack(vectors), name, n_attributes)
    if isinstance(class_attributes, tuple) and len(class_attributes) == 2:
        labels = np.asarray(class_attributes[0])
        M = _check_vectors(class_attributes[1], name, n_attributes)
        if labels.ndim != 1 or labels.shape[0] != M.shape[0]:
            raise ValueError(f"{name}: {labels.shape} labels for {M.shape[0]} attribute vectors")
        if np.unique(labels).size != labels.size:
            raise ValueError(f"{name}: class labels repeat")
        return labels, M
    if isinstance(class_attributes, (str, bytes)):
        raise TypeError(f"{name}: expected a dict, a 2-D array or (labels, matrix), got a string")
    M = _check_vectors(class_attributes, name, n_attributes)
    return np.arange(M.shape[0]), M


def check_sample_attributes(A, n_samples: int, n_attributes: int | None = None, name: str = "sample_attributes"):
    """Per-image attribute vectors: float32 (n_samples, n_attributes), finite."""
    A = _check_vectors(A, name, n_attributes)
    if A.shape[0] != n_samples:
        raise ValueError(f"{name}: has {A.shape[0]} rows for {n_samples} samples")
    return A


def class_means(y, A):
    """``(labels, mean attribute vector per class)``: class prototypes from per-image vectors."""
    labels, inverse = np.unique(y, return_inverse=True)
    sums = np.zeros((labels.size, A.shape[1]), dtype=np.float64)
    np.add.at(sums, inverse, A)
    return labels, (sums / np.bincount(inverse)[:, None]).astype(np.float32)


def check_disjoint(seen, unseen, name: str = "unseen classes") -> None:
    """Zero-shot needs unseen classes that are not seen ones."""
    overlap = np.intersect1d(np.asarray(seen), np.asarray(unseen))
    if overlap.size:
        raise ValueError(f"{name} overlap the seen (training) classes: {overlap[:10].tolist()}")


def lookup(labels, vectors, y, name: str = "y"):
    """Index into ``labels`` for each label of ``y``; error for a class with no attribute vector."""
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    try:
        pos = np.searchsorted(sorted_labels, y)
    except TypeError:
        raise TypeError(f"{name}: labels of type {np.asarray(y).dtype} do not match the attribute table's {labels.dtype}") from None
    pos = np.clip(pos, 0, labels.size - 1)
    found = sorted_labels[pos] == y
    if not np.all(found):
        missing = np.unique(np.asarray(y)[~found])
        raise ValueError(f"{name}: class(es) {missing[:10].tolist()} have no attribute vector in class_attributes")
    return order[pos]
