"""Job: encode a store with a fitted E-SVM encoder into a new store (resumable).

One implementation: :func:`hardneg.encoding.encode_store` (``runner=`` picks
where it runs; one resume logic, one commit per partition);
:func:`encode_store` here keeps the distributed package's keywords
(``block_rows`` is its ``batch_rows``).
"""

from __future__ import annotations

from ..encoding._store import encode_store as _encode_store
from ..encoding._store import esvm_partition

__all__ = ["encode_store", "esvm_partition"]


def encode_store(encoder, store, out, *, n_recursions=None, runner=None, partition_rows: int | None = None,
                 block_rows: int = 1024, overwrite: bool = False, progress=None, on_commit=None):
    """:func:`hardneg.encoding.encode_store` under its distributed keywords (``block_rows`` = ``batch_rows``)."""
    return _encode_store(encoder, store, out, n_recursions=n_recursions, batch_rows=block_rows, overwrite=overwrite,
                         progress=progress, runner=runner, partition_rows=partition_rows, on_commit=on_commit)

