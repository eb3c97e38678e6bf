"""``hardneg esvm``: exemplar-SVM feature encoding (E-SVM / RE-SVM): fit, encode a store, search."""

from __future__ import annotations

import numpy as np
import typer
from rich.table import Table

from ._common import CLIError, check_input_file, check_output_dir, check_output_file, cluster_options, console, task_progress

app = typer.Typer(help="Exemplar-SVM feature encoding (Zepeda & Pérez 2015): E-SVM and recursive RE-SVM.", no_args_is_help=True)


@app.command("fit")
def fit(
    store_path: str = typer.Argument(..., help="FeatureStore whose rows give the negatives pool."),
    out: str = typer.Option(..., "--out", "-o", help="Encoder file to write (.npz)."),
    split: str = typer.Option(None, "--split", help="Draw the negatives from this split only (e.g. train); default: the whole store."),
    n_negatives: int = typer.Option(20_000, "--n-negatives", help="Size of the random negatives pool."),
    n_recursions: int = typer.Option(1, "--recursions", "-k", help="k of RE-SVM-k (1: E-SVM)."),
    solver: str = typer.Option("batch", "--solver", help="batch (exact), sgd, liblinear (slow baseline) or lda (whitened LDA, an extra)."),
    lam: float = typer.Option(0.1, "--lam", help="λ of Eq. (1)."),
    alpha_pos: float = typer.Option(1.0, "--alpha-pos", help="α₊ of Eq. (1)."),
    alpha_neg: float = typer.Option(
        None, "--alpha-neg", help="α₋ of Eq. (1); default: 2 λ / pool size (the negatives' total weight α₋ N / λ = 2)."
    ),
    min_negatives: int = typer.Option(200, "--min-negatives", help="Smallest pool accepted."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
):
    """Sample a negatives pool from a store and fit an E-SVM / RE-SVM encoder."""
    from ..encoding import ESVMEncoder
    from ..store import FeatureStore

    check_output_file(out, "--out", inputs=(store_path,))
    store = FeatureStore.open(store_path)
    rows = store.select(split=split) if split else np.arange(len(store))
    if rows.size == 0:
        raise CLIError(f"--split {split}: no rows of {store_path} are in this split")
    rng = np.random.default_rng(seed)
    if rows.size > n_negatives:
        rows = np.sort(rng.choice(rows, n_negatives, replace=False))
    block = store.take(rows)
    X = block.toarray() if hasattr(block, "toarray") else block
    enc = ESVMEncoder(
        n_recursions=n_recursions, solver=solver, lam=lam, alpha_pos=alpha_pos, alpha_neg="auto" if alpha_neg is None else alpha_neg,
        n_negatives=max(n_negatives, min_negatives), min_negatives=min_negatives, random_state=seed,
    )
    with task_progress("encoding the negatives pool", X.shape[0] * (n_recursions - 1) or None) as advance:
        enc.fit(X, progress=advance)
    enc.save(out)
    console.print(f"fitted RE-SVM-{n_recursions} ({solver}) on {X.shape[0]:,} negatives of {store.dim} features into {out}")


@app.command("encode")
@cluster_options
def encode(
    store_path: str = typer.Argument(..., help="FeatureStore to encode."),
    encoder_path: str = typer.Argument(..., help="Encoder file from `hardneg esvm fit`."),
    out: str = typer.Option(..., "--out", "-o", help="New FeatureStore of encodings (resumed if it exists)."),
    n_recursions: int = typer.Option(None, "--recursions", "-k", help="Level of the codes (default: the encoder's)."),
    batch_rows: int = typer.Option(1024, "--batch-rows", help="Rows encoded per batch."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Start the output store afresh."),
    runner=None,
):
    """Encode every row of a store, partition by partition, into a new store (resumable)."""
    from ..distributed import encode_store
    from ..encoding import load_esvm_encoder
    from ..store import FeatureStore

    check_input_file(encoder_path, "an encoder file")
    check_output_dir(out, "--out", inputs=(store_path, encoder_path))
    if batch_rows < 1:
        raise CLIError(f"--batch-rows: must be >= 1, got {batch_rows}")
    enc = load_esvm_encoder(encoder_path)
    if n_recursions is not None and not 1 <= n_recursions <= len(enc.pools_):
        raise CLIError(f"--recursions (-k): expected a level in 1..{len(enc.pools_)} (those {encoder_path} was fitted for), got {n_recursions}")
    src = FeatureStore.open(store_path)
    if src.dim != enc.n_features_in_:
        raise CLIError(f"{store_path} has {src.dim} features but the encoder was fitted on {enc.n_features_in_}")
    # everything is checked before the output is created; a run that fails before its first
    # commit removes the output it created; a commit every --batch-rows rows
    with task_progress("encoding", len(src)) as advance:
        # workers open the encoder file themselves; in process the loaded encoder is used
        dst = encode_store(enc if runner.client is None else encoder_path, src, out, n_recursions=n_recursions, block_rows=batch_rows,
                           overwrite=overwrite, progress=advance, runner=runner)
    console.print(f"{len(dst):,} encodings of {dst.dim} dimensions in {out}")


@app.command("search")
def search(
    store_path: str = typer.Argument(..., help="Database: a FeatureStore of base features."),
    encoder_path: str = typer.Argument(..., help="Encoder file from `hardneg esvm fit`."),
    query_id: list[str] = typer.Option(..., "--query-id", "-q", help="Id of a query row in the store (repeatable)."),
    codes_path: str = typer.Option(None, "--codes", help="Store of the database's encodings (`hardneg esvm encode`); needed for symmetric scoring."),
    mode: str = typer.Option("symmetric", "--mode", help="symmetric (w_j . w°, database encoded) or asymmetric (x_j . w°)."),
    k: int = typer.Option(10, "--k", "-k", help="Results per query."),
    chunk_rows: int = typer.Option(8192, "--chunk-rows", help="Database rows scored per chunk."),
):
    """Query by example: the k database items scored highest by each query's exemplar SVM."""
    from ..encoding import load_esvm_encoder
    from ..store import FeatureStore

    if mode not in ("symmetric", "asymmetric"):
        raise CLIError(f"--mode: expected symmetric or asymmetric, got {mode!r}")
    check_input_file(encoder_path, "an encoder file")  # search writes no output: no --out to check
    enc = load_esvm_encoder(encoder_path)
    store = FeatureStore.open(store_path)
    if store.dim != enc.n_features_in_:
        raise CLIError(f"{store_path} has {store.dim} features but the encoder was fitted on {enc.n_features_in_}")
    pos = {v: i for i, v in enumerate(store.ids())}
    missing = [q for q in query_id if q not in pos]
    if missing:
        raise CLIError(f"--query-id: not in {store_path}: {', '.join(missing[:5])}")
    if k < 1:
        raise CLIError(f"--k: must be >= 1, got {k}")
    if mode == "symmetric":
        if codes_path is None:
            raise CLIError("--mode symmetric needs --codes (the database encoded by `hardneg esvm encode`)")
        db = FeatureStore.open(codes_path)
        if len(db) != len(store) or db.dim != store.dim or (db.ids() != store.ids()).any():
            raise CLIError(f"--codes {codes_path}: does not hold the encodings of {store_path} (rows or ids differ)")
        # the same ids are not enough (the raw features, another encoder's codes): the stamp of `esvm encode` says who wrote them
        stamp = (db.attrs or {}).get("esvm")
        if not isinstance(stamp, dict) or stamp.get("fingerprint") != enc.fingerprint():
            raise CLIError(f"--codes {codes_path}: was not encoded by {encoder_path} ("
                           + ("no E-SVM encoder stamp in its attrs" if not isinstance(stamp, dict) else "another encoder's fingerprint")
                           + f"); encode the database with `hardneg esvm encode {store_path} {encoder_path}`")
        level = stamp.get("n_recursions")
        if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= len(enc.pools_):
            raise CLIError(f"--codes {codes_path}: records level {level!r}, not one of the 1..{len(enc.pools_)} of {encoder_path}")
    else:
        db, level = store, None
    q = store.take(np.array([pos[i] for i in query_id]))
    codes = enc.transform(q.toarray() if hasattr(q, "toarray") else q, n_recursions=level)  # queries at the level of the codes
    k = min(k, len(db))
    best_s = np.full((len(query_id), 0), -np.inf, np.float32)
    best_i = np.empty((len(query_id), 0), np.int64)
    for lo, block in db.iter_chunks(chunk_rows):
        block = block.toarray() if hasattr(block, "toarray") else block
        s = codes @ np.asarray(block, np.float32).T
        best_s = np.hstack([best_s, s])
        best_i = np.hstack([best_i, np.broadcast_to(np.arange(lo, lo + s.shape[1]), s.shape)])
        if best_s.shape[1] > k:
            top = np.argpartition(-best_s, k - 1, axis=1)[:, :k]
            best_s, best_i = np.take_along_axis(best_s, top, 1), np.take_along_axis(best_i, top, 1)
    order = np.argsort(-best_s, axis=1, kind="stable")
    best_s, best_i = np.take_along_axis(best_s, order, 1), np.take_along_axis(best_i, order, 1)
    ids = store.ids()
    table = Table(title=f"top {k} by {mode} E-SVM score")
    for col, justify in (("query", "left"), ("rank", "right"), ("id", "left"), ("score", "right")):
        table.add_column(col, justify=justify)
    for name, rows, scores in zip(query_id, best_i, best_s):
        for r, (i, s) in enumerate(zip(rows, scores), 1):
            table.add_row(name if r == 1 else "", str(r), str(ids[i]), f"{s:.4g}")
    console.print(table)
