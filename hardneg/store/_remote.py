"""Read-only store folders on an fsspec filesystem (object stores: ``s3://``, ``gs://``, ``az://``, ...).

A cluster's workers open a store by its URL and read the chunks they scan
themselves; nothing large goes through the client. Only reading is
supported: a store's crash safety rests on atomic renames (``os.replace``
of ``meta.json``, Zarr's chunk writes), which object stores do not have, so
writing goes to a local or shared-filesystem folder and the finished store
is uploaded as a whole (its ``meta.json`` last).

:class:`RemoteFolder` implements the part of :class:`pathlib.Path` the
store's read path uses (``/``, ``is_file``, ``is_dir``, ``read_bytes``,
``read_text``, ``stat().st_size``, ``open``), so the same checks run on
both. Credentials come from the filesystem's own configuration (e.g. the
``AWS_*`` environment variables for ``s3fs``).
"""

from __future__ import annotations

from types import SimpleNamespace

from ._errors import StoreError

LOCAL_PROTOCOLS = ("file", "local")


def url_protocol(path) -> str | None:
    """The protocol of an fsspec URL (``"s3"`` for ``s3://b/x``), or None for a plain path."""
    if isinstance(path, str) and "://" in path:
        return path.partition("://")[0].lower()
    return None


class RemoteFolder:
    """A file or folder ``root`` on the fsspec filesystem ``fs``, read-only; ``str()`` gives its URL."""

    __slots__ = ("fs", "root", "url")

    def __init__(self, fs, root: str, url: str):
        self.fs, self.root, self.url = fs, root.rstrip("/"), url.rstrip("/")

    @classmethod
    def from_url(cls, url: str) -> RemoteFolder:
        import fsspec

        try:
            fs, root = fsspec.core.url_to_fs(url)
        except (ImportError, ValueError) as exc:  # no backend installed (s3fs, gcsfs, adlfs), unknown protocol
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreError(f"{url}: cannot open {url_protocol(url)}:// URLs here ({msg})") from None
        return cls(fs, root, url)

    def __truediv__(self, name: str) -> RemoteFolder:
        return RemoteFolder(self.fs, f"{self.root}/{name}", f"{self.url}/{name}")

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"RemoteFolder({self.url!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, RemoteFolder) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    def is_file(self) -> bool:
        return self.fs.isfile(self.root)

    def is_dir(self) -> bool:
        return self.fs.isdir(self.root)

    def exists(self) -> bool:
        return self.fs.exists(self.root)

    def read_bytes(self) -> bytes:
        return self.fs.cat_file(self.root)

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def stat(self):
        return SimpleNamespace(st_size=int(self.fs.size(self.root)))

    def open(self, mode: str = "rb"):
        if mode != "rb":
            raise StoreError(f"{self.url}: stores on {url_protocol(self.url)}:// are read-only here")
        return self.fs.open(self.root, "rb")
