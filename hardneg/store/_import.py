"""Bring your own embeddings: a FeatureStore from a ``.npy``, ``.parquet`` or ``.safetensors`` file.

Every method reads a FeatureStore; a collection embedded elsewhere (CLIP,
DINO, a model of your own) becomes one here, read block by block so a file
larger than memory imports as well as a small one:

- ``.npy``: a 2-D array of numbers (memory-mapped; no pickled objects);
- ``.parquet``: one embedding column (a list of numbers per row, the only
  such column unless ``column=`` names it) and optional ``id``, ``path``,
  ``tags`` (a list of strings, or one string with ``;`` between tags) and
  ``label`` (an integer class, or a class name) columns;
- ``.safetensors``: the tensor ``embeddings`` (or the file's only tensor),
  and optionally an integer tensor ``labels``. The format holds tensors
  only: ids come from an ``ids`` side file, else the row numbers.

Side files (CSV, UTF-8; the rules of :mod:`hardneg.store._csv`: no comments)
add what the embedding file lacks: ``ids`` holds one id per row in row order
(first column; a first row ``id`` is a header unless the file holds exactly one
row per embedding), ``tags`` holds ``id,tag1;tag2`` rows and ``labels``
``id,class`` rows.

Every value is checked (NaN or infinity, also after the cast to float32,
shapes, types) and refused with one line naming the file and the row. The
store is built beside ``out`` and renamed into place at the end, so an
interrupted import leaves no half store (``overwrite`` swaps an old store
out in one atomic step).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .._validation import reads_as_number
from ._csv import read_csv_rows, starts_with_header
from ._errors import StoreError
from ._items import id_problem, image_path

if TYPE_CHECKING:
    from ._feature_store import FeatureStore

logger = logging.getLogger(__name__)

__all__ = ["import_embeddings", "FORMATS"]

FORMATS = (".npy", ".parquet", ".safetensors")
DEFAULT_BLOCK_ROWS = 65536
#: Dense dimensions beyond this are refused before anything is read (a 2 x 8,000,000 file is a mistake, and
#: a store chunk of such rows would take gigabytes); blocks are also bounded by bytes, not rows alone.
MAX_IMPORT_DIM = 1 << 20
BLOCK_BYTES = 64 << 20


def _read_ids(path, n: int) -> list[str]:
    rows = read_csv_rows(path, "ids")
    header = starts_with_header(rows) and len(rows) != n  # with exactly n rows, a first 'id' is an id
    ids = [r[0].strip() for _, r in rows[1 if header else 0 :]]
    if len(ids) != n:
        took = " (not counting its first row 'id', taken as a header)" if header else ""
        raise ValueError(f"ids {path}: {len(ids):,} ids for {n:,} embedding rows{took}; one id per row, in row order")
    seen: set[str] = set()
    for (line, _), i in zip(rows[1 if header else 0 :], ids):
        if not i:
            raise ValueError(f"ids {path}: line {line}: the id is empty")
        problem = id_problem(i, as_path=True)
        if problem is not None:
            raise ValueError(f"ids {path}: line {line}: the id {i[:80]!r} {problem}")
        if i in seen:
            raise ValueError(f"ids {path}: line {line}: id {i!r} is given twice")
        seen.add(i)
    return ids


def _read_mapping(path, what: str, known: dict[str, int]) -> dict[str, str]:
    rows = read_csv_rows(path, what)
    if starts_with_header(rows) and rows[0][1][0].strip() not in known:  # 'id' is a header unless an item has that id
        rows = rows[1:]
    out: dict[str, str] = {}
    for line, row in rows:
        if len(row) < 2:
            raise ValueError(f"{what} {path}: line {line} has no value after the id (expected id,value)")
        key = row[0].strip()
        if key in out:
            raise ValueError(f"{what} {path}: line {line}: id {key!r} is given twice")
        out[key] = ",".join(row[1:]).strip()
    return out


# ---------------------------------------------------------------------------- readers: (n, dim), blocks


class _Source:
    """An embedding file read block by block: ``n``, ``dim``, ``blocks(rows)`` and item columns."""

    n: int
    dim: int
    ids: list[str] | None = None
    paths: list | None = None
    tags: list | None = None
    labels: list | None = None

    def blocks(self, rows: int) -> Iterator[np.ndarray]:  # pragma: no cover - interface
        raise NotImplementedError


def _check_numeric(dtype, where: str) -> None:
    if np.dtype(dtype).kind not in "fiub":
        raise ValueError(f"{where}: holds {np.dtype(dtype)} values; embeddings are numbers (float32 best)")


class _Npy(_Source):
    def __init__(self, path: Path):
        try:
            self.array = np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError as exc:
            raise ValueError(f"{path}: not a .npy array of numbers ({str(exc).splitlines()[0]})") from None
        except EOFError:
            raise ValueError(f"{path}: the file is empty or cut short (no complete .npy header)") from None
        except OSError as exc:
            raise ValueError(f"{path}: cannot read it as a .npy file ({exc.strerror or exc})") from None
        if not isinstance(self.array, np.ndarray):
            raise ValueError(f"{path}: holds several arrays (.npz); save the embeddings alone with np.save")
        if self.array.ndim != 2:
            raise ValueError(f"{path}: expected a 2-D array (rows, dims), got shape {self.array.shape}")
        _check_numeric(self.array.dtype, str(path))
        self.n, self.dim = self.array.shape

    def blocks(self, rows: int):
        for lo in range(0, self.n, rows):
            yield np.asarray(self.array[lo : lo + rows])


class _Safetensors(_Source):
    def __init__(self, path: Path):
        try:
            from safetensors import safe_open
        except ImportError:
            from .._extras import install_hint

            raise ImportError(f"{path}: reading .safetensors needs the safetensors package: {install_hint('embeddings')}") from None
        try:
            self.handle = safe_open(str(path), framework="numpy")
            keys = list(self.handle.keys())
        except Exception as exc:  # noqa: BLE001 - the library raises its own types for a bad header
            raise ValueError(f"{path}: not a readable .safetensors file ({str(exc).splitlines()[0][:160]})") from None
        if "embeddings" in keys:
            self.key = "embeddings"
        elif len(keys) == 1:
            self.key = keys[0]
        else:
            raise ValueError(f"{path}: no tensor named 'embeddings' among {', '.join(keys[:8]) or 'none'}; name the embedding tensor 'embeddings'")
        self.slice = self.handle.get_slice(self.key)
        shape = self.slice.get_shape()
        if len(shape) != 2:
            raise ValueError(f"{path}: tensor {self.key!r} has shape {tuple(shape)}; expected (rows, dims)")
        dtype = self.slice.get_dtype()
        if dtype not in ("F16", "F32", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64"):
            raise ValueError(f"{path}: tensor {self.key!r} is {dtype}, which NumPy cannot read as numbers; save it as float32")
        self.n, self.dim = int(shape[0]), int(shape[1])
        self.path = path
        if "labels" in keys and self.key != "labels":
            lab = self.handle.get_tensor("labels")
            if lab.shape != (self.n,) or lab.dtype.kind not in "iu":
                raise ValueError(f"{path}: tensor 'labels' must hold one integer per row ({self.n}), got shape {lab.shape} {lab.dtype}")
            self.labels = lab.astype(np.int64).tolist()

    def blocks(self, rows: int):
        for lo in range(0, self.n, rows):
            yield np.asarray(self.slice[lo : min(lo + rows, self.n)])


class _Parquet(_Source):
    def __init__(self, path: Path, column: str | None):
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            self.file = pq.ParquetFile(path)
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0][:160]})") from None
        schema = self.file.schema_arrow
        lists = [f.name for f in schema if pa.types.is_list(f.type) or pa.types.is_large_list(f.type) or pa.types.is_fixed_size_list(f.type)]
        numeric = [name for name in lists if pa.types.is_floating(schema.field(name).type.value_type) or pa.types.is_integer(schema.field(name).type.value_type)]
        if column is not None:
            if column not in schema.names:
                raise ValueError(f"--column {column}: {path} has no such column (columns: {', '.join(schema.names)})")
            if column not in numeric:
                raise ValueError(f"--column {column}: in {path} it is {schema.field(column).type}, not a list of numbers per row")
            self.column = column
        elif len(numeric) == 1:
            self.column = numeric[0]
        else:
            found = "none" if not numeric else ", ".join(numeric)
            raise ValueError(f"{path}: cannot tell the embedding column (lists of numbers: {found}); name it with --column")
        self.path = path
        self.n = self.file.metadata.num_rows
        self.dim = 0
        for batch in self.file.iter_batches(batch_size=1, columns=[self.column]):
            first = batch.column(0)[0].as_py()
            self.dim = len(first) if first is not None else 0
            break
        if self.dim == 0:
            raise ValueError(f"{path}: the first row of column {self.column!r} is empty or null")
        self._items(schema)

    def _items(self, schema) -> None:
        import pyarrow as pa

        names = set(schema.names)
        if "id" in names:
            ids = [None if v is None else str(v) for v in self._whole("id")]
            missing = [r for r, v in enumerate(ids) if v is None or v == ""]
            if missing:
                raise ValueError(f"{self.path}: column 'id' is empty in row {missing[0]}")
            for r, v in enumerate(ids):
                problem = id_problem(cast(str, v), as_path=True)
                if problem is not None:
                    raise ValueError(f"{self.path}: column 'id', row {r}: the id {cast(str, v)[:80]!r} {problem}")
            self.ids = cast("list[str]", ids)  # no None left: checked just above
        if "path" in names:
            self.paths = [None if v is None else str(v) for v in self._whole("path")]  # placed by _image_paths
        if "tags" in names:
            t = schema.field("tags").type
            raw = self._whole("tags")
            if pa.types.is_list(t) or pa.types.is_large_list(t):
                self.tags = [[str(x) for x in v] if v else [] for v in raw]
            else:
                self.tags = [[s.strip() for s in str(v).split(";") if s.strip()] if v else [] for v in raw]
        if "label" in names:
            self.labels = self._whole("label")

    def _whole(self, name: str) -> list:
        return self.file.read(columns=[name]).column(0).to_pylist()

    def blocks(self, rows: int):
        import pyarrow as pa
        import pyarrow.compute as pc

        done = 0
        for batch in self.file.iter_batches(batch_size=rows, columns=[self.column]):
            col = batch.column(0)
            if col.null_count:
                bad = done + int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
                raise ValueError(f"{self.path}: row {bad} of column {self.column!r} is null (no embedding)")
            if not pa.types.is_fixed_size_list(col.type):
                lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
                wrong = np.flatnonzero(lengths != self.dim)
                if wrong.size:
                    r = int(wrong[0])
                    raise ValueError(f"{self.path}: row {done + r} of column {self.column!r} has {lengths[r]} values, row 0 has {self.dim}")
            values = pc.list_flatten(col).to_numpy(zero_copy_only=False)
            if values.dtype == object:  # a null inside a list
                raise ValueError(f"{self.path}: column {self.column!r} holds null values inside rows {done}..{done + len(col) - 1}")
            yield values.reshape(len(col), self.dim)
            done += len(col)


def _open_source(path: Path, column: str | None) -> _Source:
    suffix = path.suffix.lower()
    if column is not None and suffix != ".parquet":
        raise ValueError(f"--column {column}: only a .parquet file has columns ({path} is {suffix or 'without a suffix'})")
    if suffix == ".npy":
        return _Npy(path)
    if suffix == ".parquet":
        return _Parquet(path, column)
    if suffix == ".safetensors":
        return _Safetensors(path)
    raise ValueError(f"{path}: unknown embedding file type {suffix or '(no suffix)'!r}; expected {', '.join(FORMATS)}")


def _image_paths(src: _Source, source: Path, item_ids: list[str], row_of: dict[str, int], paths, image_root,
                 allow_outside: bool) -> list | None:
    """The image path of each row, from the Parquet ``path`` column, the ``paths`` side file
    (``id,path`` rows; it wins) or, with neither, ``image_root``/id; None where none is given."""
    root = None
    if image_root is not None:
        root = Path(image_root)
        if not root.is_dir():
            raise ValueError(f"--image-root {image_root}: no such folder")
    out: list | None = None
    if src.paths is not None:
        base = root or source.parent
        out = [None if v is None else image_path(v, base, allow_outside, f"{source}: column 'path', row {r}")
               for r, v in enumerate(src.paths)]
    if paths is not None:
        mapping = _read_mapping(paths, "paths", row_of)
        unknown = [i for i in mapping if i not in row_of]
        if unknown:
            raise ValueError(f"paths {paths}: {len(unknown)} id(s) not among the embeddings' ids, e.g. {unknown[0]!r}")
        base = root or Path(paths).parent
        out = list(out) if out is not None else [None] * len(item_ids)
        for i, value in mapping.items():
            out[row_of[i]] = image_path(value, base, allow_outside, f"paths {paths}: id {i!r}") if value else None
    if out is None and root is not None:
        out = [image_path(i, root, allow_outside, f"id {i!r} under --image-root {image_root}") for i in item_ids]
    return out


def _labels_and_names(labels: list, where: str) -> tuple[list[int], list[str] | None]:
    """Integer classes as they are; class names numbered in sorted order (recorded as class_names).

    Missing values -- None, empty text, NaN (how pandas writes a missing integer) -- mean unlabelled
    (-1). Numbers, or texts that all read as numbers, are class ids: an integral float is that integer,
    any other number is refused naming its row. Otherwise the texts are class names.
    """
    def missing(v) -> bool:
        if isinstance(v, str):
            return not v.strip() or v.strip().lower() == "nan"
        return v is None or (isinstance(v, (float, np.floating)) and math.isnan(v))

    def class_id(v, row: int) -> int:
        if isinstance(v, str) and v.lstrip("+-").isdigit():
            return int(v)  # exact, however large (float() would round it)
        f = float(v)
        if not (math.isfinite(f) and f.is_integer()):
            raise ValueError(f"labels in {where}: row {row} holds {v!r}, which is not an integer class id "
                             "(leave it empty for an unlabelled item)")
        return int(v) if isinstance(v, (int, np.integer)) else int(f)

    values = [v for v in labels if not missing(v)]
    if not values:
        return [-1] * len(labels), None
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) for v in values):
        return [-1 if missing(v) else class_id(v, i) for i, v in enumerate(labels)], None
    as_text = ["" if missing(v) else str(v).strip() for v in labels]
    if all(reads_as_number(t) for t in as_text if t):
        return [class_id(t, i) if t else -1 for i, t in enumerate(as_text)], None
    names = sorted({t for t in as_text if t})
    index = {name: k for k, name in enumerate(names)}
    logger.info("%s: %d class names, numbered in sorted order", where, len(names))
    return [index[t] if t else -1 for t in as_text], names


def import_embeddings(
    source: str | Path,
    out: str | Path,
    *,
    ids: str | Path | None = None,
    tags: str | Path | None = None,
    labels: str | Path | None = None,
    column: str | None = None,
    paths: str | Path | None = None,
    image_root: str | Path | None = None,
    allow_outside_root: bool = False,
    overwrite: bool = False,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    progress: Callable[[int], None] | None = None,
) -> FeatureStore:
    """Write the embeddings of ``source`` into a new FeatureStore at ``out``.

    Parameters
    ----------
    source : str or Path
        A ``.npy``, ``.parquet`` or ``.safetensors`` file (see the module docstring).
    out : str or Path
        Store folder to write; it must not exist unless ``overwrite``.
    ids, tags, labels : str or Path, optional
        CSV side files: ids in row order; ``id,tag1;tag2`` rows; ``id,class`` rows.
    column : str, optional
        The embedding column of a Parquet file (default: its only list-of-numbers column).
    paths : str or Path, optional
        CSV side file of ``id,path`` rows: the image of each item (contact sheets, the page).
        Relative paths are relative to ``image_root`` if given, else to the file's folder
        (as a Parquet ``path`` column's are to the Parquet file's folder).
    image_root : str or Path, optional
        The folder image paths are relative to; without a ``path`` column or ``paths``
        file, each item's image is ``image_root/<id>`` (ids relative to the root).
    allow_outside_root : bool
        Accept image paths outside the folder they are relative to (refused by default,
        after links are followed, so a path column cannot point at private files unasked).
    overwrite : bool
        Replace an existing store at ``out``.
    block_rows : int
        Rows read and written at a time: the memory bound.
    progress : callable, optional
        Called with the number of rows just written.

    Returns
    -------
    FeatureStore
        The new store, open read-only.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> np.save(os.path.join(d, "emb.npy"), np.eye(3, dtype=np.float32))
    >>> store = import_embeddings(os.path.join(d, "emb.npy"), os.path.join(d, "emb.store"))
    >>> len(store), store.dim, store.ids().tolist()
    (3, 3, ['0', '1', '2'])
    """
    from .._validation import check_positive_int
    from ._feature_store import FeatureStore
    from ._folder import check_replaceable, clear_stale_builds, fsync_dir, local_store_path, remove_replaced, swap_dir, swap_in
    from ._writer import lock_for_overwrite

    block_rows = check_positive_int(block_rows, "block_rows")
    source = Path(source)
    if not source.is_file():
        raise ValueError(f"{source}: no such file" if not source.exists() else f"{source}: is a folder, not an embedding file")
    out = local_store_path(out)
    if (out.exists() or out.is_symlink()) and not overwrite:
        raise StoreError(f"{str(out)!r} already exists (overwrite=True / --overwrite replaces it)")
    src = _open_source(source, column)
    n, dim = src.n, src.dim
    if n == 0 or dim == 0:
        raise ValueError(f"{source}: holds no embeddings (shape ({n}, {dim}))")
    if dim > MAX_IMPORT_DIM:
        raise ValueError(f"{source}: {dim:,} dimensions per row (shape ({n:,}, {dim:,})); embeddings have at most "
                         f"{MAX_IMPORT_DIM:,}: is the array transposed?")
    block_rows = max(1, min(block_rows, BLOCK_BYTES // (8 * dim)))  # 8: the widest source dtype read (float64)
    item_ids = _read_ids(ids, n) if ids is not None else src.ids
    if item_ids is None:
        item_ids = [str(i) for i in range(n)]
    elif ids is None:
        dup = len(set(item_ids)) != n
        if dup:
            from collections import Counter

            twice = next(i for i, c in Counter(item_ids).items() if c > 1)
            raise ValueError(f"{source}: id {twice!r} is given twice")
    row_of = {i: r for r, i in enumerate(item_ids)}
    item_tags = src.tags
    if tags is not None:
        from ._items import tag_list

        mapping = _read_mapping(tags, "tags", row_of)
        unknown = [i for i in mapping if i not in row_of]
        if unknown:
            raise ValueError(f"tags {tags}: {len(unknown)} id(s) not among the embeddings' ids, e.g. {unknown[0]!r}")
        item_tags = [list(t) for t in item_tags] if item_tags is not None else [[] for _ in range(n)]
        for i, value in mapping.items():
            item_tags[row_of[i]] = list(dict.fromkeys(item_tags[row_of[i]] + [t.strip() for t in value.split(";") if t.strip()]))
        for r, t in enumerate(item_tags):
            tag_list(t, r)  # refuses a tag that would not read back as itself
    raw_labels = src.labels
    if labels is not None:
        mapping = _read_mapping(labels, "labels", row_of)
        unknown = [i for i in mapping if i not in row_of]
        if unknown:
            raise ValueError(f"labels {labels}: {len(unknown)} id(s) not among the embeddings' ids, e.g. {unknown[0]!r}")
        raw_labels = [None] * n if raw_labels is None else list(raw_labels)
        for i, value in mapping.items():
            raw_labels[row_of[i]] = value
    image_paths = _image_paths(src, source, item_ids, row_of, paths, image_root, allow_outside_root)
    item_labels, class_names = _labels_and_names(raw_labels, str(labels or source)) if raw_labels is not None else (None, None)
    attrs: dict[str, Any] = {"imported": {"file": source.name, "format": source.suffix.lower().lstrip("."), "rows": n, "dim": dim}}
    if isinstance(src, _Parquet):
        attrs["imported"]["column"] = src.column
    if class_names is not None:
        attrs["class_names"] = class_names

    # Overwriting: hold the old store's writer lock from here to the swap, so no edit or removal
    # of it runs meanwhile (a `store remove` would have deleted this build as a leftover).
    old = None
    if out.exists() or out.is_symlink():
        check_replaceable(out)
        old = lock_for_overwrite(out) if (out / "meta.json").is_file() else None
    tmp = swap_dir(out)
    leftover: Path | None = tmp  # the folder to remove at the end: the new one until it is in place
    try:
        clear_stale_builds(out)
        with FeatureStore.create(tmp, dim, attrs=attrs) as store:
            lo = 0
            for block in src.blocks(block_rows):
                block = np.asarray(block)
                _check_numeric(block.dtype, str(source))
                with np.errstate(over="ignore"):  # a value beyond float32 becomes inf: refused below, naming the row
                    X = np.ascontiguousarray(block, dtype=np.float32)
                finite = np.isfinite(X).all(axis=1)
                if not finite.all():
                    r = lo + int(np.flatnonzero(~finite)[0])
                    big = np.isfinite(block[r - lo]).all() if block.dtype.kind == "f" else True
                    why = "a value too large for float32" if big else "NaN or infinity"
                    raise ValueError(f"{source}: row {r} ({item_ids[r]!r}) holds {why}; fix or drop that row")
                hi = lo + X.shape[0]
                store.append(
                    X, ids=item_ids[lo:hi],
                    paths=None if image_paths is None else image_paths[lo:hi],
                    tags=None if item_tags is None else item_tags[lo:hi],
                    labels=None if item_labels is None else item_labels[lo:hi],
                )
                if progress is not None:
                    progress(X.shape[0])
                lo = hi
            if lo != n:
                raise ValueError(f"{source}: read {lo} rows, the header says {n}")
            fsync_dir(tmp)
            # still inside the with: the build's own lock is held until it is in place (clear_stale_builds)
            if out.exists() or out.is_symlink():
                check_replaceable(out)
                leftover = swap_in(tmp, out)
            else:
                out.parent.mkdir(parents=True, exist_ok=True)
                os.rename(tmp, out)
                leftover = None
    finally:
        if old is not None:
            old.release()
        if leftover is not None:
            remove_replaced(leftover)
    logger.info("%s: %d rows x %d imported from %s", out, n, dim, source)
    return FeatureStore.open(out)
