"""``POST /api/search/text`` (search by description, issue 26) through FastAPI's TestClient.

The store's tags are described by a deterministic stand-in for their WordNet glosses and
embedded by a keyword embedder instead of MiniLM (fast; no extra needed).
"""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the 'serve' extra is not installed")
from _helpers import fake_text_models, make_text_store  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from hardneg.serve import create_app  # noqa: E402


@pytest.fixture
def fake_text(monkeypatch):
    fake_text_models(monkeypatch)


@pytest.fixture
def client(tmp_path, fake_text):
    make_text_store(tmp_path / "s")
    with TestClient(create_app(tmp_path / "s", models_dir=tmp_path / "models", allowed_hosts=["testserver"])) as c:
        yield c


def test_text_ranks_the_described_class_first_with_paging(client):
    r = client.post("/api/search/text", json={"text": "something with feathers and wings", "k": 10})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] == "text" and body["offset"] == 0 and body["has_more"] is True
    assert [it["tags"] for it in body["results"]] == [["bird"]] * 10
    assert "train_s" in body["timings"] and "search_s" in body["timings"]
    scores = [it["score"] for it in body["results"]]
    assert scores == sorted(scores, reverse=True)
    # the next page continues the same ranking; the model is trained once
    r2 = client.post("/api/search/text", json={"text": "something with feathers and wings", "k": 10, "offset": 10})
    page2 = r2.json()
    assert "train_s" not in page2["timings"]
    assert not {it["id"] for it in page2["results"]} & {it["id"] for it in body["results"]}
    assert [it["tags"] for it in page2["results"]] == [["bird"]] * 10
    assert page2["results"][0]["score"] <= scores[-1]
    last = client.post("/api/search/text", json={"text": "wheels", "k": 24, "offset": 140}).json()
    assert len(last["results"]) == 10 and last["has_more"] is False


def test_text_errors(client):
    assert client.post("/api/search/text", json={"text": "", "k": 5}).status_code == 422
    r = client.post("/api/search/text", json={"text": "   ", "k": 5})
    assert r.status_code == 422 and "text: is empty" in r.json()["detail"]
    assert client.post("/api/search/text", json={"text": "x" * 1001}).status_code == 422
    assert client.post("/api/search/text", json={"text": "wings", "k": 0}).status_code == 422


def test_the_page_has_a_text_box(client):
    html = client.get("/").text
    assert 'id="text-form"' in html and 'id="text-input"' in html
    assert "api/search/text" in client.get("/static/app.js").text


def test_text_index_is_built_once_and_survives_a_restart(tmp_path, fake_text):
    from hardneg.zeroshot import _text_index

    make_text_store(tmp_path / "s")
    app = lambda: create_app(tmp_path / "s", models_dir=tmp_path / "models", allowed_hosts=["testserver"])  # noqa: E731
    before = _text_index.BUILDS["n"]
    with TestClient(app()) as c:
        assert c.get("/api/search/text/status").json()["state"] == "none"
        first = c.post("/api/search/text", json={"text": "wings", "k": 5}).json()
        st = c.get("/api/search/text/status").json()
        assert st["state"] == "ready" and st["method"] == "eszsl" and st["done"] == st["total"] == 150
        assert st["named_share"] is None  # img<i>.png: no words, so no file-name captions
        second = c.post("/api/search/text", json={"text": "wheels", "k": 5}).json()
        assert "train_s" in first["timings"] and "train_s" not in second["timings"]
        assert [it["tags"] for it in second["results"]] == [["car"]] * 5
    assert _text_index.BUILDS["n"] == before + 1 and list((tmp_path / "models" / "text-index").glob("*.npz"))
    with TestClient(app()) as c:  # a restarted service reads the cached index
        assert c.post("/api/search/text", json={"text": "wings", "k": 5}).status_code == 200
    assert _text_index.BUILDS["n"] == before + 1


def test_a_store_nothing_can_search_answers_409_without_retrying(tmp_path, fake_text, monkeypatch):
    import numpy as np

    from hardneg.store import FeatureStore
    from hardneg.zeroshot import _text_index

    with FeatureStore.create(tmp_path / "s", dim=8) as st:  # no tags, no CNN features
        st.append(np.ones((4, 8), np.float32))
    with TestClient(create_app(tmp_path / "s", models_dir=tmp_path / "models", allowed_hosts=["testserver"])) as c:
        r = c.post("/api/search/text", json={"text": "wings", "k": 2})
        assert r.status_code == 409 and "ConSE" in r.json()["detail"] and "lr" not in r.json()["detail"]
        monkeypatch.setattr(_text_index, "resolve_method", lambda *a, **k: pytest.fail("tried again"))
        r2 = c.post("/api/search/text", json={"text": "other", "k": 2})
        assert r2.status_code == 409 and r2.json()["detail"] == r.json()["detail"]
        assert c.get("/api/search/text/status").json()["state"] == "failed"
