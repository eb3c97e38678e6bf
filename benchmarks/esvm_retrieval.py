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
``esvm_retrieval_cnn.json``. Dense-SIFT BoW and VLAD stores of Fashion-MNIST are not built
here and are skipped.

Usage: .venv/bin/python benchmarks/esvm_retrieval.py [N] [--features pixels|cnn]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import average_precision_score
from sklearn.neighbors import KNeighborsClassifier, NearestCentroid

from hardneg.datasets import load_fashion_mnist
from hardneg.encoding import ESVMEncoder

M, NQ, T = 2000, 200, 2000


def _features(ds, features):
    """Rows aligned with ``ds``: raw pixels, or the CNN store's 1280-d features."""
    if features == "pixels":
        return ds.X.astype(np.float32)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("N", type=int, nargs="?", default=2000, help="negatives in the pool")
    ap.add_argument("--features", choices=["pixels", "cnn"], default="pixels")
    args = ap.parse_args()
    N, FEATURES = args.N, args.features
    ds = load_fashion_mnist()
    X = _features(ds, FEATURES)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    rng = np.random.default_rng(0)
    train = rng.permutation(np.flatnonzero(ds.split == "train"))
    test = rng.permutation(np.flatnonzero(ds.split == "test"))[:M]
    pool, fit_rows = X[train[:N]], train[N : N + T]
    db, y_db, q_rows = X[test], ds.y[test], np.arange(NQ)
    results = {"setup": {"N": N, "database": M, "queries": NQ, "train_for_knn": T, "features": "Fashion-MNIST raw pixels, l2" if FEATURES == "pixels"
                         else "Fashion-MNIST EfficientNet-Lite0 1280-d (96x96), l2",
                         "note": "scaled down; dense-SIFT/VLAD stores not built here, skipped",
                         "params": {k: v for k, v in ESVMEncoder().get_params().items() if k in ("lam", "alpha_pos", "alpha_neg")}}, "rows": []}

    def add(name, db_codes, tr_codes, asym=None, seconds=None):
        row = {"encoding": name, "mAP_symmetric": mean_ap(db_codes[q_rows], db_codes, q_rows, y_db)}
        if asym is not None:
            row["mAP_asymmetric"] = mean_ap(db_codes[q_rows], asym, q_rows, y_db)
        row["knn_acc"] = float(KNeighborsClassifier(5).fit(tr_codes, ds.y[fit_rows]).score(db_codes, y_db))
        row["ncm_acc"] = float(NearestCentroid().fit(tr_codes, ds.y[fit_rows]).score(db_codes, y_db))
        row["seconds"] = seconds
        results["rows"].append(row)
        print(row, flush=True)

    add("base", db, X[fit_rows])
    for solver in ("batch", "lda"):
        t = time.perf_counter()
        enc = ESVMEncoder(n_recursions=2, solver=solver, n_negatives=N, random_state=0).fit(pool)
        for k in (1, 2):
            c_db, c_tr = enc.transform(db, n_recursions=k), enc.transform(X[fit_rows], n_recursions=k)
            add(f"RE-SVM-{k} ({solver})", c_db, c_tr, asym=db if k == 1 else None, seconds=time.perf_counter() - t)
    # sensitivity, on a validation set (1,000 training images outside the pool and the kNN rows, 200 queries):
    # how the defaults were chosen. E-SVM (level 1), symmetric mAP.
    val = train[N + T : N + T + 1000]
    Xv, yv = X[val], ds.y[val]
    grid = []
    for n_neg, lam, a_neg in [(2000, 1.0, 1e-5), (2000, 1.0, 1e-4), (2000, 1.0, 1e-3), (2000, 0.1, 1e-4),
                              (1000, 1.0, 1e-4), (5000, 1.0, 1e-4)]:
        t = time.perf_counter()
        rows = train[:n_neg] if n_neg <= N else np.r_[train[:N], train[N + T + 1000 : N + T + 1000 + n_neg - N]]
        enc = ESVMEncoder(lam=lam, alpha_neg=a_neg, n_negatives=n_neg, random_state=0).fit(X[rows])
        codes = enc.transform(Xv, n_recursions=1)
        g = {"n_negatives": n_neg, "lam": lam, "alpha_pos": 1.0, "alpha_neg": a_neg,
             "val_mAP_symmetric": mean_ap(codes[:NQ], codes, np.arange(NQ), yv), "seconds": time.perf_counter() - t}
        grid.append(g)
        print(g, flush=True)
    results["sensitivity_validation"] = grid
    results["base_val_mAP"] = mean_ap(Xv[:NQ], Xv, np.arange(NQ), yv)
    Path("benchmarks/results").mkdir(parents=True, exist_ok=True)
    Path(f"benchmarks/results/esvm_retrieval{'' if FEATURES == 'pixels' else '_' + FEATURES}.json").write_text(json.dumps(results, indent=1))
    print("\n| encoding | mAP sym | mAP asym | kNN acc | NCM acc |\n|---|---|---|---|---|")
    for r in results["rows"]:
        asym = f"{r['mAP_asymmetric']:.3f}" if "mAP_asymmetric" in r else "—"
        print(f"| {r['encoding']} | {r['mAP_symmetric']:.3f} | {asym} | {r['knn_acc']:.3f} | {r['ncm_acc']:.3f} |")
    print(f"\n| N | λ | α₋ (α₊ = 1) | validation mAP (base {results['base_val_mAP']:.3f}) |\n|---|---|---|---|")
    for g in grid:
        print(f"| {g['n_negatives']} | {g['lam']:g} | {g['alpha_neg']:g} | {g['val_mAP_symmetric']:.3f} |")


if __name__ == "__main__":
    main()
