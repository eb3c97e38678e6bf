"""Indexing and retrieval time through the inverted index with learned sparse weights (S-ADA)
vs TF-IDF (every word) and OASIS-diag (dense learned weights), the SOLIS paper's Figs. 3-6 study.

Data: the MNIST-5k dense-SIFT bag of words of benchmarks/similarity_solis.py (TF-IDF weighted,
l2-normalized rows), with its 10K-word vocabulary-tree codebook by default. The 5,000 rows are
TILED (repeated with distinct ids) to a 70,000-row and a 1,000,000-row database: the postings are
as long as a real collection of that size would give, but the rankings themselves mean nothing
(every image appears 14 / 200 times), so only times and sizes are reported. Models: S-ADA (w1 = 0)
and S-ADA (w1 = 1) with the parameters chosen in similarity_solis (read from its JSON when present),
OASIS-diag, each trained on the 210,000 Section 5.3 triplets of draw 0; TF-IDF is w = 1.
Queries: 200 of the 5,000 rows, top-100 (InvertedIndex.rank: per query, a Numba walk over the
posting lists of the query's words with w_j != 0 into one score array, then a top-k partition). One core, one thread; times are wall seconds and ratios
against TF-IDF over the same database in the same run.

Usage: taskset -c 0 .venv/bin/python benchmarks/similarity_retrieval.py [--words 10000] [--rows 70000 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

if __name__ == "__main__":  # one thread per process for the timings; not when a test imports this module
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import markdown_table, write_results  # noqa: E402
from benchmarks.similarity_solis import bag_of_words, make, mean_ap, split  # noqa: E402
from hardneg.index import InvertedIndex  # noqa: E402
from hardneg.negatives import concept_triplets  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def chosen_params(n_words):
    """The (eta, lam) S-ADA chose in the Section 5.3 run at this vocabulary size, if recorded."""
    out = {0.0: (0.03, 3e-6), 1.0: (0.3, 3e-5)}
    for name in ("similarity_solis_10k", "similarity_solis"):
        path = RESULTS / f"{name}.json"
        if path.is_file():
            for row in json.loads(path.read_text())["rows"]:
                if row["words"] == n_words and row["method"] == "S-ADA" and isinstance(row["param"], list):
                    out[float(row["w_init"])] = tuple(row["param"])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=10000)
    ap.add_argument("--flat", action="store_true", help="the flat k-means codebook instead of the tree")
    ap.add_argument("--rows", type=int, nargs="+", default=[70_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args(argv)
    X, y, _ = bag_of_words(args.words, False, tree=not args.flat)
    rng = np.random.default_rng(0)
    q, db = split(y, rng)
    t = concept_triplets(y, n_positives=7, n_negatives=500, rows=db, random_state=rng)
    params = chosen_params(args.words)
    models = {"TF-IDF (w = 1)": None}
    for w0, p in params.items():
        models[f"S-ADA w1={w0:g} {p}"] = make("S-ADA", p, w0).fit(X, triplets=t)
    models["OASIS-diag"] = make("OASIS-diag", 0.1).fit(X, triplets=t)
    # accuracy of the same weights on the untiled 5,000 images (Section 5.3 split of draw 0)
    accuracy = {}
    for name, model in models.items():
        scorer = make("OASIS-diag", 0.1) if model is None else model
        if model is None:
            scorer._w = np.ones(X.shape[1])  # rows are TF-IDF, l2-normalized: w = 1 is the cosine
        accuracy[name] = 100 * mean_ap(scorer, X, y, q, db)
    Q = X[rng.choice(X.shape[0], args.queries, replace=False)]
    rows = []
    for n_rows in args.rows:
        reps = -(-n_rows // X.shape[0])
        D = sp.vstack([X] * reps, format="csr")[:n_rows]
        ids = np.arange(n_rows).astype(str)
        base = {}
        for name, model in models.items():
            weights = np.ones(X.shape[1]) if model is None else model.w_
            t0 = time.perf_counter()
            index = InvertedIndex(weights)
            for lo in range(0, n_rows, 100_000):
                index.add(D[lo : lo + 100_000], ids[lo : lo + 100_000])
            n_post = index.n_postings  # builds the CSC
            build = time.perf_counter() - t0
            index.rank(Q[:5], 100)  # warm
            t0 = time.perf_counter()
            index.rank(Q, 100)
            search = time.perf_counter() - t0
            if model is None:
                base = {"build": build, "search": search, "postings": n_post}
            rows.append({
                "database rows (tiled)": n_rows, "weights": name, "words with postings": int(index.active.size),
                "postings": n_post, "postings / TF-IDF": f"{n_post / base['postings']:.3f}",
                "index build s": f"{build:.2f}", "build / TF-IDF": f"{build / base['build']:.2f}",
                "search ms / query": f"{1000 * search / args.queries:.2f}", "search / TF-IDF": f"{search / base['search']:.2f}",
                "sparsity %": f"{100 * np.mean(weights == 0):.1f}", "mAP % (untiled 5k)": f"{accuracy[name]:.2f}",
            })
            print(rows[-1], flush=True)
            del index
        del D
    cols = ["database rows (tiled)", "weights", "sparsity %", "mAP % (untiled 5k)", "words with postings", "postings", "postings / TF-IDF", "index build s",
            "build / TF-IDF", "search ms / query", "search / TF-IDF"]
    table = markdown_table(rows, cols)
    write_results("similarity_retrieval", {
        "data": f"MNIST 5k dense-SIFT BoW, {args.words} words ({'flat k-means' if args.flat else 'vocabulary tree b=10'}), rows TILED to the database sizes",
        "queries": args.queries, "k": 100, "rows": rows, "table": table,
    })
    print(table)


if __name__ == "__main__":
    main()
