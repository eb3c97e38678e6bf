"""Where store-wide jobs run: in this process, or on a Dask cluster.

Each store-wide job is written once, in its method's module, and takes
``runner=None`` (this process) or a runner from :func:`get_runner` (a
``LocalCluster`` of ``workers`` processes, or a running scheduler named by
``HARDNEG_SCHEDULER``): the in-process run is the distributed run with the
local :class:`Runner`. Workers open the store and model files themselves by
path; only small results travel. The jobs:

- :func:`hardneg.concept.search`: rank a store by a concept model (top-k scan).
- :func:`hardneg.index.knn_topk`: the exact kNN scan.
- :meth:`hardneg.index.HammingIndex.from_store`: hash-encode a store into an index.
- :func:`hardneg.encoding.encode_store`: E-SVM-encode a store into a new store.
- :func:`hardneg.features.extract_to_store`: extract image files into a store.

This package is the public face of the runner (:mod:`hardneg._parallel`).

Examples
--------
>>> import numpy as np, tempfile
>>> from hardneg.concept import search
>>> from hardneg.distributed import get_runner
>>> from hardneg.store import FeatureStore
>>> class Sum:
...     def decision_function(self, X): return X.sum(axis=1)
>>> with FeatureStore.create(tempfile.mkdtemp() + "/s", dim=2, chunk_rows=2) as st:
...     st.append(np.arange(12.0).reshape(6, 2))
>>> with get_runner() as runner:  # get_runner(workers=2) for a LocalCluster
...     search(Sum(), st, k=3, runner=runner).rows.tolist()
[5, 4, 3]
"""

from .._parallel._partition import Partition, partitions
from .._parallel._runner import SCHEDULER_ENV, DaskRunner, Runner, get_runner

__all__ = ["SCHEDULER_ENV", "DaskRunner", "Partition", "Runner", "get_runner", "partitions"]
