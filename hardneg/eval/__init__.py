"""Evaluation metrics: ranking (AP, mAP@k, precision@k), zero-shot accuracy,
and exact Hamming ranking of packed binary codes.

Examples
--------
>>> import numpy as np
>>> from hardneg.eval import hamming_rank, relevance_from_labels, mean_average_precision_at_k
>>> rng = np.random.default_rng(0)
>>> db = np.packbits(rng.integers(0, 2, (100, 16)), axis=1)
>>> labels = rng.integers(0, 3, 100)
>>> idx, _ = hamming_rank(db[:5], db, k=10)
>>> rel = relevance_from_labels(labels[:5], labels[idx])
>>> 0.0 <= mean_average_precision_at_k(rel) <= 1.0
True
"""

from hardneg.eval._classification import generalized_zsl_scores, mean_per_class_accuracy
from hardneg.eval._hamming import hamming_distances, hamming_rank
from hardneg.eval._ranking import (
    ap_at_k,
    average_precision,
    mean_average_precision_at_k,
    precision_at_k,
    precision_at_ranks,
    precision_recall_curve,
    relevance_from_labels,
)

__all__ = [
    "ap_at_k",
    "average_precision",
    "generalized_zsl_scores",
    "hamming_distances",
    "hamming_rank",
    "mean_average_precision_at_k",
    "mean_per_class_accuracy",
    "precision_at_k",
    "precision_at_ranks",
    "precision_recall_curve",
    "relevance_from_labels",
]
