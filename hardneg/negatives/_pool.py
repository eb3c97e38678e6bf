"""A negative pool: an in-memory array or a FeatureStore, with tag exclusion.

The pool is read by row index (``take``) and in chunks (``iter_chunks``);
nothing loads a whole store. Items tagged with the concept, or with related
tags the user supplies, are excluded before any sampling (Li et al. 2013,
Section III-A: the pool holds user-tagged images, and images tagged with the
concept are likely positives).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from hardneg._typing import ArrayLike
from hardneg._validation import check_matrix, is_store
from hardneg.store._items import rows_with_any_tag

__all__ = ["NegativePool"]


class NegativePool:
    """Rows that may serve as negatives.

    Parameters
    ----------
    data : array-like (n, d) or FeatureStore
        Non-negative features. A store is read in chunks and by ``take``.
    tags : sequence of (list of str), optional
        Tags per row for an array pool (a store carries its own tags).
    exclude_tags : iterable of str, optional
        Rows carrying any of these tags are never sampled.
    rows : array of int, optional
        Restrict the pool to these rows (e.g. a training split).

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.negatives import NegativePool
    >>> pool = NegativePool(np.eye(3), tags=[["cat"], ["dog"], []], exclude_tags=["cat"])
    >>> pool.allowed.tolist()
    [1, 2]
    """

    def __init__(self, data: Any, *, tags: Sequence[Any] | None = None, exclude_tags: Iterable[str] | None = None,
                 rows: ArrayLike | None = None):
        self.is_store = is_store(data)
        if self.is_store:
            self._store = data
            self.n_rows, self.dim = len(data), data.dim
            if tags is not None:
                raise ValueError("tags: a FeatureStore pool carries its own tags; do not pass tags")
            self._array: Any = None  # the features of an array pool (None for a store)
        else:
            self._array = check_matrix(data, "pool", non_negative=True)
            self.n_rows, self.dim = self._array.shape
            if tags is not None:
                tags = _tag_lists(tags)
                if len(tags) != self.n_rows:
                    raise ValueError(f"pool_tags: has {len(tags)} entries for {self.n_rows} pool rows")
        self._tags: pa.ListArray | None = tags
        allowed = np.zeros(self.n_rows, dtype=bool)
        if rows is None:
            allowed[:] = True
        else:
            rows = np.asarray(rows)
            if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
                raise TypeError(f"pool_rows: expected a 1-D array of row indices, got shape {rows.shape} dtype {rows.dtype}")
            if rows.size and (rows.min() < 0 or rows.max() >= self.n_rows):
                raise IndexError(f"pool_rows: out of range for a pool of {self.n_rows} rows")
            allowed[rows] = True
        self.exclude_tags = sorted({str(t) for t in ([exclude_tags] if isinstance(exclude_tags, str) else (exclude_tags or []))})
        tagged = np.zeros(self.n_rows, dtype=bool)
        if self.exclude_tags:
            tagged = allowed & self._tag_mask(self.exclude_tags)
            allowed &= ~tagged
        self.allowed = np.flatnonzero(allowed)
        #: Rows (within ``rows``) that carry an excluded tag: likely positives, never
        #: negatives; the "auto" rank window uses them as a held-out positive sample.
        self.tagged = np.flatnonzero(tagged)
        if self.allowed.size == 0:
            raise ValueError(f"pool: no rows left to sample negatives from after excluding tags {self.exclude_tags}")

    def _tag_mask(self, tags) -> np.ndarray:
        if self.is_store:
            mask = np.zeros(self.n_rows, dtype=bool)
            mask[self._store.select(tags=list(tags))] = True
            return mask
        if self._tags is None:
            return np.zeros(self.n_rows, dtype=bool)
        return rows_with_any_tag(self._tags, tags)

    def exclude_near_duplicates(self, references: ArrayLike, min_cosine: float, chunk_rows: int = 8192) -> np.ndarray:
        """Drop allowed rows whose cosine similarity to some reference row is >= ``min_cosine``.

        Extra, not in Li et al. (2013): a learner passes its positives (B+ and the
        pool's tagged rows) as ``references``; a pool row that is (nearly) the
        same vector as a positive is either a positive the tags missed or a copy
        filed under another tag, and as a negative it only contradicts the
        positive. Returns the dropped rows (also kept in ``near_duplicates``);
        they never become negatives. Refuses to drop every allowed row.

        Parameters
        ----------
        references : array-like of shape (n_references, d)
            The positive rows to compare with.
        min_cosine : float
            Cosine similarity in (0, 1] from which a pool row counts as a near-duplicate.
        chunk_rows : int, default=8192
            Allowed rows read and compared per block.

        Returns
        -------
        ndarray of int64, shape (n_dropped,)
            The pool rows dropped from :attr:`allowed`.
        """
        if not 0 < float(min_cosine) <= 1:
            raise ValueError(f"min_cosine: expected a cosine in (0, 1], got {min_cosine!r}")
        ref = np.asarray(references, dtype=np.float32)
        if ref.ndim != 2 or ref.shape[1] != self.dim:
            raise ValueError(f"references: expected shape (n, {self.dim}), got {ref.shape}")
        ref = ref / np.maximum(np.linalg.norm(ref, axis=1, keepdims=True), 1e-12)
        near = np.zeros(self.allowed.size, dtype=bool)
        if ref.shape[0]:
            for lo in range(0, self.allowed.size, chunk_rows):
                block = self.take(self.allowed[lo : lo + chunk_rows]).astype(np.float32, copy=False)
                block = block / np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
                near[lo : lo + block.shape[0]] = (block @ ref.T).max(axis=1) >= float(min_cosine)
        if near.all():
            raise ValueError(f"min_cosine={min_cosine}: every pool row is a near-duplicate of a positive; raise it")
        dropped = self.allowed[near]
        self.allowed = self.allowed[~near]
        self.near_duplicates = np.union1d(getattr(self, "near_duplicates", np.empty(0, np.int64)), dropped)
        return dropped

    @property
    def n_allowed(self) -> int:
        """Number of rows that may still be sampled (``allowed.size``)."""
        return int(self.allowed.size)

    def take(self, rows: ArrayLike) -> np.ndarray:
        """Dense float32 rows (sparse store rows are densified: the kernel needs them dense).

        Parameters
        ----------
        rows : array-like of int, shape (n,)
            Pool rows.

        Returns
        -------
        ndarray of shape (n, d)
            Those rows, in order: float32 for a store pool, the checked array's dtype
            for an array pool.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if not self.is_store:
            return self._array[rows]
        block = self._store.take(rows)
        if sp.issparse(block):
            block = block.toarray()
        return check_matrix(block, "pool rows", non_negative=True, min_rows=0)

    def tags_of(self, rows: ArrayLike) -> list[list[str]]:
        """Tags of the given rows.

        Parameters
        ----------
        rows : array-like of int, shape (n,)
            Pool rows.

        Returns
        -------
        list of list of str
            The tags of each row, in order (empty lists for an array pool without tags).
        """
        rows = np.asarray(rows, dtype=np.int64)
        if self.is_store:
            col = self._store.items.column("tags")
            if rows.size > 1000:  # one conversion beats many per-row ones
                return [t or [] for t in col.take(rows).to_pylist()]
            return [col[int(r)].as_py() or [] for r in rows]
        if self._tags is None:
            return [[] for _ in rows]
        return [t or [] for t in self._tags.take(np.asarray(rows, dtype=np.int64)).to_pylist()]

    def ids_of(self, rows: ArrayLike) -> list[str]:
        """Item ids of the given rows.

        Parameters
        ----------
        rows : array-like of int, shape (n,)
            Pool rows.

        Returns
        -------
        list of str
            The store's ids, or the row numbers as strings for an array pool.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if self.is_store:
            col = self._store.items.column("id")
            return [col[int(r)].as_py() for r in rows]
        return [str(int(r)) for r in rows]

    def iter_chunks(self, rows: int = 65536) -> Iterator[tuple[int, np.ndarray]]:
        """Every pool row (allowed or not), in dense blocks.

        Parameters
        ----------
        rows : int, default=65536
            Rows per block.

        Yields
        ------
        first_row : int
            Pool row of the block's first row.
        block : ndarray of shape (n_rows, d)
            The block's rows (sparse store blocks densified).
        """
        if self.is_store:
            for lo, block in self._store.iter_chunks(rows):
                yield lo, (block.toarray() if sp.issparse(block) else np.asarray(block))
        else:
            for lo in range(0, self.n_rows, rows):
                yield lo, self._array[lo : lo + rows]

    def feature_max(self) -> np.ndarray:
        """Per-dimension maximum over the whole pool (one chunked pass for a store).

        Returns
        -------
        ndarray of shape (d,)
            The maximum of every dimension over all pool rows (float32 for a store).
        """
        cached = getattr(self, "_feature_max", None)
        if cached is None:  # the pool's data never change: one pass serves every fit on it
            cached = self._feature_max = self._compute_feature_max()
            cached.setflags(write=False)
        return cached

    def _compute_feature_max(self) -> np.ndarray:
        if not self.is_store:
            return np.asarray(self._array.max(axis=0))
        out = np.zeros(self.dim, dtype=np.float32)
        for _, block in self.iter_chunks():
            if block.shape[0]:
                np.maximum(out, block.max(axis=0), out=out)
        if out.size and out.min() < 0:
            raise ValueError("pool: contains negative values; the histogram-intersection kernel needs non-negative features")
        return out


def _tag_lists(tags: Sequence[Any]) -> pa.ListArray:
    """Tags per row as one Arrow list array (a row's tags: a list of str, one str, or None for none).

    Arrow converts a list of lists of str at C speed; the exclusion mask is then one ``is_in``
    over every tag instead of a Python set operation per row (the service builds a pool twice per
    feedback round). Other tag values (numbers, None inside a row) take the slow path and become
    ``str(x)``.
    """
    if isinstance(tags, pa.ChunkedArray):
        tags = tags.combine_chunks()
    if isinstance(tags, pa.ListArray) and pa.types.is_string(tags.type.value_type) and not pc.list_flatten(tags).null_count:
        return tags
    tags = tags.to_pylist() if isinstance(tags, pa.Array) else list(tags)
    if not any(isinstance(t, str) for t in tags):  # Arrow would split a lone str into characters
        try:
            arr = pa.array(tags, type=pa.list_(pa.string()))
            if not pc.list_flatten(arr).null_count:
                return arr
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    rows = [[] if t is None else [t] if isinstance(t, str) else [str(x) for x in t] for t in tags]
    return pa.array(rows, type=pa.list_(pa.string()))
