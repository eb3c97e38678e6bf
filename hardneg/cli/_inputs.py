"""What a command reads and where it writes, checked before any work: input and
output files and folders, id CSVs, splits and tags given on the command line, stored
items and image files used as queries, indexes checked against their store."""

from __future__ import annotations

import os
from pathlib import Path

from hardneg.exceptions import CLIError

from ._console import task_status


def check_input_file(path: str, kind: str, option: str | None = None) -> Path:
    """Refuse, before any work, an input file that is missing or a folder.

    ``kind`` says what the file should be ("a model file"); ``option`` is the
    option that named it, if any.
    """
    p = Path(path)
    where = _where(path, option)
    if p.is_dir():
        what = "a FeatureStore" if (p / "meta.json").is_file() else "a folder"
        raise CLIError(f"{where}: is {what}, not {kind}")
    if not p.is_file():
        raise CLIError(f"{where}: no such file (expected {kind})")
    return p


def _existing_parent(p: Path) -> Path:
    parent = p.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


def _where(path, option: str | None) -> str:
    return f"{option} {path}" if option else str(path)


def _check_not_a_url(path, option: str | None) -> None:
    """Outputs are written to local paths: a URL would become a folder literally named
    ``file:`` (or ``s3:``) while the command printed the URL, so it is refused, naming the
    path to give instead (issue 39 item 7)."""
    from hardneg.store._remote import LOCAL_PROTOCOLS, url_protocol

    protocol = url_protocol(str(path))
    if protocol is None:
        return
    if protocol in LOCAL_PROTOCOLS:
        from fsspec.utils import infer_storage_options

        local = infer_storage_options(str(path))["path"]
        raise CLIError(f"{_where(path, option)}: outputs are written to a local path, not a URL; give {local}")
    raise CLIError(f"{_where(path, option)}: outputs are written to a local path, not to {protocol}:// (write locally, then upload)")


def check_output_file(path: str, option: str | None = None, *, sidecars: tuple[str, ...] = (), inputs=()) -> Path:
    """Refuse, before any work, an output file that cannot be written.

    A folder in its place, a file where a parent folder should be, or a
    folder that cannot be written would otherwise fail only at the end, after
    the training, and with an ``OSError`` about a temporary file.
    ``sidecars`` are suffixes of files written next to it (``.ids.npz``).
    An output that is one of the command's ``inputs`` (or lies inside an
    input store) is refused too: writing it would destroy what is being read
    (or put a foreign file in the store).
    """
    _check_not_a_url(path, option)
    p = Path(path)
    for target in (p, *(Path(str(p) + s) for s in sidecars)):
        if target.is_dir():
            raise CLIError(f"{_where(target, option)}: is a folder; give a file name")
        _check_not_an_input(target, option, inputs)
    _check_writable_parent(p, option)
    return p


def _check_not_an_input(target: Path, option: str | None, inputs) -> None:
    from hardneg.store._folder import writes_into_input

    for source in inputs:
        if writes_into_input(target, source):
            raise CLIError(f"{_where(target, option)}: is also an input of this command ({source}); write the output somewhere else")


def check_output_dir(path: str, option: str | None = None, *, inputs=()) -> Path:
    """Refuse, before any work, an output folder that is a file, cannot be
    created, is one of the command's ``inputs``, or is a URL."""
    _check_not_a_url(path, option)
    p = Path(path)
    _check_not_an_input(p, option, inputs)
    if p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise CLIError(f"{_where(path, option)}: cannot write in this folder (permission denied)")
        return p
    if p.exists():
        raise CLIError(f"{_where(path, option)}: is a file, not a folder")
    _check_writable_parent(p, option)
    return p


def _check_writable_parent(p: Path, option: str | None) -> None:
    parent = _existing_parent(p)
    if not parent.is_dir():
        raise CLIError(f"{_where(p, option)}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CLIError(f"{_where(p, option)}: cannot write in {parent} (permission denied)")


def read_id_csv(path: str, option: str) -> dict[str, str]:
    """``id,value`` rows of a CSV file as a dict; a first row ``id,...`` is a header.

    Read by :func:`hardneg.store._csv.read_csv_rows` (the rules of every id CSV).
    Refused with one line naming ``option``: a missing file, a row without a
    value, an id given twice.
    """
    from hardneg.store._csv import read_csv_rows, starts_with_header

    check_input_file(path, "a CSV file of id,value rows", option)
    try:
        rows = read_csv_rows(path, option)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    out: dict[str, str] = {}
    for n, row in rows[1 if starts_with_header(rows) else 0 :]:
        if len(row) < 2:
            raise CLIError(f"{option} {path}: line {n} has no value after the id (expected id,value)")
        key, value = row[0].strip(), ",".join(row[1:]).strip()
        if key in out:
            raise CLIError(f"{option} {path}: line {n}: id {key!r} is given twice")
        out[key] = value
    if not out:
        raise CLIError(f"{option} {path}: no id,value rows")
    return out


def in_split(split: str | None) -> str:
    """`` in split 'train' (...)`` for an error that names a split, saying which flag gets past it;
    empty when no split was used."""
    if not split:
        return ""
    return (f" in split {split!r} (--split '' uses every row; items added since the store was split have none: "
            "`hardneg store split` assigns them)")


def split_tags(value: str) -> list[str]:
    """Tags of one CSV cell: separated by ';' (a tag may contain spaces)."""
    return [t.strip() for t in value.split(";") if t.strip()]


def is_same_store(recorded, path) -> bool:
    """Whether an index's recorded store location is ``path`` (both resolved to absolute locations)."""
    from .._parallel._partition import store_url

    try:
        return bool(recorded) and store_url(recorded) == store_url(path)
    except (ValueError, OSError):
        return False


def check_index_current(index_ids, store, index_path: str, rebuild: str) -> None:
    """Refuse an index built from an earlier state of ``store`` (issue 37): its items, in order, must be
    the store's. An index over removed items would return them; one missing new items would never find
    them. ``rebuild`` is the command line that brings it up to date."""
    import numpy as np

    ids = np.asarray(index_ids).astype(str)
    now = store.ids().astype(str)
    if ids.shape == now.shape and bool(np.all(ids == now)):
        return
    current = set(now.tolist())
    indexed = set(ids.tolist())
    removed = sum(1 for i in indexed if i not in current)
    added = sum(1 for i in current if i not in indexed)
    change = (f"{removed:,} of its items were removed from the store and {added:,} added" if removed or added
              else "the store's items were reordered")
    raise CLIError(f"{index_path} was built from an earlier state of {store.path}: {change} since; rebuild it: {rebuild}")


def rows_of_ids(store, ids: list[str], option: str) -> list[int]:
    """Row numbers of item ids in ``store``; a CLIError names the unknown ones."""
    rows = store.rows_of(ids)
    missing = [q for q, r in zip(ids, rows) if r < 0]
    if missing:
        raise CLIError(f"{option}: not in {store.path}: {', '.join(missing[:5])}")
    return rows.tolist()


def stored_queries(store, ids: list[str], option: str = "--query-id"):
    """``(rows, X, infos)`` of stored items used as queries: their rows, dense float32
    vectors and item info, read under a status line (the item table and the
    vectors' first check take seconds on a large store)."""
    import numpy as np

    with task_status(f"reading {len(ids)} stored quer{'y' if len(ids) == 1 else 'ies'} from {store.path}"):
        rows = rows_of_ids(store, list(ids), option)
        block = store.take(np.array(rows))
        X = np.ascontiguousarray(block.toarray() if hasattr(block, "toarray") else block, dtype=np.float32)
        infos = item_info(store, rows)
    return rows, X, infos


def extract_query_images(store, files: list[str], *, model: str | None = None, trust_model: bool = False):
    """Feature rows of image files, made the way the store's rows were (the settings recorded
    in the store, the codebook saved in it; the pixels of a built-in pixel data set): the one
    query-image function, :class:`hardneg.features._query.QueryFeatures`, which the service's
    uploads use too."""
    from ..features._images import ImageReadError, read_image

    for f in files:
        check_input_file(f, "an image file", "--query-image")
    if model is not None and not trust_model:
        raise CLIError(f"--model {model}: a model file runs code from the file; pass --trust-model if you trust it")
    images = []
    for f in files:
        try:
            images.append(read_image(f))
        except ImageReadError as exc:
            raise CLIError(f"--query-image {f}: cannot read the image ({exc})") from None
    from ..features._extract import describe_features
    from ..features._query import QueryFeatures

    what = describe_features(store.attrs.get("extractor"), store.dim)
    with task_status(f"extracting {len(files)} query image(s): loading the extractor of {store.path} ({what})"):
        return QueryFeatures(store, model=model, trust_model=trust_model).transform(images)


def item_info(store, rows) -> list[dict]:
    """id, label (class name where the store has them), tags and image path of store rows.

    Paths are resolved to files that open from any working directory.
    """
    from ..store._items import resolve_stored_path

    rows = [int(r) for r in rows]
    items = store.items
    names = store.attrs.get("class_names") or []
    ids = items.column("id")
    labels = items.column("label")
    tags = items.column("tags")
    paths = items.column("path")
    out = []
    for r in rows:
        lab = labels[r].as_py()
        out.append({
            "id": ids[r].as_py(),
            "label": None if lab is None else (names[lab] if 0 <= lab < len(names) else str(lab)),
            "tags": tags[r].as_py() or [],
            "path": resolve_stored_path(store, paths[r].as_py()),
        })
    return out
