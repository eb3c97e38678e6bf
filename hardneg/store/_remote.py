"""Read-only store folders on an fsspec filesystem (object stores: ``s3://``, ``gs://``, ``az://``, ``http://``, ...).

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

Failing cleanly
---------------
* Every request has a connect and a read timeout: ``timeout=`` of
  :meth:`FeatureStore.open`, else the environment variable
  ``HARDNEG_REMOTE_TIMEOUT`` (seconds), else :data:`DEFAULT_TIMEOUT` (30 s).
  It applies to ``http(s)://``, ``ftp://`` and ``s3://``; other backends use
  their own settings. A server that accepts and never answers fails after
  that long instead of hanging. Over HTTP, each file (request and whole
  body) must also come within :data:`DEADLINE_FACTOR` timeouts, so a server
  that drips bytes slowly fails too.
* A transport failure (an HTTP error status, a redirect loop, a refused
  connection, a timeout, a connection closed before the whole file came) is
  a :class:`RemoteReadError`: one line naming the file's URL and what
  happened. A file that is not there is a ``FileNotFoundError``, as for a
  local folder, so the store names it as missing.
* Sizes are checked on the wire: HTTP responses are asked for, and must
  come in, the identity encoding (a ``gzip`` body is refused, never
  inflated), and no read takes more bytes than the caller's cap (a chunk's
  exact size) or :data:`MAX_READ_BYTES` for files whose size the store does
  not record (``meta.json``, ``zarr.json``, item parts).
"""

from __future__ import annotations

import io
import math
import os
from types import SimpleNamespace

from hardneg.exceptions import RemoteReadError  # defined there, re-exported here

from ._errors import StoreError

LOCAL_PROTOCOLS = ("file", "local")
HTTP_PROTOCOLS = ("http", "https")

DEFAULT_TIMEOUT = 30.0
"""Seconds to wait for a connection or for the next bytes of an answer."""
TIMEOUT_ENV = "HARDNEG_REMOTE_TIMEOUT"
DEADLINE_FACTOR = 10
"""A whole HTTP request (headers and body of one file) must finish within this many timeouts
(300 s by default): the timeout bounds each wait for bytes, so a server that drips a few bytes
at a time would otherwise hold a read for as long as it likes."""
MAX_READ_BYTES = 1 << 30
"""Most bytes read for one file whose size the store does not record (1 GiB)."""

_BLOCK = 1 << 20  # bytes per read from the socket


def url_protocol(path) -> str | None:
    """The protocol of an fsspec URL (``"s3"`` for ``s3://b/x``), or None for a plain path."""
    if isinstance(path, str) and "://" in path:
        return path.partition("://")[0].lower()
    return None


def remote_timeout(timeout=None) -> float:
    """The timeout in seconds: ``timeout`` if given, else ``$HARDNEG_REMOTE_TIMEOUT``, else 30."""
    if timeout is None:
        raw = os.environ.get(TIMEOUT_ENV, "").strip()
        if not raw:
            return DEFAULT_TIMEOUT
        where = TIMEOUT_ENV
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"{TIMEOUT_ENV}={raw!r}: expected seconds, a number > 0") from None
    else:
        where = "timeout"
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"timeout: expected seconds (a number > 0), got {type(timeout).__name__}")
        value = float(timeout)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{where}: expected seconds, a number > 0, got {value!r}")
    return value


def _storage_options(protocol: str | None, timeout: float) -> dict:
    """Backend options that bound every request by ``timeout`` (and, for HTTP, keep bodies undecoded)."""
    if protocol in HTTP_PROTOCOLS:
        try:
            import aiohttp
        except ImportError:  # fsspec names the missing package itself
            return {}
        limits = aiohttp.ClientTimeout(total=None, connect=timeout, sock_connect=timeout, sock_read=timeout)
        return {"client_kwargs": {"timeout": limits, "auto_decompress": False}, "headers": {"Accept-Encoding": "identity"}}
    if protocol == "ftp":
        return {"timeout": timeout}
    if protocol in ("s3", "s3a"):
        return {"config_kwargs": {"connect_timeout": timeout, "read_timeout": timeout}}
    return {}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _aiohttp_reason(exc: BaseException) -> str | None:
    """What an aiohttp client error says went wrong; None for any other exception, or without aiohttp."""
    try:
        import aiohttp
    except ImportError:
        return None
    if not isinstance(exc, aiohttp.ClientError):
        return None
    if isinstance(exc, aiohttp.TooManyRedirects):
        return f"too many redirects (the last was HTTP {exc.status})"
    if isinstance(exc, aiohttp.ClientResponseError):
        from aiohttp.http_exceptions import HttpProcessingError

        # a malformed answer comes as status 400 (or 0) with a multi-line parser dump: no status was sent
        if exc.status == 0 or isinstance(exc.__cause__, HttpProcessingError):
            return f"the server's answer is not valid HTTP ({_first_line(Exception(exc.message)).rstrip(':')})"
        return f"the server answered HTTP {exc.status} {_first_line(Exception(exc.message))}".rstrip()
    if isinstance(exc, (aiohttp.NonHttpUrlRedirectClientError, aiohttp.InvalidUrlRedirectClientError)):
        target = exc.args[0] if exc.args else "?"
        return f"redirected to {target}, which is not an HTTP URL"
    if isinstance(exc, aiohttp.ClientConnectorError):
        refused = isinstance(exc.os_error, ConnectionRefusedError)
        return "connection refused" if refused else f"cannot connect ({exc.os_error.strerror or _first_line(exc.os_error)})"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "short read: the server closed the connection before answering in full"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return f"short read: the connection closed before the whole file came ({_first_line(exc)})"
    return _first_line(exc)


def transport_error(exc: BaseException, url: str, timeout: float) -> BaseException:
    """What to raise for ``exc`` raised while fetching ``url``: a one-line :class:`RemoteReadError`
    for a transport failure; ``exc`` itself when it is not one (a missing file, a bug)."""
    if isinstance(exc, (StoreError, FileNotFoundError)):
        return exc
    hint = f"no answer within {timeout:g} s; raise the limit with timeout= or {TIMEOUT_ENV}"
    what = None
    if isinstance(exc, TimeoutError) or type(exc).__name__ == "FSTimeoutError":
        what = f"timed out ({hint})"
    elif (reason := _aiohttp_reason(exc)) is not None:
        what = reason
    elif isinstance(exc, ConnectionRefusedError):
        what = "connection refused"
    elif isinstance(exc, (ConnectionResetError, EOFError)):
        what = "short read: the server closed the connection"
    elif isinstance(exc, OSError):
        what = f"cannot be read ({exc.strerror or _first_line(exc)})"
    else:
        import ftplib

        if isinstance(exc, ftplib.Error):
            what = f"the FTP server answered {_first_line(exc)}"
    if what is None:
        return exc
    return RemoteReadError(f"{url}: {what}")


class RemoteFolder:
    """A file or folder ``root`` on the fsspec filesystem ``fs``, read-only; ``str()`` gives its URL."""

    __slots__ = ("fs", "root", "timeout", "url")

    def __init__(self, fs, root: str, url: str, timeout: float = DEFAULT_TIMEOUT):
        self.fs, self.root, self.url, self.timeout = fs, root.rstrip("/"), url.rstrip("/"), timeout

    @classmethod
    def from_url(cls, url: str, *, timeout: float | None = None) -> RemoteFolder:
        """The folder at ``url``; ``timeout`` (seconds) bounds every request, see :func:`remote_timeout`."""
        import fsspec

        timeout = remote_timeout(timeout)
        protocol = url_protocol(url)
        try:
            fs, root = fsspec.core.url_to_fs(url, **_storage_options(protocol, timeout))
        except (ImportError, ValueError) as exc:  # no backend installed (s3fs, gcsfs, adlfs), unknown protocol
            raise StoreError(f"{url}: cannot open {protocol}:// URLs here ({_first_line(exc)})") from None
        except Exception as exc:  # backends that connect at once (ftp://): refused, timed out
            err = transport_error(exc, url, timeout)
            if err is exc:
                raise
            raise err from None
        return cls(fs, root, url, timeout)

    def __truediv__(self, name: str) -> RemoteFolder:
        return RemoteFolder(self.fs, f"{self.root}/{name}", f"{self.url}/{name}", self.timeout)

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

    @property
    def _http(self) -> bool:
        return url_protocol(self.url) in HTTP_PROTOCOLS

    def _call(self, func, *args, **kwargs):
        """``func(*args)`` with transport failures raised as one-line :class:`RemoteReadError` s."""
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            err = transport_error(exc, self.url, self.timeout)
            if err is exc:
                raise
            raise err from None

    # ---------------------------------------------------------------- HTTP, request by request
    # fsspec's HTTP filesystem turns any failure of a HEAD into "missing", and reads
    # (and inflates) whole bodies before their size can be checked: these do not.
    def _sync(self, coro_func, *args):
        from fsspec.asyn import sync

        return self._call(sync, self.fs.loop, self._within_deadline, coro_func, *args)

    async def _within_deadline(self, coro_func, *args):
        """``await coro_func(*args)``, cancelled after :data:`DEADLINE_FACTOR` timeouts in all."""
        import asyncio

        deadline = self.timeout * DEADLINE_FACTOR
        try:
            async with asyncio.timeout(deadline) as scope:
                return await coro_func(*args)
        except TimeoutError:
            if not scope.expired():
                raise  # a wait for bytes that timed out: transport_error names it
            raise RemoteReadError(f"{self.url}: the server sends too slowly: not complete after {deadline:g} s "
                                  f"({DEADLINE_FACTOR} x the timeout of {self.timeout:g} s; raise it with timeout= "
                                  f"or {TIMEOUT_ENV})") from None

    async def _request(self, method: str, url: str, read: bool, max_bytes: int | None = None):
        """Status and headers of one request (with the body, up to ``max_bytes``, when ``read``)."""
        session = await self.fs.set_session()
        kw = dict(self.fs.kwargs)
        headers = {**kw.pop("headers", {}), "Accept-Encoding": "identity"}
        async with session.request(method, self.fs.encode_url(url), headers=headers, **kw) as r:
            status = (r.status, r.reason or "")
            got = r.headers
            if not read or not 200 <= r.status < 300:
                return status, got, None
            self._check_encoding(got)
            length = self._content_length(got)
            limit = float("inf") if max_bytes is None else max_bytes
            if length is not None and length > limit:
                raise StoreError(f"{self.url}: {length:,} bytes, more than the {max_bytes:,} expected")
            blocks, n = [], 0
            async for block in r.content.iter_chunked(_BLOCK):
                n += len(block)
                if n > limit:
                    raise StoreError(f"{self.url}: more than the {max_bytes:,} bytes expected")
                blocks.append(block)
            if length is not None and n != length:
                raise RemoteReadError(f"{self.url}: short read: {n:,} of {length:,} bytes came")
            return status, got, b"".join(blocks)

    def _check_status(self, status: tuple[int, str]) -> bool:
        """True for 2xx, False for 404; a :class:`RemoteReadError` for anything else
        (a redirect not followed, one without ``Location``, is not a file either)."""
        code, reason = status
        if code == 404:
            return False
        if not 200 <= code < 300:
            raise RemoteReadError(f"{self.url}: the server answered HTTP {code} {reason}".rstrip())
        return True

    def _check_encoding(self, headers) -> None:
        encoding = headers.get("Content-Encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            raise RemoteReadError(
                f"{self.url}: the server sent it {encoding}-encoded though asked for the identity encoding; "
                "a store is read as plain bytes (turn off compression for it on the server)"
            )

    def _content_length(self, headers) -> int | None:
        raw = headers.get("Content-Length")
        if raw is None:
            return None
        try:
            return int(raw)
        except ValueError:
            raise RemoteReadError(f"{self.url}: the server sent a bad Content-Length {raw[:40]!r}") from None

    def _head(self, url: str | None = None):
        """HEAD (GET without reading the body where HEAD is not allowed): status and headers."""
        url = self.root if url is None else url
        status, headers, _ = self._sync(self._request, "HEAD", url, False)
        if status[0] in (405, 501):
            status, headers, _ = self._sync(self._request, "GET", url, False)
        return status, headers

    def _http_get(self, max_bytes: int) -> bytes:
        status, _, body = self._sync(self._request, "GET", self.root, True, max_bytes)
        if not self._check_status(status):
            raise FileNotFoundError(2, "not found (HTTP 404)", self.url)
        return body

    # ---------------------------------------------------------------- the pathlib.Path subset
    def is_file(self) -> bool:
        if self._http:
            return self._check_status(self._head()[0])
        return self._call(self.fs.isfile, self.root)

    def is_dir(self) -> bool:
        if self._http:  # no folders in HTTP: a folder URL that answers (a listing) counts
            return self._check_status(self._head(self.root + "/")[0])
        return self._call(self.fs.isdir, self.root)

    def exists(self) -> bool:
        if self._http:
            return self._check_status(self._head()[0])
        return self._call(self.fs.exists, self.root)

    def read_bytes(self, max_bytes: int | None = None) -> bytes:
        """The file's bytes; more than ``max_bytes`` (default :data:`MAX_READ_BYTES`) is refused
        without reading further (a :class:`StoreError`)."""
        cap = MAX_READ_BYTES if max_bytes is None else int(max_bytes)
        if self._http:
            return self._http_get(cap)
        data = self._call(self.fs.cat_file, self.root, start=0, end=cap + 1)
        if len(data) > cap:
            raise StoreError(f"{self.url}: more than the {cap:,} bytes expected")
        return data

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def stat(self):
        if self._http:
            status, headers = self._head()
            if not self._check_status(status):
                raise FileNotFoundError(2, "not found (HTTP 404)", self.url)
            self._check_encoding(headers)
            size = self._content_length(headers)
            if size is None:
                raise RemoteReadError(f"{self.url}: the server does not say its size (no Content-Length)")
            return SimpleNamespace(st_size=size)
        return SimpleNamespace(st_size=int(self._call(self.fs.size, self.root)))

    def open(self, mode: str = "rb", *, max_bytes: int | None = None):
        """The file read whole (one request; see :meth:`read_bytes`) as a binary file object."""
        if mode != "rb":
            raise StoreError(f"{self.url}: stores on {url_protocol(self.url)}:// are read-only here")
        return io.BytesIO(self.read_bytes(max_bytes))
