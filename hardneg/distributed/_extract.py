"""Job: extract features of an image collection into a FeatureStore (resumable).

Partition function: read and transform one batch of images on a worker, with
the extractor rebuilt from the output store's own settings
(:func:`hardneg.features.extractor_from_store`: same network, input size,
codebook), so nothing but image paths travels to the workers; merge: the
client appends each batch to the store in input order, one atomic commit per
batch, exactly as :func:`hardneg.features.extract_to_store` does. The store
is created (and a bag-of-words codebook learned) in process by
``extract_to_store`` on the first batch; the rest runs on the cluster. A
rerun skips the ids already in the store.

Images must be files that every worker can read at the same path (a shared
filesystem). CNN features on a worker are computed with one torch thread;
torch may sum in another order than with several threads, so a value can
differ in the last bits from an in-process run with more threads (rankings
compared in the tests at ``rtol=1e-5``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
from pathlib import Path

from ._runner import Runner

__all__ = ["extract_images", "extract_partition"]

logger = logging.getLogger(__name__)


@functools.lru_cache(maxsize=2)
def _extractor(store: str, config: str, model, trust_model: bool):
    from ..features._extract import extractor_from_store
    from ..store import FeatureStore

    return extractor_from_store(FeatureStore.open(store), model=model, trust_model=trust_model, num_threads=1)


def extract_partition(batch, *, store: str, config: str, model=None, trust_model: bool = False):
    """``(kept, X, failed)`` for a batch of ``(index, id, path)``: input positions kept, their
    features, and ``(id, reason)`` of unreadable ones."""
    from ..features._extract import ExtractionSummary, _load_batch, _transform_isolating_failures
    from ..features._images import ImageItem

    ext = _extractor(store, config, model, trust_model)
    items = [ImageItem(id=i, path=p, index=k) for k, i, p in batch]
    summary = ExtractionSummary(store_path=store)
    good, images = _load_batch(items, summary)
    X = _transform_isolating_failures(ext, good, images, summary) if good else None
    if X is None:
        return [], None, summary.failed
    return [it.index for it in X[0]], X[1], summary.failed


def extract_images(paths, out, extractor, *, ids=None, labels=None, tags=None, split=None, batch_size: int = 256,
                   runner: Runner | None = None, overwrite: bool = False, n_fit_images: int = 1000, random_state=0,
                   attrs: dict | None = None, model=None, trust_model: bool = False, progress=None):
    """Extract image files into the store ``out`` on a cluster (or in process), batch by batch.

    Parameters are those of :func:`hardneg.features.extract_to_store`
    (``paths``: a list of image files; ``ids`` default to the paths);
    ``model`` / ``trust_model``: the torch model file of a ``--model`` store,
    opened by each worker.

    Returns
    -------
    ExtractionSummary
    """
    from ..features import extract_to_store
    from ..features._extract import ExtractionSummary, stored_paths
    from ..store import FeatureStore
    from ._partition import store_url

    runner = runner or Runner()
    paths = [str(p) for p in paths]
    ids = [str(i) for i in ids] if ids is not None else list(paths)
    n = len(paths)
    if len(ids) != n:
        raise ValueError(f"ids: {len(ids)} ids for {n} images")
    for name, v in (("labels", labels), ("tags", tags)):
        if v is not None and len(v) != n:
            raise ValueError(f"{name}: has {len(v)} entries for {n} images")
    if split is not None and not isinstance(split, str) and len(split) != n:
        raise ValueError(f"split: has {len(split)} entries for {n} images")
    learns = hasattr(extractor, "fit_images")
    if learns and not extractor.is_fitted() and (overwrite or not Path(out).exists()):
        # as extract_to_store does: the codebook sample is drawn from every input, not the first batch
        from .._validation import check_positive_int, check_random_state
        from ..features._extract import _fit_sample
        from ..features._images import resolve_images

        rng = check_random_state(random_state)
        extractor.fit_images(_fit_sample(resolve_images(paths, ids=ids), check_positive_int(n_fit_images, "n_fit_images"), rng),
                             random_state=rng)
    # The first batch in process: creates (or checks) the store, saves the settings and the codebook.
    first = extract_to_store(paths[:batch_size], out, extractor, ids=ids[:batch_size],
                             labels=None if labels is None else list(labels[:batch_size]),
                             tags=None if tags is None else list(tags[:batch_size]),
                             split=split if split is None or isinstance(split, str) else list(split[:batch_size]),
                             batch_size=batch_size, overwrite=overwrite, n_fit_images=n_fit_images, random_state=random_state, attrs=attrs)
    summary = ExtractionSummary(store_path=str(out), n_inputs=n, n_added=first.n_added, n_already=first.n_already,
                                failed=list(first.failed))
    if progress is not None:
        progress(min(batch_size, n))
    with FeatureStore.open(out, mode="a") as st:
        present = set(st.ids().tolist())
        todo = [(k, ids[k], paths[k]) for k in range(min(batch_size, n), n) if ids[k] not in present]
        summary.n_already += n - min(batch_size, n) - len(todo)
        if progress is not None and n - min(batch_size, n) - len(todo):
            progress(n - min(batch_size, n) - len(todo))
        batches = [todo[a : a + batch_size] for a in range(0, len(todo), batch_size)]
        config = json.dumps(st.attrs.get("extractor"), sort_keys=True)
        func = functools.partial(extract_partition, store=store_url(st.path), config=config,
                                 model=None if model is None else os.path.abspath(model), trust_model=trust_model)
        for batch, (kept, X, failed) in zip(batches, runner.map_ordered(func, batches)):
            summary.failed.extend(failed)
            if kept:
                st.append(
                    X,
                    ids=[ids[k] for k in kept],
                    paths=stored_paths([paths[k] for k in kept], st.path, st.attrs),
                    labels=None if labels is None else [labels[k] for k in kept],
                    tags=None if tags is None else [tags[k] for k in kept],
                    split=split if split is None or isinstance(split, str) else [split[k] for k in kept],
                )
                summary.n_added += len(kept)
            if progress is not None:
                progress(len(batch))
    return summary
