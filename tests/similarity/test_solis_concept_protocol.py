"""benchmarks/similarity_solis_concept.py: resumable per draw, matched-mAP reading of the λ path."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

bench = pytest.importorskip("benchmarks.similarity_solis_concept")


def _data(n_words=40, per_class=30, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), per_class)
    X = sp.random(y.size, n_words, density=0.2, random_state=seed, format="csr")
    X = X + sp.csr_matrix((np.ones(y.size), (np.arange(y.size), y * 5 + rng.integers(0, 5, y.size))), shape=X.shape)
    X = sp.csr_matrix(X.multiply(1 / np.sqrt(X.multiply(X).sum(axis=1))))
    return X, y


def test_run_resumes_from_saved_draws(tmp_path, monkeypatch):
    X, y = _data()
    monkeypatch.setattr(bench, "PARTIAL", tmp_path)
    monkeypatch.setattr(bench, "bag_of_words", lambda n_words, quick, tree=False: (X, y, 0.0))
    calls = []
    real = bench.run_draw
    monkeypatch.setattr(bench, "run_draw", lambda *a: calls.append(a[5]) or real(*a))
    kw = dict(quick=True, n_queries=5, path_draws=1, full_draws=0, lam_path=(1e-4, 1e-2))
    rows, prows = bench.run("mnist", 40, 1, methods_set="headline", **kw)
    assert {r["method"] for r in rows} == {"TF-IDF", "OASIS-diag", "S-ADA"} and all(r["draws"] == 1 for r in rows)
    assert prows == []  # the λ path runs with --methods all only
    saved = json.loads(bench.draw_file("mnist", 40, True, 5, 0).read_text())
    assert set(saved["methods"]) == bench.HEADLINE
    rows2, _ = bench.run("mnist", 40, 1, methods_set="headline", **kw)
    assert len(calls) == 1  # nothing left to fit: the saved draw is reused
    assert [r["map_values"] for r in rows2] == [r["map_values"] for r in rows]
    rows3, prows3 = bench.run("mnist", 40, 2, methods_set="all", **kw)
    assert len(calls) == 3  # draw 0: the missing solvers and the path; draw 1: everything
    ada = next(r for r in rows3 if r["method"] == "S-ADA" and r["w1"] == 0.0 and r["clock"] == "triplets")
    assert ada["draws"] == 2 and ada["map_values"][0] == rows[2]["map_values"][0]  # draw 0 kept, not refitted
    assert {(r["method"], r["lambda"]) for r in prows3} >= {("S-ADA", 1e-4), ("S-ADA", 1e-2), ("S-TG", 1e-2)}


def test_matched_map_interpolates_along_the_path():
    def row(name, lam, m, s):
        return {"words": 1000, "method": name, "clock": "c", "lambda": lam, "map_values": [m], "sparsity_values": [s]}

    prows = [row("A", 1e-5, 80.0, 40.0), row("A", 1e-4, 78.0, 80.0), row("A", 1e-3, 70.0, 96.0),
             row("B", 1e-5, 79.0, 40.0), row("B", 1e-4, 76.0, 60.0)]
    out = {r["method"]: r for r in bench.matched_map(prows, [74.0, 85.0])}
    assert out["A"]["sparsity % at mAP 74"] == pytest.approx(88.0)  # halfway between 78 and 70
    assert out["B"]["sparsity % at mAP 74"] == pytest.approx(60.0)  # never drops to 74: its sparsest point
    assert out["A"]["sparsity % at mAP 85"] is None
