"""Job: rank a store by a concept model (top-k scan, tree-merged).

One implementation: :func:`hardneg.concept.search` (``runner=`` picks where it
runs); :func:`scan_topk` keeps the distributed package's name and keywords.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._topk import TopK
from .._typing import ArrayLike
from ..concept._search import score_partition, search

__all__ = ["scan_topk", "score_partition"]


def scan_topk(model: Any, store: Any, k: int = 100, *, rows: ArrayLike | None = None, runner: Any = None,
              partition_rows: int | None = None, block_rows: int | None = None,
              progress: Callable[[int], object] | None = None) -> TopK:
    """:func:`hardneg.concept.search` under its distributed name (``block_rows`` is its ``chunk_rows``).

    Parameters
    ----------
    model, store, k, rows, runner, partition_rows, progress
        As for :func:`hardneg.concept.search` (``store`` is its ``data``).
    block_rows : int, optional
        Rows scored per block.

    Returns
    -------
    TopK
        The ``k`` best rows by decision value.
    """
    return search(model, store, k, rows=rows, runner=runner, partition_rows=partition_rows, chunk_rows=block_rows,
                  progress=progress)
