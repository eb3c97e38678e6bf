"""Encode a whole FeatureStore out of core, batch by batch, into a new store (resumable; in process or on a cluster)."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from .._parallel._partition import Partition, map_partition, open_model, partitions, store_url
from .._parallel._runner import Runner

if TYPE_CHECKING:
    from hardneg.store import FeatureStore

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


def encode_store(encoder: Any, store: Any, out: str | Path, *, n_recursions: int | None = None, batch_rows: int = 1024,
                 overwrite: bool = False, progress: Callable[[int], object] | None = None, runner: Any = None,
                 partition_rows: int | None = None, on_commit: Callable[[int], object] | None = None) -> FeatureStore:
    """Encode every row of ``store`` with a fitted :class:`~hardneg.encoding.ESVMEncoder` into the store ``out``.

    One implementation in this process or on a Dask cluster (``runner``, see
    :func:`hardneg.distributed.get_runner`). Rows are encoded partition by partition and appended in
    row order, one atomic commit per partition: by default a partition is one
    batch of ``batch_rows`` rows, on a fixed grid of multiples of ``batch_rows``,
    so memory is bounded by one batch (plus the encoder's pools) and a kill loses
    at most one batch. Everything is checked before ``out`` is created
    (dimension, ``out`` not the input, the partitioning), and a run that fails
    before writing any row removes the ``out`` it created. Item ids, paths,
    tags, labels and splits are copied. An interrupted run resumes where it
    stopped: if ``out`` exists, was written by the same encoder (its fingerprint
    is in the store's attrs) from the same source, the rows already written are
    skipped and the rest cut exactly as a clean run cuts them. A different
    encoder or source is an error unless ``overwrite``.

    Parameters
    ----------
    encoder : ESVMEncoder (fitted) or path of an encoder file (opened by each worker)
    store : FeatureStore or path
    out : path of the new store
    n_recursions : int, optional
        Level of the codes (default: the encoder's).
    batch_rows : int
        Rows encoded at a time, and per commit unless ``partition_rows`` is given.
    overwrite : bool
        Start ``out`` afresh.
    progress : callable, optional
        Called with the number of rows finished (skipped rows count at the start).
    runner : Runner, optional
        Where to run (default: in this process).
    partition_rows : int, optional
        Rows per task and commit, rounded up to whole chunks of the source (default: ``batch_rows``).
    on_commit : callable, optional
        ``on_commit(n_committed_rows)`` after each commit (tests interrupt a job with it).

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
    import functools

    from sklearn.utils.validation import check_is_fitted

    from .._validation import check_positive_int
    from ..store import FeatureStore

    runner = runner or Runner()
    enc = open_model(encoder, "esvm")
    check_is_fitted(enc)
    batch_rows = check_positive_int(batch_rows, "batch_rows")
    src = store if isinstance(store, FeatureStore) else FeatureStore.open(store)
    level = check_level(enc, n_recursions)
    # the partitions first: a bad partition_rows is refused before the output exists
    _commit_grid(src, partition_rows, batch_rows, 0)
    dst, start, created = open_output(enc, src, out, level, overwrite)
    try:
        if progress is not None and start:
            progress(start)
        items = src.items
        parts = _commit_grid(src, partition_rows, batch_rows, start)
        func = functools.partial(esvm_partition, store=store_url(src.path), encoder=runner.share(encoder), n_recursions=level,
                                 block_rows=batch_rows)
        for part, codes in zip(parts, runner.map_ordered(func, parts)):
            if codes.shape[0] != part.size or len(dst) != part.lo:
                raise RuntimeError(f"partition {part}: {codes.shape[0]} codes, output at row {len(dst)}")
            dst.append(codes, **_item_columns(items.slice(part.lo, part.size)))  # the partition's commit
            if progress is not None:
                progress(part.size)
            if on_commit is not None:
                on_commit(len(dst))
    except BaseException:
        discard_if_empty(dst, out, created)
        raise
    finally:
        dst.close()
    return FeatureStore.open(out)


def esvm_partition(part, *, store: str, encoder, n_recursions: int, block_rows: int) -> np.ndarray:
    """Codes (float32) of one partition's rows, in row order (a worker's task)."""

    enc = open_model(encoder, "esvm")
    return map_partition(store, part, block_rows, lambda X: enc.transform(X, n_recursions=n_recursions), dtype=np.float32)


def _commit_grid(src, partition_rows: int | None, batch_rows: int, start: int):
    """Partitions from ``start``: ``partition_rows`` on the source's chunk grid when given, else
    ``batch_rows`` rows each (``--batch-rows``), on a fixed grid of multiples of ``batch_rows``.

    E-SVM costs ~10 ms a row: a partition is the work a kill loses, so by default it is one
    batch, not one source chunk (65,536 rows of a sparse store: a kill lost them all).
    """

    if partition_rows is not None:
        return partitions(src, partition_rows, start=start)
    n = len(src)
    edges = [start] + list(range((start // batch_rows + 1) * batch_rows, n, batch_rows)) + [n]
    return [Partition(lo, hi) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]


def check_level(encoder, n_recursions) -> int:
    """The level of the codes: ``n_recursions`` (default the encoder's), an integer in 1..levels fitted."""
    if n_recursions is None:
        return int(encoder.n_recursions)
    fitted = len(encoder.pools_)
    if isinstance(n_recursions, bool) or not isinstance(n_recursions, Integral) or not 1 <= int(n_recursions) <= fitted:
        raise ValueError(f"n_recursions: expected an integer in 1..{fitted} (the levels the encoder was fitted for), got {n_recursions!r}")
    return int(n_recursions)


def open_output(encoder, src, out, level: int, overwrite: bool):
    """``(store open for appending, rows already there, whether this call created it)``.

    Everything is checked before the output is created: the dimension, that the
    output is not the input, and for an existing output (resumed) the stamp of
    the encoder and source that wrote it.
    """
    from ..store import FeatureStore, check_output_not_input
    from ..store._errors import StoreError

    if src.dim != encoder.n_features_in_:
        raise ValueError(f"{src.path} has {src.dim} features but the encoder was fitted on {encoder.n_features_in_}")
    stamp = {"fingerprint": encoder.fingerprint(), "n_recursions": int(level), "source": str(Path(src.path).resolve()), "source_rows": len(src)}
    out = Path(out)
    check_output_not_input(out, src)
    existed = out.exists() or out.is_symlink()
    if existed and not overwrite:
        dst = FeatureStore.open(out, "a")
        if (dst.attrs or {}).get("esvm") != stamp:
            dst.close()
            raise StoreError(
                f"{out} exists but was not written by this encoder from {src.path} (overwrite=True / --overwrite starts afresh)"
            )
        start = len(dst)
        if start:
            logger.info("resuming: %d of %d rows already encoded", start, len(src))
        return dst, start, False
    return FeatureStore.create(out, src.dim, overwrite=overwrite, attrs={"esvm": stamp}), 0, not existed


def discard_if_empty(dst, out, created: bool) -> None:
    """After a failure: remove the output store if this run created it and wrote no row into it
    (a refused run leaves nothing behind; rows already committed are kept for a resume)."""
    if not created:
        return
    try:
        empty = len(dst) == 0
        dst.close()
        if empty:
            shutil.rmtree(out)
            logger.info("removed %s: the run failed before writing any row", out)
    except Exception as exc:  # noqa: BLE001 -- never hide the failure that brought us here
        logger.warning("could not remove the empty output %s: %s", out, exc)
