"""Job: encode a store with a fitted E-SVM encoder into a new store (resumable).

One implementation: :func:`hardneg.encoding.encode_store` (``runner=`` picks
where it runs; one resume logic, one commit per partition);
:func:`encode_store` here keeps the distributed package's keywords
(``block_rows`` is its ``batch_rows``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..encoding._store import encode_store as _encode_store
from ..encoding._store import esvm_partition

if TYPE_CHECKING:
    from ..store import FeatureStore

__all__ = ["encode_store", "esvm_partition"]


def encode_store(encoder: Any, store: Any, out: str | Path, *, n_recursions: int | None = None, runner: Any = None,
                 partition_rows: int | None = None, block_rows: int = 1024, overwrite: bool = False,
                 progress: Callable[[int], object] | None = None, on_commit: Callable[[int], object] | None = None) -> FeatureStore:
    """:func:`hardneg.encoding.encode_store` under its distributed keywords (``block_rows`` = ``batch_rows``).

    Parameters
    ----------
    encoder, store, out, n_recursions, runner, partition_rows, overwrite, progress, on_commit
        As for :func:`hardneg.encoding.encode_store`.
    block_rows : int
        Its ``batch_rows``: rows encoded at a time.

    Returns
    -------
    FeatureStore
        ``out``, open for reading.
    """
    return _encode_store(encoder, store, out, n_recursions=n_recursions, batch_rows=block_rows, overwrite=overwrite,
                         progress=progress, runner=runner, partition_rows=partition_rows, on_commit=on_commit)

