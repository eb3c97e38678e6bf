"""Retrieval mAP and kNN / NCM accuracy: base features vs E-SVM (RE-SVM-1) vs RE-SVM-2, exact vs LDA.

Scaled down to run in minutes on one core (say so in the JSON): Fashion-MNIST
raw pixels, l2-normalized (784-d); negatives: N rows of the training split
(default 2,000); retrieval: Q test images as queries against a database of
M test images (class-level relevance, the query itself left out); kNN (k=5)
and NCM: classifiers fitted on T training images (disjoint from the pool),
tested on the database images. Sensitivity to N, λ and α₋ is measured on a
validation set of other training images; the defaults were chosen there (on pixels).

``--features cnn``: the same protocol on the 1280-d EfficientNet-Lite0 features of the
cached 70k Fashion-MNIST store (`hardneg extract fashion-mnist`), l2-normalized; results in
``esvm_retrieval_cnn.json``.

``--features dsift`` / ``--features vlad``: a 1,024-word bag of words (l1 histograms, then l2) and
VLAD-64 (8,192-d, power + intra + l2) over dense SIFT at 36 px (52 descriptors per image; the
descriptors of all 70k images cached by ``benchmarks/similarity_solis_large.py``), codebooks by
FAISS k-means on 200,000 descriptors of training images outside every set used below.

Every table also has the two baselines E-SVM reduces to or must beat, fitted on the same pool:
mean-centring ``(x - mu) / ||x - mu||`` and centring + PCA-whitening (256 dimensions) then l2
(:class:`hardneg.encoding.CentringEncoder`, :class:`hardneg.encoding.WhiteningEncoder`), and each
E-SVM row its separation fraction on the queries (:meth:`ESVMEncoder.separation_fraction`: the share
of exemplars scored above all their negatives). ``--quick`` skips the sensitivity grid.

``--alpha-grid T1,T2,..``: only the choice of the default α₋: for each negatives' total weight
``T = alpha_neg N mean||z||^2 / lam`` (λ = 0.1), E-SVM on the validation set, its separation fraction
(all 1,000 validation exemplars) and validation mAP; writes ``esvm_retrieval_alpha_grid[_features].json``.

Usage: .venv/bin/python benchmarks/esvm_retrieval.py [N] [--features pixels|cnn|dsift|vlad] [--quick]
       [--alpha-grid 0.5,1,2,10,50]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from sklearn.metrics import average_precision_score
from sklearn.neighbors import KNeighborsClassifier, NearestCentroid

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `benchmarks` importable
from benchmarks._common import write_results  # noqa: E402
from hardneg.datasets import load_fashion_mnist  # noqa: E402
from hardneg.encoding import CentringEncoder, ESVMEncoder, WhiteningEncoder  # noqa: E402

M, NQ, T = 2000, 200, 2000
# the sensitivity grid (n_negatives, lam, alpha_neg); pools past N are training rows outside the kNN and validation rows
GRID = [(2000, 1.0, 1e-5), (2000, 1.0, 1e-4), (2000, 1.0, 1e-3), (2000, 0.1, 1e-4), (1000, 1.0, 1e-4), (5000, 1.0, 1e-4)]
# the 20K and 60K pools (57,000: every training image outside the kNN and validation rows); pixels and CNN only
# (dense-SIFT features are computed only for the rows a run reads)
# "auto": alpha_neg = 2 lam / n (the negatives' total weight alpha_neg n / lam = 2, the encoder's default)
LARGE_POOLS = [(20000, 1.0, 1e-4), (20000, 0.1, 1e-4), (57000, 1.0, 1e-4), (57000, 0.1, 1e-4),
               (1000, 0.1, "auto"), (5000, 0.1, "auto"), (20000, 0.1, "auto"), (57000, 0.1, "auto")]
FEATURES = {
    "pixels": "Fashion-MNIST raw pixels, l2",
    "cnn": "Fashion-MNIST EfficientNet-Lite0 1280-d (96x96), l2",
    "dsift": "Fashion-MNIST dense-SIFT (36 px) bag of words, 1,024 words, l1 histograms then l2",
    "vlad": "Fashion-MNIST dense-SIFT (36 px) VLAD-64, 8,192-d, power + intra + l2",
}


def _features(ds, features, rows, codebook_rows):
    """Rows aligned with ``ds`` (only ``rows`` are computed for dense SIFT): pixels, CNN, BoW-1K or VLAD-64."""
    if features == "pixels":
        return ds.X.astype(np.float32)
    if features in ("dsift", "vlad"):
        from benchmarks.similarity_solis_large import Setup, descriptors
        from hardneg.features import Codebook, vlad

        desc, lengths, _ = descriptors(Setup(quick=False))
        starts = np.r_[0, np.cumsum(lengths)]
        sets = [desc[starts[i] : starts[i + 1]] for i in range(len(lengths))]
        sample = np.vstack([sets[i] for i in codebook_rows]).astype(np.float32)
        cb = Codebook(1024 if features == "dsift" else 64, max_descriptors=200_000, random_state=0).fit([sample])
        X = np.zeros((len(lengths), cb.n_words if features == "dsift" else 64 * desc.shape[1]), np.float32)  # untouched rows stay unallocated
        chosen = [sets[i] for i in rows]
        X[rows] = cb.histograms(chosen, normalize="l1") if features == "dsift" else vlad(chosen, cb)
        return X
    from hardneg.features import fashion_mnist_store_path
    from hardneg.store import FeatureStore

    with FeatureStore.open(fashion_mnist_store_path("cnn")) as store:
        if len(store) != len(ds.y) or not np.array_equal(store.labels(), ds.y):
            raise SystemExit("the CNN store is incomplete or out of order: run `hardneg extract fashion-mnist`")
        return store.to_numpy().astype(np.float32)


def mean_ap(q_codes, db_codes, q_rows, y_db):
    S = q_codes @ db_codes.T
    aps = []
    for i, r in enumerate(q_rows):
        keep = np.arange(len(y_db)) != r
        aps.append(average_precision_score(y_db[keep] == y_db[r], S[i, keep]))
    return float(np.mean(aps))


def alpha_grid(args, X, ds, train, N, feature):
    """E-SVM over the negatives' total weight T on the validation set: separation fraction and mAP."""
    val = train[N + T : N + T + 1000]
    Xv, yv, pool = X[val], ds.y[val], X[train[:N]]
    mean_sq = float((pool.astype(np.float64) ** 2).sum(1).mean())
    out = {"setup": {"N": N, "validation": len(val), "queries": NQ, "lam": 0.1, "alpha_pos": 1.0, "features": FEATURES[feature],
                     "total_weight": "T = alpha_neg N mean||z||^2 / lam"},
           "base_val_mAP": mean_ap(Xv[:NQ], Xv, np.arange(NQ), yv)}
    c = CentringEncoder().fit(pool).transform(Xv)
    out["centring_val_mAP"] = mean_ap(c[:NQ], c, np.arange(NQ), yv)
    rows = []
    for total in [float(t) for t in args.alpha_grid.split(",")]:
        t = time.perf_counter()
        enc = ESVMEncoder(lam=0.1, alpha_neg=total * 0.1 / (N * mean_sq), n_negatives=N, random_state=0).fit(pool)
        codes = enc.transform(Xv)
        rows.append({"total_weight": total, "alpha_neg": enc.alpha_neg_, "separation": enc.separation_fraction(Xv, codes=codes),
                     "val_mAP_symmetric": mean_ap(codes[:NQ], codes, np.arange(NQ), yv), "seconds": time.perf_counter() - t})
        print(rows[-1], flush=True)
    out["grid"] = rows
    write_results(f"esvm_retrieval_alpha_grid{'' if feature == 'pixels' else '_' + feature}", out)
    print(f"\n| T | separation | validation mAP (base {out['base_val_mAP']:.3f}, centring {out['centring_val_mAP']:.3f}) |\n|---|---|---|")
    for r in rows:
        print(f"| {r['total_weight']:g} | {r['separation']:.3f} | {r['val_mAP_symmetric']:.3f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("N", type=int, nargs="?", default=2000, help="negatives in the pool")
    ap.add_argument("--features", choices=list(FEATURES), default="pixels")
    ap.add_argument("--quick", action="store_true", help="skip the sensitivity grid")
    ap.add_argument("--alpha-grid", default=None, help="comma-separated total weights T: only the alpha_neg grid")
    args = ap.parse_args()
    N, feature = args.N, args.features
    ds = load_fashion_mnist()
    rng = np.random.default_rng(0)
    train = rng.permutation(np.flatnonzero(ds.split == "train"))
    test = rng.permutation(np.flatnonzero(ds.split == "test"))[:M]
    large = feature in ("pixels", "cnn") and not args.quick and args.alpha_grid is None
    largest = max(g[0] for g in GRID + (LARGE_POOLS if large else []))
    used = np.sort(np.r_[train[: max(N, largest) + T + 1000], test])  # every row read below (the grid's pools included)
    X = _features(ds, feature, used, train[-5000:])
    X[used] /= np.linalg.norm(X[used], axis=1, keepdims=True)
    pool, fit_rows = X[train[:N]], train[N : N + T]
    db, y_db, q_rows = X[test], ds.y[test], np.arange(NQ)
    results = {"setup": {"N": N, "database": M, "queries": NQ, "train_for_knn": T, "features": FEATURES[feature],
                         "note": "scaled down",
                         "params": {k: v for k, v in ESVMEncoder().get_params().items() if k in ("lam", "alpha_pos", "alpha_neg")}}, "rows": []}

    if args.alpha_grid is not None:
        alpha_grid(args, X, ds, train, N, feature)
        return

    def add(name, db_codes, tr_codes, asym=None, seconds=None, separation=None):
        row = {"encoding": name, "mAP_symmetric": mean_ap(db_codes[q_rows], db_codes, q_rows, y_db), "separation": separation}
        if asym is not None:
            row["mAP_asymmetric"] = mean_ap(db_codes[q_rows], asym, q_rows, y_db)
        row["knn_acc"] = float(KNeighborsClassifier(5).fit(tr_codes, ds.y[fit_rows]).score(db_codes, y_db))
        row["ncm_acc"] = float(NearestCentroid().fit(tr_codes, ds.y[fit_rows]).score(db_codes, y_db))
        row["seconds"] = seconds
        results["rows"].append(row)
        print(row, flush=True)

    add("base", db, X[fit_rows])
    for base_enc in (CentringEncoder(), WhiteningEncoder(n_components=256)):
        base_enc.fit(pool)
        name = "centring" if isinstance(base_enc, CentringEncoder) else "centring + PCA-whitening (256)"
        add(name, base_enc.transform(db), base_enc.transform(X[fit_rows]))
    for solver in ("batch", "lda"):
        t = time.perf_counter()
        enc = ESVMEncoder(n_recursions=2, solver=solver, n_negatives=N, random_state=0).fit(pool)
        for k in (1, 2):
            c_db, c_tr = enc.transform(db, n_recursions=k), enc.transform(X[fit_rows], n_recursions=k)
            sep = enc.separation_fraction(db[q_rows], n_recursions=k, codes=c_db[q_rows]) if solver == "batch" else None
            add(f"RE-SVM-{k} ({solver})", c_db, c_tr, asym=db if k == 1 else None, seconds=time.perf_counter() - t,
                separation=sep)
    # sensitivity, on a validation set (1,000 training images outside the pool and the kNN rows, 200 queries):
    # how the defaults were chosen. E-SVM (level 1), symmetric mAP.
    val = train[N + T : N + T + 1000]
    Xv, yv = X[val], ds.y[val]
    grid = []
    for n_neg, lam, a_neg in ([] if args.quick else GRID + (LARGE_POOLS if large else [])):
        t = time.perf_counter()
        rows = train[:n_neg] if n_neg <= N else np.r_[train[:N], train[N + T + 1000 : N + T + 1000 + n_neg - N]]
        enc = ESVMEncoder(lam=lam, alpha_neg=a_neg, n_negatives=n_neg, random_state=0).fit(X[rows])
        codes = enc.transform(Xv, n_recursions=1)
        g = {"n_negatives": n_neg, "lam": lam, "alpha_pos": 1.0, "alpha_neg": enc.alpha_neg_, "total_weight": enc.alpha_neg_ * n_neg / lam,
             "val_mAP_symmetric": mean_ap(codes[:NQ], codes, np.arange(NQ), yv), "seconds": time.perf_counter() - t}
        grid.append(g)
        print(g, flush=True)
    results["sensitivity_validation"] = grid
    results["base_val_mAP"] = mean_ap(Xv[:NQ], Xv, np.arange(NQ), yv)
    name = f"esvm_retrieval{'' if feature == 'pixels' else '_' + feature}{'' if N == 2000 else f'_N{N}'}{'_quick' if args.quick else ''}"
    write_results(name, results)
    print("\n| encoding | mAP sym | mAP asym | kNN acc | NCM acc | separation |\n|---|---|---|---|---|---|")
    for r in results["rows"]:
        asym = f"{r['mAP_asymmetric']:.3f}" if "mAP_asymmetric" in r else "—"
        sep = "—" if r["separation"] is None else f"{r['separation']:.3f}"
        print(f"| {r['encoding']} | {r['mAP_symmetric']:.3f} | {asym} | {r['knn_acc']:.3f} | {r['ncm_acc']:.3f} | {sep} |")
    print(f"\n| N | λ | α₋ (α₊ = 1) | α₋ N / λ | validation mAP (base {results['base_val_mAP']:.3f}) |\n|---|---|---|---|---|")
    for g in grid:
        print(f"| {g['n_negatives']} | {g['lam']:g} | {g['alpha_neg']:.3g} | {g['total_weight']:g} | {g['val_mAP_symmetric']:.3f} |")


if __name__ == "__main__":
    main()
