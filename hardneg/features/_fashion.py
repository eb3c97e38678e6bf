"""One-command, cached FeatureStores of all 70,000 Fashion-MNIST images.

Two stores, under ``$HARDNEG_CACHE/stores/`` (default ``~/.cache/hardneg/stores/``):

``fashion-mnist-cnn``
    EfficientNet-Lite0 ImageNet features, 1280-d, average-pooled, not
    normalized. The 28x28 grey images are upscaled (bicubic) to 96x96, the
    smallest multiple of 32 whose last feature map (3x3) keeps some spatial
    extent. The tradeoff, measured on 2 CPU cores
    (``benchmarks/features_fashion_input_size.py``, 500 queries vs 5,000
    images, l2-normalized features, quiet machine): 224 (native) gives mAP
    0.568 at ~65 images/s (~18 min for the 70,000); 96 gives mAP 0.516 at
    ~560 images/s (~2 min; 8.6x faster); 64 gives 0.482. On a heavily shared
    machine everything is several times slower: the cached store took 36
    min at 33 images/s. For the native size run ``hardneg extract dataset
    fashion-mnist --input-size 224 --out PATH``.
``fashion-mnist-dsift1024``
    Dense-SIFT bag of visual words: l1-normalized 1,024-bin histograms. The
    images are upscaled to 64x64; SIFT runs on a grid with a 4-pixel step at
    spatial-bin sizes 4 and 6 pixels (16 and 24 pixel patches; ~290 descriptors per image), flat
    (all-zero) patches of the black background are dropped, and the
    codebook is FAISS k-means (20 iterations) on 200,000 descriptors sampled
    from 2,000 training images.
``fashion-mnist-vlad64``
    VLAD-64 over the same dense SIFT (64 FAISS k-means words, 8,192-d,
    power-, intra- and l2-normalized; :class:`~hardneg.features.VLAD`),
    the base feature of Zepeda & Pérez's headline E-SVM numbers.

All keep the dataset's labels and the standard split (``"train"`` for the
first 60,000, ``"test"`` for the last 10,000) and ids ``train-00000`` ...
``test-09999``. Builds are resumable: an interrupted build continues where
it stopped when called again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hardneg._typing import ArrayLike

logger = logging.getLogger(__name__)

__all__ = [
    "FASHION_STORES", "build_fashion_mnist_store", "fashion_mnist_ids", "fashion_mnist_store_path",
    "load_fashion_mnist_features", "stores_dir",
]

FASHION_STORES = {"cnn": "fashion-mnist-cnn", "dsift": "fashion-mnist-dsift1024", "vlad": "fashion-mnist-vlad64"}
CNN_INPUT_SIZE = 96
DSIFT_IMAGE_SIZE = 64


def stores_dir() -> Path:
    """Where cached stores live: ``$HARDNEG_CACHE/stores`` or ``~/.cache/hardneg/stores``.

    Returns
    -------
    Path
        The folder (not created).
    """
    base = os.environ.get("HARDNEG_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "hardneg") / "stores"


def fashion_mnist_store_path(features: str = "cnn") -> Path:
    """The cache path of the Fashion-MNIST store for ``features`` (``"cnn"``, ``"dsift"`` or ``"vlad"``).

    Parameters
    ----------
    features : {"cnn", "dsift", "vlad"}
        Which features.

    Returns
    -------
    Path
        The store folder under :func:`stores_dir`.

    Raises
    ------
    ValueError
        For unknown ``features``.
    """
    if features not in FASHION_STORES:
        raise ValueError(f"features: expected one of {sorted(FASHION_STORES)}, got {features!r}")
    return stores_dir() / FASHION_STORES[features]


def _positions_in_split(split: np.ndarray) -> np.ndarray:
    pos = np.empty(len(split), np.int64)
    for name in np.unique(split):
        mask = split == name
        pos[mask] = np.arange(mask.sum())
    return pos


def fashion_mnist_ids(split: ArrayLike) -> list[str]:
    """Store ids of Fashion-MNIST images: ``"<split>-<position within the split>"``, e.g. ``train-00042``.

    Parameters
    ----------
    split : array-like of str, shape (n_images,)
        Each image's split (``"train"`` or ``"test"``).

    Returns
    -------
    list of str
        One id per image.
    """
    split = np.asarray(split)
    return [f"{s}-{k:05d}" for s, k in zip(split, _positions_in_split(split))]


def load_fashion_mnist_features(features: str = "cnn", *, path: str | os.PathLike | None = None,
                                data_path: str | os.PathLike | None = None) -> np.ndarray:
    """A cached Fashion-MNIST store's vectors as a dense float32 array, row ``i`` for image ``i``
    of :func:`hardneg.datasets.load_fashion_mnist` (the store's own row order may differ).

    Parameters
    ----------
    features : {"cnn", "dsift", "vlad"}
        Which store.
    path : str or path-like, optional
        The store folder; default :func:`fashion_mnist_store_path`.
    data_path : str or path-like, optional
        Folder with the four IDX files (default: where :func:`hardneg.datasets.load_fashion_mnist` finds them).

    Returns
    -------
    ndarray of float32, shape (70000, n_features)

    Raises
    ------
    ValueError
        If the store lacks some images (an unfinished build).
    """
    from ..store import FeatureStore

    ds = _load_fashion(data_path)
    store = FeatureStore.open(fashion_mnist_store_path(features) if path is None else path)
    pos = {i: r for r, i in enumerate(store.ids().tolist())}
    ids = fashion_mnist_ids(ds.split)
    missing = [i for i in ids if i not in pos]
    if missing:
        raise ValueError(f"{store.path}: {len(missing)} images are not in the store (first {missing[0]!r}); finish the build")
    X = store.take(np.array([pos[i] for i in ids]))
    return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float32)


def _load_fashion(path=None):
    try:
        from ..datasets import load_fashion_mnist
    except ImportError:  # the datasets package re-exports it; fall back to its module
        from ..datasets._mnist import load_fashion_mnist
    return load_fashion_mnist(path)


def fashion_extractor(features: str, *, num_threads: int | None = None, batch_size: int | None = None) -> Any:
    """The extractor (settings above) for one of the Fashion-MNIST stores.

    Parameters
    ----------
    features : {"cnn", "dsift", "vlad"}
        Which features.
    num_threads : int, optional
        Torch threads for the CNN.
    batch_size : int, optional
        Images per CNN batch.

    Returns
    -------
    EfficientNetLite0, BagOfWords or VLAD
        Unfitted for dsift / vlad (their codebook is learned during extraction).

    Raises
    ------
    ValueError
        For unknown ``features``.
    """
    if features == "cnn":
        from ._cnn import EfficientNetLite0

        return EfficientNetLite0(input_size=CNN_INPUT_SIZE, resize="stretch", batch_size=batch_size, num_threads=num_threads)
    if features in ("dsift", "vlad"):
        from ._codebook import BagOfWords
        from ._dsift import DenseSift
        from ._vlad import VLAD

        sift = DenseSift(step=4, bin_sizes=(4, 6), resize_to=DSIFT_IMAGE_SIZE, drop_flat=True)
        if features == "vlad":
            return VLAD(sift, n_words=64, max_descriptors=200_000, random_state=0)
        return BagOfWords(sift, n_words=1024, normalize="l1", sparse=False, max_descriptors=200_000, random_state=0)
    raise ValueError(f"features: expected one of {sorted(FASHION_STORES)}, got {features!r}")


def build_fashion_mnist_store(
    features: str = "cnn",
    *,
    path: str | os.PathLike | None = None,
    data_path: str | os.PathLike | None = None,
    limit: int | None = None,
    num_threads: int | None = None,
    batch_size: int = 256,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Any:
    """Build (or finish building) the cached Fashion-MNIST store; return the summary.

    Parameters
    ----------
    features : {"cnn", "dsift", "vlad"}
    path : str or Path, optional
        Store folder; default :func:`fashion_mnist_store_path`.
    data_path : optional
        Folder with the four IDX files (default: where
        :func:`hardneg.datasets.load_fashion_mnist` finds them).
    limit : int, optional
        Extract only the first ``limit`` images of each split (for trials).
    num_threads : int, optional
        Torch threads for the CNN.
    batch_size : int
        Images per extraction batch.
    overwrite : bool
        Rebuild from scratch.
    progress : callable, optional
        Called with a number of images as they are done (those already in the store first).

    Returns
    -------
    ExtractionSummary
        What was added, skipped (already there) and failed.

    Examples
    --------
    ``hardneg extract fashion-mnist --features cnn`` does the same from the shell.

    >>> from hardneg.features import build_fashion_mnist_store, fashion_mnist_store_path
    >>> summary = build_fashion_mnist_store("cnn")          # doctest: +SKIP
    >>> FeatureStore.open(fashion_mnist_store_path("cnn"))  # doctest: +SKIP
    FeatureStore('.../fashion-mnist-cnn', rows=70000, dim=1280, dense, mode='r')
    """
    from ._extract import extract_to_store

    extractor = fashion_extractor(features, num_threads=num_threads)
    ds = _load_fashion(data_path)
    split = np.asarray(ds.split)
    keep = np.ones(len(split), bool) if limit is None else _positions_in_split(split) < int(limit)
    ids = fashion_mnist_ids(split[keep])
    images = ds.images[keep]
    target = fashion_mnist_store_path(features) if path is None else Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if features in ("dsift", "vlad"):
        # Learn the codebook from training images only, so test images stay unseen.
        train_rows = np.flatnonzero(split[keep] == "train")
        extractor.sift.check_params()
        if not target.exists() or overwrite:
            rng = np.random.default_rng(0)
            sample = images[np.sort(rng.choice(train_rows, size=min(2000, train_rows.size), replace=False))]
            extractor.fit_images(list(sample), random_state=0)
    return extract_to_store(
        images,
        target,
        extractor,
        ids=ids,
        labels=ds.y[keep],
        split=list(split[keep]),
        batch_size=batch_size,
        overwrite=overwrite,
        attrs={"dataset": "fashion-mnist", "class_names": list(ds.class_names or [])},
        progress=progress,
    )
