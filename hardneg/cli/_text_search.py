"""``hardneg concept search --text``: rank a store by a zero-shot model's match with free text."""

from __future__ import annotations

import os

from ._console import err_console, escape, task_progress
from ._inputs import check_input_file
from ._results import check_result_outputs, emit_results, ranked_results
from ..exceptions import CLIError

#: MODEL word that trains a zero-shot model on the fly from the store's tags.
AUTO = "auto"



def text_search_cmd(model_path: str, store_path: str, *, text, descriptions, k: int, method: str = "auto", split, chunk_rows: int, as_json: bool,
                    csv_out, html_out, relevant_tag, relevant_label, runner):
    """The body of ``concept search --text`` (see :func:`hardneg.cli.concept.search_cmd`)."""
    from ..store import FeatureStore

    if text is None:
        raise CLIError("--descriptions and --method set up a search by description: give --text as well")
    if not text.strip():
        raise CLIError("--text is empty: describe what to find, e.g. --text 'a striped animal with four legs'")
    from ..zeroshot._text_index import TEXT_METHODS

    if method not in TEXT_METHODS:
        raise CLIError(f"--method with --text must be one of {', '.join(TEXT_METHODS)}, got {method!r}")
    auto = model_path == AUTO and not os.path.exists(model_path)
    if not auto:
        check_input_file(model_path, "a zero-shot model file ('hardneg zsl train') or 'auto'")
        if descriptions is not None:
            raise CLIError("--descriptions: only with MODEL 'auto' (a model file already holds its classes' descriptions)")
        if method != "auto":
            raise CLIError("--method: only with MODEL 'auto' (a model file is already trained)")
    if descriptions is not None:
        check_input_file(descriptions, "a descriptions CSV")
    check_result_outputs(as_json, csv_out, html_out, inputs=(store_path,) if auto else (model_path, store_path))
    if relevant_tag is not None and relevant_label is not None:
        raise CLIError("--relevant-tag and --relevant-label both name the relevant items: give one")
    # the query's embedding, in a thread while the store and the index are read: loading the sentence
    # model is C++ work that releases the GIL, so a cached query's wall time is that of the longer of the two
    query = _embed_in_background(text) if auto else None
    store = FeatureStore.open(store_path)
    if store.is_sparse:
        raise CLIError(f"{store_path}: search by description needs a dense feature store (CNN features), not bag-of-words")
    rows = store.select(split=split) if split else None
    if rows is not None and rows.size == 0:
        raise CLIError(f"--split {split!r}: no rows of {store_path} are in this split; the store has {store.summary()}")
    total = len(store) if rows is None else int(rows.size)
    if total == 0:
        raise CLIError(f"{store_path}: the store is empty")
    if auto:
        return _auto_search(store, store_path, text=text, query=query, descriptions=descriptions, method=method, k=min(k, total), rows=rows,
                            as_json=as_json, csv_out=csv_out, html_out=html_out, relevant_tag=relevant_tag,
                            relevant_label=relevant_label)
    try:
        from .._load import load

        model = load(model_path)
        if not hasattr(model, "prototypes_"):
            raise CLIError(f"{model_path}: a {type(model).__name__} file, not a zero-shot model; "
                           "search by text needs one from 'hardneg zsl train' (or MODEL 'auto')")
        if store.dim != model.n_features_in_:
            raise CLIError(f"{store_path} has {store.dim}-d vectors but the model expects {model.n_features_in_}")
        from ..zeroshot import text_search

        with task_progress("searching", total) as advance:
            res = text_search(model, store, text, k=min(k, total), rows=rows, chunk_rows=chunk_rows, runner=runner,
                              progress=advance)
    except (ValueError, ImportError) as exc:
        raise CLIError(str(exc).splitlines()[0]) from None
    results = ranked_results(store, res, relevant_tag=relevant_tag, relevant_label=relevant_label)
    title = f"top {len(results)} for the text {text!r}"
    emit_results(results, title=title, score="score", as_json=as_json, csv_out=csv_out, html_out=html_out,
                 groups=[{"name": f"text {text!r} on {store_path}", "results": results}])


#: what each method of the text index is, for the line that says which one ranked
METHOD_NAMES = {"conse": "ConSE [Norouzi14], no training", "eszsl": "ESZSL on the store's tags",
                "conse+eszsl": "ConSE [Norouzi14] + ESZSL on the store's tags", "bucher16": "[Bucher16] on the store's tags",
                "captions": "captions of the tagged items' neighbours",
                "conse+captions": "ConSE [Norouzi14] + captions of the tagged items' neighbours",
                "conse+eszsl+captions": "ConSE [Norouzi14] + ESZSL + captions of the tagged items' neighbours"}


def _embed_in_background(text: str):
    """A future of the query's embedding (:func:`hardneg.zeroshot._descriptions.embed_query_text`), computed in a thread."""
    from concurrent.futures import ThreadPoolExecutor

    from ..zeroshot._descriptions import embed_query_text

    pool = ThreadPoolExecutor(1, thread_name_prefix="hardneg-query")
    future = pool.submit(embed_query_text, text)
    pool.shutdown(wait=False)  # the task runs on; the caller waits on the future
    return future


def _auto_search(store, store_path, *, text, query, descriptions, method, k, rows, as_json, csv_out, html_out, relevant_tag, relevant_label):
    """MODEL 'auto': the store's text index (built on the first query of a store state, with progress), then one product.

    ``query``: a future of the embedding of ``text`` (:func:`_embed_in_background`)."""
    from ..zeroshot._text_index import cached_text_index, open_text_index, resolve_method

    try:
        # bad descriptions and a forced method the store cannot serve are refused here, before any work
        index = cached_text_index(store, method=method, descriptions=descriptions)
        built = index is None
        if index is None:  # the training code is imported only here: a cached query needs neither sklearn nor torch
            from ..zeroshot import TrainingDivergedError

            resolved = resolve_method(store, method, descriptions)
            with task_progress(f"building the text index of {store_path} ({resolved}; once per store state)", len(store)) as advance:
                try:
                    index, _ = open_text_index(store, method=method, descriptions=descriptions, progress=advance)
                except TrainingDivergedError:
                    raise CLIError(f"training [Bucher16] on the tags of {store_path} diverged; --method auto or eszsl "
                                   "need no step size") from None
        res = index.search(query.result(), k=k, rows=rows, data=store)
    except (ValueError, ImportError) as exc:
        raise CLIError(str(exc).splitlines()[0]) from None
    n = index.info.get("n_classes")
    named = f", + the file names of {index.info['named_share']:.0%} of the items" if index.names is not None else ""
    err_console.print(escape(f"{'built' if built else 'cached'} text index: {METHOD_NAMES.get(index.method, index.method)}"
                             + (f", trained on {n} described classes" if n else "") + named))
    results = ranked_results(store, res, relevant_tag=relevant_tag, relevant_label=relevant_label)
    emit_results(results, title=f"top {len(results)} for the text {text!r}", score="score", as_json=as_json, csv_out=csv_out,
                 html_out=html_out, groups=[{"name": f"text {text!r} on {store_path}", "results": results}])
