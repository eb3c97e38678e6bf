"""Search indexes over encoded collections.

Examples
--------
>>> import numpy as np
>>> from hardneg.index import HammingIndex
>>> index = HammingIndex(16)
>>> index.add(np.zeros((3, 2), np.uint8))
>>> index.search(np.zeros((1, 2), np.uint8), k=2).distances.tolist()
[[0, 0]]
"""

from hardneg.index._flat import knn_topk
from hardneg.index._hamming import HammingIndex
from hardneg.index._inverted import InvertedIndex
from hardneg.index._ivf_build import ArrayCodes, CodeSource, IVFBuilder, StoreCodes, build_ivf_index
from hardneg.index._sharded import ShardedSearch, shard_index

__all__ = [
    "ArrayCodes", "CodeSource", "HammingIndex", "IVFBuilder", "InvertedIndex", "ShardedSearch", "StoreCodes",
    "build_ivf_index", "knn_topk", "shard_index",
]
