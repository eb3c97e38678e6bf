"""Job: rank a store by a concept model (top-k scan, tree-merged).

One implementation: :func:`hardneg.concept.search` (``runner=`` picks where it
runs); :func:`scan_topk` keeps the distributed package's name and keywords.
"""

from __future__ import annotations

from ..concept._search import score_partition, search

__all__ = ["scan_topk", "score_partition"]


def scan_topk(model, store, k: int = 100, *, rows=None, runner=None, partition_rows: int | None = None,
              block_rows: int | None = None, progress=None):
    """:func:`hardneg.concept.search` under its distributed name (``block_rows`` is its ``chunk_rows``)."""
    return search(model, store, k, rows=rows, runner=runner, partition_rows=partition_rows, chunk_rows=block_rows,
                  progress=progress)
