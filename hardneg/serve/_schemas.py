"""Pydantic request and response models (they make the OpenAPI schema)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ._concept import MAX_FEEDBACK_ITEMS


class _Request(BaseModel):
    """Request bodies: NaN and infinities are refused in every float field (422), not passed on."""

    model_config = ConfigDict(allow_inf_nan=False)


class Item(BaseModel):
    id: str
    label: int = Field(description="Class label (-1: none).")
    label_name: str | None = None
    tags: list[str] = []
    split: str | None = None
    score: float | None = Field(None, description="Similarity or concept score (larger is better).")
    example: bool = Field(False, description="Concept rankings: one of the model's own training positives (not a new find).")


class ItemPage(BaseModel):
    total: int
    offset: int
    items: list[Item]


class TagCount(BaseModel):
    tag: str
    count: int


class ModeInfo(BaseModel):
    name: str
    title: str
    score: str


class Info(BaseModel):
    store: str
    n_items: int
    dim: int
    sparse: bool
    dataset: str | None
    modes: list[ModeInfo]
    upload: bool = Field(description="Whether uploaded images can be turned into this store's features.")
    upload_reason: str | None = None
    token_required: bool
    max_upload_bytes: int
    extractor: str = Field("none", description="The upload feature extractor: 'none' (no uploads), 'loading' (being "
                                               "loaded at start-up), 'ready' or 'failed'.")
    concept_split: str | None = Field(None, description="The split concepts learn from by default ('train' when the "
                                                        "store has one, as `hardneg concept train`; else all items).")


class ExampleQuery(_Request):
    id: str = Field(description="Id of a stored item to use as the query.")
    mode: str = "hamming"
    k: int = Field(24, description="Number of results (1 to 1000): the page size.")
    offset: int = Field(0, ge=0, description="Skip this many results (paging; offset + k <= 1000).")
    exact: bool = Field(False, description="Hamming mode with an approximate (IVF) index: scan every code instead.")
    nprobe: int | None = Field(None, ge=1, description="Hamming mode with an approximate (IVF) index: lists scanned "
                                                       "for this query (default: the service's).")


class SearchResponse(BaseModel):
    mode: str
    k: int
    offset: int = Field(0, description="Position of the first result in the whole ranking.")
    has_more: bool = Field(False, description="Whether a next page (offset + k) has results.")
    total: int | None = Field(None, description="Items in the whole ranking, when known.")
    search: str = Field("exact", description="The search that served the query: 'exact' (exhaustive) or "
                                             "'ivf nprobe=P/NLIST' (approximate, P of NLIST lists scanned).")
    results: list[Item]
    timings: dict[str, float] = Field(description="Seconds per step (read_s / extract_s, search_s: the whole "
                                                  "batch's search, queue_s: waited for it), and batch_size (queries "
                                                  "searched together), nprobe (approximate search only).")


class ConceptRequest(_Request):
    tag: str | None = Field(None, max_length=200, description="Concept tag: its items are the positives, never negatives.")
    positive_ids: list[str] = Field([], max_length=MAX_FEEDBACK_ITEMS, description="Positive items (with or instead of a tag).")
    related_tags: list[str] = Field([], max_length=50)
    name: str | None = Field(None, description="Save the model under this name (default: from the tag, or 'items-' and the first positive id); an existing model of that name is replaced.")
    k: int = 24
    offset: int = Field(0, ge=0, description="Skip this many results (paging).")
    new_only: bool = Field(False, description="Leave the model's own training positives out of the ranking: only "
                                              "what it found besides them (the page asks for this by default).")
    split: str | None = Field(None, description="Train and search within this split only ('' for all items). Default: "
                                                "train on the 'train' split when the store has one (as `hardneg concept "
                                                "train`), and rank every item.")
    n_iter: int | None = Field(None, ge=1, le=100, description="Meta classifiers T (default: the service's).")
    seed: int = Field(0, ge=0, le=2**32 - 1)


class FeedbackRequest(_Request):
    relevant_ids: list[str] = Field([], max_length=MAX_FEEDBACK_ITEMS)
    not_relevant_ids: list[str] = Field([], max_length=MAX_FEEDBACK_ITEMS)
    k: int = 24
    offset: int = Field(0, ge=0, description="Skip this many results (paging).")
    new_only: bool = Field(False, description="Leave the model's own training positives out of the ranking: only "
                                              "what it found besides them (the page asks for this by default).")


class ModelSearchRequest(_Request):
    k: int = 24
    offset: int = Field(0, ge=0, description="Skip this many results (paging).")
    new_only: bool = Field(False, description="Leave the model's own training positives out of the ranking: only "
                                              "what it found besides them (the page asks for this by default).")


class JobInfo(BaseModel):
    id: str
    kind: str
    status: str = Field(description="queued | running | done | failed")
    done: int
    total: int
    seconds: float
    result: dict | None = None
    error: str | None = None


class ModelInfo(BaseModel):
    name: str
    concept: str | None = None
    estimator: str | None = None
    n_positives: int | None = None
    n_marked_negatives: int | None = None
    feedback_rounds: int = 0
    positive_ids: list[str] = []
    negative_ids: list[str] = []
    marked_ids: list[str] = Field(default=[], description="The items the user marked relevant (selected examples and "
                                                  "feedback), as opposed to positives that came from the tag.")
    created: float | None = None


class Message(BaseModel):
    detail: str
