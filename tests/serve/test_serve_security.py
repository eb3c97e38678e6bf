"""The search service against hostile requests: DNS rebinding (foreign Host), cross-origin
state changes, request bodies beyond the limits, non-finite numbers in JSON, and error
messages that would name server paths."""

from __future__ import annotations

import asyncio
import json
import time

import numpy as np
import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from hardneg.serve import create_app
from hardneg.store import FeatureStore

TEST_HOST = ["testserver"]  # the Host that TestClient sends
FAST = {"concept_iterations": 2, "concept_positives": 20, "allowed_hosts": TEST_HOST}
FOREIGN = "http://attacker.example"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("security") / "tiny.store"
    X = np.random.default_rng(0).random((60, 8), dtype=np.float32)  # histogram kernels: non-negative
    with FeatureStore.create(path, dim=8) as s:
        s.append(X, ids=[f"x{i}" for i in range(60)], tags=[["cat"] if i < 20 else [] for i in range(60)])
    return path


@pytest.fixture()
def client(store, tmp_path):
    with TestClient(create_app(store, models_dir=tmp_path / "models", **FAST)) as c:
        yield c


def _wait(client, job, timeout=60.0):
    t0 = time.time()
    while job["status"] in ("queued", "running"):
        assert time.time() - t0 < timeout, f"job did not finish: {job}"
        time.sleep(0.02)
        job = client.get(f"/api/jobs/{job['id']}").json()
    assert job["status"] == "done", job
    return job


def _one_line(r) -> str:
    text = r.json()["detail"] if r.headers.get("content-type", "").startswith("application/json") else r.text
    assert isinstance(text, str) and text and "\n" not in text, r.text
    return text


def _asgi(app, method: str, path: str, headers=(), chunks=()):
    """Call the app directly: answers (status, body, number of body chunks the app pulled)."""
    chunks, pulled, sent = list(chunks), [0], []

    async def receive():
        if not chunks:
            return {"type": "http.disconnect"}
        pulled[0] += 1
        body = chunks.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(chunks)}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
             "headers": [(k.lower().encode(), v.encode()) for k, v in [("host", "127.0.0.1:8000"), *headers]],
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]), pulled[0]


# ---------------------------------------------------------------- DNS rebinding: the Host header
def test_foreign_host_is_refused(client):
    evil = {"Host": "attacker.example"}
    assert client.post("/api/concept", json={"tag": "cat", "k": 5}, headers=evil).status_code == 400
    assert client.delete("/api/models/x", headers=evil).status_code == 400
    r = client.get("/api/info", headers=evil)
    assert r.status_code == 400
    _one_line(r)
    assert client.get("/api/info").status_code == 200  # testserver: named by the test
    assert client.post("/api/concept", json={"tag": "cat", "k": 5, "n_iter": 1}).status_code == 202


def test_default_hosts_are_the_loopback_names_and_the_bound_host(store, tmp_path):
    app = create_app(store, models_dir=tmp_path / "m")
    for base in ("http://localhost:8000", "http://127.0.0.1:8000", "http://[::1]:8000", "http://LOCALHOST"):
        with TestClient(app, base_url=base) as c:
            assert c.get("/api/info").status_code == 200, base
    with TestClient(app) as c:  # "testserver" is not one of them
        assert c.get("/api/info").status_code == 400
    app = create_app(store, models_dir=tmp_path / "m", host="10.1.2.3", token="s3cret")
    with TestClient(app, base_url="http://10.1.2.3:8000") as c:
        assert c.get("/api/info").status_code == 200
    app = create_app(store, models_dir=tmp_path / "m", allowed_hosts=["search.example"])
    with TestClient(app, base_url="http://search.example") as c:
        assert c.get("/api/info").status_code == 200
        assert c.get("/api/info", headers={"Host": "other.example"}).status_code == 400
    with pytest.raises(ValueError, match="allowed_hosts"):
        create_app(store, models_dir=tmp_path / "m", allowed_hosts=["a.example:80"])
    with pytest.raises(TypeError, match="allowed_hosts"):
        create_app(store, models_dir=tmp_path / "m", allowed_hosts="search.example")


def test_cli_allowed_host_flag(store, tmp_path, monkeypatch):
    import uvicorn
    from typer.testing import CliRunner

    from hardneg.cli.main import app as cli

    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(app=app, **kw))
    r = CliRunner().invoke(cli, ["serve", str(store), "--models", str(tmp_path / "m"),
                                 "--allowed-host", "search.example", "--allowed-host", "box.lan"])
    assert r.exit_code == 0, r.output
    for base, status in (("http://search.example", 200), ("http://box.lan:8000", 200), ("http://127.0.0.1", 200),
                         ("http://attacker.example", 400)):
        with TestClient(seen["app"], base_url=base) as c:
            assert c.get("/api/info").status_code == status, base


@pytest.mark.parametrize("wildcard", ["*", "*.example.com"])
def test_wildcard_hosts_need_a_token(store, tmp_path, capsys, monkeypatch, wildcard):
    """A wildcard answers any Host (or any under a domain): without a token, a page on
    attacker.example rebinding its name to this server could change state (issue 39 item 8)."""
    import uvicorn

    from _helpers import assert_one_line_error, run_cli

    with pytest.raises(ValueError, match="token"):
        create_app(store, models_dir=tmp_path / "m", allowed_hosts=[wildcard])
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    assert_one_line_error(run_cli(capsys, "serve", store, "--models", tmp_path / "m", "--allowed-host", wildcard),
                          "--allowed-host", "--token")
    app = create_app(store, models_dir=tmp_path / "m", allowed_hosts=[wildcard], token="s3cret")
    with TestClient(app, base_url="http://attacker.example" if wildcard == "*" else "http://a.example.com") as c:
        assert c.get("/api/info").status_code == 200
        headers = {"Origin": c.base_url.scheme + "://" + c.base_url.host}
        assert c.delete("/api/models/x", headers=headers).status_code == 401


# ---------------------------------------------------------------- cross-origin state changes
def test_cross_origin_state_changes_are_refused(client):
    job = _wait(client, client.post("/api/concept", json={"tag": "cat", "k": 5, "n_iter": 1}).json())
    name = job["result"]["model"]
    for headers in ({"Origin": FOREIGN}, {"Origin": "null"}, {"Origin": "http://testserver:8080"},
                    {"Origin": "https://testserver"}, {"Sec-Fetch-Site": "cross-site"},
                    {"Origin": "http://testserver", "Sec-Fetch-Site": "cross-site"}):
        r = client.post("/api/concept", json={"tag": "cat", "k": 5}, headers=headers)
        assert r.status_code == 403, (headers, r.text)
        assert "origin" in _one_line(r).lower()
        assert client.delete(f"/api/models/{name}", headers=headers).status_code == 403
        assert client.post(f"/api/models/{name}/feedback", json={"relevant_ids": ["x1"]}, headers=headers).status_code == 403
        assert client.post("/api/search/example", json={"id": "x1", "mode": "cosine", "k": 2},
                           headers=headers).status_code == 403
    assert client.get(f"/api/models/{name}").status_code == 200  # still there
    # reads from anywhere, and same-origin or origin-less (curl) changes, still work
    assert client.get("/api/info", headers={"Origin": FOREIGN, "Sec-Fetch-Site": "cross-site"}).status_code == 200
    assert client.get(f"/api/models/{name}", headers={"Origin": FOREIGN}).status_code == 200
    same = {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"}
    assert client.post("/api/search/example", json={"id": "x1", "mode": "cosine", "k": 2}, headers=same).status_code == 200
    assert client.post("/api/search/example", json={"id": "x1", "mode": "cosine", "k": 2},
                       headers={"Origin": "http://testserver:80"}).status_code == 200
    assert client.delete(f"/api/models/{name}", headers=same).status_code == 200
    r = client.post("/api/concept", json={"tag": "cat", "k": 5, "n_iter": 1})
    assert r.status_code == 202
    _wait(client, r.json())
    assert client.delete(f"/api/models/{name}").status_code == 200


# ---------------------------------------------------------------- request bodies
def test_json_bodies_are_capped(client, store, tmp_path):
    pad = " " * (1 << 20)
    body = '{"id": "x1", "mode": "cosine", "k": 2' + pad + "}"
    r = client.post("/api/search/example", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "1,048,576" in _one_line(r)
    # chunked, without Content-Length: counted while it streams
    r = client.post("/api/search/example", content=(body[i:i + 65536].encode() for i in range(0, len(body), 65536)),
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "content-length" not in {k.lower() for k in r.request.headers}
    assert client.post("/api/search/example", json={"id": "x1", "mode": "cosine", "k": 2}).status_code == 200
    app = create_app(store, models_dir=tmp_path / "m", max_json_bytes=100, allowed_hosts=TEST_HOST)
    with TestClient(app) as c:
        ok = {"id": "x1", "mode": "cosine", "k": 2}
        assert c.post("/api/search/example", json=ok).status_code == 200
        assert c.post("/api/search/example", json={**ok, "mode": "cosine" + " " * 100}).status_code == 413
        assert c.post("/api/concept", json={"tag": "cat", "positive_ids": ["x1"] * 30}).status_code == 413
        assert c.request("DELETE", "/api/models/none", content=b"x" * (9 << 20)).status_code == 413
    with pytest.raises(ValueError, match="max_json_bytes"):
        create_app(store, models_dir=tmp_path / "m", max_json_bytes=0)


def test_streamed_bodies_stop_at_the_limit(store, tmp_path):
    app = create_app(store, models_dir=tmp_path / "m")
    chunks = [b" " * 65536] * 100  # 6.4 MB, no Content-Length
    status, body, pulled = _asgi(app, "POST", "/api/search/example", [("content-type", "application/json")], chunks)
    assert status == 413 and b"limit" in body
    assert pulled <= 17  # 1 MiB / 64 KiB + 1: the rest is never read
    status, body, pulled = _asgi(app, "POST", "/api/search/example",
                                 [("content-type", "application/json"), ("content-length", str(100 << 20))], chunks)
    assert status == 413 and pulled == 0 and b"1,048,576 bytes" in body


def test_token_is_checked_before_the_body_is_read(store, tmp_path):
    app = create_app(store, models_dir=tmp_path / "m", host="0.0.0.0", token="s3cret")
    chunks = [b'{"tag": "cat", "k": 5}'] + [b" "] * 5
    for method, path in (("POST", "/api/concept"), ("POST", "/api/models/x/feedback"), ("DELETE", "/api/models/x")):
        status, body, pulled = _asgi(app, method, path, [("content-type", "application/json")], chunks)
        assert (status, pulled) == (401, 0), (path, body)
        assert b"token" in body
        status, body, pulled = _asgi(app, method, path, [("content-type", "application/json"),
                                                         ("authorization", "Bearer wrong")], chunks)
        assert (status, pulled) == (403, 0), (path, body)
    status, body, pulled = _asgi(app, "POST", "/api/concept", [("content-type", "application/json"),
                                                               ("x-hardneg-token", "s3cret")], [b'{"tag": "nope"}'])
    assert status == 404 and pulled == 1, body
    # endpoints that need no token read their body as before
    status, body, _ = _asgi(app, "POST", "/api/search/example", [("content-type", "application/json")],
                            [b'{"id": "x1", "mode": "cosine", "k": 2}'])
    assert status == 200, body
    app.state.serve.close()


# ---------------------------------------------------------------- non-finite numbers
NUMERIC = [  # every numeric request field
    ("/api/search/example", {"id": "x1", "mode": "cosine"}, "k"),
    ("/api/search/example", {"id": "x1", "mode": "cosine"}, "nprobe"),
    ("/api/concept", {"tag": "cat"}, "k"),
    ("/api/concept", {"tag": "cat"}, "n_iter"),
    ("/api/concept", {"tag": "cat"}, "seed"),
    ("/api/models/m/feedback", {"relevant_ids": ["x1"]}, "k"),
    ("/api/models/m/search", {}, "k"),
]


@pytest.mark.parametrize("path, body, field", NUMERIC)
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_non_finite_json_numbers_are_422(client, path, body, field, value, caplog):
    text = json.dumps(body)[:-1] + (", " if body else "") + f'"{field}": {value}}}'
    r = client.post(path, content=text, headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert field in _one_line(r)
    assert not [rec for rec in caplog.records if rec.levelname in ("ERROR", "CRITICAL")]


def test_other_non_finite_inputs(client):
    for value in ("nan", "inf", "-inf", "1e400"):
        assert client.get("/api/items", params={"limit": value}).status_code == 422
        assert client.get("/api/items", params={"offset": value}).status_code == 422
        assert client.get("/api/tags", params={"limit": value}).status_code == 422
        for field in ("k", "nprobe"):
            r = client.post("/api/search/upload", files={"file": ("q.png", b"\x89PNG", "image/png")},
                            data={"mode": "cosine", field: value})
            assert r.status_code == 422 and field in _one_line(r)
    # an integer too long to parse is a client error too, never a 500
    r = client.post("/api/search/example", content='{"id": "x1", "k": ' + "9" * 5000 + "}",
                    headers={"Content-Type": "application/json"})
    assert r.status_code in (400, 422)
    # ordinary validation errors: one line naming the field
    r = client.post("/api/search/example", json={"id": "x1", "mode": "cosine", "k": "many"})
    assert r.status_code == 422 and _one_line(r).startswith("k:")
    r = client.post("/api/search/example", content="{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 422
    _one_line(r)


# ---------------------------------------------------------------- no server paths in errors
def test_conflicts_do_not_name_server_paths(client, store, tmp_path):
    models = tmp_path / "models"
    (models / "concepts" / "broken.npz").write_bytes(b"this is not a model file")
    for r in (client.get("/api/models/broken"), client.post("/api/models/broken/search", json={"k": 3}),
              client.post("/api/models/broken/feedback", json={"relevant_ids": ["x1"]})):
        assert r.status_code == 409, r.text
        detail = _one_line(r)
        assert str(tmp_path) not in detail and str(tmp_path.resolve()) not in detail and str(store) not in detail
        assert "concepts/broken.npz" in detail and "broken" in detail
    assert client.delete("/api/models/broken").status_code == 200


def test_failed_jobs_do_not_name_server_paths(client, monkeypatch):
    state = client.app.state.serve

    def save(name, model):
        raise OSError(f"{state.models_dir.resolve()}/concepts/{name}.npz: no space left on device")

    monkeypatch.setattr(state.registry, "save", save)
    job = client.post("/api/concept", json={"tag": "cat", "k": 5, "n_iter": 1}).json()
    while job["status"] in ("queued", "running"):
        time.sleep(0.02)
        job = client.get(f"/api/jobs/{job['id']}").json()
    assert job["status"] == "failed" and job["error"] == "OSError: concepts/cat.npz: no space left on device"
    assert client.get("/api/jobs").json()[0]["error"] == job["error"]


def test_hide_paths(tmp_path):
    from hardneg.serve._errors import hide_paths

    store, models = tmp_path / "a.store", tmp_path / "a.store.models"
    text = f"{models}/concepts/x.npz and {store}/items.parquet, {store}, {models}; {tmp_path}/other"
    assert hide_paths(text, models_dir=models, store_path=store) == (
        f"concepts/x.npz and a.store/items.parquet, a.store, a.store.models; {tmp_path}/other")
