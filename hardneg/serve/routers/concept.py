"""Concept search and relevance feedback, run as background jobs."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from fastapi import APIRouter, Depends

from .._concept import MAX_FEEDBACK_ITEMS, ConceptSpec, train_concept
from .._deps import get_state, require_token
from .._errors import ServeError, hide_paths, one_line
from .._registry import check_name, slug
from .._schemas import ConceptRequest, FeedbackRequest, JobInfo, Message
from .._state import ServeState

router = APIRouter(prefix="/api", tags=["concept search"])
_ERR: dict[int | str, dict[str, Any]] = {401: {"model": Message}, 403: {"model": Message}, 404: {"model": Message}, 422: {"model": Message}}


def scan(state: ServeState, model, k: int, split: str | None, offset: int = 0, new_only: bool = False) -> dict:
    """One page of the store ranked by a concept model:
    ``{"results", "offset", "has_more", "total", "n_examples", "new_only", "scan_s"}``.

    The items the model's feedback marked not relevant (``meta["negative_ids"]``) are left
    out of the ranking: a rejected item never comes back. The model's own training
    positives (``meta["positive_ids"]``) are marked ``example``; with ``new_only`` they are
    left out too, so the page shows what the model found besides them. ``total``: items ranked.
    """
    from hardneg.concept import search

    if state.store.dim != model.n_features_in_:
        raise ServeError(409, f"the model expects {model.n_features_in_}-d vectors, the store has {state.store.dim}")
    rows = state.store.select(split=split) if split else None
    rejected = np.array([state.row_of[i] for i in model.meta.get("negative_ids") or () if i in state.row_of], np.int64)
    examples = np.array([state.row_of[i] for i in model.meta.get("positive_ids") or () if i in state.row_of], np.int64)
    if new_only:
        rejected = np.union1d(rejected, examples)
    if rejected.size:
        rows = np.setdiff1d(np.arange(len(state.ids)) if rows is None else rows, rejected)
    n = len(state.ids) if rows is None else int(rows.size)
    t = time.perf_counter()
    want = min(offset + k + 1, n)  # one more tells whether a next page exists
    ranked = search(model, state.data, k=want, rows=rows) if want else None
    pairs = [] if ranked is None else list(zip(ranked.rows.tolist(), ranked.scores.tolist()))
    is_example = set(examples.tolist())
    results = [{**state.item(int(r), s), "example": int(r) in is_example} for r, s in pairs[offset : offset + k]]
    return {"results": results, "offset": offset, "has_more": len(pairs) > offset + k, "total": n,
            "n_examples": len(is_example), "new_only": bool(new_only), "scan_s": time.perf_counter() - t}


def _start(state: ServeState, kind: str, spec: ConceptSpec, name: str, k: int, meta: dict, offset: int = 0,
           new_only: bool = False) -> JobInfo:
    total = spec.n_iter + (1 if spec.negative_rows.size else 0) + 1

    def work(job):
        model, timings = train_concept(state.store, spec, matrix=state.matrix, tags=state.tags, progress=job.advance)
        model.meta.update(meta, positive_ids=[str(state.ids[r]) for r in spec.positive_rows],
                          negative_ids=[str(state.ids[r]) for r in spec.negative_rows], created=time.time())
        page = scan(state, model, k, meta.get("split"), offset, new_only)
        timings["scan_s"] = page.pop("scan_s")
        job.advance(1)
        t = time.perf_counter()
        state.registry.save(name, model)  # the same name again replaces the model (atomic write)
        timings["save_s"] = time.perf_counter() - t
        return {"model": name, "k": len(page["results"]), **page, "n_positives": int(spec.positive_rows.size),
                "train_split": spec.split, "timings": timings}

    return _info(state, state.jobs.submit(kind, total, work).to_dict())


def _info(state: ServeState, job: dict) -> JobInfo:
    if job.get("error"):  # a failed job's message: one line, no server paths
        job = {**job, "error": one_line(hide_paths(job["error"], models_dir=state.models_dir, store_path=state.store.path))}
    return JobInfo(**job)


@router.post("/concept", response_model=JobInfo, status_code=202, responses=_ERR,
             dependencies=[Depends(require_token)],
             summary="Learn a concept (Negative Bootstrap) from a tag or positive items, save it, rank the store")
def concept(req: ConceptRequest, state: ServeState = Depends(get_state)):
    state.check_page(req.k, req.offset)
    if not req.tag and not req.positive_ids:
        raise ServeError(422, "give a tag or positive_ids (or both)")
    if req.split and state.store.select(split=req.split).size == 0:
        raise ServeError(422, f"split {req.split!r}: no item is in this split")
    # The CLI's rule: learn from the train split when the store has one (positives and pool),
    # rank every item; an explicit split is used for both; '' is every item.
    train_split = state.concept_split if req.split is None else (req.split or None)
    rng = np.random.default_rng(req.seed)
    pos = state.rows(req.positive_ids, "positive_ids")
    if req.tag:
        tagged = state.store.select(tags=[req.tag], split=train_split)
        if tagged.size == 0 and pos.size == 0:
            raise ServeError(404, f"no item is tagged {req.tag!r}" + (f" in split {train_split!r}" if train_split else ""))
        cap = state.settings.concept_positives
        if tagged.size > cap:  # as the CLI: a random subset of the tagged items is B+
            tagged = np.sort(rng.choice(tagged, size=cap, replace=False))
        pos = np.union1d(pos, tagged)
    # one name per concept: training the same tag (or the same first example) again replaces its model
    name = check_name(req.name) if req.name else slug(req.tag or f"items-{req.positive_ids[0]}")
    n_iter = req.n_iter or state.settings.concept_iterations
    spec = ConceptSpec(positive_rows=pos.astype(np.int64), tag=req.tag, related_tags=list(req.related_tags),
                       split=train_split, n_iter=n_iter, n_bins=state.settings.concept_bins, seed=req.seed)
    meta = {"concept": req.tag, "related_tags": list(req.related_tags), "split": req.split or None,
            "train_split": train_split, "feedback_rounds": 0, "marked_ids": list(dict.fromkeys(req.positive_ids))}
    return _start(state, "concept", spec, name, req.k, meta, req.offset, req.new_only)


@router.post("/models/{name}/feedback", response_model=JobInfo, status_code=202, responses=_ERR,
             dependencies=[Depends(require_token)],
             summary="Relevance feedback: marked items join the positives / hard negatives; retrain and re-rank")
def feedback(name: str, req: FeedbackRequest, state: ServeState = Depends(get_state)):
    state.check_page(req.k, req.offset)
    old = state.registry.load(name)
    meta = old.meta
    rel, notrel = set(req.relevant_ids), set(req.not_relevant_ids)
    if rel & notrel:
        raise ServeError(422, f"items marked both relevant and not relevant: {sorted(rel & notrel)[:5]}")
    if not rel and not notrel:
        raise ServeError(422, "mark at least one item relevant or not relevant")
    state.rows(list(rel | notrel), "marked ids")  # validate before any work
    pos_ids = [i for i in dict.fromkeys(list(meta.get("positive_ids", [])) + list(req.relevant_ids)) if i not in notrel]
    neg_ids = [i for i in dict.fromkeys(list(meta.get("negative_ids", [])) + list(req.not_relevant_ids)) if i not in rel]
    if not pos_ids:
        raise ServeError(422, "no positive item would be left")
    if len(pos_ids) + len(neg_ids) > MAX_FEEDBACK_ITEMS:
        raise ServeError(422, f"more than {MAX_FEEDBACK_ITEMS} marked items")
    try:
        pos, neg = state.rows(pos_ids, "positives"), state.rows(neg_ids, "negatives")
    except ServeError as exc:
        raise ServeError(409, f"model {name!r} names items that are not in this store ({exc.message})") from None
    params = meta.get("params", {})
    train_split = meta["train_split"] if "train_split" in meta else meta.get("split")
    spec = ConceptSpec(positive_rows=pos, negative_rows=neg, tag=meta.get("concept"),
                       related_tags=list(meta.get("related_tags") or []), split=train_split,
                       n_iter=int(params.get("n_iter", state.settings.concept_iterations)),
                       n_bins=int(params.get("n_bins", state.settings.concept_bins)), seed=int(params.get("seed", 0)))
    new_meta = {k: meta.get(k) for k in ("concept", "related_tags", "split")}
    new_meta["train_split"] = train_split
    new_meta["feedback_rounds"] = int(meta.get("feedback_rounds", 0)) + 1
    # the user's own ✓ marks, kept apart from the tag's positives (a reopened model shows only these)
    new_meta["marked_ids"] = [i for i in dict.fromkeys(list(meta.get("marked_ids") or []) + list(req.relevant_ids))
                              if i not in notrel]
    return _start(state, "feedback", spec, name, req.k, new_meta, req.offset, req.new_only)


@router.get("/jobs/{job_id}", response_model=JobInfo, responses={404: {"model": Message}},
            summary="A job's status, progress and (when done) its result")
def job(job_id: str, state: ServeState = Depends(get_state)):
    return _info(state, state.jobs.get(job_id).to_dict())


@router.get("/jobs", response_model=list[JobInfo], summary="Recent jobs (results left out)")
def jobs(state: ServeState = Depends(get_state)):
    return [_info(state, {**j.to_dict(), "result": None}) for j in state.jobs.list()]
