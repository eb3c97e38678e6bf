"""Store-wide jobs written once, run in process or on a Dask cluster.

Each job is a function over one partition of store rows (whole Zarr chunks)
plus a merge. Workers open the store and model files themselves by path;
only small results (top-k lists, codes of one partition) travel.

- :func:`scan_topk`: concept scoring scan with a compressed model, top k
  merged as a tree.
- :func:`knn_topk`: exact k-nearest-neighbour scan of a store.
- :func:`score_rows`: every row's decision value, for evaluation sweeps.
- :func:`hamming_index`: hash encoding of a store into a Hamming index.
- :func:`encode_store`: E-SVM encoding of a store into a new store,
  committed partition by partition, resumable.
- :func:`extract_images`: feature extraction of image files into a store,
  batch by batch on the workers, committed in order, resumable.
- :func:`get_runner`: where they run (in process, a ``LocalCluster`` of
  ``workers`` processes, or a running scheduler; ``HARDNEG_SCHEDULER``).

Examples
--------
>>> import numpy as np, tempfile
>>> from hardneg.distributed import get_runner, scan_topk
>>> from hardneg.store import FeatureStore
>>> class Sum:
...     def decision_function(self, X): return X.sum(axis=1)
>>> with FeatureStore.create(tempfile.mkdtemp() + "/s", dim=2, chunk_rows=2) as st:
...     st.append(np.arange(12.0).reshape(6, 2))
>>> with get_runner() as runner:  # get_runner(workers=2) for a LocalCluster
...     scan_topk(Sum(), st, k=3, runner=runner).rows.tolist()
[5, 4, 3]
"""

from ._concept_scan import scan_topk
from ._esvm import encode_store
from ._extract import extract_images
from ._hash import hamming_index
from ._knn import knn_topk
from ._partition import Partition, partitions
from ._runner import SCHEDULER_ENV, DaskRunner, Runner, get_runner
from ._scores import score_rows
from ._topk import TopK, merge_topk

__all__ = [
    "DaskRunner",
    "Partition",
    "Runner",
    "SCHEDULER_ENV",
    "TopK",
    "encode_store",
    "extract_images",
    "get_runner",
    "hamming_index",
    "knn_topk",
    "merge_topk",
    "partitions",
    "scan_topk",
    "score_rows",
]
