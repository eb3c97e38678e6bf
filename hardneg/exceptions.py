"""Every exception a hardneg user may need to catch, in one public module.

All derive from :class:`HardnegError`, so ``except hardneg.exceptions.HardnegError``
catches anything the library raises on purpose. Each one also keeps the
built-in base it always had (``ModelFileError`` is a ``ValueError``,
``DatasetNotFoundError`` a ``FileNotFoundError``, ...), so existing
``except ValueError`` code keeps working. The private modules that used to
define them re-export these same classes.

Examples
--------
>>> from hardneg.exceptions import HardnegError, ModelFileError
>>> issubclass(ModelFileError, HardnegError), issubclass(ModelFileError, ValueError)
(True, True)

This module imports nothing beyond the standard library: catching an error
never costs an import of numpy or FAISS.
"""

from __future__ import annotations

import os

__all__ = [
    "BatcherClosed",
    "CLIError",
    "DatasetDownloadError",
    "DatasetNotFoundError",
    "HardnegError",
    "ImageFormatError",
    "ImageReadError",
    "ImageTooLargeError",
    "ModelFileError",
    "RemoteReadError",
    "ServeError",
    "StoreDamagedError",
    "StoreError",
    "StoreLockedError",
    "TrainingDivergedError",
    "WordNetUnavailable",
]


class HardnegError(Exception):
    """Base class of every exception hardneg defines."""


# ---------------------------------------------------------------------- model files
class ModelFileError(HardnegError, ValueError):
    """A model file is missing, corrupt, foreign or of an unsupported version."""


# ---------------------------------------------------------------------- feature stores
class StoreError(HardnegError, ValueError):
    """A store is missing, corrupt, or used in a way it does not allow."""


class StoreLockedError(StoreError):
    """Another process is writing to the store."""


class StoreDamagedError(StoreError):
    """A chunk or item part of the store is missing or damaged.

    ``key`` names it relative to the store (``vectors/X/c/3/0``,
    ``items/part-00000002.parquet``); ``problem`` says what is wrong.

    Parameters
    ----------
    path : str or path-like
        The store.
    key : str
        The damaged part, relative to the store.
    problem : str
        What is wrong with it.
    """

    def __init__(self, path: str | os.PathLike, key: str, problem: str):
        self.key, self.problem = key, problem
        super().__init__(f"{path}: {key} {problem} (the store is damaged; `hardneg store verify` lists all damage)")


class RemoteReadError(StoreError):
    """A remote file could not be fetched: the server, the network or a timeout (not damage in the store)."""


# ---------------------------------------------------------------------- training and data
class TrainingDivergedError(HardnegError, ValueError):
    """SGD's loss became infinite or NaN (the step ``lr`` is too large for the features' scale)."""


class ImageReadError(HardnegError, ValueError):
    """An image file is missing, corrupt, or not an image."""


class ImageTooLargeError(ImageReadError):
    """An image declares more pixels than the caller allows (a decompression bomb guard)."""


class ImageFormatError(ImageReadError):
    """The content is not an image in one of ``hardneg._imaging.ALLOWED_FORMATS`` (whatever the file is named)."""


class DatasetNotFoundError(HardnegError, FileNotFoundError):
    """A dataset's files are not on this machine (the message says where we looked)."""


class DatasetDownloadError(HardnegError, OSError):
    """A download failed or a downloaded file did not match its checksum."""


class WordNetUnavailable(HardnegError, RuntimeError):
    """WordNet files or nltk are missing; the message says what to install."""


# ---------------------------------------------------------------------- service and command line
class ServeError(HardnegError):
    """An error to answer with ``status`` and ``{"detail": message}``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = int(status)
        self.message = message


class BatcherClosed(HardnegError, RuntimeError):
    """The batcher was closed (the service is shutting down) before the query was answered."""


class CLIError(HardnegError):
    """A user error: shown as one line, exit code 2."""
