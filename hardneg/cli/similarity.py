"""``hardneg similarity``: learn a sparse similarity (SOLIS), index a store, search."""

from __future__ import annotations

import typer

from ._console import console, task_progress
from ._inputs import check_index_current, check_output_file, is_same_store, item_info, rows_of_ids
from ._results import check_result_outputs, emit_results
from ..exceptions import CLIError
from ._options import (
    cost_alias_option,
    cost_option,
    csv_option,
    html_option,
    json_option,
    k_option,
    out_option,
    pick_cost,
    query_id_option,
    solver_option,
)

app = typer.Typer(help="Sparse online similarity learning (SOLIS) for bag-of-words stores, with an inverted index.", no_args_is_help=True)

_SOLVER_HELP = "ada (default), afb, da, tg (SOLIS solvers); oasis-diag, oasis (full matrix); tfidf (no learning)."
# Peak bytes per random triplet: the sampler's int64 columns and temporaries, then np.unique's sort
# and inverse over the (n, 3) array (measured: ~147 B per triplet at 2M triplets).
_TRIPLET_BYTES = 160


def _check_n_triplets(n_triplets: int) -> None:
    """Refuse ``--n-triplets`` that cannot fit in memory before anything is allocated."""
    from .._validation import _human, available_memory

    if n_triplets < 1:
        raise CLIError(f"--n-triplets: must be >= 1, got {n_triplets}")
    avail = available_memory()
    if avail is not None and n_triplets * _TRIPLET_BYTES > avail:
        raise CLIError(
            f"--n-triplets {n_triplets:,}: needs about {_human(n_triplets * _TRIPLET_BYTES)} of memory but only {_human(avail)}"
            f" is available; the largest value that fits is {avail // _TRIPLET_BYTES:,}"
        )


def _open_sparse(path):
    from ..store import FeatureStore

    store = FeatureStore.open(path)
    if not store.is_sparse:
        raise CLIError(f"{path}: the store is in the dense layout; similarity learning needs a sparse bag-of-words store")
    return store


def _make_model(solver: str, lam: float, eta: float, w_init: float, C: float, seed: int):
    from ..similarity import BASELINES, SOLVERS

    if solver in SOLVERS:
        model = SOLVERS[solver](lam=lam, w_init=w_init, random_state=seed)
        if "eta" in model.get_params():
            model.set_params(eta=eta)
        else:  # S-DA's step is 1/γ (benchmarks/similarity_solis.py searches it the same way)
            model.set_params(gamma=1.0 / eta)
        return model
    if solver in ("oasis", "oasis-diag"):
        return BASELINES[solver](C=C, random_state=seed)
    if solver == "tfidf":
        return BASELINES["tfidf"](random_state=seed)
    raise CLIError(f"--solver: expected one of {', '.join([*SOLVERS, *BASELINES])}, got {solver!r}")


@app.command("train")
def train(
    store_path: str = typer.Argument(..., metavar="STORE", help="Sparse FeatureStore (bag of words) with class labels."),
    out: str = out_option("Model file to write (.npz)."),
    solver: str = solver_option("ada", _SOLVER_HELP),
    protocol: str = typer.Option("concept", "--protocol", help="concept: 7 positives x 6 x 500 negatives per class; random: --n-triplets random triplets."),
    n_triplets: int = typer.Option(1_000_000, "--n-triplets", help="Triplets for --protocol random."),
    n_positives: int = typer.Option(7, "--n-positives", help="Positives per class (--protocol concept)."),
    n_negatives: int = typer.Option(500, "--n-negatives", help="Negatives per class (--protocol concept)."),
    lam: float = typer.Option(1e-4, "--lam", help="l1 strength λ (SOLIS)."),
    eta: float = typer.Option(0.1, "--eta", min=1e-12, help="Step size η (SOLIS TG, AFB, ADA; S-DA: γ = 1/η). 0.1 was chosen most often on held-out triplets."),
    w_init: float = typer.Option(0.0, "--w-init", help="Initial weights: 0 (paper) or 1 (a correction to TF-IDF cosine)."),
    cost: float = cost_option(0.1, "OASIS aggressiveness C."),
    cost_alias: float = cost_alias_option(),
    tfidf: bool = typer.Option(True, "--tfidf/--no-tfidf", help="Learn on TF-IDF weighted, l2-normalized vectors (idf from the store)."),
    split: str = typer.Option(None, "--split", help="Draw triplets only from rows of this split."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
):
    """Learn a similarity from triplets drawn from the store's labels."""
    import numpy as np

    from ..negatives import concept_triplets, random_triplets
    from ..similarity import TfidfCosine, tfidf_transform
    from ..similarity._checks import check_bow

    if protocol not in ("concept", "random"):
        raise CLIError(f"--protocol: expected concept or random, got {protocol!r}")
    if protocol == "random" and solver != "tfidf":
        _check_n_triplets(n_triplets)
    check_output_file(out, "--out", inputs=(store_path,))
    model = _make_model(solver, lam, eta, w_init, pick_cost(cost, cost_alias), seed)
    store = _open_sparse(store_path)
    rows = store.select(split=split) if split else None
    labels = store.labels()
    if solver == "tfidf":
        model.fit(store)
    else:
        rng = np.random.default_rng(seed)
        if protocol == "concept":
            triplets = concept_triplets(labels, n_positives=n_positives, n_negatives=n_negatives, rows=rows, random_state=rng)
        else:
            triplets = random_triplets(labels, n_triplets, rows=rows, random_state=rng)
        used, local = np.unique(triplets, return_inverse=True)
        X = check_bow(store.take(used), "store rows")
        idf = None
        if tfidf:
            idf = TfidfCosine().fit(store).idf_
            X = tfidf_transform(X, idf, l2=True)
        local = local.reshape(triplets.shape)
        with task_progress("learning from triplets", len(local)) as advance:
            for chunk in np.array_split(local, max(1, len(local) // 100_000)):
                model.partial_fit(X, triplets=chunk)
                advance(len(chunk))
        if tfidf:
            model.set_input_transform(idf, l2=True)
    model.save(out)
    console.print(
        f"saved {type(model).__name__} over {model.n_features_in_:,} words to {out}"
        f" (sparsity {100 * model.sparsity_:.1f}%)"
    )


@app.command("index")
def index(
    model_path: str = typer.Argument(..., metavar="MODEL", help="Model file from `hardneg similarity train`."),
    store_path: str = typer.Argument(..., metavar="STORE", help="Sparse FeatureStore to index."),
    out: str = out_option("Index file to write (.npz)."),
    chunk_rows: int = typer.Option(8192, "--chunk-rows", help="Rows read per chunk."),
):
    """Build a persistent inverted index whose postings carry the learned weights."""
    from ..index import InvertedIndex
    from ..similarity import load_similarity

    check_output_file(out, "--out", inputs=(store_path, model_path))
    model = load_similarity(model_path)
    store = _open_sparse(store_path)
    if store.dim != model.n_features_in_:
        raise CLIError(f"{store_path} has {store.dim} words but {model_path} was trained on {model.n_features_in_}")
    with task_progress("indexing", len(store)) as advance:
        idx = InvertedIndex.from_store(store, model, chunk_rows=chunk_rows, progress=advance)
    idx.save(out)
    console.print(f"indexed {len(idx):,} items: {idx.n_postings:,} postings over {idx.active.size:,} of {idx.n_words:,} words into {out}")


@app.command("search")
def search(
    index_path: str = typer.Argument(..., metavar="INDEX", help="Index file from `hardneg similarity index`."),
    store_path: str = typer.Option(..., "--store", help="Store holding the query rows."),
    query_id: list[str] = query_id_option("Id of a query row in --store (repeatable).", required=True),
    k: int = k_option(10, "Results per query."),
    as_json: bool = json_option(),
    csv_out: str = csv_option(),
    html_out: str = html_option(),
):
    """Query by example: the k most similar indexed items of each query."""
    import numpy as np

    from ..index import InvertedIndex

    check_result_outputs(as_json, csv_out, html_out, inputs=(index_path, store_path))

    idx = InvertedIndex.load(index_path)
    store = _open_sparse(store_path)
    if store.dim != idx.n_words:
        raise CLIError(f"{store_path} has {store.dim} words but the index covers {idx.n_words}")
    if is_same_store(idx.meta.get("store"), store.path):
        check_index_current(idx.ids, store, index_path, f"hardneg similarity index MODEL {store.path} -o {index_path}")
    res = idx.search(store.take(np.array(rows_of_ids(store, list(query_id), "--query-id"))), k)
    found, scores = res.ids, res.scores
    found_rows = store.rows_of(np.asarray(found).ravel()).reshape(np.shape(found))
    # item columns (label, tags, path) when the indexed items are rows of --store
    results = []
    for name, row_ids, row_scores, row_rows in zip(query_id, found, scores, found_rows):
        rows = [int(r) if r >= 0 else None for r in row_rows]
        infos = dict(zip([r for r in rows if r is not None], item_info(store, [r for r in rows if r is not None])))
        for rank, (i, s, r) in enumerate(zip(row_ids, row_scores, rows), 1):
            info = infos.get(r, {}) if r is not None else {}
            results.append({"query": name, "rank": rank, "id": str(i), "score": float(s), "label": info.get("label"),
                            "tags": info.get("tags", []), "path": info.get("path")})
    groups = [{"name": f"query {q}", "results": [r for r in results if r["query"] == q]} for q in dict.fromkeys(query_id)]
    emit_results(results, title=f"top {k} by learned similarity", score="score", as_json=as_json, csv_out=csv_out,
                 html_out=html_out, groups=groups, query_column=True)
