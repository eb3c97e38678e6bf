"""``hardneg esvm``: exemplar-SVM feature encoding (E-SVM / RE-SVM): train, encode a store, search."""

from __future__ import annotations

import functools
import sys

import typer

from ._cluster import cluster_options
from ._console import console, task_progress
from ._inputs import check_input_file, check_output_dir, check_output_file, item_info, rows_of_ids
from ._results import check_result_outputs, emit_results
from ..exceptions import CLIError
from ._options import csv_option, html_option, json_option, k_option, out_option, query_id_option, solver_option

app = typer.Typer(help="Exemplar-SVM feature encoding (Zepeda & Pérez 2015): E-SVM and recursive RE-SVM.", no_args_is_help=True)


@app.command("train")
def train(
    store_path: str = typer.Argument(..., metavar="STORE", help="FeatureStore whose rows give the negatives pool."),
    out: str = out_option("Encoder file to write (.npz)."),
    split: str = typer.Option(None, "--split", help="Draw the negatives from this split only (e.g. train); default: the whole store."),
    n_negatives: int = typer.Option(20_000, "--n-negatives", help="Size of the random negatives pool."),
    n_recursions: int = typer.Option(1, "--recursions", help="k of RE-SVM-k (1: E-SVM)."),
    solver: str = solver_option("batch", "batch (exact), sgd, liblinear (slow baseline) or lda (whitened LDA, an extra)."),
    lam: float = typer.Option(0.1, "--lam", help="λ of [Zepeda15] Eq. (1)."),
    alpha_pos: float = typer.Option(1.0, "--alpha-pos", help="α₊ of [Zepeda15] Eq. (1)."),
    alpha_neg: float = typer.Option(
        None, "--alpha-neg", help="α₋ of [Zepeda15] Eq. (1); default: 2 λ / pool size (the negatives' total weight α₋ N / λ = 2)."
    ),
    min_negatives: int = typer.Option(200, "--min-negatives", help="Smallest pool accepted."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
):
    """Sample a negatives pool from a store and fit an E-SVM / RE-SVM encoder."""
    import numpy as np

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


@functools.wraps(train)
def _fit_alias(*args, **kwargs):
    print("hardneg: 'esvm fit' is deprecated; use 'esvm train'", file=sys.stderr)
    return train(*args, **kwargs)


app.command("fit", hidden=True, help="Deprecated name of `hardneg esvm train`.")(_fit_alias)


@app.command("encode")
@cluster_options
def encode(
    encoder_path: str = typer.Argument(..., metavar="ENCODER", help="Encoder file from `hardneg esvm train`."),
    store_path: str = typer.Argument(..., metavar="STORE", help="FeatureStore to encode."),
    out: str = out_option("New FeatureStore of encodings (resumed if it exists)."),
    n_recursions: int = typer.Option(None, "--recursions", help="Level of the codes (default: the encoder's)."),
    batch_rows: int = typer.Option(1024, "--batch-rows", help="Rows encoded per batch."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Start the output store afresh."),
    runner=None,
):
    """Encode every row of a store, partition by partition, into a new store (resumable)."""
    from ..encoding import encode_store
    from ..encoding import load_esvm_encoder
    from ..store import FeatureStore

    check_input_file(encoder_path, "an encoder file")
    check_output_dir(out, "--out", inputs=(store_path, encoder_path))
    if batch_rows < 1:
        raise CLIError(f"--batch-rows: must be >= 1, got {batch_rows}")
    enc = load_esvm_encoder(encoder_path)
    if n_recursions is not None and not 1 <= n_recursions <= len(enc.pools_):
        raise CLIError(f"--recursions: expected a level in 1..{len(enc.pools_)} (those {encoder_path} was fitted for), got {n_recursions}")
    src = FeatureStore.open(store_path)
    if src.dim != enc.n_features_in_:
        raise CLIError(f"{store_path} has {src.dim} features but the encoder was fitted on {enc.n_features_in_}")
    # everything is checked before the output is created; a run that fails before its first
    # commit removes the output it created; a commit every --batch-rows rows
    with task_progress("encoding", len(src)) as advance:
        # workers open the encoder file themselves; in process the loaded encoder is used
        dst = encode_store(enc if runner.client is None else encoder_path, src, out, n_recursions=n_recursions, batch_rows=batch_rows,
                           overwrite=overwrite, progress=advance, runner=runner)
    console.print(f"{len(dst):,} encodings of {dst.dim} dimensions in {out}")


@app.command("search")
@cluster_options
def search(
    encoder_path: str = typer.Argument(..., metavar="ENCODER", help="Encoder file from `hardneg esvm train`."),
    store_path: str = typer.Argument(..., metavar="STORE", help="Database: a FeatureStore of base features."),
    query_id: list[str] = query_id_option(required=True),
    codes_path: str = typer.Option(None, "--codes", help="Store of the database's encodings (`hardneg esvm encode`); needed for symmetric scoring."),
    mode: str = typer.Option("symmetric", "--mode", help="symmetric (w_j . w°, database encoded) or asymmetric (x_j . w°)."),
    k: int = k_option(10, "Results per query."),
    chunk_rows: int = typer.Option(8192, "--chunk-rows", help="Database rows scored per chunk."),
    as_json: bool = json_option(),
    csv_out: str = csv_option(),
    html_out: str = html_option(),
    runner=None,
):
    """Query by example: the k database items scored highest by each query's exemplar SVM."""
    import numpy as np

    from ..encoding import load_esvm_encoder
    from ..encoding._retrieval import esvm_search
    from ..store import FeatureStore

    if mode not in ("symmetric", "asymmetric"):
        raise CLIError(f"--mode: expected symmetric or asymmetric, got {mode!r}")
    check_input_file(encoder_path, "an encoder file")
    check_result_outputs(as_json, csv_out, html_out, inputs=(store_path, encoder_path))
    enc = load_esvm_encoder(encoder_path)
    store = FeatureStore.open(store_path)
    if store.dim != enc.n_features_in_:
        raise CLIError(f"{store_path} has {store.dim} features but the encoder was fitted on {enc.n_features_in_}")
    query_rows = rows_of_ids(store, list(query_id), "--query-id")
    if k < 1:
        raise CLIError(f"--k: must be >= 1, got {k}")
    if mode == "symmetric" and codes_path is None:
        raise CLIError("--mode symmetric needs --codes (the database encoded by `hardneg esvm encode`)")
    k = min(k, len(store))
    with task_progress("scoring", len(store)) as advance:
        try:
            best = esvm_search(enc, store, store.take(np.array(query_rows)), k, mode=mode, codes=codes_path,
                               chunk_rows=chunk_rows, runner=runner, progress=advance)
        except ValueError as exc:
            if not str(exc).startswith("codes "):
                raise
            raise CLIError(f"--{exc} ({encoder_path})") from None
    results = []
    for name, rows, scores in zip(query_id, best.rows, best.scores):
        keep = [(int(r), float(s)) for r, s in zip(rows, scores) if r >= 0]
        for rank, ((r, s), info) in enumerate(zip(keep, item_info(store, [r for r, _ in keep])), 1):
            results.append({"query": name, "rank": rank, "id": info["id"], "score": s, "label": info["label"],
                            "tags": info["tags"], "path": info["path"]})
    row_of = dict(zip(query_id, query_rows))
    groups = [{"name": f"query {q}", "query_path": item_info(store, [row_of[q]])[0]["path"],
               "results": [r for r in results if r["query"] == q]} for q in dict.fromkeys(query_id)]
    emit_results(results, title=f"top {k} by {mode} E-SVM score", score="score", as_json=as_json, csv_out=csv_out,
                 html_out=html_out, groups=groups, query_column=True)
