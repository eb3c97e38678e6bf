"""Verified downloads: temp file, MD5 check, then an atomic rename."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from urllib.error import URLError
from urllib.request import urlopen

from hardneg.datasets._base import DatasetDownloadError

__all__ = ["download_files", "md5sum"]

logger = logging.getLogger(__name__)
_CHUNK = 1 << 20


def md5sum(path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _fetch_one(url: str, dest_dir: Path, md5: str, timeout: float) -> Path:
    """Download ``url`` to a temp file in ``dest_dir``; return it once verified."""
    fd, tmp_name = tempfile.mkstemp(prefix=".download-", suffix=".part", dir=dest_dir)
    tmp = Path(tmp_name)
    h = hashlib.md5()
    try:
        with os.fdopen(fd, "wb") as out, urlopen(url, timeout=timeout) as response:
            for chunk in iter(lambda: response.read(_CHUNK), b""):
                h.update(chunk)
                out.write(chunk)
    except (URLError, OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        raise DatasetDownloadError(f"could not download {url}: {exc}") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    digest = h.hexdigest()
    if digest != md5:
        tmp.unlink(missing_ok=True)
        raise DatasetDownloadError(
            f"checksum mismatch for {url}: MD5 {digest}, expected {md5}; the file was discarded "
            "(a proxy page or a corrupted transfer?)"
        )
    return tmp


def download_files(base_url: str, files: dict[str, str], dest_dir, *, timeout: float = 60.0) -> Path:
    """Download ``files`` (name -> MD5) from ``base_url`` into ``dest_dir``.

    All or nothing: every file goes to a temp file and is checked against its
    MD5; only when all match are they renamed into place. On any failure the
    temp files are removed (and ``dest_dir`` too, if this call created it and
    it is empty). Files already present in ``dest_dir`` are kept.
    """
    dest = Path(dest_dir)
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    done: list[tuple[Path, Path]] = []
    try:
        for name, md5 in files.items():
            target = dest / name
            if target.exists():
                continue
            url = base_url.rstrip("/") + "/" + name
            logger.info("downloading %s", url)
            done.append((_fetch_one(url, dest, md5, timeout), target))
    except BaseException:
        for tmp, _ in done:
            tmp.unlink(missing_ok=True)
        if created:
            try:
                dest.rmdir()
            except OSError:
                pass
        raise
    for tmp, target in done:
        os.replace(tmp, target)
    return dest
