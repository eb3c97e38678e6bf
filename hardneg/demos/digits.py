"""The main job behind ``make demo`` / ``hardneg demo``.

It runs on sklearn digits, which ships with scikit-learn, so it needs no
download. Concept search: for every digit, Negative Bootstrap learns the
concept from 20 positives and a loosely tagged pool, against its baselines,
and an HTML report shows the featured concept's top results
(:mod:`hardneg.demos.concept`). Alongside, the digits go into a FeatureStore
and query by example is scored by mAP@100: TSVM hashing (32-bit codes,
Hamming ranking) beside exact Euclidean nearest-neighbour retrieval, the
baseline it is measured against; both go to the console and, as a table each,
into the HTML report.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, cast

import numpy as np

logger = logging.getLogger(__name__)


def euclidean_retrieval_map(store, k: int | None = None) -> dict:
    """mAP of exact Euclidean kNN retrieval: test split queries the train split.

    A database item is relevant when it shares the query's label. With ``k``
    the mAP is over the top ``k`` returned (``eval.mean_average_precision_at_k``),
    otherwise over the full ranking.
    """
    from sklearn.metrics import pairwise_distances

    from ..eval import average_precision, mean_average_precision_at_k

    train, test = store.select(split="train"), store.select(split="test")
    if train.size == 0 or test.size == 0:
        raise ValueError(f"{store.path}: needs both a train and a test split (got {train.size} and {test.size} rows)")
    Xdb, Xq = store.take(train), store.take(test)
    labels = store.labels()
    ydb, yq = labels[train], labels[test]
    dist = pairwise_distances(Xq, Xdb, metric="euclidean")
    result: dict[str, float] = {"n_queries": int(test.size), "n_database": int(train.size)}
    result["mAP"] = float(np.mean([average_precision(ydb == yq[i], -dist[i]) for i in range(len(yq))]))
    if k is not None:
        order = np.argsort(dist, axis=1, kind="stable")[:, :k]
        # a float (no per-query tuple: return_per_query is off); eval has no overloads for it
        result[f"mAP@{k}"] = float(cast(float, mean_average_precision_at_k(ydb[order] == yq[:, None], k)))
    return result


def hashing_retrieval_map(store, n_bits: int = 32, k: int = 100, random_state: int = 0) -> dict:
    """mAP@k of TSVM hashing: trained on the train split, test queries rank the
    train split by Hamming distance (the same protocol as :func:`euclidean_retrieval_map`)."""
    from ..eval import hamming_rank, mean_average_precision_at_k
    from ..hashing import TSVMHashing

    train, test = store.select(split="train"), store.select(split="test")
    labels = store.labels()
    hasher = TSVMHashing(n_bits=n_bits, random_state=random_state).fit(store.take(train), labels[train])
    order, _ = hamming_rank(hasher.transform(store.take(test)), hasher.transform(store.take(train)), k=train.size)
    rel = labels[train][order] == labels[test][:, None]
    # floats (no per-query tuple: return_per_query is off); eval has no overloads for it. Over the
    # whole ranking every relevant item is returned, so mAP@n is the full ranking's mAP.
    return {"method": "TSVM hashing", "n_bits": n_bits, f"mAP@{k}": float(cast(float, mean_average_precision_at_k(rel[:, :k], k))),
            "mAP": float(cast(float, mean_average_precision_at_k(rel, train.size)))}


def retrieval_tables(hashing: dict, knn: dict, k: int = 100) -> list[dict]:
    """The query-by-example results as one table (``title``, ``header``, ``rows`` of strings):
    TSVM hashing and its baseline side by side.

    The same table goes to the console and into the HTML report, so both show
    the same numbers, formatted once.
    """
    setting = f"sklearn digits, {knn['n_queries']} test queries over {knn['n_database']} train images"
    return [
        {"title": f"Query by example: TSVM hashing (Hamming ranking) against its baseline, exact Euclidean kNN ({setting})",
         "header": ["method", "compares", f"mAP@{k}", "mAP (full ranking)"],
         "rows": [[hashing["method"], f"{hashing['n_bits']}-bit codes", f"{hashing[f'mAP@{k}']:.4f}", f"{hashing['mAP']:.4f}"],
                  ["exact Euclidean kNN (baseline)", "raw pixels", f"{knn[f'mAP@{k}']:.4f}", f"{knn['mAP']:.4f}"]]},
    ]


def run_demo(out_dir="demo-output", *, n_iter: int = 10, n_bits: int = 32, console=None) -> dict:
    """Run the demo and write ``summary.json`` (and reports) into ``out_dir``.

    ``n_iter`` (bootstrap iterations T) and ``n_bits`` (hash code length) are
    the demo's settings; ``console`` is the rich console it prints its
    tables to (default: a new one on stdout).
    """
    from ..datasets import load_digits
    from ..store import FeatureStore

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    data = load_digits()
    if data.split is None:
        raise ValueError("load_digits() gave no train/test split")
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
    hashing = hashing_retrieval_map(store, n_bits=n_bits, k=100)
    tables = retrieval_tables(hashing, baseline)
    from .concept import run_concept_demo

    concept = run_concept_demo(out, n_iter=n_iter, extra_tables=tables)
    summary: dict[str, Any] = {"dataset": "sklearn digits", "store": str(store_path), "concept_search": concept, "euclidean_knn": baseline, "hashing": hashing}
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Concept search on digits: {concept['protocol']}")
    table.add_column("method")
    table.add_column("mAP", justify="right")
    table.add_column("P@20", justify="right")
    for method, value in concept["mAP"].items():
        table.add_row(method, f"{value:.4f}", f"{concept['P@20'][method]:.3f}")
    console = console if console is not None else Console()
    console.print(table)
    comp = concept["compression"]
    console.print(
        f"Model Compression of the concept 'digit {concept['featured_concept']}' (negative bootstrap, q={comp['n_bins']}): "
        f"AP {comp['AP_exact']:.4f} exact vs {comp['AP_compressed']:.4f} compressed, "
        f"max |decision error| {comp['max_abs_error']:.4f} (bound {comp['error_bound']:.4f})"
    )
    for t in tables:
        rt = Table(title=t["title"])
        for j, h in enumerate(t["header"]):
            rt.add_column(h, justify="left" if j == 0 else "right")
        for row in t["rows"]:
            rt.add_row(*row)
        console.print(rt)
    console.print(f"report: {concept['report']}\nsummary: {out / 'summary.json'}")
    return summary
