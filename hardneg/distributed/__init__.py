"""Where store-wide jobs run: the runner, the partitioning, and the jobs' distributed names.

Each store-wide job is written once, in its library module, as a function
over one partition of store rows (whole Zarr chunks) plus a merge, and takes
``runner=None`` (in process) or a :class:`DaskRunner`: the in-process run is
the distributed run with the local :class:`Runner`. Workers open the store
and model files themselves by path; only small results travel. This package
holds :class:`Runner` / :class:`DaskRunner` / :func:`get_runner` (in process,
a ``LocalCluster`` of ``workers`` processes, or a running scheduler;
``HARDNEG_SCHEDULER``), :func:`partitions`, and re-exports the jobs under
their distributed names:

- :func:`scan_topk` = :func:`hardneg.concept.search` (concept top-k scan).
- :func:`knn_topk` = :func:`hardneg.index.knn_topk` (exact kNN scan).
- :func:`score_rows`: every row's decision value (``hardneg.concept._search``).
- :func:`hamming_index` = :meth:`hardneg.index.HammingIndex.from_store`.
- :func:`encode_store` = :func:`hardneg.encoding.encode_store` (``block_rows`` = ``batch_rows``).
- :func:`extract_images`: :func:`hardneg.features.extract_to_store`'s plan and batch loop
  (``hardneg.features._extract._Extraction.run``) over image files on the workers.
- :class:`TopK`, :func:`merge_topk`: the one result type, :class:`hardneg.TopK`.

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

from .._lazy_exports import attach

# resolved on first use: importing ``hardneg.distributed._runner`` (what every CLI command does)
# must not import the jobs, which pull in scikit-learn and SciPy
__getattr__, __dir__ = attach(__name__, {
    "scan_topk": "._concept_scan", "encode_store": "._esvm", "extract_images": "._extract",
    "hamming_index": "._hash", "knn_topk": "._knn", "Partition": "._partition", "partitions": "._partition",
    "SCHEDULER_ENV": "._runner", "DaskRunner": "._runner", "Runner": "._runner", "get_runner": "._runner",
    "score_rows": "._scores", "TopK": "._topk", "merge_topk": "._topk",
})

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
