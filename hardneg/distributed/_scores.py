"""Compatibility: scoring every row of a store for evaluation sweeps lives in :mod:`hardneg.concept._search`."""

from ..concept._search import score_rows, scores_partition

__all__ = ["score_rows", "scores_partition"]
