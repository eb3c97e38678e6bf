"""``hardneg concept``: train a concept from a few positives, search a store with it."""

from __future__ import annotations

from typing import Any

import typer

from ._cluster import cluster_options
from ._console import console, err_console, task_progress
from ._inputs import check_input_file, check_output_file, in_split
from ._results import check_result_outputs, emit_results, ranked_results
from ..exceptions import CLIError
from ..concept import CONCEPT_METHODS, DEFAULT_N_ITER  # a table only: the learners load on first use
from ._options import csv_option, html_option, json_option, k_option, method_option, out_option

_DEFAULT_T = DEFAULT_N_ITER

app = typer.Typer(help="Concept search: Negative Bootstrap + Model Compression (Li et al., IEEE TMM 2013).", no_args_is_help=True)

_METHODS_HELP = "; ".join(f"{name} ({m.summary})" for name, m in CONCEPT_METHODS.items()) + "."
# The library's own bounds (hardneg.concept MAX_ITER, MAX_BINS), repeated here so that
# the option parser refuses them by their CLI names before any work starts.
_MAX_ITER = 1000
_MAX_BINS = 4096
# estimator parameter -> the option that sets it, for the estimator's own parameter errors
_OPTIONS = {"n_iter": "--iterations", "n_candidates": "--candidates", "skip_top": "--skip-top", "n_bins": "--bins",
            "random_state": "--seed"}


def _number(value: str | None, kinds: tuple[type, ...] = (int, float)):
    """An option that is a word ('auto', 'cv') or a number: the number (the first of ``kinds`` that reads it), else the text."""
    if value is None:
        return None
    for kind in kinds:
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _estimator(method: str, iterations: int, candidates: str | None, bins: int, seed: int, skip_top: str | None = None):
    """The estimator of ``--method``, its parameters checked (by its own constraints) before any work starts."""
    from .._validation import validate_params

    if method not in CONCEPT_METHODS:
        raise CLIError(f"--method must be one of {', '.join(CONCEPT_METHODS)}, got {method!r}")
    cls = CONCEPT_METHODS[method].cls
    takes = set(cls._get_param_names())
    # --bins 0 asks for exact tables at compress time; the estimator keeps its default n_bins
    given: dict[str, Any] = {"n_iter": iterations, "n_candidates": _number(candidates), "n_bins": bins or None,
                             "skip_top": _number(skip_top, (float,)), "random_state": seed}
    est = cls(**{name: value for name, value in given.items() if name in takes and value is not None})
    try:
        validate_params(est)
    except ValueError as exc:
        msg = str(exc)
        for name, option in _OPTIONS.items():
            msg = msg.replace(f"The {name!r} parameter of {cls.__name__}", option)
        raise CLIError(msg) from None
    return est


@app.command("train")
def train(
    store_path: str = typer.Argument(..., metavar="STORE", help="FeatureStore holding positives and the tagged pool."),
    concept: str = typer.Option(..., "--concept", "-c", help="Concept tag: items with it are the positives and never negatives."),
    out: str = out_option("Model file to write (.npz)."),
    related: list[str] = typer.Option(
        [], "--related",
        help="Related tags to exclude from the negatives (repeatable); 'auto' finds them as in the paper: "
             "WordNet hyponyms of the concept and tags close to it by Normalized Google Distance over the store's tags.",
    ),
    skip_top: str | None = typer.Option(
        None, "--skip-top",
        help="bootstrap only (extra, not in the paper): skip the top-ranked candidates, likely untagged positives: "
             "'auto' (the default: estimated from held-out positives, the pool's tagged items or, where it has none, spies held out of the positives), a fraction of the candidates, or 0 for the paper's selection.",
    ),
    positives: int = typer.Option(100, "--positives", "-p", min=1, help="Use at most this many tagged items as B+ (random subset)."),
    split: str | None = typer.Option(
        None, "--split", help="Take positives and pool from this split ('' for all rows). Default: train when the store has one, else all rows."
    ),
    method: str = method_option("bootstrap", _METHODS_HELP),
    iterations: int = typer.Option(
        _DEFAULT_T, "--iterations", "-T", min=1, max=_MAX_ITER,
        help=f"Number of meta classifiers T (1 to {_MAX_ITER}; the service's default too).",
    ),
    candidates: str | None = typer.Option(
        None, "--candidates",
        help="bootstrap only: candidates scored per iteration, a number (default 10 x |B+|) or 'cv' "
             "(3 or 10 x |B+|, chosen per concept by 3-fold validation; an extra, not in the paper).",
    ),
    bins: int = typer.Option(
        100, "--bins", min=0, max=_MAX_BINS,
        help=f"Bins per dimension of the compressed model (at most {_MAX_BINS}: a table holds dim x bins values); 0 = exact tables.",
    ),
    seed: int = typer.Option(0, "--seed", min=0, max=2**32 - 1, help="Random seed."),
):
    """Learn a concept classifier from tagged items of a store and save it compressed."""
    import numpy as np
    from rich.table import Table

    from ..store import FeatureStore

    est = _estimator(method, iterations, candidates, bins, seed, skip_top)
    check_output_file(out, "--out", inputs=(store_path,))
    store = FeatureStore.open(store_path)
    split = _default_split(store, split)
    if split and store.select(split=split).size == 0:
        raise CLIError(f"--split {split!r}: no rows of {store_path} are in this split (use --split '' for all rows); {store.summary()}")
    pos_rows = store.select(tags=[concept], split=split)
    if pos_rows.size == 0:
        raise CLIError(
            f"no items tagged {concept!r}{in_split(split)} in {store_path} "
            f"(`hardneg store tag` adds tags); the store has {store.summary()}"
        )
    rng = np.random.default_rng(seed)
    if pos_rows.size > positives:
        pos_rows = np.sort(rng.choice(pos_rows, size=positives, replace=False))
    # B+ stays out of the pool: its items are no held-out positives for skip_top="auto" to estimate from
    pool_rows = np.setdiff1d(store.select(split=split) if split else np.arange(len(store)), pos_rows)
    if related and "auto" in related and len(related) > 1:
        raise CLIError("--related auto: finds the related tags itself; do not combine it with listed tags")
    related_arg = "auto" if related == ["auto"] else related
    n_iter = est.n_iter
    X_pos = store.take(pos_rows)
    if hasattr(X_pos, "toarray"):
        X_pos = X_pos.toarray()
    with task_progress(f"training '{concept}' ({method})", n_iter) as advance:
        est.fit(X_pos, store, exclude_tags=[concept], related_tags=related_arg, pool_rows=pool_rows, progress=advance)
    if hasattr(est, "skip_top"):
        console.print(_skip_line(est, concept))
    if related_arg == "auto":
        found = ", ".join(f"{t} ({why})" for t, why in est.related_tags_.items()) or "none"
        console.print(f"related tags excluded from the negatives: {found}")
    model = est.compress(None if bins == 0 else bins)
    # the training positives' ids: `concept search --new` leaves them out (the finds the user did not give)
    model.meta.update(concept=concept, store=str(store.path), positives=int(pos_rows.size),
                      positive_ids=[str(i) for i in store.ids()[pos_rows].tolist()])
    model.save(out)
    table = Table(title=f"concept '{concept}' -> {out}", show_header=True)
    table.add_column("iteration")
    table.add_column("support vectors")
    table.add_column("most frequent tags of the selected negatives")
    for rec, counts in zip(est.iterations_, est.negative_tag_counts(top=5)):
        table.add_row(str(rec["iteration"]), str(rec["n_support"]), ", ".join(f"{t} ({n})" for t, n in counts) or "-")
    console.print(table)


def _skip_line(est, concept: str) -> str:
    """One line on what ``skip_top`` estimated: the share of candidates passed over as likely untagged positives."""
    if est.skip_top == 0:
        return "negatives: the paper's selection (--skip-top 0), no candidates skipped"
    share = f"skipped {100 * est.skipped_fraction_:.0f} % of the candidates per iteration as likely untagged positives"
    if not isinstance(est.skip_top, str):
        return f"negatives: {share} (--skip-top {est.skip_top:g})"
    if est.n_spy_folds_:
        source = f"estimated from {est.n_positives_} positives held out in turn as spies; the pool has no items tagged {concept!r}"
    else:
        source = f"estimated from the pool's items tagged {concept!r}"
    return f"negatives: {share} ({source})"


def _default_split(store, split: str | None) -> str | None:
    """``--split`` as given ('' = all rows); by default train if the store has it, else all rows."""
    if split is not None:
        return split or None
    return "train" if store.select(split="train").size else None


@app.command("search")
@cluster_options
def search_cmd(
    model_path: str = typer.Argument(..., metavar="MODEL", help="Model file written by 'hardneg concept train'; with --text, "
                                     "a zero-shot model file ('hardneg zsl train') or 'auto' (the store's text index: no "
                                     "training on a store without tags, built once per store state and cached)."),
    store_path: str = typer.Argument(..., metavar="STORE", help="FeatureStore to search."),
    k: int = k_option(20, "Number of results."),
    split: str | None = typer.Option(None, "--split", help="Search only this split."),
    text: str = typer.Option(None, "--text", help="Search by description: rank by the match of each item with this "
                             "text, embedded by all-MiniLM-L6-v2 (the 'text' extra; with MODEL 'auto', the 'conse' extra)."),
    descriptions: str = typer.Option(None, "--descriptions", metavar="CSV", help="With --text and MODEL 'auto': a 'class,text' "
                                     "CSV describing the store's tags in words; default the WordNet gloss of each tag."),
    method: str = method_option("auto", "With --text and MODEL 'auto': auto (on EfficientNet-Lite0 features: conse+eszsl+captions "
                                "when WordNet or --descriptions describe the tags, conse+captions when they cannot, conse "
                                "with no tags; eszsl on other features) | conse "
                                "(no training, [Norouzi14]) | eszsl | conse+eszsl | captions | conse+captions | "
                                "conse+eszsl+captions | bucher16 ([Bucher16]); "
                                "measured in results/text_search.json."),
    chunk_rows: int = typer.Option(16384, "--chunk-rows", min=1, help="Rows scored per block."),
    as_json: bool = json_option(),
    csv_out: str = csv_option(),
    html_out: str = html_option(),
    relevant_tag: str = typer.Option(None, "--relevant-tag", help="Ground truth for the marks: items tagged T are hits, all others misses."),
    relevant_label: str = typer.Option(None, "--relevant-label", help="Ground truth for the marks: class L (name or number); unlabeled items not judged."),
    new: bool = typer.Option(False, "--new", help="Only new finds: leave out the items the model was trained on (its positives)."),
    runner=None,
):
    """Rank every item of a store by a concept model and print the top k (id, score, label, tags, path).

    With --html, a contact sheet marks each result as a hit (green: tagged
    with the concept, or labeled with it), a miss (red: of another class) or
    not judged (neutral: nothing says, e.g. untagged); --relevant-tag /
    --relevant-label name the ground truth instead.
    """
    if text is not None or descriptions is not None or method != "auto":
        from ._text_search import text_search_cmd

        return text_search_cmd(model_path, store_path, text=text, descriptions=descriptions, method=method, k=k, split=split,
                               chunk_rows=chunk_rows, as_json=as_json, csv_out=csv_out, html_out=html_out,
                               relevant_tag=relevant_tag, relevant_label=relevant_label, runner=runner)
    from ..concept import load_concept  # after the text branch: a text query with a cached index needs no scikit-learn
    from ..concept import search
    from ..store import FeatureStore
    check_input_file(model_path, "a concept model file")
    check_result_outputs(as_json, csv_out, html_out, inputs=(model_path, store_path))
    if relevant_tag is not None and relevant_label is not None:
        raise CLIError("--relevant-tag and --relevant-label both name the relevant items: give one")
    model = load_concept(model_path)
    store = FeatureStore.open(store_path)
    if store.dim != model.n_features_in_:
        raise CLIError(f"{store_path} has {store.dim}-d vectors but the model expects {model.n_features_in_}")
    rows = store.select(split=split) if split else None
    if rows is not None and rows.size == 0:
        raise CLIError(f"--split {split!r}: no rows of {store_path} are in this split; the store has {store.summary()}")
    total = len(store) if rows is None else int(rows.size)
    if total == 0:
        raise CLIError(f"{store_path}: the store is empty")
    trained = set(model.meta.get("positive_ids") or [])
    if new and not trained:
        raise CLIError(f"--new: {model_path} records no training positives (trained before they were recorded); "
                       "retrain it with `hardneg concept train`")
    with task_progress("searching", total) as advance:
        # workers open the model file themselves; in process the loaded model is used
        res = search(model if runner.client is None else model_path, store, min(k + (len(trained) if new else 0), total),
                     rows=rows, chunk_rows=chunk_rows, runner=runner, progress=advance)
    concept = model.meta.get("concept")
    results = ranked_results(store, res, concept=concept, relevant_tag=relevant_tag, relevant_label=relevant_label)
    if new:
        results = [r for r in results if r["id"] not in trained][:k]
        for rank, r in enumerate(results, 1):
            r["rank"] = rank
    title = f"top {len(results)} {'new finds ' if new else ''}for {concept or model_path!r}"
    n_trained = sum(r["id"] in trained for r in results)
    if n_trained:  # on stderr: stdout stays the results (a table, JSON or CSV)
        err_console.print(f"note: {n_trained} of these {len(results)} are the model's own training examples; "
                          "--new leaves them out", markup=False, highlight=False, soft_wrap=True)
    emit_results(results, title=title, score="score", as_json=as_json, csv_out=csv_out, html_out=html_out,
                 groups=[{"name": f"concept {concept!r} on {store_path}", "results": results}])


@app.command("eval")
@cluster_options
def eval_cmd(
    model_path: str = typer.Argument(..., metavar="MODEL", help="Model file written by 'hardneg concept train'."),
    store_path: str = typer.Argument(..., metavar="STORE", help="FeatureStore to evaluate on."),
    split: str | None = typer.Option(None, "--split", help="Evaluate on this split ('' for all rows). Default: test when the store has one, else all rows."),
    concept: str = typer.Option(None, "--concept", "-c", help="Relevant items: tagged with this (default: the model's concept)."),
    label: str = typer.Option(None, "--label", help="Relevant items: this class (name or number) instead of a tag."),
    k: list[int] = typer.Option([10, 100], "--k", "-k", min=1, help="Report precision at these ranks (repeatable)."),
    chunk_rows: int = typer.Option(16384, "--chunk-rows", min=1, help="Rows scored per block."),
    as_json: bool = json_option(),
    csv_out: str = csv_option(),
    html_out: str = html_option(),
    runner=None,
):
    """Average precision and precision@k of a concept model on a split, against tags or labels."""
    import numpy as np

    from ..concept import load_concept
    from ..concept._search import score_rows
    from ..eval import average_precision, precision_at_k
    from ..store import FeatureStore

    if concept is not None and label is not None:
        raise CLIError(f"--concept {concept!r} and --label {label!r} both say which items are relevant (a tag, a class): give one")
    check_input_file(model_path, "a concept model file")
    check_result_outputs(as_json, csv_out, html_out, inputs=(model_path, store_path))
    model = load_concept(model_path)
    store = FeatureStore.open(store_path)
    if store.dim != model.n_features_in_:
        raise CLIError(f"{store_path} has {store.dim}-d vectors but the model expects {model.n_features_in_}")
    if split is None:
        split = "test" if store.select(split="test").size else ""
    rows = store.select(split=split) if split else np.arange(len(store))
    if rows.size == 0:
        raise CLIError(f"--split {split!r}: no rows of {store_path} are in this split; the store has {store.summary()}")
    if label is not None:
        names = store.attrs.get("class_names") or []
        if label in names:
            lab = names.index(label)
        elif label.lstrip("-").isdigit():
            lab = int(label)
        else:
            raise CLIError(f"--label {label!r}: not a class of {store_path}; the store has {store.summary()}")
        positive = np.isin(rows, store.select(labels=[lab]))
        what = f"label {label!r}"
    else:
        concept = concept or model.meta.get("concept")
        if not concept:
            raise CLIError(f"{model_path}: the model names no concept; give --concept TAG or --label CLASS")
        positive = np.isin(rows, store.select(tags=[concept]))
        what = f"tag {concept!r}"
    if not positive.any():
        raise CLIError(f"no items with {what}{in_split(split)} of {store_path}; the store has {store.summary()}")
    with task_progress("scoring", int(rows.size)) as advance:
        scores = score_rows(model if runner.client is None else model_path, store, None if rows.size == len(store) else rows,
                            block_rows=chunk_rows, runner=runner, progress=advance)
    order = np.argsort(-scores, kind="stable")
    ranked = positive[order]
    figures = {"model": model_path, "store": store_path, "split": split or None, "relevant": what, "n_items": int(rows.size),
               "n_relevant": int(positive.sum()), "ap": float(average_precision(positive, scores))}
    for kk in sorted(set(k)):
        figures[f"p@{kk}"] = float(precision_at_k(ranked[None, :], min(kk, ranked.size)))
    title = f"{model.meta.get('concept', model_path)!r} on {store_path}" + (f" ({split})" if split else "")
    emit_results(figures, title=title, as_json=as_json, csv_out=csv_out, html_out=html_out, figures=True)
