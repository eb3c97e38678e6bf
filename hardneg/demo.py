"""The main job behind ``make demo`` / ``hardneg demo``.

It runs on sklearn digits, which ships with scikit-learn, so it needs no
download: the digits are imported into a FeatureStore and exact Euclidean
nearest-neighbour retrieval (test images as queries, training images as the
database) is scored by mAP — the baseline the learned methods must beat.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)


def euclidean_retrieval_map(store, k: int | None = None) -> dict:
    """mAP of exact Euclidean kNN retrieval: test split queries the train split.

    A database item is relevant when it shares the query's label. With ``k``
    the mAP is over the top ``k`` returned (``eval.mean_average_precision_at_k``),
    otherwise over the full ranking.
    """
    from sklearn.metrics import pairwise_distances

    from .eval import average_precision, mean_average_precision_at_k

    train, test = store.select(split="train"), store.select(split="test")
    if train.size == 0 or test.size == 0:
        raise ValueError(f"{store.path}: needs both a train and a test split (got {train.size} and {test.size} rows)")
    Xdb, Xq = store.take(train), store.take(test)
    labels = store.labels()
    ydb, yq = labels[train], labels[test]
    dist = pairwise_distances(Xq, Xdb, metric="euclidean")
    result = {"n_queries": int(test.size), "n_database": int(train.size)}
    result["mAP"] = float(np.mean([average_precision(ydb == yq[i], -dist[i]) for i in range(len(yq))]))
    if k is not None:
        order = np.argsort(dist, axis=1, kind="stable")[:, :k]
        result[f"mAP@{k}"] = float(mean_average_precision_at_k(ydb[order] == yq[:, None], k))
    return result


def run_demo(out_dir="demo-output") -> dict:
    """Run the demo and write ``summary.json`` (and reports) into ``out_dir``."""
    from .datasets import load_digits
    from .store import FeatureStore

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    data = load_digits()
    store_path = out / "digits.store"
    with FeatureStore.create(store_path, dim=data.X.shape[1], overwrite=True, attrs={"dataset": data.name}) as store:
        store.append(
            data.X,
            ids=[f"digits-{i}" for i in range(len(data.y))],
            labels=data.y,
            split=[str(s) for s in data.split],
            tags=[[str(c)] for c in data.y],
        )
    store = FeatureStore.open(store_path)
    baseline = euclidean_retrieval_map(store, k=100)
    summary = {"dataset": "sklearn digits", "store": str(store_path), "euclidean_knn": baseline}
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    from rich.console import Console

    Console().print(
        f"[bold]Euclidean kNN retrieval on digits[/bold] ({baseline['n_queries']} queries, {baseline['n_database']} database): "
        f"mAP {baseline['mAP']:.4f}, mAP@100 {baseline['mAP@100']:.4f}\nwrote {out / 'summary.json'}"
    )
    return summary
