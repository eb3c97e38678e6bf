"""The SGD step of ZeroShotClassifier on openclipart: fixed steps against ``lr="auto"`` and its scale (issue 38).

Data, classes, splits and inputs as ``benchmarks/zeroshot_openclipart.py`` (the first
``--splits`` splits), with two feature sets: PCA-64 of the CNN features (standardized: whitened,
the largest eigenvalue L of XᵀX/n is 1) and the raw 1280-d features (standardized; L about 60,
the input of search by description). Every run: random negatives, n = 2, growing D- capped at
10, mu 1e-2, loss-plateau stopping (tol 1e-3 over 5 epochs, cap 200). Step sizes compared:

- ``fixed 0.01`` and ``fixed 0.001``: one step for every parameter (before issue 38: 0.01);
- ``auto, scale c``: W_X steps by c / L (c = 0.01, 0.02, 0.03; 0.02 is the library's
  ``lr="auto"``), b_X, W_A and tau by 0.01;
- ``sqnorm 0.64``: W_X steps by 0.64 / mean ||x||^2 (normalized least-mean-squares; 0.01 for
  64 standardized features), the others by 0.01 -- the alternative normalization.

Reported: unseen and seen-class accuracy (mean per class, %), epochs run, diverged runs.

    taskset -c 1 env OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/zeroshot_openclipart_lr.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write_results  # noqa: E402
from benchmarks.zeroshot_openclipart import (  # noqa: E402
    NO_SUBJECT, class_descriptions, cnn_features, openclipart_classes, split, split_inputs, summary,
)

CONFIGS = {"fixed 0.01": ("fixed", 0.01), "fixed 0.001": ("fixed", 0.001), "auto, scale 0.01": ("auto", 0.01),
           "auto, scale 0.02 (default)": ("auto", 0.02), "auto, scale 0.03": ("auto", 0.03),
           "sqnorm 0.64": ("sqnorm", 0.64)}


def make(kind: str, value: float, seed: int):
    from hardneg.zeroshot import ZeroShotClassifier
    from hardneg.zeroshot import _classifier as C

    class Scaled(ZeroShotClassifier):
        def _step_sizes(self, Xs):
            if kind == "auto":
                L = C.top_eigenvalue(Xs.numpy())
            else:
                L = float((Xs.double() ** 2).sum(1).mean())
            return {"W_X": value / L, "b_X": C.AUTO_LR_OTHER, "W_A": C.AUTO_LR_OTHER, "tau": C.AUTO_LR_OTHER}

    common: dict[str, Any] = dict(sampler="random", n_negatives=2, max_negatives=10, random_state=seed)
    if kind == "fixed":
        return ZeroShotClassifier(lr=value, **common)
    return Scaled(**common)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--name", default="zeroshot_openclipart_lr")
    args = ap.parse_args()
    t_start = time.time()
    classes = openclipart_classes(40, 40)
    X_cnn, y, _ = cnn_features(classes, 1)
    cats = list(classes)
    drop = [k for k, c in enumerate(cats) if c in NO_SUBJECT]
    if drop:
        keep = ~np.isin(y, drop)
        X_cnn, y = X_cnn[keep], np.searchsorted(np.setdiff1d(np.arange(len(cats)), drop), y[keep])
        cats = [c for c in cats if c not in NO_SUBJECT]
    import torch

    torch.set_num_threads(1)
    from hardneg.eval import mean_per_class_accuracy
    from hardneg.zeroshot import TrainingDivergedError
    from hardneg.zeroshot._protocols import embed_texts

    A_text = embed_texts(class_descriptions(cats))
    out: dict = {}
    for pca in (64, 0):
        feats = f"PCA-{pca}" if pca else "raw 1280-d"
        acc: dict = {}
        seen_acc: dict = {}
        epochs: dict = {}
        diverged: dict = {}
        for s in range(args.splits):
            seen, unseen, train, test_seen, test_unseen = split(y, len(cats), s)
            X, A = split_inputs(X_cnn, A_text, train, seen, argparse.Namespace(pca=pca, attr_dims=16))
            for name, (kind, value) in CONFIGS.items():
                clf = make(kind, value, s)
                try:
                    clf.fit(X[train], y[train], (seen, A[seen]))
                except TrainingDivergedError:
                    diverged[name] = diverged.get(name, 0) + 1
                    print(f"[{time.time() - t_start:.0f}s] {feats} split {s} {name}: diverged", flush=True)
                    continue
                a = 100 * mean_per_class_accuracy(y[test_unseen], clf.predict(X[test_unseen], class_attributes=(unseen, A[unseen])))
                sa = 100 * mean_per_class_accuracy(y[test_seen], clf.predict(X[test_seen], class_attributes=(seen, A[seen])))
                acc.setdefault(name, []).append(a)
                seen_acc.setdefault(name, []).append(sa)
                epochs.setdefault(name, []).append(clf.n_epochs_)
                print(f"[{time.time() - t_start:.0f}s] {feats} split {s} {name}: unseen {a:.2f} seen {sa:.2f} "
                      f"({clf.n_epochs_} epochs, W_X step {clf.lr_['W_X']:.2g})", flush=True)
            out[feats] = {"zsl": summary(acc), "seen_accuracy": summary(seen_acc),
                          "epochs_run_mean": {k: float(np.mean(v)) for k, v in epochs.items()},
                          "diverged_runs": diverged, "splits": s + 1}
            write_results(args.name, {"by_features": out, "setup": {
                "splits_asked": args.splits, "configs": {k: list(v) for k, v in CONFIGS.items()},
                "training": "random negatives, n 2, grow (cap 10), mu 1e-2, m 16, lam 0.1, tol 1e-3, "
                            "n_iter_no_change 5, n_epochs cap 200",
                "data": "as zeroshot_openclipart.py (53 openclipart folders, 60/40 class splits, 80/20 within seen)"}})


if __name__ == "__main__":
    main()
