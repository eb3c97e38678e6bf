"""Stores read by URL fail cleanly: bounded waits, one-line errors, sizes checked on the wire.

Loopback servers only; each runs in a daemon thread and stops with its test.
"""

from __future__ import annotations

import functools
import http.server
import os
import socket
import struct
import threading
import time
import tracemalloc
import zlib

import numpy as np

import pytest

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp", reason="fsspec's HTTP filesystem needs aiohttp (in the test extra)")

from hardneg.cli.main import main
from hardneg.store import FeatureStore, StoreDamagedError, StoreError
from hardneg.store._remote import DEFAULT_TIMEOUT, TIMEOUT_ENV, remote_timeout

GUARD_S = 60  # a test that would hang fails after this long instead


def _bounded(func, limit: float = GUARD_S):
    """Run ``func`` in a daemon thread; the exception it raised (None if none). Fails if it hangs."""
    out: list = []

    def run():
        try:
            func()
            out.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), f"still waiting after {limit} s: no timeout"
    return out[0]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@functools.lru_cache(maxsize=1)
def _gzip_bomb() -> bytes:
    """A valid gzip stream of 1 GiB of zeros, about 1 MB long."""
    zeros = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)  # the same bytes for every further MiB
    end = c.flush()
    return first + block * 1023 + end[:-8] + struct.pack("<II", 0x5B64C2B0, 1 << 30)  # CRC-32 and size of 1 GiB of zeros


class _FaultyHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the folder, except for the paths in ``server.faults`` (path -> what goes wrong)."""

    def log_message(self, *args):
        pass

    def _fault(self, head: bool) -> bool:
        fault = self.server.faults.get(self.path.split("?")[0])
        if fault is None or (head and fault not in ("404", "500", "loop", "to-ftp")):
            return False
        if fault in ("404", "500"):
            self.send_error(int(fault))
        elif fault in ("loop", "to-ftp"):
            self.send_response(302)
            self.send_header("Location", self.path if fault == "loop" else f"ftp://127.0.0.1:{_closed_port()}/x")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif fault == "short":  # the right Content-Length, half the bytes, then the connection closes
            with open(self.translate_path(self.path), "rb") as fh:
                body = fh.read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
        elif fault == "gzip":
            body = _gzip_bomb()
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif fault == "drip":  # the right Content-Length, then 5 bytes every 0.1 s (50 bytes/s: 10 s for meta.json)
            with open(self.translate_path(self.path), "rb") as fh:
                body = fh.read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for lo in range(0, len(body), 5):
                    self.wfile.write(body[lo : lo + 5])
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass  # the client gave up, as it should
        elif fault == "endless":  # no Content-Length: the body runs until the connection closes
            self.send_response(200)
            self.end_headers()
            block = bytes(1 << 20)
            try:
                for _ in range(64):  # bounded: 64 MiB at most
                    self.wfile.write(block)
            except OSError:
                pass  # the client hung up, as it should
        return True

    def do_GET(self):
        if not self._fault(head=False):
            super().do_GET()

    def do_HEAD(self):
        if not self._fault(head=True):
            super().do_HEAD()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A small dense store served over loopback HTTP: (server, url, X)."""
    root = tmp_path_factory.mktemp("served")
    X = np.random.default_rng(3).random((600, 16)).astype(np.float32)
    with FeatureStore.create(root / "s.store", dim=16, chunk_rows=128) as st:
        st.append(X)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_FaultyHandler, directory=str(root)))
    server.daemon_threads = True
    server.faults = {}
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, f"http://127.0.0.1:{server.server_address[1]}/s.store", X
    server.shutdown()
    server.server_close()


@pytest.fixture()
def faults(served):
    server, url, X = served
    server.faults.clear()
    yield server.faults, url, X
    server.faults.clear()


@pytest.fixture()
def silent_server():
    """A loopback server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop, held = threading.Event(), []

    def serve():
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/s.store"
    stop.set()
    t.join(5)
    for conn in held:
        conn.close()
    listener.close()


def _cli_error(capsys, argv) -> str:
    """Run the CLI: it must exit non-zero with one error line and no traceback; that line."""
    codes: list[int] = []
    exc = _bounded(lambda: codes.append(main(argv)))
    assert exc is None, f"the CLI raised {exc!r} (a traceback) instead of a one-line error"
    assert codes[0] != 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------ timeouts


def test_a_server_that_never_answers_times_out(silent_server):
    exc = _bounded(lambda: FeatureStore.open(silent_server, timeout=0.5))
    assert isinstance(exc, StoreError) and "timed out" in str(exc) and silent_server in str(exc)
    assert "\n" not in str(exc) and TIMEOUT_ENV in str(exc)


def test_the_cli_times_out_by_the_environment_variable(silent_server, monkeypatch, capsys):
    monkeypatch.setenv(TIMEOUT_ENV, "0.5")
    line = _cli_error(capsys, ["store", "info", silent_server])
    assert "timed out" in line and "no answer within 0.5 s" in line and "127.0.0.1" in line


def test_the_cli_timeout_flag(silent_server, monkeypatch, capsys):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    monkeypatch.setattr(os, "environ", dict(os.environ))  # the flag sets the variable: keep it inside this test
    line = _cli_error(capsys, ["--timeout", "0.5", "store", "info", silent_server])
    assert "timed out" in line and "no answer within 0.5 s" in line


def test_a_slow_drip_stops_at_the_per_file_deadline(faults, monkeypatch, capsys):
    """Bytes that keep coming, each within the per-read timeout, still stop at a deadline for the
    whole file (issue 39 item 9: 100 bytes/s held a read for > 150 s). The deadline is
    DEADLINE_FACTOR x the timeout (4 s here), each read well within the timeout of 0.4 s,
    the whole file (~500 bytes) twice as long as the deadline."""
    from hardneg.store._remote import DEADLINE_FACTOR

    table, url, _ = faults
    table["/s.store/meta.json"] = "drip"
    exc = _bounded(lambda: FeatureStore.open(url, timeout=0.4))
    assert isinstance(exc, StoreError), exc
    deadline = f"{0.4 * DEADLINE_FACTOR:g} s"
    assert f"{url}/meta.json" in str(exc) and "too slowly" in str(exc) and deadline in str(exc), exc
    assert "\n" not in str(exc)
    monkeypatch.setenv(TIMEOUT_ENV, "0.4")
    line = _cli_error(capsys, ["store", "info", url])
    assert "too slowly" in line and deadline in line


@pytest.mark.parametrize("answer", [b"garbage\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"])
def test_an_answer_that_is_not_http_is_one_line_without_a_made_up_status(answer, capsys):
    """aiohttp reports a malformed answer as 'HTTP 400' (or 0) with a multi-line parser dump (issue 39 item 14)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve():
        while True:
            try:
                conn = listener.accept()[0]
            except OSError:
                return
            with conn:
                conn.recv(4096)
                conn.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/s.store"
        line = _cli_error(capsys, ["--timeout", "5", "store", "info", url])
        assert "not valid HTTP" in line and "HTTP 400" not in line and "HTTP 0" not in line and url in line, line
    finally:
        listener.close()


def test_timeout_values_are_checked(monkeypatch, tmp_path):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert remote_timeout() == DEFAULT_TIMEOUT == 30
    assert remote_timeout(2) == 2.0
    monkeypatch.setenv(TIMEOUT_ENV, "7.5")
    assert remote_timeout() == 7.5 and remote_timeout(1) == 1.0
    monkeypatch.setenv(TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match=f"{TIMEOUT_ENV}='soon': expected seconds"):
        remote_timeout()
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="timeout: expected seconds, a number > 0"):
            remote_timeout(bad)
    with pytest.raises(TypeError, match="timeout: expected seconds"):
        FeatureStore.open(str(tmp_path / "x.store"), timeout="5")


# ------------------------------------------------------------------ transport failures, one line each


@pytest.mark.parametrize(
    ("where", "fault", "expected"),
    [
        ("meta.json", "500", "HTTP 500 Internal Server Error"),
        ("meta.json", "loop", "too many redirects"),
        ("meta.json", "to-ftp", "which is not an HTTP URL"),
        ("meta.json", "short", "short read"),
        ("vectors/X/zarr.json", "500", "HTTP 500"),
        ("vectors/X/c/2/0", "500", "HTTP 500"),
        ("vectors/X/c/2/0", "short", "short read"),
        ("items", "500", "HTTP 500"),
    ],
)
def test_transport_failures_are_one_line_naming_the_url(faults, capsys, where, fault, expected):
    table, url, _ = faults
    table[f"/s.store/{where}" + ("/" if where == "items" else "")] = fault
    line = _cli_error(capsys, ["store", "verify", url])
    assert expected in line and f"{url}/{where}" in line
    assert "damaged" not in line and "corrupt" not in line  # the server's fault, not the store's


def test_the_same_failures_raise_store_errors_from_the_library(faults):
    table, url, X = faults
    store = FeatureStore.open(url)
    table["/s.store/vectors/X/c/1/0"] = "500"
    with pytest.raises(StoreError, match=r"/s\.store/vectors/X/c/1/0: the server answered HTTP 500"):
        store.take([200])
    table.clear()
    assert np.array_equal(store.take([200]), X[[200]])  # the next try, once the server is fine again


@pytest.mark.parametrize("protocol", ["http", "ftp"])
def test_a_refused_connection_is_one_line(capsys, protocol):
    url = f"{protocol}://127.0.0.1:{_closed_port()}/s.store"
    line = _cli_error(capsys, ["store", "info", url])
    assert "connection refused" in line and url in line


def test_a_missing_chunk_is_still_named_as_damage(faults):
    table, url, _ = faults
    store = FeatureStore.open(url)
    table["/s.store/vectors/X/c/3/0"] = "404"
    with pytest.raises(StoreDamagedError, match=r"vectors/X/c/3/0 is missing \(rows 384-511\)"):
        store.take([400])
    with pytest.raises(StoreError, match="is not a FeatureStore"):
        FeatureStore.open(url.replace("s.store", "none.store"))


# ------------------------------------------------------------------ sizes on the wire


def test_a_gzip_bomb_is_refused_without_inflating_it(faults):
    table, url, _ = faults
    _gzip_bomb()  # built before measuring
    table["/s.store/meta.json"] = "gzip"
    tracemalloc.start()
    try:
        exc = _bounded(lambda: FeatureStore.open(url))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(exc, StoreError) and "gzip-encoded" in str(exc) and f"{url}/meta.json" in str(exc)
    assert peak < 64 << 20, f"{peak / 2**20:.0f} MiB allocated: the 1 GiB body was inflated"


def test_a_gzip_chunk_is_refused_too(faults):
    table, url, _ = faults
    store = FeatureStore.open(url)
    table["/s.store/vectors/X/c/0/0"] = "gzip"
    with pytest.raises(StoreError, match=r"vectors/X/c/0/0: the server sent it gzip-encoded"):
        store.take([0])


def test_a_chunk_longer_than_its_size_stops_at_the_size(faults):
    table, url, _ = faults
    store = FeatureStore.open(url)
    expected = 128 * 16 * 4
    table["/s.store/vectors/X/c/4/0"] = "endless"  # 64 MiB unless the reader hangs up
    tracemalloc.start()
    try:
        exc = _bounded(lambda: store.take([599]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(exc, StoreDamagedError) and f"more than the {expected:,} bytes expected" in str(exc)
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB allocated: the reader went on past the chunk's size"
