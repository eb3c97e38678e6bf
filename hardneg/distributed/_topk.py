"""Compatibility: the top-k type and its merge live in :mod:`hardneg._topk` (one result type for every search)."""

from .._topk import TopK, merge_topk, topk_of

__all__ = ["TopK", "merge_topk", "topk_of"]
