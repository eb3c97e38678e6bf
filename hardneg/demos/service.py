"""The serve demo: a small store, a TSVM hasher + Hamming index for it, then the service.

``build_demo_store(out)`` writes ``<out>/<dataset>.store`` (raw pixels, so the
page shows thumbnails and image uploads work) and, in its models folder, a
TSVM hasher (Cevikalp et al., trained on the train split's labels) and the
Hamming index of every item -- what ``hardneg serve`` picks up.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["build_demo_store"]

DEMO_DATASETS = ("digits", "fashion-mnist")


def build_demo_store(out="serve-demo", *, dataset: str = "digits", limit: int | None = None, n_bits: int = 32,
                     n_labeled: int = 2000, seed: int = 0, overwrite: bool = False) -> tuple[Path, Path]:
    """Build (or reuse) the demo store and its Hamming index; return ``(store_path, models_dir)``.

    Parameters
    ----------
    out : folder for the store and its models
    dataset : "digits" (sklearn, no download) or "fashion-mnist" (Debian package / cache)
    limit : use the first ``limit`` items only (fashion-mnist: a stratified-enough prefix)
    n_bits : TSVM hashing code length
    n_labeled : labeled (and as many unlabeled) train items the hasher learns from
    overwrite : rebuild even when the store and index exist

    Examples
    --------
    >>> import tempfile
    >>> from hardneg.demos.service import build_demo_store
    >>> store, models = build_demo_store(tempfile.mkdtemp(), n_bits=16, n_labeled=300)
    >>> sorted(p.name for p in models.iterdir() if p.is_file())
    ['hamming.index', 'hamming.index.ids.npz', 'hasher.npz']
    """
    from hardneg.datasets import load
    from hardneg.hashing import TSVMHashing
    from hardneg.index import HammingIndex
    from hardneg.store import FeatureStore

    from hardneg.serve._state import default_models_dir

    if dataset not in DEMO_DATASETS:
        raise ValueError(f"dataset: expected one of {', '.join(DEMO_DATASETS)}, got {dataset!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    store_path = out / f"{dataset}.store"
    models = default_models_dir(store_path)
    index_path = models / "hamming.index"
    if store_path.exists() and index_path.is_file() and not overwrite:
        return store_path, models
    t0 = time.perf_counter()
    data = load(dataset)
    X, y, split = data.X, data.y, data.split
    if split is None:
        raise ValueError(f"{dataset}: the data set has no train/test split")
    if limit is not None:
        X, y, split = X[:limit], y[:limit], split[:limit]
    names = list(data.class_names) if data.class_names is not None else [str(c) for c in np.unique(y)]
    with FeatureStore.create(store_path, dim=X.shape[1], overwrite=True,
                             attrs={"dataset": data.name, "class_names": names}) as fs:
        fs.append(X, ids=[f"{data.name}-{i}" for i in range(len(y))], labels=y, split=[str(s) for s in split],
                  tags=[[names[c]] for c in y])
    train = np.flatnonzero(split == "train")
    rng = np.random.default_rng(seed)
    lab = np.sort(rng.choice(train, size=min(train.size, n_labeled), replace=False))
    rest = np.setdiff1d(train, lab)
    unl = np.sort(rng.choice(rest, size=min(rest.size, n_labeled), replace=False)) if rest.size else None
    hasher = TSVMHashing(n_bits=n_bits, random_state=seed).fit(X[lab], y[lab], X_unlabeled=None if unl is None else X[unl])
    models.mkdir(parents=True, exist_ok=True)
    hasher.save(models / "hasher.npz")
    with FeatureStore.open(store_path) as store:
        HammingIndex.from_store(store, hasher).save(index_path)
    logger.info("demo store %s with a %d-bit TSVM Hamming index in %.1fs", store_path, n_bits, time.perf_counter() - t0)
    return store_path, models
