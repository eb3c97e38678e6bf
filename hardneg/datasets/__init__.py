"""Datasets for tests, demos and benchmarks, loaded into one ``Dataset`` shape.

``list_datasets()`` says what is known and available here; ``load(name)``
loads one. IDX files (MNIST, Fashion-MNIST) are read with a real IDX parser
(:func:`read_idx`) from a folder, ``$HARDNEG_DATA/<name>/``, the cache
``~/.cache/hardneg/<name>/`` or the Debian package location; ``download=True``
fetches them with an MD5 check.

Examples
--------
>>> from hardneg.datasets import load
>>> ds = load("digits")
>>> ds.y.dtype, sorted(set(ds.split.tolist()))
(dtype('int64'), ['test', 'train'])
"""

from hardneg.datasets._base import Dataset, DatasetDownloadError, DatasetInfo, DatasetNotFoundError
from hardneg.datasets._idx import read_idx, write_idx
from hardneg.datasets._mnist import load_fashion_mnist, load_mnist
from hardneg.datasets._registry import DATASET_NAMES, fetch, list_datasets, load
from hardneg.datasets._small import load_digits, load_faces, load_mnist_5k, stratified_split
from hardneg.datasets._xlsa17 import XLSA17, load_xlsa17

__all__ = [
    "DATASET_NAMES",
    "Dataset",
    "DatasetDownloadError",
    "DatasetInfo",
    "DatasetNotFoundError",
    "XLSA17",
    "fetch",
    "list_datasets",
    "load",
    "load_digits",
    "load_faces",
    "load_fashion_mnist",
    "load_mnist",
    "load_mnist_5k",
    "load_xlsa17",
    "read_idx",
    "stratified_split",
    "write_idx",
]
