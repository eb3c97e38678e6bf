"""Concept-search quality: Negative Bootstrap vs its baselines (Li et al., IEEE TMM 2013, Fig. 2 / Table II).

Protocol per feature set: each class in turn is the concept; |B+| positives
come from the training split, the pool is the rest of the (sub-sampled)
training split with labels as tags, a fraction of which are wrong or missing
(tag noise, as with real user tags); the test split is ranked and scored by
AP and P@20. mAP is reported over T (checkpoints, using the compressed G_t)
for negative bootstrap, asymmetric bagging, random sampling, sampling
positives, and once for a single class-weighted classifier on the pooled
negatives. Compression fidelity (exact vs compressed G_T) is reported too.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/concept_quality.py [--quick] [--features digits fashion-raw PATH ...]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import write_results  # noqa: E402

from hardneg.concept import AsymmetricBagging, NegativeBootstrap, PooledClassifier, PositiveSampling, RandomSampling  # noqa: E402
from hardneg.demos.concept import noisy_tags  # noqa: E402
from hardneg.eval import average_precision, precision_at_k  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "concept_quality.json"


def load_features(name: str, n_pool: int, n_test: int, seed: int):
    """Return X, y, train rows, test rows, description."""
    rng = np.random.default_rng(seed)
    if name == "digits":
        from hardneg.datasets import load_digits

        ds = load_digits()
        X, y, split, desc = ds.X, ds.y, ds.split, "sklearn digits, 64-d grey levels"
    elif name == "fashion-raw":
        from hardneg.datasets import load_fashion_mnist

        ds = load_fashion_mnist()
        X, y, split, desc = ds.X / 255.0, ds.y, ds.split, "Fashion-MNIST raw pixels / 255, 784-d"
    else:
        from hardneg.store import FeatureStore

        path = Path(name).expanduser()
        if not path.exists():
            path = Path.home() / ".cache" / "hardneg" / "stores" / name
        store = FeatureStore.open(path)
        y_all = store.labels()
        split = np.asarray(store.items.column("split").to_pylist(), dtype=object)
        train = np.flatnonzero(split == "train")
        test = np.flatnonzero(split == "test")
        note = ""
        if test.size == 0:  # e.g. a store still being built: hold out a third of its rows
            perm = rng.permutation(train)
            test, train = np.sort(perm[: perm.size // 3]), np.sort(perm[perm.size // 3 :])
            note = f"; no test split in the store yet: random 2/3 pool, 1/3 test of its {perm.size} train rows"
        train = np.sort(rng.choice(train, size=min(n_pool, train.size), replace=False))
        test = np.sort(rng.choice(test, size=min(n_test, test.size), replace=False))
        rows = np.concatenate([train, test])
        X = store.take(rows)
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
        if X.min() < 0:
            raise SystemExit(f"{name}: features have negative values (min {X.min():.3g}); HIK needs non-negative features")
        return (np.ascontiguousarray(X, np.float32), y_all[rows], np.arange(train.size),
                np.arange(train.size, rows.size), f"FeatureStore {path.name} ({store.dim}-d){note}")
    train = np.flatnonzero(split == "train")
    test = np.flatnonzero(split == "test")
    train = np.sort(rng.choice(train, size=min(n_pool, train.size), replace=False))
    test = np.sort(rng.choice(test, size=min(n_test, test.size), replace=False))
    return np.ascontiguousarray(X, np.float32), y, train, test, desc


def methods(T, seed, max_pooled):
    return {
        # the paper's selection, [Li13] Eq. (6)-(8), as measured for the README; the library default skips likely
        # untagged positives (skip_top="auto", see benchmarks/concept_missing_tags.py)
        "negative bootstrap": NegativeBootstrap(n_iter=T, skip_top=0.0, random_state=seed),
        "negative bootstrap (skip auto)": NegativeBootstrap(n_iter=T, skip_top="auto", random_state=seed),
        "asymmetric bagging": AsymmetricBagging(n_iter=T, random_state=seed),
        "random sampling": RandomSampling(n_iter=T, random_state=seed),
        "sampling positives": PositiveSampling(n_iter=T, random_state=seed),
        "pooled (class-weighted)": PooledClassifier(max_negatives=max_pooled, random_state=seed),
    }


def run_setting(X, y, train, test, n_pos, T, classes, checkpoints, noise, seed, max_pooled):
    rng = np.random.default_rng(seed)
    names = [str(c) for c in range(int(y.max()) + 1)]
    tags = noisy_tags(y, names, noise, rng)
    Xte = X[test]
    res = {m: {"AP": {t: [] for t in checkpoints}, "P@20": [], "fit_s": []} for m in methods(T, seed, max_pooled)}
    fidelity = []
    for c in classes:
        cand = train[y[train] == c]
        if cand.size < n_pos + 1:
            continue
        pos = rng.choice(cand, size=n_pos, replace=False)
        pool_rows = np.setdiff1d(train, pos)
        rel = y[test] == c
        for name, est in methods(T, seed, max_pooled).items():
            t0 = time.perf_counter()
            est.fit(X[pos], X, exclude_tags=names[c], pool_tags=tags, pool_rows=pool_rows)
            res[name]["fit_s"].append(time.perf_counter() - t0)
            n_members = len(est.member_support_)
            for t in checkpoints:
                model = est.compress(n_members=min(t, n_members))
                res[name]["AP"][t].append(average_precision(rel, model.decision_function(Xte)))
            scores = est.compress().decision_function(Xte)
            res[name]["P@20"].append(precision_at_k(rel[np.argsort(-scores, kind="stable")], 20))
            if name == "negative bootstrap":
                exact = est.decision_function(Xte)
                fidelity.append({
                    "AP_exact": average_precision(rel, exact), "AP_compressed": average_precision(rel, scores),
                    "P@20_exact": precision_at_k(rel[np.argsort(-exact, kind="stable")], 20),
                    "P@20_compressed": precision_at_k(rel[np.argsort(-scores, kind="stable")], 20),
                    "max_abs_err": float(np.abs(exact - scores).max()),
                    "score_range": float(exact.max() - exact.min()),
                    "error_bound": float(est.compressed_.table.error_bound),
                })
    out = {}
    for name, r in res.items():
        out[name] = {
            "mAP_vs_T": {str(t): float(np.mean(v)) for t, v in r["AP"].items() if v},
            "mAP": float(np.mean(r["AP"][checkpoints[-1]])),
            "P@20": float(np.mean(r["P@20"])),
            "fit_seconds_mean": float(np.mean(r["fit_s"])),
        }
    fid = {k: float(np.mean([f[k] for f in fidelity])) for k in fidelity[0]} if fidelity else {}
    return out, fid


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 classes, |B+| = 100 only, T <= 20")
    ap.add_argument("--features", nargs="+", default=["digits", "fashion-raw"])
    ap.add_argument("--noise", type=float, nargs="+", default=[0.2, 0.0],
                    help="tag-noise fractions (wrong or missing tags); the first runs every setting, the others |B+| = 100 only")
    ap.add_argument("--pool", type=int, default=10000, help="training rows (pool + positives) per feature set")
    ap.add_argument("--test", type=int, default=2000, help="test rows per feature set")
    ap.add_argument("--max-pooled", type=int, default=3000, help="negatives for the pooled single classifier")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    out = {
        "study": "concept_quality",
        "machine": {"processor": platform.processor(), "cpu_count": os.cpu_count(), "numpy": np.__version__,
                    "date": datetime.datetime.now().isoformat(timespec="seconds")},
        "quick": args.quick, "tag_noise_levels": args.noise, "seed": args.seed, "results": {},
    }
    rows = []
    for feat in args.features:
        X, y, train, test, desc = load_features(feat, args.pool, args.test, args.seed)
        n_cls = int(y.max()) + 1
        main_noise = args.noise[0]
        if args.quick:
            settings = [(100, 20, list(range(3)), main_noise)]
        else:
            settings = [(100, 50, list(range(n_cls)), main_noise), (20, 50, list(range(n_cls)), main_noise),
                        (500, 20, list(range(min(n_cls, 4))), main_noise)]
        settings += [(100, 20 if args.quick else 50, settings[0][2], nz) for nz in args.noise[1:]]
        feat_out = {"description": desc, "n_train": int(train.size), "n_test": int(test.size), "settings": {},
                    "machine": out["machine"], "quick": args.quick}
        for n_pos, T, classes, noise in settings:
            if feat == "digits" and n_pos > 100:
                continue  # digits has ~120 training images per class
            checkpoints = [t for t in (1, 2, 5, 10, 20, 30, 50) if t <= T]
            t0 = time.perf_counter()
            res, fid = run_setting(X, y, train, test, n_pos, T, classes, checkpoints, noise, args.seed, args.max_pooled)
            key = f"|B+|={n_pos}, noise={noise}"
            feat_out["settings"][key] = {"T": T, "tag_noise": noise, "classes": classes, "methods": res, "compression": fid,
                                         "seconds": round(time.perf_counter() - t0, 1)}
            nb, ab = res["negative bootstrap"]["mAP"], res["asymmetric bagging"]["mAP"]
            for m, r in res.items():
                rows.append(f"| {feat} | {n_pos} | {noise} | {T} | {len(classes)} | {m} | {r['mAP']:.4f} | {r['P@20']:.3f} |")
            rows.append(f"| {feat} | {n_pos} | {noise} | {T} | {len(classes)} | NB vs AB relative | {100 * (nb / ab - 1):+.1f}% | |")
            if fid:
                rows.append(f"| {feat} | {n_pos} | {noise} | {T} | {len(classes)} | NB compressed (q=100) vs exact AP | "
                            f"{fid['AP_compressed']:.4f} vs {fid['AP_exact']:.4f} | max err {fid['max_abs_err']:.2g} |")
            print(f"[{feat} {key}] done in {feat_out['settings'][key]['seconds']} s", file=sys.stderr, flush=True)
        out["results"][feat] = feat_out
    if not args.quick:
        # Feature sets run separately (e.g. stores that appear later) merge into one file.
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        if RESULTS.exists():
            previous = json.loads(RESULTS.read_text())
            for feat, res in previous.get("results", {}).items():
                out["results"].setdefault(feat, res)
        write_results("concept_quality", out)
    else:
        write_results("concept_quality_quick", out)
    print("| features | |B+| | tag noise | T | classes | method | mAP | P@20 |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
