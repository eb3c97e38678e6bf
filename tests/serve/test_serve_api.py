"""The search service's JSON API through FastAPI's TestClient, bad inputs included."""

from __future__ import annotations

import io
import struct
import threading
import time
import zlib

import numpy as np
import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from hardneg.serve import MODES, SearchMode, register_mode  # noqa: E402
from hardneg.serve import create_app as _create_app  # noqa: E402
from hardneg.demos.service import build_demo_store  # noqa: E402
from hardneg.store import FeatureStore  # noqa: E402


def create_app(*args, **kwargs):
    """The service, also answering TestClient's Host name ("testserver")."""
    return _create_app(*args, allowed_hosts=["testserver"], **kwargs)


FAST = dict(concept_iterations=3, concept_positives=40)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The digits demo store with a 16-bit TSVM hasher and its Hamming index
    (built once per session: test_serve_browser.py reuses the same folder)."""
    return build_demo_store(tmp_path_factory.getbasetemp() / "serve-demo", n_bits=16, n_labeled=300)


def private_models(models, folder):
    """A copy of the hasher and index files only: each test saves and deletes its own concept models."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    for f in models.iterdir():
        if f.is_file():
            shutil.copyfile(f, folder / f.name)
    return folder


@pytest.fixture()
def client(demo, tmp_path):
    store, models = demo
    with TestClient(create_app(store, models_dir=private_models(models, tmp_path / "models"), **FAST)) as c:
        yield c


def _wait(client, job, timeout=60.0):
    t0 = time.time()
    while job["status"] in ("queued", "running"):
        assert time.time() - t0 < timeout, f"job did not finish: {job}"
        time.sleep(0.05)
        job = client.get(f"/api/jobs/{job['id']}").json()
    return job


def _png(arr: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def _bomb_png(width=30000, height=30000) -> bytes:
    """A tiny file that declares a huge image (its pixel data is never reached)."""
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + chunk(b"IEND", b"")


# ---------------------------------------------------------------- items and info
def test_info_modes_tags_items(client):
    info = client.get("/api/info").json()
    assert info["n_items"] == 1797 and info["dim"] == 64 and info["upload"] is True
    assert {m["name"] for m in info["modes"]} == {"hamming", "cosine"}
    assert {m["name"] for m in client.get("/api/modes").json()} == {"hamming", "cosine"}
    tags = client.get("/api/tags").json()
    assert {t["tag"] for t in tags} == {str(i) for i in range(10)} and sum(t["count"] for t in tags) == 1797
    page = client.get("/api/items", params={"tag": "3", "limit": 5}).json()
    assert page["total"] == 183 and len(page["items"]) == 5 and all(it["tags"] == ["3"] for it in page["items"])
    item = client.get("/api/items/digits-7").json()
    assert item["id"] == "digits-7" and item["label"] == 7 and item["label_name"] == "7"
    assert client.get("/api/items", params={"limit": 0}).status_code == 422


def test_thumbnail_png_cached(client):
    r = client.get("/api/items/digits-0/thumbnail")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png" and r.content[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    img = Image.open(io.BytesIO(r.content))
    assert img.size == (96, 96)
    assert client.get("/api/items/digits-0/thumbnail").content == r.content
    state = client.app.state.serve
    assert 0 in state.thumbs._cache


# ".." may be resolved by the client before it is sent (then no route matches): 404 or 422, never served
@pytest.mark.parametrize("bad, status", [("..", (404, 422)), ("a..b", (404,)), ("nope", (404,)),
                                         ("..%2F..%2Fetc%2Fpasswd", (422,)), ("digits-1%2F..%2F..%2Fx", (422,)),
                                         ("%2Fetc%2Fpasswd", (422,)), ("%2e%2e", (404, 422)), ("x%00y", (422,)),
                                         ("..%5Cwin", (422,)), ("a%2F.%2Fb", (422,))])
def test_bad_item_ids(client, bad, status):
    for url in (f"/api/items/{bad}", f"/api/items/{bad}/thumbnail"):
        r = client.get(url)
        assert r.status_code in status, (url, r.text)
        assert "detail" in r.json()


def test_folder_ids_and_source_thumbnails(tmp_path):
    """Ids that are relative paths (as extraction writes them) work; thumbnails come from the source files."""
    from PIL import Image

    files = []
    for i, name in enumerate(["cats/a.png", "cats/b.png", "dogs/c.png"]):
        f = tmp_path / "img" / name
        f.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((300, 200, 3), 40 * i, np.uint8)).save(f)
        files.append(str(f))
    path = tmp_path / "files.store"
    with FeatureStore.create(path, dim=3) as s:
        s.append(np.eye(3, dtype=np.float32), ids=["cats/a.png", "cats/b.png", "dogs/c.png"], paths=files,
                 tags=[["cat"], ["cat"], ["dog"]])
    with TestClient(create_app(path)) as c:
        assert c.get("/api/items/cats%2Fb.png").json()["id"] == "cats/b.png"
        assert c.get("/api/items/cats/b.png").json()["id"] == "cats/b.png"
        r = c.get("/api/items/dogs%2Fc.png/thumbnail")
        assert r.status_code == 200
        assert Image.open(io.BytesIO(r.content)).size == (64, 96)  # aspect kept, within 96 px
        r = c.post("/api/search/example", json={"id": "cats/a.png", "mode": "cosine", "k": 2})
        assert [it["id"] for it in r.json()["results"]] == ["cats/b.png", "dogs/c.png"]
        assert c.post("/api/search/example", json={"id": "cats/../dogs/c.png", "mode": "cosine", "k": 1}).status_code == 422


def test_thumbnails_of_paths_recorded_relative_to_the_store(tmp_path, monkeypatch):
    """Stores made by `extract images` record image paths relative to the store folder."""
    from PIL import Image

    (tmp_path / "img").mkdir()
    Image.fromarray(np.full((40, 40, 3), 90, np.uint8)).save(tmp_path / "img" / "a.png")
    path = tmp_path / "rel.store"
    with FeatureStore.create(path, dim=2, attrs={"image_paths": "relative-to-store"}) as s:
        s.append(np.eye(2, dtype=np.float32), ids=["a", "b"], paths=["../img/a.png", "../img/missing.png"])
    (tmp_path / "elsewhere" / "deeper").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "elsewhere" / "deeper")  # the service runs from another folder
    with TestClient(create_app(path)) as c:
        assert c.get("/api/items/a/thumbnail").status_code == 200
        assert c.get("/api/items/b/thumbnail").status_code == 404


# ---------------------------------------------------------------- query by example
@pytest.mark.parametrize("mode", ["hamming", "cosine"])
def test_query_by_stored_example(client, mode):
    r = client.post("/api/search/example", json={"id": "digits-10", "mode": mode, "k": 10})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] == mode and len(body["results"]) == 10
    scores = [it["score"] for it in body["results"]]
    assert scores == sorted(scores, reverse=True)
    assert "search_s" in body["timings"]
    assert "digits-10" not in [it["id"] for it in body["results"]]  # the query itself is left out, as in the CLI
    assert body["offset"] == 0 and body["has_more"] is True
    labels = [it["label"] for it in body["results"]]
    assert labels.count(0) >= 5  # digits-10 is a 0; neighbours mostly share its class


@pytest.mark.parametrize("payload, status", [
    ({"id": "digits-1", "mode": "cosine", "k": 0}, 422),
    ({"id": "digits-1", "mode": "cosine", "k": -3}, 422),
    ({"id": "digits-1", "mode": "cosine", "k": 5000}, 422),
    ({"id": "digits-1", "mode": "cosine", "k": "many"}, 422),
    ({"id": "digits-1", "mode": "nope", "k": 5}, 404),
    ({"id": "missing", "mode": "cosine", "k": 5}, 404),
    ({"id": "../digits-1", "mode": "cosine", "k": 5}, 422),
    ({"mode": "cosine", "k": 5}, 422),
])
def test_query_by_example_bad_input(client, payload, status):
    r = client.post("/api/search/example", json=payload)
    assert r.status_code == status, r.text
    assert "detail" in r.json()


def test_upload_query(client):
    from hardneg.datasets import load_digits

    d = load_digits()
    img = (d.X[10].reshape(8, 8) / 16 * 255).astype(np.uint8)
    big = np.kron(img, np.ones((4, 4), np.uint8))  # 32x32: resized back to 8x8 by the server
    for mode in ("cosine", "hamming"):
        r = client.post("/api/search/upload", files={"file": ("q.png", _png(big), "image/png")}, data={"mode": mode, "k": "8"})
        assert r.status_code == 200, r.text
        res = r.json()["results"]
        assert len(res) == 8 and "extract_s" in r.json()["timings"]
        assert [it["label"] for it in res].count(0) >= 4


def test_upload_refusals(demo, client, tmp_path):
    png = _png(np.zeros((8, 8), np.uint8))
    r = client.post("/api/search/upload", files={"file": ("b.png", _bomb_png(), "image/png")}, data={"mode": "cosine"})
    assert r.status_code == 413 and "pixels" in r.json()["detail"]
    r = client.post("/api/search/upload", files={"file": ("x.png", b"not an image at all", "image/png")})
    assert r.status_code == 422 and "not a readable image" in r.json()["detail"]
    r = client.post("/api/search/upload", files={"file": ("x.png", png, "image/png")}, data={"k": "0"})
    assert r.status_code == 422
    r = client.post("/api/search/upload", files={"file": ("x.png", png, "image/png")}, data={"mode": "nope"})
    assert r.status_code == 404
    r = client.post("/api/search/upload", data={"mode": "cosine"})
    assert r.status_code == 422
    store, models = demo
    with TestClient(create_app(store, models_dir=tmp_path / "m2", max_upload_bytes=1000, max_image_pixels=10_000)) as small:
        big = _png(np.random.default_rng(0).integers(0, 255, (64, 64), dtype=np.uint8))
        assert len(big) > 1000
        r = small.post("/api/search/upload", files={"file": ("big.png", big, "image/png")}, data={"mode": "cosine"})
        assert r.status_code == 413 and "limit" in r.json()["detail"]
        # the body check, before any parsing: far beyond the limit
        r = small.post("/api/search/upload", files={"file": ("huge.png", b"\0" * 200_000, "image/png")})
        assert r.status_code == 413
        r = small.post("/api/search/upload", files={"file": ("p.png", _png(np.zeros((200, 200), np.uint8)), "image/png")},
                       data={"mode": "cosine"})
        assert r.status_code == 413 and "pixels" in r.json()["detail"]


def test_upload_needs_known_extractor(tmp_path):
    path = tmp_path / "plain.store"
    with FeatureStore.create(path, dim=4) as s:
        s.append(np.eye(4, dtype=np.float32), ids=["a", "b", "c", "d"], tags=[["x"], ["x"], ["y"], ["y"]])
    with TestClient(create_app(path)) as c:
        assert c.get("/api/info").json()["upload"] is False
        assert [m["name"] for m in c.get("/api/modes").json()] == ["cosine"]
        r = c.post("/api/search/upload", files={"file": ("q.png", _png(np.zeros((8, 8), np.uint8)), "image/png")},
                   data={"mode": "cosine", "k": "2"})
        assert r.status_code == 422 and "extractor" in r.json()["detail"]
        assert c.get("/api/items/a/thumbnail").status_code == 404
        r = c.post("/api/search/example", json={"id": "a", "mode": "hamming", "k": 2})
        assert r.status_code == 404 and "available" in r.json()["detail"]


# ---------------------------------------------------------------- concept search, feedback, models
def test_concept_feedback_models_roundtrip(demo, client):
    r = client.post("/api/concept", json={"tag": "3", "k": 30})
    assert r.status_code == 202, r.text
    job = _wait(client, r.json())
    assert job["status"] == "done", job
    res = job["result"]
    assert res["model"] == "3" and len(res["results"]) == 30
    assert {"train_s", "compress_s", "scan_s"} <= set(res["timings"])
    assert sum(it["label"] == 3 for it in res["results"]) >= 25
    # relevance feedback: two results marked not relevant, one relevant
    neg = [res["results"][0]["id"], res["results"][1]["id"]]
    pos = [res["results"][5]["id"]]
    r = client.post("/api/models/3/feedback", json={"relevant_ids": pos, "not_relevant_ids": neg, "k": 30})
    assert r.status_code == 202, r.text
    fb = _wait(client, r.json())
    assert fb["status"] == "done", fb
    ids = [it["id"] for it in fb["result"]["results"]]
    old = [it["id"] for it in res["results"]]
    assert ids != old  # re-ranked
    for n in neg:  # the marked negatives fall
        assert n not in ids[:2]
    info = client.get("/api/models/3").json()
    assert info["feedback_rounds"] == 1 and set(neg) <= set(info["negative_ids"]) and pos[0] in info["positive_ids"]
    assert info["estimator"] == "NegativeBootstrap+feedback"
    assert [m["name"] for m in client.get("/api/models").json()] == ["3"]
    r = client.post("/api/models/3/search", json={"k": 30})
    assert r.status_code == 200 and [it["id"] for it in r.json()["results"]] == ids
    # a restart loses nothing: a new app over the same folders lists and serves the model
    state = client.app.state.serve
    with TestClient(create_app(state.store.path, models_dir=state.models_dir)) as again:
        assert [m["name"] for m in again.get("/api/models").json()] == ["3"]
        assert [it["id"] for it in again.post("/api/models/3/search", json={"k": 30}).json()["results"]] == ids
    # a half-written model file (an interrupted atomic write's temp file) is never listed
    (state.models_dir / "concepts" / "4.npz.abc123.tmp").write_bytes(b"partial")
    assert [m["name"] for m in client.get("/api/models").json()] == ["3"]
    assert client.delete("/api/models/3").status_code == 200
    assert client.get("/api/models").json() == []
    assert client.get("/api/models/3").status_code == 404


def test_concept_from_positive_ids_and_names(client):
    r = client.post("/api/concept", json={"positive_ids": ["digits-3", "digits-13", "digits-23"], "name": "threes.v1", "k": 5})
    job = _wait(client, r.json())
    assert job["status"] == "done" and job["result"]["model"] == "threes.v1"
    # training the same concept again replaces its model (no "5-2", "5-3", ...)
    a = _wait(client, client.post("/api/concept", json={"tag": "5", "k": 5}).json())
    b = _wait(client, client.post("/api/concept", json={"tag": "5", "k": 5, "seed": 1}).json())
    assert (a["result"]["model"], b["result"]["model"]) == ("5", "5")
    assert [m["name"] for m in client.get("/api/models").json()] == ["5", "threes.v1"]


def test_new_finds_totals_and_the_users_own_marks(client):
    """Issue 37 items 4 and 13: a concept ranking marks the model's training positives
    ``example`` or, with ``new_only``, leaves them out; pages say how many items are ranked;
    the model records which positives the user marked (not the tag's)."""
    marked = ["digits-3", "digits-13", "digits-23"]
    job = _wait(client, client.post("/api/concept", json={"positive_ids": marked, "name": "mine", "k": 40}).json())
    res = job["result"]
    assert res["new_only"] is False and res["n_examples"] == 3 and res["total"] == 1797
    assert {it["id"] for it in res["results"] if it["example"]} == set(marked)  # the examples rank high, marked
    job = _wait(client, client.post("/api/concept", json={"positive_ids": marked, "name": "mine", "k": 40, "new_only": True}).json())
    res = job["result"]
    assert res["new_only"] and res["total"] == 1794 and not any(it["example"] for it in res["results"])
    assert not {it["id"] for it in res["results"]} & set(marked)
    page = client.post("/api/models/mine/search", json={"k": 10, "offset": 10, "new_only": True}).json()
    assert page["total"] == 1794 and page["offset"] == 10 and [it["id"] for it in page["results"]] == [
        it["id"] for it in res["results"][10:20]]
    # feedback adds the user's ✓ to marked_ids; a tag's positives never are
    extra = res["results"][0]["id"]
    _wait(client, client.post("/api/models/mine/feedback", json={"relevant_ids": [extra], "k": 5, "offset": 5}).json())
    assert client.get("/api/models/mine").json()["marked_ids"] == marked + [extra]
    _wait(client, client.post("/api/concept", json={"tag": "4", "k": 5}).json())
    info = client.get("/api/models/4").json()
    assert info["marked_ids"] == [] and len(info["positive_ids"]) > 0
    # query by example: the total leaves out the query item
    r = client.post("/api/search/example", json={"id": "digits-0", "mode": "cosine", "k": 3})
    assert r.json()["total"] == 1796


@pytest.mark.parametrize("payload, status", [
    ({"k": 5}, 422),
    ({"tag": "no-such-tag", "k": 5}, 404),
    ({"tag": "3", "k": 0}, 422),
    ({"tag": "3", "k": 100000}, 422),
    ({"tag": "3", "name": "../evil"}, 422),
    ({"tag": "3", "name": ".."}, 422),
    ({"tag": "3", "name": "a/b"}, 422),
    ({"tag": "3", "name": "x" * 65}, 422),
    ({"positive_ids": ["../../etc/passwd"]}, 422),
    ({"positive_ids": ["missing"]}, 404),
    ({"tag": "3", "split": "nope"}, 422),
    ({"tag": "3", "n_iter": 0}, 422),
])
def test_concept_bad_input(client, payload, status):
    r = client.post("/api/concept", json=payload)
    assert r.status_code == status, r.text
    assert "detail" in r.json()


def test_unknown_models_jobs_and_bad_names(client):
    for method, url, body in [("get", "/api/models/nope", None), ("post", "/api/models/nope/search", {"k": 3}),
                              ("post", "/api/models/nope/feedback", {"relevant_ids": ["digits-1"]}),
                              ("delete", "/api/models/nope", None), ("get", "/api/jobs/0123abcd", None)]:
        r = client.request(method.upper(), url, json=body)
        assert r.status_code == 404, (url, r.text)
    for name in ("a..b", "-x", ".hidden", "x%5Cy", "x%00"):
        assert client.get(f"/api/models/{name}").status_code == 422, name
        assert client.delete(f"/api/models/{name}").status_code == 422, name
    assert client.get("/api/models/..%2F..%2Fx").status_code == 404  # no route: never a path


def test_feedback_bad_input(client):
    job = _wait(client, client.post("/api/concept", json={"tag": "1", "k": 5}).json())
    name = job["result"]["model"]
    for body, status in [({}, 422), ({"relevant_ids": ["digits-1"], "not_relevant_ids": ["digits-1"]}, 422),
                         ({"relevant_ids": ["missing"]}, 404), ({"not_relevant_ids": [".."]}, 422),
                         ({"relevant_ids": ["digits-1"], "k": 0}, 422)]:
        r = client.post(f"/api/models/{name}/feedback", json=body)
        assert r.status_code == status, (body, r.text)


def test_training_runs_off_the_event_loop(client, monkeypatch):
    """While a training job is blocked, other requests are still answered."""
    import hardneg.serve.routers.concept as concept_router

    gate = threading.Event()
    real = concept_router.train_concept

    def slow(store, spec, **kw):
        assert gate.wait(30)
        return real(store, spec, **kw)

    monkeypatch.setattr(concept_router, "train_concept", slow)
    job = client.post("/api/concept", json={"tag": "2", "k": 5}).json()
    assert job["status"] in ("queued", "running")
    t0 = time.perf_counter()
    r = client.post("/api/search/example", json={"id": "digits-2", "mode": "hamming", "k": 5})
    assert r.status_code == 200
    assert client.get(f"/api/jobs/{job['id']}").json()["status"] in ("queued", "running")
    assert [j["id"] for j in client.get("/api/jobs").json()] == [job["id"]]
    gate.set()
    done = _wait(client, job)
    assert done["status"] == "done" and done["done"] == done["total"] and time.perf_counter() > t0


# ---------------------------------------------------------------- token
def test_token_required_beyond_loopback(demo, tmp_path):
    store, models = demo
    with pytest.raises(ValueError, match="token"):
        create_app(store, models_dir=tmp_path / "m", host="0.0.0.0")
    with pytest.raises(ValueError, match="empty token"):
        create_app(store, models_dir=tmp_path / "m", host="0.0.0.0", token="")
    app = create_app(store, models_dir=tmp_path / "m", host="0.0.0.0", token="s3cret-token", **FAST)
    with TestClient(app) as c:
        assert c.get("/api/info").json()["token_required"] is True
        assert c.post("/api/search/example", json={"id": "digits-1", "mode": "cosine", "k": 3}).status_code == 200
        body = {"tag": "3", "k": 5}
        assert c.post("/api/concept", json=body).status_code == 401
        assert c.post("/api/concept", json=body, headers={"Authorization": "Bearer wrong"}).status_code == 403
        assert c.post("/api/concept", json=body, headers={"X-Hardneg-Token": "s3cret-token-x"}).status_code == 403
        assert c.post("/api/concept", json=body, headers={"Authorization": "Bearer s3cret-tokeN"}).status_code == 403
        r = c.post("/api/concept", json=body, headers={"Authorization": "Bearer s3cret-token"})
        assert r.status_code == 202
        job = r.json()
        while job["status"] in ("queued", "running"):
            time.sleep(0.05)
            job = c.get(f"/api/jobs/{job['id']}").json()
        fb = {"relevant_ids": ["digits-3"]}
        assert c.post("/api/models/3/feedback", json=fb).status_code == 401
        assert c.post("/api/models/3/feedback", json=fb, headers={"X-Hardneg-Token": "nope"}).status_code == 403
        assert c.delete("/api/models/3").status_code == 401
        assert c.delete("/api/models/3", headers={"Authorization": "Bearer bad"}).status_code == 403
        assert c.delete("/api/models/3", headers={"X-Hardneg-Token": "s3cret-token"}).status_code == 200


def test_loopback_needs_no_token(demo, tmp_path):
    store, _ = demo
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.5"):
        app = create_app(store, models_dir=tmp_path / "m", host=host)
        with TestClient(app, base_url="http://localhost") as c:
            # a state change without a token reaches the route (404: no such model), not 401
            assert c.delete("/api/models/no-such-model").status_code == 404
        app.state.serve.close()
    with pytest.raises(ValueError, match="not a loopback address"):
        create_app(store, models_dir=tmp_path / "m", host="0.0.0.0")


# ---------------------------------------------------------------- plug-in modes, OpenAPI, page
def test_a_new_mode_plugs_in(demo, tmp_path):
    @register_mode
    class Norm(SearchMode):
        name = "test-norm"
        title = "smallest l1 norm"

        def __init__(self, X):
            self.X = X

        @classmethod
        def open(cls, store, models_dir, *, matrix=None):
            return cls(np.asarray(store.to_numpy()) if matrix is None else matrix)

        def rank(self, x, k):
            s = -self.X.sum(axis=1)
            top = np.argsort(-s, kind="stable")[:k]
            return top, s[top]

    try:
        store, models = demo
        with TestClient(create_app(store, models_dir=tmp_path / "m")) as c:
            r = c.post("/api/search/example", json={"id": "digits-1", "mode": "test-norm", "k": 3})
            assert r.status_code == 200 and len(r.json()["results"]) == 3
    finally:
        MODES.pop("test-norm")


def test_openapi_documents_every_endpoint(client):
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    expected = {"/api/info", "/api/items", "/api/items/{item_id}", "/api/items/{item_id}/thumbnail", "/api/tags",
                "/api/modes", "/api/search/example", "/api/search/upload", "/api/concept", "/api/models/{name}/feedback",
                "/api/jobs/{job_id}", "/api/jobs", "/api/models", "/api/models/{name}", "/api/models/{name}/search"}
    assert expected <= set(paths)
    for path, ops in paths.items():
        for op in ops.values():
            assert op.get("summary"), (path, op)
    assert client.get("/docs").status_code == 200


def test_page_and_static(client):
    r = client.get("/")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    for needle in ('id="tag-input"', 'id="drop-zone"', 'id="grid"', 'id="models-list"', 'id="rerank"', "static/app.js"):
        assert needle in r.text
    assert "http://" not in r.text and "https://" not in r.text  # no CDN
    js = client.get("/static/app.js")
    assert js.status_code == 200 and "api/concept" in js.text
    assert client.get("/static/app.css").status_code == 200
    assert client.get("/static/../_app.py").status_code == 404


# ---------------------------------------------------------------- CLI
def test_cli_serve(demo, monkeypatch):
    import typer
    import uvicorn
    from typer.testing import CliRunner

    from hardneg.exceptions import CLIError
    from hardneg.cli.serve import serve

    app = typer.Typer()
    app.command("serve")(serve)
    app.command("other")(lambda: None)
    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    monkeypatch.delenv("HARDNEG_TOKEN", raising=False)
    store, models = demo
    runner = CliRunner()
    r = runner.invoke(app, ["serve", str(store), "--port", "8123"])
    assert r.exit_code == 0, r.output
    assert calls[-1] == {"host": "127.0.0.1", "port": 8123, "log_level": "info"} and "http://127.0.0.1:8123/" in r.output
    r = runner.invoke(app, ["serve", str(store), "--host", "0.0.0.0"])
    assert isinstance(r.exception, CLIError) and "token" in str(r.exception)
    r = runner.invoke(app, ["serve", str(store), "--host", "0.0.0.0"], env={"HARDNEG_TOKEN": "t0ken"})
    assert r.exit_code == 0 and calls[-1]["host"] == "0.0.0.0"
    r = runner.invoke(app, ["serve", str(store) + "-missing"])
    assert isinstance(r.exception, CLIError)
    r = runner.invoke(app, ["serve", str(store), "--port", "0"])
    assert r.exit_code == 2


# ---------------------------------------------------------------- paging, info, concept rules (issue 26)
@pytest.mark.parametrize("mode", ["hamming", "cosine"])
def test_paging_query_by_example(client, mode):
    full = client.post("/api/search/example", json={"id": "digits-10", "mode": mode, "k": 30}).json()
    ids = [it["id"] for it in full["results"]]
    page = client.post("/api/search/example", json={"id": "digits-10", "mode": mode, "k": 10, "offset": 10}).json()
    assert page["offset"] == 10 and page["has_more"] is True
    assert [it["id"] for it in page["results"]] == ids[10:20]
    for bad in ({"offset": -1}, {"offset": 995, "k": 10}, {"offset": "x"}):
        r = client.post("/api/search/example", json={"id": "digits-10", "mode": mode, "k": 5, **bad})
        assert r.status_code == 422, (bad, r.text)
    from hardneg.datasets import load_digits

    img = np.kron((load_digits().X[10].reshape(8, 8) / 16 * 255).astype(np.uint8), np.ones((4, 4), np.uint8))
    up = [client.post("/api/search/upload", files={"file": ("q.png", _png(img), "image/png")},
                      data={"mode": mode, "k": str(k), "offset": str(o)}).json() for k, o in ((8, 0), (4, 4))]
    assert [it["id"] for it in up[1]["results"]] == [it["id"] for it in up[0]["results"]][4:8] and up[1]["offset"] == 4


def test_paging_reaches_the_end(tmp_path):
    path = tmp_path / "four.store"
    with FeatureStore.create(path, dim=4) as s:
        X = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 2, 0, 0], [1, 3, 0, 0]], np.float32)  # less like "a" in turn
        s.append(X, ids=["a", "b", "c", "d"])
    with TestClient(create_app(path)) as c:
        body = c.post("/api/search/example", json={"id": "a", "mode": "cosine", "k": 2, "offset": 2}).json()
        assert [it["id"] for it in body["results"]] == ["d"] and body["has_more"] is False
        body = c.post("/api/search/example", json={"id": "a", "mode": "cosine", "k": 2, "offset": 0}).json()
        assert [it["id"] for it in body["results"]] == ["b", "c"] and body["has_more"] is True
        page = c.get("/api/items", params={"offset": 3, "limit": 2}).json()  # the browse view's pages
        assert page["total"] == 4 and [it["id"] for it in page["items"]] == ["d"]


def test_info_names_the_store_not_its_path(demo, client):
    info = client.get("/api/info").json()
    assert info["store"] == demo[0].name and "/" not in info["store"] and "\\" not in info["store"]
    assert info["extractor"] == "ready" and info["concept_split"] == "train"


class _FakeExtractor:
    def transform(self, images):
        return np.full((len(images), 4), float(images[0].mean() > -1), np.float32)


def test_extractor_loads_in_the_background(tmp_path, monkeypatch):
    """A CNN/BoW store starts loading its extractor at start-up; /api/info says when it is ready."""
    from hardneg.serve._images import ImageQuery

    path = tmp_path / "cnn.store"
    with FeatureStore.create(path, dim=4, attrs={"extractor": {"extractor": "cnn", "input_size": 16}}) as s:
        s.append(np.eye(4, dtype=np.float32), ids=["a", "b", "c", "d"])
    gate, calls = threading.Event(), []

    def build(self):
        calls.append(1)
        assert gate.wait(30)
        return _FakeExtractor()

    monkeypatch.setattr(ImageQuery, "_build", build)
    with TestClient(create_app(path)) as c:
        assert c.get("/api/info").json()["extractor"] == "loading"
        t0 = time.time()
        while not calls:  # it started without any upload
            assert time.time() - t0 < 30
            time.sleep(0.01)
        gate.set()
        while c.get("/api/info").json()["extractor"] == "loading":
            assert time.time() - t0 < 30
            time.sleep(0.01)
        assert c.get("/api/info").json()["extractor"] == "ready"
        r = c.post("/api/search/upload", files={"file": ("q.png", _png(np.zeros((8, 8), np.uint8)), "image/png")},
                   data={"mode": "cosine", "k": "2"})
        assert r.status_code == 200 and len(calls) == 1  # built once, at start-up

    def broken(self):
        raise RuntimeError("no weights here")

    monkeypatch.setattr(ImageQuery, "_build", broken)
    with TestClient(create_app(path)) as c:
        t0 = time.time()
        while c.get("/api/info").json()["extractor"] == "loading":
            assert time.time() - t0 < 30
            time.sleep(0.01)
        assert c.get("/api/info").json()["extractor"] == "failed"


def test_rejected_items_leave_the_ranking_for_good(client):
    res = _wait(client, client.post("/api/concept", json={"tag": "3", "k": 30}).json())["result"]
    old = [it["id"] for it in res["results"]]
    neg = old[:3]
    fb = _wait(client, client.post("/api/models/3/feedback", json={"not_relevant_ids": neg, "k": 30}).json())
    ids = [it["id"] for it in fb["result"]["results"]]
    assert len(ids) == 30 and not set(neg) & set(ids)
    # a later round that marks only relevant items keeps them out; so does a plain search with the model
    fb2 = _wait(client, client.post("/api/models/3/feedback", json={"relevant_ids": [ids[4]], "k": 30}).json())
    assert not set(neg) & {it["id"] for it in fb2["result"]["results"]}
    full = client.post("/api/models/3/search", json={"k": 40}).json()
    page = client.post("/api/models/3/search", json={"k": 20, "offset": 20}).json()
    assert not set(neg) & {it["id"] for it in full["results"]}
    assert [it["id"] for it in page["results"]] == [it["id"] for it in full["results"]][20:40] and page["has_more"]


def _split_store(tmp_path):
    rng = np.random.default_rng(0)
    n = 40
    X = rng.random((n, 8), dtype=np.float32)
    X[:10, 0] += 2.0  # the concept's items stand out in one feature
    split = ["train" if i % 4 else "test" for i in range(n)]
    tags = [["x"] if i < 10 else ["y"] for i in range(n)]
    path = tmp_path / "split.store"
    with FeatureStore.create(path, dim=8) as s:
        s.append(X, ids=[f"i{i}" for i in range(n)], tags=tags, split=split)
    return path, sum(1 for i in range(10) if split[i] == "train")


def test_concept_learns_from_the_train_split_like_the_cli(tmp_path):
    path, n_train = _split_store(tmp_path)
    with TestClient(create_app(path, concept_iterations=2)) as c:
        assert c.get("/api/info").json()["concept_split"] == "train"
        job = _wait(c, c.post("/api/concept", json={"tag": "x", "k": 40}).json())
        assert job["status"] == "done", job
        res = job["result"]
        assert res["n_positives"] == n_train == 7 and res["train_split"] == "train"
        assert len(res["results"]) == 40  # the ranking covers every split
        assert c.get("/api/models/x").json()["n_positives"] == 7
        res = _wait(c, c.post("/api/concept", json={"tag": "x", "k": 5, "split": ""}).json())["result"]
        assert res["n_positives"] == 10 and res["train_split"] is None
        res = _wait(c, c.post("/api/concept", json={"tag": "x", "k": 5, "split": "test"}).json())["result"]
        assert res["n_positives"] == 3 and {it["split"] for it in res["results"]} == {"test"}
        # a concept from selected examples (the page's ✓ items)
        job = _wait(c, c.post("/api/concept", json={"positive_ids": ["i1", "i2", "i3"], "k": 5}).json())
        assert job["status"] == "done" and job["result"]["model"] == "items-i1" and job["result"]["n_positives"] == 3


def test_cli_serve_mode_files(demo, tmp_path, monkeypatch):
    import shutil

    import typer
    import uvicorn
    from typer.testing import CliRunner

    from hardneg.exceptions import CLIError
    from hardneg.cli.serve import serve

    app = typer.Typer()
    app.command("serve")(serve)
    app.command("other")(lambda: None)
    apps = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: apps.append(app))
    monkeypatch.delenv("HARDNEG_TOKEN", raising=False)
    store, models = demo
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copyfile(models / "hasher.npz", elsewhere / "tsvm16.npz")
    shutil.copyfile(models / "hamming.index", elsewhere / "codes.index")  # as `hash index -o codes.index` wrote it
    shutil.copyfile(models / "hamming.index.ids.npz", elsewhere / "codes.index.ids.npz")
    runner = CliRunner()
    r = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "120"})
    assert "hamming.index.ids.npz" in r.output and "--similarity-index" in r.output and "--hasher" in r.output
    empty = tmp_path / "empty-models"
    r = runner.invoke(app, ["serve", str(store), "--models", str(empty), "--hasher", str(elsewhere / "tsvm16.npz"),
                            "--index", str(elsewhere / "codes.index")])
    assert r.exit_code == 0, r.output
    state = apps[-1].state.serve
    assert set(state.modes) == {"hamming", "cosine"} and not (empty / "hamming.index").exists()
    state.close()
    assert not state._stage.exists()
    (elsewhere / "codes.index.ids.npz").unlink()
    r = runner.invoke(app, ["serve", str(store), "--models", str(empty), "--hasher", str(elsewhere / "tsvm16.npz"),
                            "--index", str(elsewhere / "codes.index")])
    assert isinstance(r.exception, CLIError) and "codes.index.ids.npz" in str(r.exception)
    r = runner.invoke(app, ["serve", str(store), "--models", str(empty), "--index", str(elsewhere / "codes.index")])
    assert isinstance(r.exception, CLIError) and "--hasher" in str(r.exception)
    r = runner.invoke(app, ["serve", str(store), "--similarity-index", str(tmp_path / "nope.npz")])
    assert isinstance(r.exception, CLIError) and "no such file" in str(r.exception)
