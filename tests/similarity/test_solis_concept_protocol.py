"""benchmarks/similarity_solis_concept.py on tiny data: [Gao17] Section 5.3 per concept (the database
leaves out the concept's training images), held-out selection (validation and test draws share
neither seeds nor queries), resumable per draw, matched-mAP reading of the λ path.

The learners are replaced by a NumPy stand-in: these tests check the protocol, not the solvers
(tests/similarity/ covers those), and need no Numba compilation.
"""

import json

import numpy as np
import pytest

from _helpers import sparse_class_rows

bench = pytest.importorskip("benchmarks.similarity_solis_concept")


def _data(n_words=40, per_class=30, seed=0):
    return sparse_class_rows(n_words, per_class, density=0.2, seed=seed)


class _Stub:
    """Fits nothing: a weight vector that depends on the parameter, so values rank differently."""

    def __init__(self, p=None, eta=None):
        self.p = 1e-4 if p is None else p
        self.eta = 0.1 if eta is None else eta

    def fit(self, X, triplets):
        self.triplets_ = np.asarray(triplets)
        self.w_ = 1.0 + self.p * np.arange(X.shape[1]) + self.eta * np.cos(np.arange(X.shape[1]))
        self.sparsity_, self.n_updates_ = 0.0, len(triplets)
        return self

    def similarity(self, A, B):
        return np.asarray((A.multiply(self.w_) @ B.T).todense())


def _stub_methods(n_words):
    return [("TF-IDF", "-", "-", None), ("OASIS-diag", "-", "-", _Stub), ("S-TG", 0.0, "updates", _Stub),
            ("S-ADA", 0.0, "triplets", _Stub), ("S-ADA", 1.0, "triplets", _Stub)]


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    X, y = _data()
    monkeypatch.setattr(bench, "PARTIAL", tmp_path)
    monkeypatch.setattr(bench, "bag_of_words", lambda n_words, quick, tree=False: (X, y, 0.0))
    monkeypatch.setattr(bench, "methods", _stub_methods)
    return X, y


def test_concept_split_leaves_the_training_images_out_of_the_database():
    y = np.repeat(np.arange(4), 25)
    pool = bench.query_halves(y)
    for c in range(4):
        t, train, db, queries = bench.concept_split(y, c, np.random.default_rng(c), 5, 20, 8, pool)
        assert t.shape == (5 * 4 * 20, 3)
        assert np.array_equal(np.union1d(train, t.ravel()), train)  # every triplet row is a training row
        assert np.all(y[t[:, :2]] == c) and np.all(y[t[:, 2]] != c)
        assert np.intersect1d(train, db).size == 0 and np.union1d(train, db).size == y.size
        assert queries.size == 8 and np.all(np.isin(queries, db)) and np.all(y[queries] == c) and np.all(pool[queries])
    # without a pool the draws are the unsplit protocol's: concept_protocol, then the queries, from one generator
    rng, ref = np.random.default_rng(7), np.random.default_rng(7)
    t, train, db, queries = bench.concept_split(y, 1, rng, 5, 20, 8)
    t0, train0 = bench.concept_protocol(y, 1, n_positives=5, n_negatives=20, random_state=ref)
    members = np.setdiff1d(np.flatnonzero(y == 1), train0)
    assert np.array_equal(t, t0) and np.array_equal(queries, np.sort(ref.choice(members, 8, replace=False)))


def test_query_halves_split_every_concept_in_two():
    y = np.repeat(np.arange(3), [10, 11, 4])
    val = bench.query_halves(y)
    assert [int(val[y == c].sum()) for c in range(3)] == [5, 5, 2]
    assert np.array_equal(val, bench.query_halves(y))  # fixed: the same for every draw and run


def test_validation_and_test_draws_share_no_queries_and_no_seeds(tiny, monkeypatch):
    X, y = tiny
    seen = {"val": [], "test": []}
    real_split = bench.concept_split

    def spy(y_, c, rng, *a):
        out = real_split(y_, c, rng, *a)
        seen["val" if phase[0] == "val" else "test"].append(out)
        return out

    phase = ["val"]
    real_val = bench.run_validation_draw
    monkeypatch.setattr(bench, "concept_split", spy)
    monkeypatch.setattr(bench, "run_validation_draw", lambda *a: (phase.__setitem__(0, "val"), real_val(*a))[1])
    real_draw = bench.run_draw
    monkeypatch.setattr(bench, "run_draw", lambda *a, **k: (phase.__setitem__(0, "test"), real_draw(*a, **k))[1])
    rows, prows, sel = bench.run("mnist", 40, 2, True, 6, 0, 0, methods_set="tuned", lam_path=(1e-4, 1e-2),
                                 val_draws=2, c_path=(0.1, 1.0))
    assert len(seen["val"]) == len(seen["test"]) == 2 * 3  # 2 draws x 3 concepts each
    vq = np.concatenate([s[3] for s in seen["val"]])
    tq = np.concatenate([s[3] for s in seen["test"]])
    assert np.intersect1d(vq, tq).size == 0
    val = bench.query_halves(y)
    assert val[vq].all() and not val[tq].any()
    # different seeds: no validation draw repeats a test draw's training images
    vtrain = {tuple(s[1]) for s in seen["val"]}
    assert not vtrain & {tuple(s[1]) for s in seen["test"]}
    for s in seen["val"] + seen["test"]:  # the database is the protocol's in both phases
        assert np.intersect1d(s[1], s[2]).size == 0 and s[1].size + s[2].size == y.size
    # selection covers OASIS-diag's C, the w1 = 0 solvers' λ and the extra S-ADA w1 = 1's, never TF-IDF
    assert set(sel["selected"]) == {"OASIS-diag", "S-TG|0.0|updates", "S-ADA|0.0|triplets", bench.W1_EXTRA}
    assert sel["selected"]["OASIS-diag"]["C"] in (0.1, 1.0) and sel["selected"]["S-ADA|0.0|triplets"]["lam"] in (1e-4, 1e-2)
    assert sel["selected"]["S-ADA|0.0|triplets"]["eta"] == bench.ETA_DEFAULT  # no --etas: λ alone is tuned
    assert {r["param"] for r in sel["validation_rows"] if r["method"] == "OASIS-diag"} == {"C=0.1", "C=1"}
    got = {(r["method"], r["w1"], r["setting"]) for r in rows}
    assert ("S-ADA", 0.0, "validation") in got and ("S-ADA", 0.0, "default") in got and ("S-ADA", 1.0, "validation") in got
    assert ("OASIS-diag", "-", "validation") in got and ("TF-IDF", "-", "validation") not in got
    # the default rows and the validation rows are scored on the same test draws and queries
    assert all(r["draws"] == 2 for r in rows)


def test_select_takes_the_best_mean_and_breaks_ties_upwards():
    recs = [{"A@0.1": {"map": [0.5, 0.7], "sparsity": [10.0]}, "A@1": {"map": [0.6], "sparsity": [20.0]},
             "B|0.0|c@0.1": {"map": [0.4], "sparsity": [0.0]}, "B|0.0|c@1": {"map": [0.4], "sparsity": [0.0]}},
            {"A@0.1": {"map": [0.8], "sparsity": [10.0]}, "A@1": {"map": [0.6], "sparsity": [20.0]},
             "B|0.0|c@0.1": {"map": [0.5], "sparsity": [0.0]}, "B|0.0|c@1": {"map": [0.5], "sparsity": [0.0]}}]
    selected, rows = bench.select(recs, {"A": (0.1, 1.0), "B|0.0|c": (0.1, 1.0)})
    assert selected == {"A": 0.1, "B|0.0|c": 1.0}  # A: 0.7 vs 0.6; B: a tie, the larger value
    assert [r["selected"] for r in rows] == [True, False, False, True]
    assert rows[0]["val mAP %"] == "70.00" and rows[0]["draws"] == 2


def test_run_resumes_from_saved_draws(tiny, monkeypatch):
    calls = []
    real = bench.run_draw
    monkeypatch.setattr(bench, "run_draw", lambda *a, **k: calls.append(a[5]) or real(*a, **k))
    kw = dict(quick=True, n_queries=5, path_draws=1, full_draws=0, lam_path=(1e-4, 1e-2))
    rows, prows, sel = bench.run("mnist", 40, 1, methods_set="headline", **kw)
    assert sel == {} and {r["method"] for r in rows} == {"TF-IDF", "OASIS-diag", "S-ADA"} and all(r["draws"] == 1 for r in rows)
    assert prows == []  # the λ path runs with --methods all only
    saved = json.loads(bench.draw_file("mnist", 40, True, 5, 0).read_text())
    assert set(saved["methods"]) == bench.HEADLINE
    rows2, _, _ = bench.run("mnist", 40, 1, methods_set="headline", **kw)
    assert len(calls) == 1  # nothing left to fit: the saved draw is reused
    assert [r["map_values"] for r in rows2] == [r["map_values"] for r in rows]
    rows3, prows3, _ = bench.run("mnist", 40, 2, methods_set="all", **kw)
    assert len(calls) == 3  # draw 0: the missing solvers and the path; draw 1: everything
    ada = next(r for r in rows3 if r["method"] == "S-ADA" and r["w1"] == 0.0 and r["clock"] == "triplets")
    assert ada["draws"] == 2 and ada["map_values"][0] == rows[2]["map_values"][0]  # draw 0 kept, not refitted
    assert {(r["method"], r["lambda"]) for r in prows3} >= {("S-ADA", 1e-4), ("S-ADA", 1e-2), ("S-TG", 1e-2)}
    # held-out selection saves its draws apart: the unsplit draws above are neither reused nor overwritten
    bench.run("mnist", 40, 1, methods_set="tuned", val_draws=1, c_path=(0.1,), **kw)
    assert bench.draw_file("mnist", 40, True, 5, 0, "val").is_file() and bench.draw_file("mnist", 40, True, 5, 0, "test").is_file()
    assert json.loads(bench.draw_file("mnist", 40, True, 5, 0).read_text())["methods"].keys() == saved["methods"].keys() | {"S-TG|0.0|updates"}


def test_grid_tunes_oasis_diag_the_w1_0_solvers_and_the_s_ada_w1_1_extra_only():
    tuned = {bench._key(n, w, c) for n, w, c, _ in bench.methods(1000) if bench.grid(n, w, c)}
    assert tuned == {"OASIS-diag", bench.W1_EXTRA} | {f"{n}|0.0|{c}" for n, c in bench.PATH_METHODS}
    assert bench.W1_EXTRA == "S-ADA|1.0|triplets"


def test_matched_map_interpolates_along_the_path():
    def row(name, lam, m, s):
        return {"words": 1000, "method": name, "clock": "c", "lambda": lam, "map_values": [m], "sparsity_values": [s]}

    prows = [row("A", 1e-5, 80.0, 40.0), row("A", 1e-4, 78.0, 80.0), row("A", 1e-3, 70.0, 96.0),
             row("B", 1e-5, 79.0, 40.0), row("B", 1e-4, 76.0, 60.0)]
    out = {r["method"]: r for r in bench.matched_map(prows, [74.0, 85.0])}
    assert out["A"]["sparsity % at mAP 74"] == pytest.approx(88.0)  # halfway between 78 and 70
    assert out["B"]["sparsity % at mAP 74"] == pytest.approx(60.0)  # never drops to 74: its sparsest point
    assert out["A"]["sparsity % at mAP 85"] is None


def test_eta_grid_crosses_every_lambda_with_every_eta_and_reuses_the_default_eta_keys():
    g = bench.grid("S-ADA", 0.0, "triplets", (1e-5, 1e-4), (0.1,), (0.1, 1.0))
    assert g == ((1e-5, 0.1), (1e-5, 1.0), (1e-4, 0.1), (1e-4, 1.0))
    assert bench.grid("OASIS-diag", "-", "-", (1e-5,), (0.1, 1.0), (0.1, 1.0)) == (0.1, 1.0)  # C only
    assert bench.grid("S-ADA", 1.0, "triplets", (1e-5,), (0.1,), (0.1, 1.0)) == ((1e-5, 0.1), (1e-5, 1.0))  # the extra
    assert bench.grid("S-AFB", 1.0, "updates", (1e-5,), (0.1,), (0.1, 1.0)) == ()  # other w1 = 1 solvers: defaults only
    # at the default η the key is the λ-only one of the runs without --etas (their saved fits are the same fits)
    assert bench.pkey("S-ADA|0.0|triplets", (3e-5, bench.ETA_DEFAULT)) == "S-ADA|0.0|triplets@3e-05"
    assert bench.pkey("S-ADA|0.0|triplets", (3e-5, 0.3)) == "S-ADA|0.0|triplets@3e-05,eta=0.3"
    assert bench.pkey("OASIS-diag", 1.0) == "OASIS-diag@1"
    assert bench.describe("S-DA", (1e-4, 0.3)) == {"param": "λ=0.0001", "η": "γ=3.33333"}


def test_eta_reaches_every_solver_and_s_da_gets_gamma_one_over_eta():
    made = {(n, c): f for n, w, c, f in bench.methods(1000) if w == 0.0}
    for (name, clock), f in made.items():
        m = f(3e-5, 0.3)
        assert m.lam == 3e-5 and m.w_init == 0.0
        assert (m.gamma == pytest.approx(1 / 0.3)) if name == "S-DA" else (m.eta == 0.3)
        d = f(None)  # the library defaults
        assert d.get_params() == type(d)(w_init=0.0, **({"clock": clock} if "clock" in d.get_params() else {})).get_params()
    # the default η the keys assume is the library's
    assert made[("S-ADA", "triplets")](None).eta == made[("S-AFB", "updates")](None).eta == bench.ETA_DEFAULT
    assert made[("S-TG", "updates")](None).eta == bench.ETA_DEFAULT and made[("S-DA", "triplets")](None).gamma == 1 / bench.ETA_DEFAULT


def test_select_over_lambda_eta_pairs_ties_to_the_larger_lambda_then_the_smaller_eta():
    k = "S-ADA|0.0|triplets"
    vals = {(1e-5, 0.1): 0.5, (1e-5, 1.0): 0.6, (1e-4, 0.1): 0.6, (1e-4, 1.0): 0.6, (1e-4, 3.0): 0.55}
    recs = [{bench.pkey(k, p): {"map": [m], "sparsity": [50.0]} for p, m in vals.items()}]
    selected, rows = bench.select(recs, {k: tuple(vals)})
    assert selected == {k: (1e-4, 0.1)}  # three tie at 60: the larger λ, then the smaller η
    assert [r["selected"] for r in rows] == [False, False, True, False, False]
    assert rows[1]["param"] == "λ=1e-05" and rows[1]["η"] == "η=1" and rows[1]["value"] == {"lam": 1e-5, "eta": 1.0}


def test_held_out_run_with_etas_fits_the_selected_pair_on_the_test_draws(tiny):
    X, y = tiny
    rows, _, sel = bench.run("mnist", 40, 1, True, 6, 0, 0, methods_set="tuned", lam_path=(1e-4, 1e-2),
                             val_draws=1, c_path=(0.1,), eta_path=(0.1, 3.0))
    # the stub's weights depend on η, so the validation rows differ across η
    vr = [r for r in sel["validation_rows"] if r["method"] == "S-ADA"]
    assert {(r["param"], r["η"]) for r in vr} == {("λ=0.0001", "η=0.1"), ("λ=0.0001", "η=3"), ("λ=0.01", "η=0.1"), ("λ=0.01", "η=3")}
    best = max(vr, key=lambda r: (float(r["val mAP %"]), r["value"]["lam"], -r["value"]["eta"]))
    assert sel["selected"]["S-ADA|0.0|triplets"] == best["value"]
    ada = next(r for r in rows if r["method"] == "S-ADA" and r["setting"] == "validation")
    assert ada["param"] == f"λ={best['value']['lam']:g}" and ada["η"] == f"η={best['value']['eta']:g}"
    saved = json.loads(bench.draw_file("mnist", 40, True, 6, 0, "test").read_text())["methods"]
    p = sel["selected"]["S-ADA|0.0|triplets"]
    assert bench.pkey("S-ADA|0.0|triplets", (p["lam"], p["eta"])) in saved


def test_a_saved_draw_the_solvers_no_longer_reproduce_is_refused(tiny):
    kw = dict(quick=True, n_queries=6, path_draws=0, full_draws=0, methods_set="tuned", lam_path=(1e-4,), val_draws=1, c_path=(0.1,))
    bench.run("mnist", 40, 1, **kw)
    bench.run("mnist", 40, 1, **kw)  # reused: the refit of the first concept matches
    path = bench.draw_file("mnist", 40, True, 6, 0, "test")
    rec = json.loads(path.read_text())
    rec["methods"]["OASIS-diag"]["map"][0] += 0.01  # as if fitted by other code
    path.write_text(json.dumps(rec))
    with pytest.raises(RuntimeError, match="refitted mAP"):
        bench.run("mnist", 40, 1, **kw)
