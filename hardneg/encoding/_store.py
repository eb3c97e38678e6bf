"""Encode a whole FeatureStore out of core, batch by batch, into a new store (resumable)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

__all__ = ["encode_store"]

logger = logging.getLogger(__name__)


def _item_columns(table):
    multi = table.column("labels").to_pylist()
    single = table.column("label").to_pylist()
    labels = [m if m else (None if s is None or s < 0 else s) for m, s in zip(multi, single)]
    return {
        "ids": table.column("id").to_pylist(),
        "paths": table.column("path").to_pylist(),
        "tags": [t or [] for t in table.column("tags").to_pylist()],
        "labels": labels,
        "split": table.column("split").to_pylist(),
    }


def encode_store(encoder, store, out, *, n_recursions=None, batch_rows: int = 1024, overwrite: bool = False, progress=None):
    """Encode every row of ``store`` with a fitted :class:`~hardneg.encoding.ESVMEncoder` into the store ``out``.

    Rows are read, encoded and appended ``batch_rows`` at a time, so memory is
    bounded by one batch (plus the encoder's pools); each batch is one atomic
    commit. Item ids, paths, tags, labels and splits are copied. An
    interrupted run resumes where it stopped: if ``out`` exists, was written
    by the same encoder (its fingerprint is in the store's attrs) from the
    same source, the rows already written are skipped. A different encoder or
    source is an error unless ``overwrite``.

    Parameters
    ----------
    encoder : ESVMEncoder (fitted)
    store : FeatureStore or path
    out : path of the new store
    n_recursions : int, optional
        Level of the codes (default: the encoder's).
    batch_rows : int
    overwrite : bool
        Start ``out`` afresh.
    progress : callable, optional
        Called with the number of rows finished (skipped rows count at the start).

    Returns
    -------
    FeatureStore
        ``out``, open for reading.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from hardneg.encoding import ESVMEncoder, encode_store
    >>> from hardneg.store import FeatureStore
    >>> rng = np.random.default_rng(0)
    >>> folder = tempfile.mkdtemp()
    >>> with FeatureStore.create(folder + "/base", dim=8) as src:
    ...     src.append(rng.normal(size=(30, 8)), labels=np.arange(30) % 3)
    >>> enc = ESVMEncoder(alpha_neg=0.01, min_negatives=20, random_state=0).fit(rng.normal(size=(50, 8)))
    >>> codes = encode_store(enc, folder + "/base", folder + "/esvm", batch_rows=8)
    >>> len(codes), codes.labels()[:4].tolist()
    (30, [0, 1, 2, 0])
    """
    from sklearn.utils.validation import check_is_fitted

    from .._validation import check_positive_int
    from ..store import FeatureStore
    from ..store._errors import StoreError

    check_is_fitted(encoder)
    batch_rows = check_positive_int(batch_rows, "batch_rows")
    src = store if isinstance(store, FeatureStore) else FeatureStore.open(store)
    if src.dim != encoder.n_features_in_:
        raise ValueError(f"{src.path} has {src.dim} features but the encoder was fitted on {encoder.n_features_in_}")
    level = encoder.n_recursions if n_recursions is None else n_recursions
    stamp = {"fingerprint": encoder.fingerprint(), "n_recursions": int(level), "source": str(Path(src.path).resolve()), "source_rows": len(src)}
    out = Path(out)
    if out.exists() and not overwrite:
        dst = FeatureStore.open(out, "a")
        got = (dst.attrs or {}).get("esvm")
        if got != stamp:
            dst.close()
            raise StoreError(
                f"{out} exists but was not written by this encoder from {src.path} (overwrite=True / --overwrite starts afresh)"
            )
        start = len(dst)
        if start:
            logger.info("resuming: %d of %d rows already encoded", start, len(src))
    else:
        dst = FeatureStore.create(out, src.dim, overwrite=overwrite, attrs={"esvm": stamp})
        start = 0
    try:
        if progress is not None and start:
            progress(start)
        items = src.items
        for lo, block in src.iter_chunks(batch_rows, start=start):
            X = block.toarray() if hasattr(block, "toarray") else np.asarray(block)
            codes = encoder.transform(X, n_recursions=level)
            dst.append(codes, **_item_columns(items.slice(lo, X.shape[0])))
            if progress is not None:
                progress(X.shape[0])
    finally:
        dst.close()
    return FeatureStore.open(out)
