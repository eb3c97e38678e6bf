"""``hardneg hash``: train a hasher, index a FeatureStore, search by example."""

from __future__ import annotations

import typing  # typing.cast: _rank_rows has an argument named cast

import typer

from ..hashing._registry import MAX_BITS, METHODS, hasher_class
from ._cluster import cluster_options
from ._console import console, task_progress
from ._inputs import check_index_current, check_input_file, check_output_file, extract_query_images, is_same_store, item_info, stored_queries
from ._results import check_result_outputs, emit_results, same_class
from ..exceptions import CLIError
from ._options import (
    cost_alias_option,
    cost_option,
    csv_option,
    html_option,
    json_option,
    k_option,
    method_option,
    out_option,
    pick_cost,
    query_id_option,
)

app = typer.Typer(help="Compact binary codes: train hashers, build Hamming indexes, search.", no_args_is_help=True)

# the hashers whose codes go into a Hamming index, from the hashers' own list (it imports no hasher)
_HAMMING_METHODS = [name for name, m in METHODS.items() if m.hamming]
_HAMMING_CLASSES = {METHODS[name].cls for name in _HAMMING_METHODS}
_METHODS_HELP = ", ".join(f"{name} ({METHODS[name].summary})" for name in _HAMMING_METHODS) + "."


#: labeled rows TSVM hashing trains on by default (``hash train --max-labeled``)
MAX_LABELED = 5000


def stratified_sample(rows, labels, n: int, rng):
    """``min(n, rows.size)`` of ``rows`` (sorted), without replacement, each class in proportion to its
    count and every class kept while ``n`` allows (with fewer rows than classes, the largest classes)."""
    import numpy as np

    classes, counts = np.unique(labels, return_counts=True)
    n = min(int(n), int(counts.sum()))
    share = counts * n / counts.sum()
    by_size = np.argsort(-counts, kind="stable")
    quota = np.zeros(classes.size, np.int64)
    if n < classes.size:  # one row from each of the n largest classes
        quota[by_size[:n]] = 1
    quota = np.maximum(quota, np.floor(share).astype(np.int64))
    if n >= classes.size:
        quota = np.maximum(quota, 1)
    while quota.sum() > n:  # the one row of each small class came from the largest ones
        quota[next(i for i in by_size if quota[i] > 1)] -= 1
    for i in np.argsort(-(share - np.floor(share)), kind="stable"):  # what floor() left out, largest remainders first
        if quota.sum() >= n:
            break
        if quota[i] < counts[i]:
            quota[i] += 1
    picked = [rng.choice(rows[labels == c], q, replace=False) for c, q in zip(classes, quota) if q]
    return np.sort(np.concatenate(picked))


@app.command("train")
def train(
    store_path: str = typer.Argument(..., metavar="STORE", help="FeatureStore with the training features."),
    out: str = out_option("Model file to write (.npz)."),
    method: str = method_option("tsvm", _METHODS_HELP),
    bits: int = typer.Option(
        64, "--bits", "-b", min=1, max=MAX_BITS,
        help=f"Code length in bits, 1 to {MAX_BITS} (codes are meant to be compact; training memory grows with dim x bits).",
    ),
    split: str = typer.Option(
        None, "--split", help="Train on the rows of this split ('' for all rows). Default: train when the store has one, else all rows."
    ),
    n_unlabeled: int = typer.Option(10000, "--n-unlabeled", min=0, help="Unlabeled rows sampled for TSVM hashing (0: none)."),
    max_labeled: int = typer.Option(
        MAX_LABELED, "--max-labeled", min=0,
        help=f"TSVM hashing: at most this many labeled rows, sampled per class in proportion (0: all). Default {MAX_LABELED:,}: "
             "training time grows faster than retrieval mAP with the labeled rows (the trade-off: docs/methods/hashing.md).",
    ),
    mode: str = typer.Option(
        "bits", "--embedding",
        help="TSVM hashing: bits ([Cevikalp17] Eq. (12)) or itq (the paper's embedding: the outputs of every node of 20 trees, then ITQ).",
    ),
    cost: str = cost_option(
        "auto", "TSVM hashing: cost C of the labeled samples at every node, or 'auto' (chosen from 1 and 10 "
        "on a validation fifth of the labeled rows)."
    ),
    cost_alias: str = cost_alias_option(),
    balance: bool = typer.Option(
        False, "--balance/--no-balance", help="TSVM hashing: the RTSVM balancing constraint at every node ([Cevikalp17] Eq. (6))."
    ),
    seed: int = typer.Option(0, "--seed", min=0, max=2**32 - 1, help="Random seed."),
):
    """Fit a hasher on a store (labels are used by TSVM hashing only)."""
    import numpy as np

    from ..hashing import BaseHasher, TSVMHashing
    from ..store import FeatureStore

    if method not in _HAMMING_METHODS:
        raise CLIError(f"--method: expected one of {', '.join(_HAMMING_METHODS)}, got {method!r}")
    if method == "tsvm" and mode not in ("bits", "itq"):
        raise CLIError(f"--embedding: expected bits or itq, got {mode!r}")
    C: str | float = pick_cost(cost, cost_alias)
    if C != "auto":
        try:
            C = float(C)
        except ValueError:
            raise CLIError(f"--cost: expected a positive number or 'auto', got {C!r}") from None
        if not (np.isfinite(C) and C > 0):
            raise CLIError(f"--cost: must be a positive number or 'auto', got {C}")
    check_output_file(out, "--out", inputs=(store_path,))
    store = FeatureStore.open(store_path)
    if METHODS[method].bits_at_most_dim and bits > store.dim:
        raise CLIError(f"--bits {bits}: {method} makes at most one bit per input dimension ({store.dim} in {store_path})")
    if split is None:
        # Never train on the test split by default: evaluation on it would be optimistic.
        split = "train" if store.select(split="train").size else ""
    rows = store.select(split=split) if split else np.arange(len(store))
    if split and rows.size == 0:
        raise CLIError(f"--split {split!r}: no rows of {store_path} are in this split; the store has {store.summary()}")
    if rows.size < 2:
        raise CLIError(f"{store_path}: fewer than 2 rows to train on (split={split!r}); the store has {store.summary()}")
    model: BaseHasher
    if method == "tsvm":
        labels = store.labels()[rows]
        labeled = rows[labels >= 0]
        if labeled.size < 2:
            raise CLIError(f"{store_path}: TSVM hashing needs labeled rows; found {labeled.size}; the store has {store.summary()}")
        pool = rows[labels < 0] if (labels < 0).any() else rows[labels >= 0]
        rng = np.random.default_rng(seed)
        if 0 < max_labeled < labeled.size:
            labeled = stratified_sample(labeled, store.labels()[labeled], max_labeled, rng)
            console.print(f"TSVM hashing on {labeled.size:,} of the labeled rows (--max-labeled; 0 for all)")
        unl = np.sort(rng.choice(pool, min(n_unlabeled, pool.size), replace=False)) if n_unlabeled > 0 else None
        X = _dense(store.take(labeled))
        XU = None if unl is None or unl.size == 0 else _dense(store.take(unl))
        model = TSVMHashing(n_bits=bits, mode=mode, C=C, balance=balance, random_state=seed)
        n_classes = len(np.unique(store.labels()[labeled]))
        if n_classes < 2:
            raise CLIError(f"{store_path}: TSVM hashing needs at least 2 classes among the labeled rows")
        what = "choosing C (1 or 10) and training tree nodes" if C == "auto" else "training tree nodes"
        with task_progress(what, model.progress_total(n_classes)) as advance:
            model.fit(X, store.labels()[labeled], X_unlabeled=XU, progress=advance)
    else:
        model = hasher_class(method)(n_bits=bits, random_state=seed)
        with task_progress(f"reading {rows.size:,} training rows", int(rows.size)) as advance:
            X = _read_rows(store, rows, advance)
        model.fit(X)
    model.save(out)
    console.print(f"saved {type(model).__name__} ({model.n_bits_} bits, {model.n_features_in_}-d input, "
                  f"{'split ' + repr(split) if split else 'all rows'}: {rows.size:,} rows) to {out}")


def _read_rows(store, rows, advance, block: int = 8192):
    import numpy as np

    parts = []
    for lo in range(0, rows.size, block):
        parts.append(_dense(store.take(rows[lo : lo + block])))
        advance(parts[-1].shape[0])
    return np.concatenate(parts) if parts else np.empty((0, store.dim), np.float32)


def _dense(block):
    return block.toarray() if hasattr(block, "toarray") else block


def _load_queries(path: str, dim: int):
    """Query rows from a .npy file, refused with one line naming --query-npy."""
    import numpy as np

    check_input_file(path, "a .npy file of query rows", "--query-npy")
    try:
        X = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError):
        # numpy's own text suggests allow_pickle=True, which is not for a user to do.
        raise CLIError(f"--query-npy {path}: not a readable .npy array of numbers") from None
    if not isinstance(X, np.ndarray):
        X.close()
        raise CLIError(f"--query-npy {path}: an .npz archive; give one .npy array of query rows")
    if X.ndim == 1:
        X = X[None, :]  # one query vector
    if X.ndim != 2 or X.shape[0] == 0 or X.dtype.kind not in "biuf":
        raise CLIError(f"--query-npy {path}: expected numeric query rows (n, {dim}), got {X.dtype} of shape {X.shape}")
    if not np.isfinite(X).all():
        raise CLIError(f"--query-npy {path}: contains NaN or infinity")
    if X.shape[1] != dim:
        raise CLIError(f"--query-npy {path}: rows have {X.shape[1]} features but the model expects {dim}")
    return X


@app.command("index")
@cluster_options
def index(
    model_path: str = typer.Argument(..., metavar="MODEL", help="Hasher model file from `hardneg hash train`."),
    store_path: str = typer.Argument(..., metavar="STORE", help="FeatureStore to encode and index."),
    out: str = out_option("Index file to write (a sidecar <out>.ids.npz holds the ids)."),
    chunk_rows: int = typer.Option(8192, "--chunk-rows", min=1, help="Rows encoded per chunk."),
    nlist: int = typer.Option(
        None, "--nlist", min=1, help="Approximate search: cluster the codes into this many inverted lists (FAISS "
        "IndexBinaryIVF; about 1-4 x sqrt(n)). Default: exact, exhaustive search."
    ),
    nprobe: int = typer.Option(16, "--nprobe", min=1, help="Approximate search: lists scanned per query (saved with the index)."),
    work_dir: str = typer.Option(
        None, "--work-dir", help="With --nlist: build in bounded memory, saving each chunk's codes and lists in this "
        "folder; a rerun after a kill resumes there (the folder is removed when the index is written). The index "
        "numbers its codes by store row and keeps no id table (for stores of tens of millions of rows)."
    ),
    runner=None,
):
    """Encode every row of a store and write a persistent Hamming index."""
    from .._parallel._partition import store_url
    from ..hashing import load_hasher
    from ..index import HammingIndex
    from ..store import FeatureStore

    check_output_file(out, "--out", sidecars=(".ids.npz",), inputs=(store_path, model_path))
    check_input_file(model_path, "a hasher model file")
    hasher = load_hasher(model_path)
    if not hasattr(hasher, "transform") or type(hasher).__name__ not in _HAMMING_CLASSES:
        raise CLIError(f"{model_path}: product-quantization codes cannot go into a Hamming index")
    # Opened by its absolute path (or URL): the index records it, and `hash search` finds the store from any folder.
    store = FeatureStore.open(store_url(store_path))
    if store.dim != hasher.n_features_in_:
        raise CLIError(f"{store_path} has {store.dim}-d features but the model expects {hasher.n_features_in_}")
    if work_dir is not None:
        _index_streaming(store, hasher, out, nlist=nlist, nprobe=nprobe, work_dir=work_dir, block_rows=chunk_rows,
                         in_process=runner.client is None)
        return
    with task_progress("encoding", len(store)) as advance:
        # workers open the model file themselves; in process the loaded hasher is used
        idx = HammingIndex.from_store(store, hasher if runner.client is None else model_path, chunk_rows=chunk_rows, runner=runner,
                                     progress=advance)
    if nlist is not None:
        if nlist > len(idx):
            raise CLIError(f"--nlist {nlist}: more lists than the {len(idx):,} codes to index")
        idx = idx.to_approximate(nlist, nprobe)
    idx.save(out)
    mode = f", approximate: {nlist} lists, {nprobe} probed" if nlist is not None else ""
    console.print(f"indexed {len(idx):,} codes of {idx.n_bits} bits into {out}{mode}")


def _index_streaming(store, hasher, out: str, *, nlist, nprobe: int, work_dir: str, block_rows: int, in_process: bool) -> None:
    """`hash index --work-dir`: the resumable IVF build (hardneg.index.build_ivf_index) over the store."""
    from ..index import StoreCodes, build_ivf_index

    if nlist is None:
        raise CLIError("--work-dir: only with --nlist (the resumable build makes an approximate index)")
    if not in_process:
        raise CLIError("--work-dir: the resumable build runs in this process; drop --scheduler/--workers")
    if nlist > len(store):
        raise CLIError(f"--nlist {nlist}: more lists than the {len(store):,} codes to index")
    meta = {"hasher": type(hasher).__name__, "hasher_fingerprint": hasher.fingerprint(), "store": str(store.path)}
    with task_progress("encoding", len(store)) as advance:
        try:
            idx = build_ivf_index(StoreCodes(store, hasher, block_rows=block_rows), out, nlist=nlist, nprobe=nprobe,
                                  work_dir=work_dir, meta=meta, progress=advance)
        except ValueError as exc:
            raise CLIError(f"--work-dir {work_dir}: {exc}") from None
    console.print(f"indexed {len(idx):,} codes of {idx.n_bits} bits into {out}, approximate: {nlist} lists, "
                  f"{nprobe} probed (ids: store rows)")


def _row_ids_to_store_ids(store, rows):
    """Item ids of a row-id index's result rows (-1: ""), read from the store's item table for these rows only."""
    import numpy as np
    import pyarrow as pa

    rows = np.asarray(rows)
    flat = rows.ravel()
    ids = store.items.column("id").take(pa.array(np.maximum(flat, 0))).to_numpy(zero_copy_only=False).astype(str)
    return np.where(flat >= 0, ids, "").reshape(rows.shape)


@app.command("search")
def search(
    model_path: str = typer.Argument(..., metavar="MODEL", help="The hasher model the index was built with."),
    index_path: str = typer.Argument(..., metavar="INDEX", help="Index file from `hardneg hash index`."),
    store_path: str = typer.Option(
        None, "--store", help="Store of the items (query ids, query-image settings, labels, tags, paths). Default: the store the index was built from."
    ),
    query_id: list[str] = query_id_option(),
    query_image: list[str] = typer.Option(
        None, "--query-image", help="Image file to query with (repeatable); extracted with the store's own extractor settings."
    ),
    query_npy: str = typer.Option(None, "--query-npy", help=".npy file of query feature rows."),
    k: int = k_option(10, "Results per query (at most the size of the index)."),
    nprobe: int = typer.Option(None, "--nprobe", min=1, help="Approximate index: lists scanned per query (default: the index's)."),
    keep_query: bool = typer.Option(False, "--keep-query", help="Keep a stored query item in its own results (left out by default)."),
    model: str = typer.Option(None, "--model", help="With --query-image: the torch model file of a store made with --model."),
    trust_model: bool = typer.Option(False, "--trust-model", help="Allow --model FILE to load (it runs code)."),
    as_json: bool = json_option(),
    csv_out: str = csv_option(),
    html_out: str = html_option(),
):
    """Query by example: the k nearest indexed items of each query by Hamming distance.

    Results show each item's label, tags and image path (from the store); with
    --html a contact sheet marks results that share the query's label.
    """
    from ..hashing import load_hasher
    from ..index import HammingIndex

    check_input_file(index_path, "an index file")
    check_input_file(model_path, "a hasher model file")
    check_result_outputs(as_json, csv_out, html_out, inputs=(index_path, model_path))
    given = [bool(query_npy), bool(query_id), bool(query_image)]
    if sum(given) != 1:
        raise CLIError("give queries with one of --query-id ID, --query-image FILE or --query-npy FILE")
    hasher = load_hasher(model_path)
    idx = HammingIndex.load(index_path)
    try:
        idx.check_hasher(hasher)  # codes from another hasher would give meaningless neighbours
    except ValueError as exc:
        raise CLIError(f"{index_path}: {exc} ({model_path})") from None
    store = _open_store(store_path, idx, required=bool(query_id or query_image))
    if store is not None and store.dim != hasher.n_features_in_:
        raise CLIError(f"--store {store_path or store.path} has {store.dim}-d features but {model_path} expects {hasher.n_features_in_}")
    rebuild = f"hardneg hash index {model_path} {store.path} -o {index_path}" if store is not None else ""
    if store is not None and idx.row_ids:
        rebuild += f" --nlist {idx.nlist} --work-dir DIR"
        try:
            idx.check_store(store)
        except ValueError as exc:
            raise CLIError(f"{index_path}: {exc} ({store.path}); rebuild it: {rebuild}") from None
    if store is not None and not idx.row_ids and is_same_store(idx.meta.get("store"), store.path):
        check_index_current(idx.ids, store, index_path, rebuild)
    queries: list[dict] = []
    if query_npy:
        X = _load_queries(query_npy, hasher.n_features_in_)
        queries = [{"name": f"row {i}"} for i in range(len(X))]
    elif query_id:
        rows, X, q_infos = stored_queries(store, list(query_id))
        queries = [{"name": q, "id": q, "row": r, "query_path": info["path"]} for q, r, info in zip(query_id, rows, q_infos)]
    else:
        X = extract_query_images(store, list(query_image), model=model, trust_model=trust_model)
        queries = [{"name": f, "query_path": f} for f in query_image]
    if len(idx) == 0:
        raise CLIError(f"{index_path}: the index is empty")
    drop = not keep_query and any("id" in q for q in queries)
    k_search = min(k + (1 if drop else 0), len(idx))
    res = idx.search(hasher.transform(X), k_search, nprobe=nprobe if idx.approximate else None)
    found, dist = res.ids, res.distances
    pos = None
    if idx.row_ids and store is not None:  # ids are store rows: the store's ids of the k rows found, and nothing more
        found = _row_ids_to_store_ids(store, res.rows)
        pos = {str(i): int(r) for i, r in zip(found.ravel(), res.rows.ravel()) if r >= 0}
    _warn_ties(dist, idx.n_bits)
    results = _rank_rows(store, queries, found, dist, k, drop, "distance", lambda d: int(d), pos=pos)
    title = f"top {min(k, len(idx))} by Hamming distance ({idx.n_bits} bits)"
    emit_results(results, title=title, score="distance", as_json=as_json, csv_out=csv_out, html_out=html_out,
                 groups=_groups(queries, results), query_column=True)


def _open_store(store_path, idx, *, required: bool):
    """The store given by --store, else the one the index was built from (when it still exists)."""
    from ..store import FeatureStore, StoreError
    from ..store._feature_store import store_location

    if store_path:
        return FeatureStore.open(store_path)
    recorded = idx.meta.get("store")
    try:
        exists = bool(recorded) and (store_location(recorded) / "meta.json").is_file()
    except (StoreError, ValueError, OSError):
        exists = False
    if exists:
        return FeatureStore.open(recorded)
    if required:
        raise CLIError("--store: needed for --query-id and --query-image (the index does not name a store that exists)")
    return None


def _rank_rows(store, queries, found_ids, values, k, drop, score, cast, *, pos=None) -> list[dict]:
    """Results of every query, with store columns; a stored query is dropped from its own results.
    ``pos``: the store row of each found id, when known (a row-id index), instead of a table of every id."""
    if pos is None and store is not None:
        flat = [str(i) for row in found_ids for i in row]
        pos = {i: int(r) for i, r in zip(flat, store.rows_of(flat)) if r >= 0}
    pos = pos or {}
    out = []
    for q, ids_row, val_row in zip(queries, found_ids, values):
        keep = [(str(i), v) for i, v in zip(ids_row, val_row) if not (drop and str(i) == q.get("id"))][:k]
        rows = [pos.get(i) for i, _ in keep]
        infos = item_info(store, [r for r in rows if r is not None]) if store is not None else []
        info_of = dict(zip([r for r in rows if r is not None], infos))
        for rank, ((item_id, v), r) in enumerate(zip(keep, rows), 1):
            info = info_of.get(r, {}) if r is not None else {}
            rel = same_class(store, q.get("row"), r) if r is not None else None
            out.append({"query": q["name"], "rank": rank, "id": item_id, score: cast(v), "label": info.get("label"),
                        "tags": info.get("tags", []), "path": info.get("path"), "relevant": rel})
    return out


def _warn_ties(dist, n_bits: int) -> None:
    """One warning line when every result of a query is at the same Hamming distance: the
    codes do not separate the items, and the order shown is only the order of the ids."""
    import numpy as np

    from ._console import err_console

    dist = np.asarray(dist)
    if dist.ndim != 2 or dist.shape[1] < 2:
        return
    tied = (dist == dist[:, :1]).all(axis=1)
    if tied.any():
        which = "every query" if tied.all() else f"{int(tied.sum())} of {len(tied)} queries"
        err_console.print(f"warning: all results of {which} are at the same Hamming distance "
                          f"({int(dist[tied][0, 0])} of {n_bits} bits): the codes do not tell them apart and they are in id order; "
                          "train a hasher with more bits (e.g. --bits 64)", markup=False, highlight=False, soft_wrap=True)


def _groups(queries, results) -> list[dict]:
    return [{"name": f"query {q['name']}", "query_path": q.get("query_path"),
             "results": [r for r in results if r["query"] == q["name"]]} for q in queries]


@app.command("eval")
@cluster_options
def eval_cmd(
    model_path: str = typer.Argument(..., metavar="MODEL", help="Hasher model file from `hardneg hash train`."),
    store_path: str = typer.Argument(..., metavar="STORE", help="Labeled FeatureStore."),
    queries_split: str = typer.Option("test", "--queries", help="Split whose items are the queries."),
    database_split: str = typer.Option(
        None, "--database", help="Split searched (default: every other row; '' for all rows, each query left out of its own results)."
    ),
    k: int = typer.Option(100, "--k", "-k", min=1, help="mAP@k and precision@k at this rank."),
    max_queries: int = typer.Option(1000, "--max-queries", min=1, help="At most this many queries (a seeded random subset)."),
    seed: int = typer.Option(0, "--seed", min=0, max=2**32 - 1, help="Seed of the query subset."),
    as_json: bool = json_option(),
    csv_out: str = csv_option(),
    html_out: str = html_option(),
    runner=None,
):
    """mAP@k, precision@k and a precision-recall summary of a hasher's Hamming ranking, against labels.

    Queries and database are encoded with the hasher; each query ranks the
    database by exact Hamming distance; an item is relevant when it shares
    the query's label (in a store without labels: its first tag).
    """
    import numpy as np

    from ..eval import hamming_rank, mean_average_precision_at_k, precision_at_k, precision_at_ranks
    from ..hashing import load_hasher
    from ..store import FeatureStore

    check_input_file(model_path, "a hasher model file")
    check_result_outputs(as_json, csv_out, html_out, inputs=(model_path, store_path))
    hasher = load_hasher(model_path)
    if not hasattr(hasher, "transform") or type(hasher).__name__ not in _HAMMING_CLASSES:
        raise CLIError(f"{model_path}: product-quantization codes have no Hamming ranking")
    store = FeatureStore.open(store_path)
    if store.dim != hasher.n_features_in_:
        raise CLIError(f"{store_path} has {store.dim}-d features but {model_path} expects {hasher.n_features_in_}")
    labels = _classes(store)
    q_rows = store.select(split=queries_split) if queries_split else np.arange(len(store))
    q_rows = q_rows[labels[q_rows] >= 0]
    if q_rows.size == 0:
        raise CLIError(f"--queries {queries_split!r}: no labeled (or tagged) rows of {store_path} in this split; the store has {store.summary()}")
    if database_split is None:
        db_rows = np.setdiff1d(np.arange(len(store)), store.select(split=queries_split)) if queries_split else np.arange(len(store))
    else:
        db_rows = store.select(split=database_split) if database_split else np.arange(len(store))
    db_rows = db_rows[labels[db_rows] >= 0]
    if db_rows.size == 0:
        raise CLIError(f"--database {database_split!r}: no labeled (or tagged) rows of {store_path} to search; the store has {store.summary()}")
    rng = np.random.default_rng(seed)
    if q_rows.size > max_queries:
        q_rows = np.sort(rng.choice(q_rows, max_queries, replace=False))
    overlap = bool(np.intersect1d(q_rows, db_rows).size)
    if runner.client is None:
        with task_progress("encoding", int(q_rows.size + db_rows.size)) as advance:
            q_codes = hasher.transform(_read_rows(store, q_rows, advance))
            db_codes = hasher.transform(_read_rows(store, db_rows, advance))
    else:  # the workers encode the whole store (they open the model file themselves); codes come back in row order
        from ..index import HammingIndex

        with task_progress("encoding", len(store)) as advance:
            codes = HammingIndex.from_store(store, model_path, runner=runner, progress=advance).codes()
        q_codes, db_codes = codes[q_rows], codes[db_rows]
    kk = min(k + (1 if overlap else 0), db_rows.size)
    ranked, _ = hamming_rank(q_codes, db_codes, k=kk)
    ranked_rows = db_rows[ranked]
    if overlap:  # a query is not its own result
        keep = ranked_rows != q_rows[:, None]
        ranked_rows = np.array([r[m][: kk - 1] if (~m).any() else r[: kk - 1] for r, m in zip(ranked_rows, keep)])
    k_eff = ranked_rows.shape[1]
    rel = labels[ranked_rows] == labels[q_rows][:, None]
    ranks = [r for r in (1, 10, 50, 100, 500, 1000) if r <= k_eff]
    figures = {"model": model_path, "store": store_path, "queries": int(q_rows.size), "database": int(db_rows.size), "k": k_eff,
               f"map@{k_eff}": float(typing.cast(float, mean_average_precision_at_k(rel, k_eff))), f"p@{k_eff}": float(precision_at_k(rel, k_eff))}
    at, prec = precision_at_ranks(rel, ranks)
    figures.update({f"p@{int(r)}": float(v) for r, v in zip(at, prec)})
    # precision-recall of the whole Hamming ranking, at each radius
    figures["precision_recall_by_radius"] = _pr_by_radius(q_codes, db_codes, labels[q_rows], labels[db_rows], overlap, q_rows, db_rows)
    emit_results(figures, title=f"{model_path} on {store_path}", as_json=as_json, csv_out=csv_out, html_out=html_out,
                 figures=True)
    if as_json or csv_out == "-":
        return
    from rich.table import Table

    pr = Table(title="precision / recall within Hamming radius r")
    for c in ("r", "precision", "recall"):
        pr.add_column(c, justify="right")
    for row in figures["precision_recall_by_radius"]:
        pr.add_row(str(row["radius"]), f"{row['precision']:.4f}", f"{row['recall']:.4f}")
    console.print(pr)


def _classes(store):
    """Class of each row for relevance: its label; in a store without labels, its first tag (-1: none)."""
    import numpy as np

    labels = store.labels()
    if (labels >= 0).any():
        return labels
    first = [t[0] if t else None for t in store.items.column("tags").to_pylist()]
    names = {n: i for i, n in enumerate(sorted({t for t in first if t is not None}))}
    return np.array([names[t] if t is not None else -1 for t in first], dtype=np.int64)


def _pr_by_radius(q_codes, db_codes, q_labels, db_labels, overlap, q_rows, db_rows, block: int = 256) -> list[dict]:
    """Mean precision and recall of the items within Hamming radius r of each query, r = 0..bits."""
    import numpy as np

    from ..eval import hamming_distances

    n_bits = q_codes.shape[1] * 8
    hits = np.zeros(n_bits + 1)
    found = np.zeros(n_bits + 1)
    n_rel = 0
    for lo in range(0, q_codes.shape[0], block):
        d = hamming_distances(q_codes[lo : lo + block], db_codes)
        same = q_labels[lo : lo + block, None] == db_labels[None, :]
        if overlap:
            self_hit = q_rows[lo : lo + block, None] == db_rows[None, :]
            d = np.where(self_hit, n_bits + 1, d)
            same &= ~self_hit
        n_rel += int(same.sum())
        found += np.bincount(d.ravel(), minlength=n_bits + 2)[: n_bits + 1]
        hits += np.bincount(d[same].ravel(), minlength=n_bits + 2)[: n_bits + 1]
    found, hits = np.cumsum(found), np.cumsum(hits)  # within radius r: distance <= r
    out = []
    for r in range(n_bits + 1):
        if found[r] == 0:
            continue
        out.append({"radius": r, "precision": float(hits[r] / found[r]), "recall": float(hits[r] / max(n_rel, 1))})
        if out[-1]["recall"] >= 1.0:
            break
    return out
