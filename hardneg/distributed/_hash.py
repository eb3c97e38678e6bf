"""Job: hash-encode a store and build its Hamming index.

Partition function: a fitted hasher's ``transform`` (packed binary codes) over
a partition's rows; merge: the codes appended to one
:class:`~hardneg.index.HammingIndex` in partition order (at most ``window``
partitions of codes in flight).
"""

from __future__ import annotations

import functools

import numpy as np

from .._validation import check_positive_int
from ._partition import dense, iter_partition, open_model, open_store, partitions, store_url
from ._runner import Runner

__all__ = ["encode_partition", "hamming_index"]


def encode_partition(part, *, store: str, hasher, block_rows: int) -> np.ndarray:
    """Packed codes (uint8) of one partition's rows, in row order."""
    st = open_store(store)
    h = open_model(hasher, "hasher")
    blocks = [np.asarray(h.transform(dense(block))) for _, block in iter_partition(st, part, block_rows)]
    return np.concatenate(blocks) if len(blocks) > 1 else blocks[0]


def hamming_index(store, hasher, *, runner: Runner | None = None, partition_rows: int | None = None, block_rows: int = 8192,
                  progress=None):
    """Encode every row of ``store`` with ``hasher`` (object or model-file path) into a Hamming index.

    The same index, byte for byte, as :meth:`HammingIndex.from_store`, in
    process or on a cluster; ``progress(n_rows)`` after each partition.

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
    from ..store import FeatureStore

    runner = runner or Runner()
    st = store if isinstance(store, FeatureStore) else FeatureStore.open(store)
    h = open_model(hasher, "hasher")
    if getattr(h, "n_features_in_", st.dim) != st.dim:
        raise ValueError(f"{st.path} has {st.dim}-d features but the hasher expects {h.n_features_in_}")
    block_rows = check_positive_int(block_rows, "block_rows")
    index = HammingIndex(int(h.n_bits_), {"hasher": type(h).__name__, "hasher_fingerprint": h.fingerprint(), "store": str(st.path)})
    ids = st.ids()
    func = functools.partial(encode_partition, store=store_url(st.path), hasher=runner.share(hasher), block_rows=block_rows)
    parts = partitions(st, partition_rows)
    for part, codes in zip(parts, runner.map_ordered(func, parts, progress=None if progress is None else (lambda p: progress(p.size)))):
        if codes.shape[0] != part.size:
            raise RuntimeError(f"partition {part}: {codes.shape[0]} codes for {part.size} rows")
        index.add(codes, ids[part.lo : part.hi])
    return index
