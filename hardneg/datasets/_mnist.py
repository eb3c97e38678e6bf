"""MNIST and Fashion-MNIST from the original IDX gz files.

Where the files are looked for, in order:

1. ``path`` if given (only there);
2. ``$HARDNEG_DATA/<name>/``;
3. the download cache ``$XDG_CACHE_HOME/hardneg/<name>/`` (default
   ``~/.cache/hardneg/<name>/``);
4. for Fashion-MNIST, ``/usr/share/datasets/fashion-mnist`` (Debian package
   ``dataset-fashion-mnist``).

A folder counts when it holds all four files, each gzip-compressed
(``*.gz``) or plain.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypedDict

import numpy as np

from hardneg.datasets._base import Dataset, DatasetNotFoundError
from hardneg.datasets._download import download_files
from hardneg.datasets._idx import read_idx

__all__ = ["load_mnist", "load_fashion_mnist", "fetch_idx_dataset", "find_idx_dataset", "IDX_DATASETS"]

FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


class _IdxSpec(TypedDict):
    url: str
    md5: dict[str, str]
    system_dirs: tuple[str, ...]
    class_names: list[str]
    description: str
    apt: str | None


IDX_DATASETS: dict[str, _IdxSpec] = {
    "mnist": {
        "url": "https://ossci-datasets.s3.amazonaws.com/mnist/",
        # MD5 of the .gz files, as listed by torchvision.datasets.MNIST
        "md5": {
            "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
            "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
            "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
            "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
        },
        "system_dirs": (),
        "class_names": [str(i) for i in range(10)],
        "description": "MNIST handwritten digits (LeCun et al.), 60,000 train + 10,000 test, 28x28 grey, X = raw pixels 0-255.",
        "apt": None,
    },
    "fashion-mnist": {
        "url": "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        # MD5 of the .gz files, as listed by torchvision.datasets.FashionMNIST
        "md5": {
            "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
            "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
            "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
            "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
        },
        "system_dirs": ("/usr/share/datasets/fashion-mnist",),
        "class_names": ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"],
        "description": "Fashion-MNIST (Xiao et al. 2017), Zalando article images, 60,000 train + 10,000 test, 28x28 grey, X = raw pixels 0-255.",
        "apt": "dataset-fashion-mnist",
    },
}


def cache_dir(name: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hardneg" / name


def _candidates(name: str, path=None) -> list[Path]:
    if path is not None:
        return [Path(path)]
    dirs = []
    if os.environ.get("HARDNEG_DATA"):
        dirs.append(Path(os.environ["HARDNEG_DATA"]) / name)
    dirs.append(cache_dir(name))
    dirs.extend(Path(d) for d in IDX_DATASETS[name]["system_dirs"])
    return dirs


def _file_in(folder: Path, stem: str) -> Path | None:
    for candidate in (folder / f"{stem}.gz", folder / stem):
        if candidate.is_file():
            return candidate
    return None


def find_idx_dataset(name: str, path=None) -> Path | None:
    """The first folder holding all four IDX files of ``name``, or None."""
    for folder in _candidates(name, path):
        if all(_file_in(folder, stem) is not None for stem in FILES):
            return folder
    return None


def how_to_get(name: str) -> str:
    spec = IDX_DATASETS[name]
    ways = []
    if spec["apt"]:
        ways.append(f"`apt-get install {spec['apt']}`")
    ways.append(f"put the 4 files ({', '.join(f + '.gz' for f in FILES)}) in $HARDNEG_DATA/{name}/ or pass path=")
    ways.append(f"download them with load(..., download=True) or `hardneg datasets fetch {name}` (from {spec['url']})")
    return "; or ".join(ways)


def _not_found(name: str, path=None) -> DatasetNotFoundError:
    looked = ", ".join(str(d) for d in _candidates(name, path))
    if path is None and not os.environ.get("HARDNEG_DATA"):
        looked += " ($HARDNEG_DATA is not set)"
    return DatasetNotFoundError(f"dataset {name!r} not found: looked for its IDX files in {looked}. To get it: {how_to_get(name)}.")


def fetch_idx_dataset(name: str, dest=None, *, timeout: float = 60.0) -> Path:
    """Download the four gz files of ``name`` (MD5-checked) into ``dest``.

    ``dest`` defaults to the cache folder ``~/.cache/hardneg/<name>/``.
    Returns the folder.
    """
    spec = IDX_DATASETS[name]
    dest = cache_dir(name) if dest is None else Path(dest)
    return download_files(spec["url"], spec["md5"], dest, timeout=timeout)


def _load_idx_dataset(name: str, path=None, download: bool = False) -> Dataset:
    folder = find_idx_dataset(name, path)
    if folder is None:
        if not download:
            raise _not_found(name, path)
        folder = fetch_idx_dataset(name, path)
    parts = {}
    for stem in FILES:
        file = _file_in(folder, stem)
        if file is None:  # a download that left a file out
            raise _not_found(name, path)
        parts[stem] = read_idx(file, expected_ndim=3 if "images" in stem else 1)
    images, labels, splits = [], [], []
    for prefix, split in (("train", "train"), ("t10k", "test")):
        im, lb = parts[f"{prefix}-images-idx3-ubyte"], parts[f"{prefix}-labels-idx1-ubyte"]
        if im.shape[0] != lb.shape[0]:
            raise ValueError(f"{folder}: {prefix} images hold {im.shape[0]} rows but {prefix} labels hold {lb.shape[0]}")
        images.append(im)
        labels.append(lb)
        splits.append(np.full(im.shape[0], split))
    if images[0].shape[1:] != images[1].shape[1:]:
        raise ValueError(f"{folder}: train images are {images[0].shape[1:]} but test images are {images[1].shape[1:]}")
    all_images = np.concatenate(images)
    spec = IDX_DATASETS[name]
    return Dataset(
        name=name,
        X=all_images.reshape(all_images.shape[0], -1).astype(np.float32),
        y=np.concatenate(labels).astype(np.int64),
        images=all_images,
        split=np.concatenate(splits),
        class_names=list(spec["class_names"]),
        description=spec["description"] + f" Loaded from {folder}.",
    )


def load_mnist(path: str | os.PathLike | None = None, download: bool = False) -> Dataset:
    """MNIST: 70,000 digits, 28x28, split 60,000 train + 10,000 test.

    Parameters
    ----------
    path : str or Path, optional
        Folder holding the four IDX files (``train-images-idx3-ubyte.gz``,
        ``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``,
        ``t10k-labels-idx1-ubyte.gz``; plain files work too). Default: search
        ``$HARDNEG_DATA/mnist/`` then ``~/.cache/hardneg/mnist/``.
    download : bool
        If the files are not found, fetch them from the ossci-datasets S3
        mirror (the one torchvision uses) into ``path`` or the cache folder,
        checking their MD5.

    Returns
    -------
    Dataset
        ``X`` float32 (70000, 784) raw pixels 0-255, ``images`` uint8
        (70000, 28, 28), ``y`` int64, ``split`` "train"/"test".

    Raises
    ------
    DatasetNotFoundError
        Files not found and ``download`` is False.

    Examples
    --------
    >>> from hardneg.datasets import load_mnist
    >>> ds = load_mnist()  # doctest: +SKIP
    >>> ds.X.shape  # doctest: +SKIP
    (70000, 784)
    """
    return _load_idx_dataset("mnist", path, download)


def load_fashion_mnist(path: str | os.PathLike | None = None, download: bool = False) -> Dataset:
    """Fashion-MNIST: 70,000 article images, 28x28, 10 classes, 60,000 + 10,000.

    Parameters
    ----------
    path : str or Path, optional
        Folder holding the four IDX files. Default: search
        ``$HARDNEG_DATA/fashion-mnist/``, ``~/.cache/hardneg/fashion-mnist/``
        and ``/usr/share/datasets/fashion-mnist`` (``apt-get install
        dataset-fashion-mnist``).
    download : bool
        If the files are not found, fetch them from the official address
        (http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/) into
        ``path`` or the cache folder, checking their MD5.

    Returns
    -------
    Dataset
        ``X`` float32 (70000, 784) raw pixels 0-255, ``images`` uint8
        (70000, 28, 28), ``y`` int64, ``split``, ``class_names``.

    Examples
    --------
    >>> from hardneg.datasets import load_fashion_mnist
    >>> ds = load_fashion_mnist()  # doctest: +SKIP
    >>> ds.class_names[9]  # doctest: +SKIP
    'Ankle boot'
    """
    return _load_idx_dataset("fashion-mnist", path, download)
