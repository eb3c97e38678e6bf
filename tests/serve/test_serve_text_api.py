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
