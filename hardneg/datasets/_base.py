"""The ``Dataset`` container, registry records and the errors loaders raise."""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

import numpy as np
from hardneg.exceptions import DatasetNotFoundError, DatasetDownloadError  # defined there, re-exported here

__all__ = ["Dataset", "DatasetInfo", "DatasetNotFoundError", "DatasetDownloadError"]

DATA_EXTRA = "hardneg[data]"


@dataclass(repr=False)
class Dataset:
    """Vectors, labels and (optionally) images of one dataset.

    Parameters
    ----------
    name : str
    X : ndarray of float32, shape (n_samples, n_features)
        One row per image (raw pixel values, flattened; see ``description``
        for the value range).
    y : ndarray of int64, shape (n_samples,)
    images : ndarray or None
        Images, shape (n_samples, height, width), when the dataset has them.
    split : ndarray of str or None
        ``"train"`` or ``"test"`` per sample, when the dataset defines a split.
    class_names : list of str or None
        ``class_names[c]`` names label ``c``.
    description : str
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    images: np.ndarray | None = None
    split: np.ndarray | None = None
    class_names: list[str] | None = None
    description: str = ""

    @property
    def n_samples(self) -> int:
        """Number of samples (rows of ``X``)."""
        return int(self.X.shape[0])

    def subset(self, split: str) -> "Dataset":
        """The rows of one split (``"train"`` or ``"test"``) as a new Dataset.

        Parameters
        ----------
        split : {"train", "test"}
            Which split's rows to keep.

        Returns
        -------
        Dataset
            A new Dataset named ``"<name>[<split>]"`` with that split's rows of
            ``X``, ``y``, ``images`` and ``split``; ``class_names`` and
            ``description`` are shared.

        Raises
        ------
        ValueError
            If the dataset defines no split, or no sample is in ``split``.
        """
        if self.split is None:
            raise ValueError(f"split: dataset {self.name!r} defines no train/test split")
        mask = self.split == split
        if not mask.any():
            raise ValueError(f"split: expected 'train' or 'test', got {split!r}")
        return Dataset(
            name=f"{self.name}[{split}]",
            X=self.X[mask],
            y=self.y[mask],
            images=None if self.images is None else self.images[mask],
            split=self.split[mask],
            class_names=self.class_names,
            description=self.description,
        )

    def __repr__(self) -> str:
        img = None if self.images is None else self.images.shape
        n_classes = int(np.unique(self.y).size)
        return f"Dataset(name={self.name!r}, X={self.X.shape}, n_classes={n_classes}, images={img}, split={'yes' if self.split is not None else 'no'})"


@dataclass(frozen=True)
class DatasetInfo:
    """One row of :func:`hardneg.datasets.list_datasets`.

    Parameters
    ----------
    name : str
        The name :func:`hardneg.datasets.load` takes.
    n_samples, n_features, n_classes : int
        Its size.
    available : bool
        Whether it can be loaded on this machine now.
    where : str or None
        Where it is loaded from (a file, a folder or a function); None when not available.
    how_to_get : str
        What to install or download to make it available.
    """

    name: str
    n_samples: int
    n_features: int
    n_classes: int
    available: bool
    where: str | None
    how_to_get: str


def require(module: str, what: str):
    """Import an optional package or say which pip extra provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{what} needs the optional package {module.split('.')[0]!r}, which is not installed; "
            f"install it with: pip install '{DATA_EXTRA}'"
        ) from exc


def has_module(module: str) -> bool:
    """True if ``module`` can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
