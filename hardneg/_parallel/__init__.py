"""The runner beneath the store-wide jobs: where a job runs, and how it cuts the store.

A store-wide job (a concept scan, a kNN scan, encoding a store into a Hamming
index or an E-SVM store, extracting image files) is written once, in its
method's module, as a pure function over one :class:`Partition` of store rows
plus a merge, and takes ``runner=None`` (this process) or a
:class:`DaskRunner`. This package imports only the store's remote layer and
the core helpers, so every method module imports it at module level. The
public names are :mod:`hardneg.distributed`'s.
"""

from .._lazy_exports import attach

# resolved on first use: a CLI command imports the runner (``._runner``) without the partitions' store layer
__getattr__, __dir__ = attach(__name__, {
    "Partition": "._partition", "partitions": "._partition",
    **dict.fromkeys(("SCHEDULER_ENV", "DaskRunner", "Runner", "get_runner"), "._runner"),
})

__all__ = ["SCHEDULER_ENV", "DaskRunner", "Partition", "Runner", "get_runner", "partitions"]
