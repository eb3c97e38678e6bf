"""``hardneg knn``: plain nearest-neighbour search of a store, by stored id or by image file.

The exact search (FAISS flat index, inner product or L2) is the baseline
every query-by-example method (hashing, concept models) is measured
against; ``--index hnsw`` is the approximate option (FAISS HNSW graph).
"""

from __future__ import annotations

import typer

from ._cluster import cluster_options
from ._console import task_progress
from ._inputs import extract_query_images, in_split, item_info, stored_queries
from ._results import check_result_outputs, emit_results, same_class
from ..exceptions import CLIError
from ._options import csv_option, html_option, json_option, k_option, query_id_option

_METRICS = ("cosine", "ip", "l2")
_INDEXES = ("exact", "hnsw")


@cluster_options
def knn(
    store_path: str = typer.Argument(..., metavar="STORE", help="FeatureStore to search."),
    query_image: list[str] = typer.Option(
        None, "--query-image", help="Image file to query with (repeatable); extracted with the store's own extractor settings."
    ),
    query_id: list[str] = query_id_option(),
    k: int = k_option(10, "Neighbours per query."),
    metric: str = typer.Option("cosine", "--metric", help="cosine (inner product of l2-normalized rows), ip (inner product) or l2."),
    index: str = typer.Option("exact", "--index", help="exact (FAISS flat: the baseline) or hnsw (approximate, FAISS HNSW)."),
    hnsw_m: int = typer.Option(32, "--hnsw-m", min=2, max=512, help="HNSW: neighbours per graph node."),
    ef_search: int = typer.Option(64, "--ef-search", min=1, max=65536, help="HNSW: candidate list length at search time (higher: more exact)."),
    split: str = typer.Option(None, "--split", help="Search only this split."),
    keep_query: bool = typer.Option(False, "--keep-query", help="Keep a stored query item in its own results (left out by default)."),
    model: str = typer.Option(None, "--model", help="With --query-image: the torch model file of a store made with --model."),
    trust_model: bool = typer.Option(False, "--trust-model", help="Allow --model FILE to load (it runs code)."),
    chunk_rows: int = typer.Option(16384, "--chunk-rows", min=1, help="Rows added to the index per block."),
    as_json: bool = json_option(),
    csv_out: str = csv_option(),
    html_out: str = html_option(),
    runner=None,
):
    """Nearest neighbours of image files or stored items in a store (exact, or HNSW)."""
    import numpy as np

    from ..store import FeatureStore

    if metric not in _METRICS:
        raise CLIError(f"--metric: expected one of {', '.join(_METRICS)}, got {metric!r}")
    if index not in _INDEXES:
        raise CLIError(f"--index: expected one of {', '.join(_INDEXES)}, got {index!r}")
    if bool(query_image) == bool(query_id):
        raise CLIError("give queries with --query-image FILE or --query-id ID (one of them)")
    check_result_outputs(as_json, csv_out, html_out, inputs=(store_path,))
    if index == "hnsw" and runner.client is not None:
        raise CLIError("--index hnsw builds one graph in this process; --workers / --scheduler run the exact scan (--index exact)")
    store = FeatureStore.open(store_path)
    rows = store.select(split=split) if split else np.arange(len(store))
    if rows.size == 0:
        raise CLIError(f"{store_path}: no rows to search{in_split(split)}; the store has {store.summary()}")
    if query_id:
        q_rows, Q, q_infos = stored_queries(store, list(query_id))
        queries = [{"name": q, "row": r, "query_path": info["path"]} for q, r, info in zip(query_id, q_rows, q_infos)]
    else:
        Q = extract_query_images(store, list(query_image), model=model, trust_model=trust_model)
        queries = [{"name": f, "query_path": f} for f in query_image]
    Q = np.ascontiguousarray(Q, dtype=np.float32)
    drop = query_id and not keep_query
    k_search = min(k + (1 if drop else 0), int(rows.size))
    if index == "exact":
        scores, found = _exact(store, Q, k_search, metric, rows, chunk_rows, runner)
    else:
        scores, found = _hnsw(store, Q, k_search, metric, rows, chunk_rows, hnsw_m, ef_search)
    results = []
    for q, s_row, f_row in zip(queries, scores, found):
        keep = [(int(j), float(v)) for j, v in zip(f_row, s_row) if j >= 0 and not (drop and int(j) == q.get("row"))][:k]
        infos = item_info(store, [r for r, _ in keep])
        for rank, ((r, v), info) in enumerate(zip(keep, infos), 1):
            rel = same_class(store, q.get("row"), r)
            results.append({"query": q["name"], "rank": rank, "id": info["id"], "score": v, "label": info["label"], "tags": info["tags"],
                            "path": info["path"], "relevant": rel})
    score_name = "distance" if metric == "l2" else "score"
    if metric == "l2":
        for row in results:
            row["distance"] = float(np.sqrt(max(row.pop("score"), 0.0)))  # FAISS returns squared L2
    title = f"{k} nearest neighbours ({index}, {metric}) in {store_path}"
    groups = [{"name": f"query {q['name']}", "query_path": q.get("query_path"), "results": [r for r in results if r["query"] == q["name"]]}
              for q in queries]
    emit_results(results, title=title, score=score_name, as_json=as_json, csv_out=csv_out, html_out=html_out, groups=groups,
                 query_column=True)


def _exact(store, Q, k, metric, rows, chunk_rows, runner):
    """Exact scan (FAISS flat per block, top k merged; ties by row), in process or on the cluster.
    Returns FAISS-style scores (squared distances for l2) and store rows."""
    from ..index import knn_topk

    with task_progress(f"indexing (exact, {metric})", int(rows.size)) as advance:
        best = knn_topk(store, Q, k, metric=metric, rows=None if rows.size == len(store) else rows, block_rows=chunk_rows,
                        runner=runner, progress=advance)
    return best.scores, best.rows  # squared distances for l2 (best.distances), as FAISS gives them


def _hnsw(store, Q, k, metric, rows, chunk_rows, hnsw_m, ef_search):
    """An HNSW graph built in this process; FAISS scores and store rows (-1 where none)."""
    import faiss
    import numpy as np

    faiss_metric = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    ix = faiss.IndexHNSWFlat(store.dim, hnsw_m, faiss_metric)
    ix.hnsw.efSearch = ef_search
    with task_progress(f"indexing (hnsw, {metric})", int(rows.size)) as advance:
        for lo in range(0, rows.size, chunk_rows):
            X = np.ascontiguousarray(_dense(store.take(rows[lo : lo + chunk_rows])), dtype=np.float32)
            if metric == "cosine":
                faiss.normalize_L2(X)
            ix.add(X)
            advance(X.shape[0])
    Q = Q.copy()
    if metric == "cosine":
        faiss.normalize_L2(Q)
    scores, found = ix.search(Q, k)
    return scores, np.where(found >= 0, rows[np.maximum(found, 0)], -1)


def _dense(block):
    return block.toarray() if hasattr(block, "toarray") else block
