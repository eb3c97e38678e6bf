"""Compatibility: the exact kNN scan lives in :mod:`hardneg.index._flat` (``runner=`` picks where it runs)."""

from ..index._flat import knn_partition, knn_topk

__all__ = ["knn_partition", "knn_topk"]
