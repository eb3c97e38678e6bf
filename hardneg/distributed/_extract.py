"""Job: extract features of an image collection into a FeatureStore (resumable).

Partition function (``extract_partition``, defined in
``hardneg.features._extract`` beside the plan it serves, re-exported here):
read and transform one batch of images on a worker, with the extractor
rebuilt from the output store's own settings
(:func:`hardneg.features.extractor_from_store`: same network, input size,
codebook), so nothing but image paths travels to the workers; merge: the
client appends each batch to the store in input order, one atomic commit per
batch, exactly as :func:`hardneg.features.extract_to_store` does. Both share
one plan (``hardneg.features._extract._Extraction``): the same checks of ids
against the store, the same class-name numbering, the same codebook sample.
A new store is created (its codebook learned from every input) in process
with the first batch that has a readable image; the rest runs on the
cluster. A rerun skips the ids already in the store.

Images must be files that every worker can read at the same path (a shared
filesystem). CNN features on a worker are computed with one torch thread;
torch may sum in another order than with several threads, so a value can
differ in the last bits from an in-process run with more threads (rankings
compared in the tests at ``rtol=1e-5``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._validation import check_positive_int
from ..features._extract import ExtractionSummary, _Extraction, _extractor, extract_partition  # noqa: F401  (_extractor: the worker cache, re-exported)
from ._runner import Runner

if TYPE_CHECKING:
    import numpy as np

__all__ = ["extract_images", "extract_partition"]

logger = logging.getLogger(__name__)


def extract_images(paths: Sequence[Any], out: str | os.PathLike, extractor: Any, *, ids: Sequence[str] | None = None,
                   labels: Any = None, tags: Sequence[Sequence[str]] | None = None, split: Any = None, batch_size: int = 256,
                   runner: Runner | None = None, overwrite: bool = False, n_fit_images: int = 1000,
                   random_state: int | np.random.Generator | None = 0, attrs: dict | None = None, model: str | os.PathLike | None = None,
                   trust_model: bool = False, progress: Callable[[int], None] | None = None) -> ExtractionSummary:
    """Extract image files into the store ``out`` on a cluster (or in process), batch by batch.

    Same checks, id rules and class-name numbering as :func:`hardneg.features.extract_to_store`
    (one shared plan).

    Parameters
    ----------
    paths : sequence of str or path-like
        The image files.
    out : str or path-like
        The store folder (created, or resumed).
    extractor : feature extractor
        As for :func:`hardneg.features.extract_to_store`.
    ids : sequence of str, optional
        Item ids; default the paths.
    labels, tags, split, batch_size, overwrite, n_fit_images, random_state, attrs, progress
        As for :func:`hardneg.features.extract_to_store`.
    runner : Runner, optional
        Where to run (default: in this process).
    model : str or path-like, optional
        The torch model file of a ``--model`` store, opened by each worker.
    trust_model : bool
        Required to load ``model`` (a model file is code).

    Returns
    -------
    ExtractionSummary
        What was added, skipped and failed.

    Raises
    ------
    ValueError
        If ``ids`` do not match ``paths``, or as :func:`hardneg.features.extract_to_store` raises.
    """
    t0 = time.perf_counter()
    runner = runner or Runner()
    batch_size = check_positive_int(batch_size, "batch_size")
    paths = [str(p) for p in paths]
    ids = [str(i) for i in ids] if ids is not None else list(paths)
    if len(ids) != len(paths):
        raise ValueError(f"ids: {len(ids)} ids for {len(paths)} images")
    run = _Extraction(paths, out, extractor, ids=ids, root=None, labels=labels, tags=tags, split=split, overwrite=overwrite,
                      recursive=True, n_fit_images=n_fit_images, random_state=random_state, attrs=attrs)
    try:
        run.run(batch_size, progress, runner=runner, model=model, trust_model=trust_model)  # the one batch loop
    finally:
        run.close()
    return run.finish(t0)
