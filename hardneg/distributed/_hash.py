"""Job: hash-encode a store into a Hamming index.

One implementation: :meth:`hardneg.index.HammingIndex.from_store` (``runner=``
picks where it runs, ``nlist`` makes it approximate); :func:`hamming_index`
keeps the distributed package's name and keywords.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..index._hamming import HammingIndex, encode_partition

__all__ = ["encode_partition", "hamming_index"]


def hamming_index(store: Any, hasher: Any, *, runner: Any = None, partition_rows: int | None = None, block_rows: int = 8192,
                  progress: Callable[[int], object] | None = None, nlist: int | None = None, nprobe: int = 16) -> HammingIndex:
    """:meth:`HammingIndex.from_store` under its distributed name (``block_rows`` is its ``chunk_rows``).

    Parameters
    ----------
    store : FeatureStore or path / URL of a store
        The rows to encode.
    hasher : fitted hasher
        Encodes the rows (``transform``).
    runner : Runner, optional
        Where to run (default: in this process).
    partition_rows : int, optional
        Rows per task (rounded up to whole chunks).
    block_rows : int
        Rows encoded per block.
    progress : callable, optional
        Called with the number of rows encoded after each block.
    nlist : int, optional
        Inverted lists of an approximate (IVF) index; None for an exact one.
    nprobe : int
        Lists visited per query of an IVF index.

    Returns
    -------
    HammingIndex
        The codes of every row, with their ids.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from hardneg.hashing import LSHHasher
    >>> from hardneg.store import FeatureStore
    >>> X = np.random.default_rng(0).normal(size=(50, 8)).astype(np.float32)
    >>> with FeatureStore.create(tempfile.mkdtemp() + "/s", dim=8, chunk_rows=16) as st:
    ...     st.append(X)
    >>> index = hamming_index(st, LSHHasher(n_bits=16, random_state=0).fit(X))
    >>> len(index), index.n_bits
    (50, 16)
    """
    from ..index import HammingIndex

    return HammingIndex.from_store(store, hasher, chunk_rows=block_rows, progress=progress, nlist=nlist, nprobe=nprobe,
                                   runner=runner, partition_rows=partition_rows)
