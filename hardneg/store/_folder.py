"""Where a store lives, as a folder: its location (a path, a ``file://`` URL, or a remote
:class:`~hardneg.store._remote.RemoteFolder`), what a store folder may hold, and the safe
replacement and clean-up of store folders (``--overwrite``, interrupted builds).

Nothing here reads or writes vectors; :mod:`hardneg.store._writer` builds and swaps stores
with these checks, :mod:`hardneg.store._chunks` reads the chunk files.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
from pathlib import Path

from ._errors import StoreError
from ._meta import META
from ._remote import LOCAL_PROTOCOLS, RemoteFolder, remote_timeout, url_protocol

logger = logging.getLogger(__name__)

# Zarr's LocalStore writes a chunk to "<name>.<uuid4 hex>.partial", then renames it.
ZARR_TEMP = re.compile(r"\.[0-9a-f]{32}\.partial$")


def local_store_path(path) -> Path:
    """The local folder of a store given as a path or a ``file://`` URL (for writing).

    ``file://`` (and ``local://``) URLs name a local or shared-filesystem
    folder (NFS, a mounted bucket): what every worker of a cluster can open
    by the same name. Object-store URLs (``s3://``, ``gs://``, ...) are
    refused here with a clear error: a store is written by atomic renames,
    which an object store lacks. They can be opened read-only, see
    :func:`store_location`.
    """
    protocol = url_protocol(path)
    if protocol is not None:
        if protocol not in LOCAL_PROTOCOLS:
            raise ValueError(
                f"{path}: a store is written to a local or shared-filesystem folder (a path or a file:// URL), "
                f"not to {protocol}:// (no atomic rename there); write it locally and upload it, or mount the bucket"
            )
        from fsspec.utils import infer_storage_options

        return Path(infer_storage_options(path)["path"])
    return Path(path)


def store_location(path, timeout: float | None = None) -> Path | RemoteFolder:
    """Where a store is read from: a local folder, or a :class:`RemoteFolder`
    for an object-store URL (any fsspec protocol with its backend installed),
    whose requests time out after ``timeout`` seconds (see :func:`remote_timeout`)."""
    protocol = url_protocol(path)
    if protocol is not None and protocol not in LOCAL_PROTOCOLS:
        return RemoteFolder.from_url(path, timeout=timeout)
    if timeout is not None:
        remote_timeout(timeout)  # checked, unused: local reads do not time out
    return local_store_path(path)



# What a store folder may hold: anything else in it is not ours to delete.
# codebook.npz: the bag-of-words / VLAD extractor's vocabulary (hardneg.features._codebook.CODEBOOK_FILE).
_STORE_ENTRIES = frozenset({META, "vectors", "items", ".lock", "codebook.npz"})
_ATOMIC_TEMP = re.compile(r"(meta\.json|codebook\.npz)\..*\.tmp$")  # left by a write killed before its rename


def is_store_entry(name: str) -> bool:
    return name in _STORE_ENTRIES or bool(_ATOMIC_TEMP.match(name))


# What vectors/ and items/ may hold (paths relative to the store, folders included): Zarr's metadata
# and chunk files, item parts, and the temporary files of their atomic writes.
TREE_ENTRY = re.compile(
    r"(vectors(/zarr\.json|/(X|indptr|indices|data)(/zarr\.json|/c(/\d+){0,2})?)?(\.[0-9a-f]{32}\.partial)?"
    r"|items(/part-\d+\.parquet(\..+\.tmp)?)?)"
)


def _foreign_entries(path: Path) -> list[str]:
    """Entries of a store folder, at any depth, that the store did not write (relative paths;
    links count as foreign: deleting the store must not follow or drop them)."""
    foreign = []
    for entry in sorted(path.iterdir()):
        if not is_store_entry(entry.name) or (entry.is_symlink() and entry.name != META):
            foreign.append(entry.name)
        elif entry.name in ("vectors", "items") and entry.is_dir():
            for root, dirs, files in os.walk(entry):
                for name in sorted(dirs + files):
                    rel = os.path.relpath(os.path.join(root, name), path).replace(os.sep, "/")
                    if os.path.islink(os.path.join(root, name)) or not TREE_ENTRY.fullmatch(rel):
                        foreign.append(rel)
                dirs[:] = [d for d in dirs if TREE_ENTRY.fullmatch(os.path.relpath(os.path.join(root, d), path).replace(os.sep, "/"))]
    return foreign


def check_replaceable(path: Path, action: str = "overwrite") -> None:
    """Refuse to overwrite anything but a hardneg store (by its format marker) or an empty folder.

    ``--overwrite`` must never delete what the store did not write: a folder
    that merely holds a ``meta.json``, a store with the user's own files put
    inside it, a plain file, or a symbolic link are all refused, naming why.
    """
    if path.is_symlink() or not path.is_dir():
        kind = "a symbolic link" if path.is_symlink() else "a file"
        raise StoreError(f"refusing to {action} {str(path)!r}: it is {kind}, not a FeatureStore; remove it yourself or choose another output")
    entries = sorted(p.name for p in path.iterdir())
    if not entries:
        return
    foreign = _foreign_entries(path)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise StoreError(f"refusing to {action} {str(path)!r}: it is a non-empty folder with files that are not a FeatureStore's ({shown}); move them out first")
    try:
        meta = json.loads((path / META).read_text(encoding="utf-8"))
        marker = meta.get("format") if isinstance(meta, dict) else None
    except (OSError, ValueError, RecursionError):
        marker = None
    # A store whose meta.json is damaged is still recognisable by its layout, and may be rebuilt.
    layout = (path / "vectors").is_dir() and (path / "items").is_dir()
    if marker != "hardneg.FeatureStore" and not layout:
        raise StoreError(f"refusing to {action} {str(path)!r}: it is a non-empty folder that is not a FeatureStore (no hardneg format marker in {META})")


def writes_into_input(output, source) -> bool:
    """Whether writing ``output`` would overwrite ``source`` or put a file inside it (a store folder).

    Paths are compared after resolving links; URLs (and ``None``) never match:
    they are read, never written here.
    """
    if output is None or source is None or url_protocol(str(output)) not in (None, *LOCAL_PROTOCOLS):
        return False
    source_path = getattr(source, "path", source)
    if isinstance(source_path, RemoteFolder) or url_protocol(str(source_path)) not in (None, *LOCAL_PROTOCOLS):
        return False
    target = os.path.realpath(local_store_path(output))
    src = os.path.realpath(local_store_path(source_path))
    inside_store = target.startswith(src.rstrip(os.sep) + os.sep) and (Path(src) / META).is_file()
    return target == src or inside_store


def check_output_not_input(output: str | os.PathLike, *inputs: str | os.PathLike | RemoteFolder, what: str = "output") -> None:
    """Refuse a job whose output is one of its inputs, before anything is touched.

    Writing a store onto the store it reads (``esvm encode S.store -o
    S.store --overwrite``) would empty the input and then fail; writing inside
    an input store would put a foreign file in it. See :func:`writes_into_input`.

    Parameters
    ----------
    output : str or path-like
        Where the job writes.
    *inputs : str, path-like or RemoteFolder
        What it reads (a remote input never matches).
    what : str
        How the error names the output (e.g. ``"--out"``).

    Raises
    ------
    StoreError
        If ``output`` is an input, or lies inside an input store.
    """
    for source in inputs:
        if writes_into_input(output, source):
            raise StoreError(f"{what} {str(output)!r} is also an input of this run; write it somewhere else")


def remove_tree(store: Path, folder: Path) -> None:
    """Delete the store's own files under ``folder`` (:data:`TREE_ENTRY`), then the emptied folders;
    a foreign file (put there by hand) stays, with the folders that hold it."""
    for root, dirs, files in os.walk(folder, topdown=False):
        for name in files + dirs:
            p = os.path.join(root, name)
            rel = os.path.relpath(p, store).replace(os.sep, "/")
            if os.path.islink(p) or not TREE_ENTRY.fullmatch(rel):
                continue
            try:
                os.rmdir(p) if name in dirs else os.unlink(p)
            except OSError:
                pass  # a folder that still holds a foreign file
    try:
        folder.rmdir()
    except OSError:
        pass


def remove_replaced(trash: Path) -> None:
    """Delete a replaced store folder: only the store's own entries, then the folder if empty."""
    if trash.is_symlink() or not trash.is_dir():
        trash.unlink(missing_ok=True)
        return
    for entry in trash.iterdir():
        if not is_store_entry(entry.name):
            continue  # checked before the swap; never delete what is not the store's
        if entry.name in ("vectors", "items") and entry.is_dir() and not entry.is_symlink():
            remove_tree(trash, entry)
        elif entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    try:
        trash.rmdir()
    except OSError:
        logger.warning("could not remove all of the replaced store %s", trash)


_STALE_AFTER_S = 3600


def _build_folders(path: Path) -> list[Path]:
    """The folders beside ``path`` that a rebuild, an import or ``FeatureStore.create`` of it makes:
    ``.NAME.<hex>.swap`` (and the ``.creating`` folder built inside that name), ``NAME.<rand>.creating``,
    ``NAME.<hex>.deleting``."""
    name = re.escape(path.name)
    pattern = re.compile(rf"\.{name}\.[0-9a-f]{{32}}\.swap(\.[a-z0-9_]+\.creating)?|{name}\.([a-z0-9_]{{8}}\.creating|[0-9a-f]{{32}}\.deleting)")
    try:
        return [p for p in path.parent.iterdir() if pattern.fullmatch(p.name) and p.is_dir() and not p.is_symlink()]
    except OSError:
        return []


def clear_stale_builds(path: Path) -> None:
    """Remove the build folders beside ``path`` that dead processes left (a killed import or rebuild).

    A builder holds the lock file inside its folder from just after the folder is made
    (:meth:`FeatureStore.create`) until it is renamed into place: a folder whose lock can be
    taken, and that holds ``meta.json`` (written under the lock) or is over an hour old (its
    builder died before writing it), has no living owner. A folder with no lock file is left
    alone (its owner cannot be told), and only the store's own files are deleted
    (:func:`remove_replaced`). A ``.swap`` or ``.deleting`` folder may hold the old store
    itself (a process killed between the two renames of a swap): it is removed only while a
    store is in place at ``path``; a ``.creating`` folder never holds a committed store.
    """
    import time

    from filelock import FileLock, Timeout

    store_in_place = (path / META).is_file()
    for stale in _build_folders(path):
        if not (store_in_place or stale.name.endswith(".creating")):
            continue  # perhaps the only copy of the store: left for the user
        try:
            started = (stale / META).is_file() or time.time() - stale.stat().st_mtime > _STALE_AFTER_S
        except OSError:
            continue
        if not (stale / ".lock").is_file() or not started:
            continue  # no lock file, or made a moment ago: perhaps a builder about to take its lock
        lock = FileLock(str(stale / ".lock"))
        try:
            lock.acquire(timeout=0)
        except (Timeout, OSError):
            continue  # a live builder
        try:
            logger.info("removing %s, left by an interrupted build of %s", stale, path)
            remove_replaced(stale)
        finally:
            lock.release()


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``).

    False where the system or the filesystem lacks it; the caller then
    falls back to two renames.
    """
    import ctypes
    import errno

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def swap_dir(path: Path) -> Path:
    """A free sibling name for a store being rebuilt beside ``path`` (hidden, removed on success)."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex}.swap")


def swap_in(tmp: Path, path: Path) -> Path:
    """Put the folder ``tmp`` at ``path`` (which exists) in one atomic exchange; returns where the
    old folder now is (to remove). Where the system lacks the exchange, two renames: a kill
    between them leaves the old store under a ``.swap`` name beside an empty ``path``."""
    fsync_dir(tmp)
    if _exchange(tmp, path):
        fsync_dir(path.parent)
        return tmp
    trash = swap_dir(path)
    os.rename(path, trash)
    try:
        os.rename(tmp, path)
    except BaseException:
        os.rename(trash, path)
        raise
    return trash
