"""Job: hash-encode a store into a Hamming index.

One implementation: :meth:`hardneg.index.HammingIndex.from_store` (``runner=``
picks where it runs, ``nlist`` makes it approximate); :func:`hamming_index`
keeps the distributed package's name and keywords.
"""

from __future__ import annotations

from ..index._hamming import encode_partition

__all__ = ["encode_partition", "hamming_index"]


def hamming_index(store, hasher, *, runner=None, partition_rows: int | None = None, block_rows: int = 8192,
                  progress=None, nlist: int | None = None, nprobe: int = 16):
    """:meth:`HammingIndex.from_store` under its distributed name (``block_rows`` is its ``chunk_rows``).

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
