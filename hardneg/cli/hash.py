"""``hardneg hash``: train a hasher, index a FeatureStore, search by example."""

from __future__ import annotations

import numpy as np
import typer
from rich.table import Table

from ._common import CLIError, check_input_file, check_output_file, console, task_progress

app = typer.Typer(help="Compact binary codes: train hashers, build Hamming indexes, search.", no_args_is_help=True)

_METHODS_HELP = "tsvm (TSVM hashing on hierarchical trees), lsh, pca-itq, pca-rr, sklsh."
# = hardneg.hashing MAX_BITS, repeated so the parser refuses it before faiss is imported.
# Hash codes are meant to be compact: 4,096 bits is already 512 bytes per item, and
# training memory and time grow with dim x bits (100,000 bits took 5.8 GB, then crashed).
_MAX_BITS = 4096


@app.command("train")
def train(
    store_path: str = typer.Argument(..., help="FeatureStore with the training features."),
    out: str = typer.Option(..., "--out", "-o", help="Model file to write (.npz)."),
    method: str = typer.Option("tsvm", "--method", "-m", help=_METHODS_HELP),
    bits: int = typer.Option(
        64, "--bits", "-b", min=1, max=_MAX_BITS,
        help=f"Code length in bits, 1 to {_MAX_BITS} (codes are meant to be compact; training memory grows with dim x bits).",
    ),
    split: str = typer.Option(None, "--split", help="Use only rows of this split (e.g. train)."),
    n_unlabeled: int = typer.Option(10000, "--n-unlabeled", min=0, help="Unlabeled rows sampled for TSVM hashing (0: none)."),
    mode: str = typer.Option("bits", "--mode", help="TSVM hashing: bits (Eq. 12) or itq (embed, then ITQ)."),
    cost: float = typer.Option(1.0, "--C", help="TSVM hashing: cost C of the labeled samples at every node."),
    balance: bool = typer.Option(
        False, "--balance/--no-balance", help="TSVM hashing: the RTSVM balancing constraint at every node (Eq. 6)."
    ),
    seed: int = typer.Option(0, "--seed", min=0, max=2**32 - 1, help="Random seed."),
):
    """Fit a hasher on a store (labels are used by TSVM hashing only)."""
    from ..hashing import HASHERS, TSVMHashing
    from ..store import FeatureStore

    if method not in HASHERS or method == "pq":
        raise CLIError(f"--method: expected one of {', '.join(m for m in HASHERS if m != 'pq')}, got {method!r}")
    if method == "tsvm" and mode not in ("bits", "itq"):
        raise CLIError(f"--mode: expected bits or itq, got {mode!r}")
    if not (np.isfinite(cost) and cost > 0):
        raise CLIError(f"--C: must be a positive number, got {cost}")
    check_output_file(out, "--out")
    store = FeatureStore.open(store_path)
    if method in ("pca-itq", "pca-rr") and bits > store.dim:
        raise CLIError(f"--bits {bits}: {method} makes at most one bit per input dimension ({store.dim} in {store_path})")
    rows = store.select(split=split) if split else np.arange(len(store))
    if split and rows.size == 0:
        raise CLIError(f"--split {split!r}: no rows of {store_path} are in this split")
    if rows.size < 2:
        raise CLIError(f"{store_path}: fewer than 2 rows to train on (split={split!r})")
    if method == "tsvm":
        labels = store.labels()[rows]
        labeled = rows[labels >= 0]
        if labeled.size < 2:
            raise CLIError(f"{store_path}: TSVM hashing needs labeled rows; found {labeled.size}")
        pool = rows[labels < 0] if (labels < 0).any() else rows[labels >= 0]
        rng = np.random.default_rng(seed)
        unl = np.sort(rng.choice(pool, min(n_unlabeled, pool.size), replace=False)) if n_unlabeled > 0 else None
        X = _dense(store.take(labeled))
        XU = None if unl is None or unl.size == 0 else _dense(store.take(unl))
        model = TSVMHashing(n_bits=bits, mode=mode, C=cost, balance=balance, random_state=seed)
        n_classes = len(np.unique(store.labels()[labeled]))
        _, n_trees = model._plan(n_classes) if n_classes >= 2 else (None, 0)
        if n_classes < 2:
            raise CLIError(f"{store_path}: TSVM hashing needs at least 2 classes among the labeled rows")
        with task_progress("training tree nodes", n_trees * (n_classes - 1)) as advance:
            model.fit(X, store.labels()[labeled], X_unlabeled=XU, progress=advance)
    else:
        model = HASHERS[method](n_bits=bits, random_state=seed)
        model.fit(_dense(store.take(rows)))
    model.save(out)
    console.print(f"saved {type(model).__name__} ({model.n_bits_} bits, {model.n_features_in_}-d input) to {out}")


def _dense(block):
    return block.toarray() if hasattr(block, "toarray") else block


def _load_queries(path: str, dim: int) -> np.ndarray:
    """Query rows from a .npy file, refused with one line naming --query-npy."""
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
def index(
    store_path: str = typer.Argument(..., help="FeatureStore to encode and index."),
    model_path: str = typer.Argument(..., help="Hasher model file from `hardneg hash train`."),
    out: str = typer.Option(..., "--out", "-o", help="Index file to write (a sidecar <out>.ids.npz holds the ids)."),
    chunk_rows: int = typer.Option(8192, "--chunk-rows", min=1, help="Rows encoded per chunk."),
):
    """Encode every row of a store and write a persistent Hamming index."""
    from ..hashing import load_hasher
    from ..index import HammingIndex
    from ..store import FeatureStore

    check_output_file(out, "--out", sidecars=(".ids.npz",))
    check_input_file(model_path, "a hasher model file")
    hasher = load_hasher(model_path)
    if not hasattr(hasher, "transform") or type(hasher).__name__ == "PQHasher":
        raise CLIError(f"{model_path}: product-quantization codes cannot go into a Hamming index")
    store = FeatureStore.open(store_path)
    if store.dim != hasher.n_features_in_:
        raise CLIError(f"{store_path} has {store.dim}-d features but the model expects {hasher.n_features_in_}")
    with task_progress("encoding", len(store)) as advance:
        idx = HammingIndex.from_store(store, hasher, chunk_rows=chunk_rows, progress=advance)
    idx.save(out)
    console.print(f"indexed {len(idx):,} codes of {idx.n_bits} bits into {out}")


@app.command("search")
def search(
    index_path: str = typer.Argument(..., help="Index file from `hardneg hash index`."),
    model_path: str = typer.Argument(..., help="The hasher model the index was built with."),
    store_path: str = typer.Option(None, "--store", help="Store holding the query rows (with --query-id)."),
    query_id: list[str] = typer.Option(None, "--query-id", "-q", help="Id of a query row in --store (repeatable)."),
    query_npy: str = typer.Option(None, "--query-npy", help=".npy file of query feature rows."),
    k: int = typer.Option(10, "--k", "-k", min=1, help="Results per query (at most the size of the index)."),
):
    """Query by example: the k nearest indexed items of each query by Hamming distance."""
    from ..hashing import load_hasher
    from ..index import HammingIndex

    check_input_file(index_path, "an index file")
    check_input_file(model_path, "a hasher model file")
    hasher = load_hasher(model_path)
    idx = HammingIndex.load(index_path)
    try:
        idx.check_hasher(hasher)  # codes from another hasher would give meaningless neighbours
    except ValueError as exc:
        raise CLIError(f"{index_path}: {exc} ({model_path})") from None
    if query_npy:
        X = _load_queries(query_npy, hasher.n_features_in_)
        names = [f"row {i}" for i in range(len(X))]
    elif query_id and store_path:
        from ..store import FeatureStore

        store = FeatureStore.open(store_path)
        if store.dim != hasher.n_features_in_:
            raise CLIError(f"--store {store_path} has {store.dim}-d features but {model_path} expects {hasher.n_features_in_}")
        ids = store.ids()
        pos = {v: i for i, v in enumerate(ids)}
        missing = [q for q in query_id if q not in pos]
        if missing:
            raise CLIError(f"--query-id: not in {store_path}: {', '.join(missing[:5])}")
        X = _dense(store.take(np.array([pos[q] for q in query_id])))
        names = list(query_id)
    else:
        raise CLIError("give queries with --query-npy FILE, or --store STORE and --query-id ID")
    if len(idx) == 0:
        raise CLIError(f"{index_path}: the index is empty")
    k = min(k, len(idx))
    found, dist = idx.search(hasher.transform(X), k)
    table = Table(title=f"top {k} by Hamming distance ({idx.n_bits} bits)")
    table.add_column("query")
    table.add_column("rank", justify="right")
    table.add_column("id")
    table.add_column("distance", justify="right")
    for name, row_ids, row_dist in zip(names, found, dist):
        for r, (i, dd) in enumerate(zip(row_ids, row_dist), 1):
            table.add_row(name if r == 1 else "", str(r), str(i), str(int(dd)))
    console.print(table)
