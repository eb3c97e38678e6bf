"""``POST /api/search/text`` (search by description, issue 26) through FastAPI's TestClient.

The store's tags are described by a deterministic stand-in for their WordNet glosses and
embedded by a keyword embedder instead of MiniLM (fast; no extra needed).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the 'serve' extra is not installed")
from fastapi.testclient import TestClient  # noqa: E402

from hardneg.serve import create_app  # noqa: E402
from hardneg.store import FeatureStore  # noqa: E402
from hardneg.zeroshot import _descriptions  # noqa: E402

KEYWORDS = ["striped", "horse", "feline", "whiskers", "feathers", "wings", "fins", "water", "wheels", "engine"]
GLOSSES = {"zebra": "a striped horse", "cat": "a feline with whiskers", "bird": "an animal with feathers and wings",
           "fish": "it has fins and lives in water", "car": "a machine with wheels and an engine"}


def fake_embed(texts, cache=True):
    out = np.zeros((len(texts), 384), np.float32)
    for i, t in enumerate(texts):
        words = re.findall(r"[a-z]+", str(t).lower())
        out[i, : len(KEYWORDS)] = [words.count(w) for w in KEYWORDS]
        out[i, 383] = 0.1
        out[i] /= np.linalg.norm(out[i])
    return out


def make_store(path, n_per_class=30):
    """Tagged items whose features are a noisy linear image of their class's description."""
    rng = np.random.default_rng(0)
    names = list(GLOSSES)
    D = fake_embed(list(GLOSSES.values()))[:, : len(KEYWORDS)]
    y = np.repeat(np.arange(len(names)), n_per_class)
    X = D[y] @ rng.normal(size=(len(KEYWORDS), 16)) + 0.05 * rng.normal(size=(y.size, 16))
    with FeatureStore.create(path, dim=16) as store:
        store.append((X - X.min()).astype(np.float32), tags=[[names[c]] for c in y],
                     paths=[f"img{i}.png" for i in range(y.size)])
    return y


@pytest.fixture
def fake_text(monkeypatch):
    monkeypatch.setattr(_descriptions, "embed_texts", fake_embed)
    monkeypatch.setattr(_descriptions, "wordnet_gloss", lambda name, wordnet=None: GLOSSES.get(name))
    monkeypatch.setattr("hardneg.concept._related.load_wordnet", lambda *a, **k: None)


@pytest.fixture
def client(tmp_path, fake_text):
    make_store(tmp_path / "s")
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
