"""Negative Bootstrap when positives lack their tag: the missing-tag protocol (issue 12).

With social tags a third or more of a concept's images carry no tag for it.
They stay in the pool, the ensemble scores them highest, and the paper's
selection (Li et al., IEEE TMM 2013, [Li13] Eq. (6)-(8)) takes them as the "most
relevant negatives". This study shows it and measures the rank-window extra
(``skip_top``) against asymmetric bagging, per concept.

Protocol, per feature set (Fashion-MNIST feature stores, or raw pixels):

* rows are split at random into a pool (``--pool``) and a test set (``--test``);
* a concept is a set of classes: common concepts cover 10-40% of the pool
  (tops = T-shirt + pullover + coat + shirt 40%, footwear 30%,
  trouser + dress 20%, bag 10%); "rare" concepts keep only 1% of the pool
  (the rest of the class is dropped from the pool); "confusable" ones are
  single upper-body classes (shirt, T-shirt, pullover, coat), whose
  look-alikes are the other three;
* |B+| = ``--n-pos`` positives come from the pool; every other pool item is
  tagged with its class name, except that a fraction ``--missing`` of the
  concept's pool items carry no tag (untagged positives);
* the concept's class names are the excluded tags; each method ranks the
  test set with its compressed model; AP per concept.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/concept_missing_tags.py \
        --features fashion-mnist-cnn --pool 20000 --test 2000 --T 50

Writes ``benchmarks/results/concept_missing_tags_<features>.json`` and prints
a markdown table (AP per concept and missing-tag rate; NB minus AB).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write_results  # noqa: E402
from hardneg.concept import AsymmetricBagging, NegativeBootstrap  # noqa: E402
from hardneg.eval import average_precision  # noqa: E402

CLASS_NAMES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle-boot"]
COMMON = {"tops": [0, 2, 4, 6], "footwear": [5, 7, 9], "trouser+dress": [1, 3], "bag": [8]}
RARE = {"bag (1%)": [8], "trouser (1%)": [1]}
CONFUSABLE = {"shirt": [6], "t-shirt": [0], "pullover": [2], "coat": [4]}
GROUPS = {"common": COMMON, "rare": RARE, "confusable": CONFUSABLE}


def load(name: str, n_rows: int, seed: int):
    """X (float32, non-negative), y, description."""
    rng = np.random.default_rng(seed)
    if name == "fashion-raw":
        from hardneg.datasets import load_fashion_mnist

        ds = load_fashion_mnist()
        rows = np.sort(rng.choice(len(ds.y), size=min(n_rows, len(ds.y)), replace=False))
        return np.ascontiguousarray(ds.X[rows] / 255.0, np.float32), np.asarray(ds.y)[rows], "Fashion-MNIST raw pixels / 255, 784-d"
    from hardneg.store import FeatureStore

    path = Path(name).expanduser()
    if not path.exists():
        path = Path.home() / ".cache" / "hardneg" / "stores" / name
    store = FeatureStore.open(path)
    n = len(store)
    rows = np.sort(rng.choice(n, size=min(n_rows, n), replace=False))
    X = store.take(rows)
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    if X.min() < 0:
        raise SystemExit(f"{name}: negative feature values; the HIK kernel needs non-negative features")
    return np.ascontiguousarray(X, np.float32), store.labels()[rows], f"FeatureStore {path.name} ({store.dim}-d), {rows.size} of {n} rows"


def methods(T: int, seed: int, variants: list[str], n_pos: int):
    """``ab``, ``nb`` (the paper's selection), ``auto`` or a skip fraction, each NB one optionally ``+mK``:
    ``n_candidates = K * n_pos`` instead of the default."""
    out = {}
    for v in variants:
        if v == "ab":
            out["asymmetric bagging"] = AsymmetricBagging(n_iter=T, random_state=seed)
            continue
        skip, _, m = v.partition("+m")
        kw = {"n_candidates": "cv" if m == "cv" else int(round(float(m) * n_pos))} if m else {}
        suffix = f" m={m}|B+|" if m else ""
        if skip == "nb":
            out["NB (paper, skip 0)" + suffix] = NegativeBootstrap(n_iter=T, skip_top=0.0, random_state=seed, **kw)
        elif skip == "auto":
            out["NB skip auto" + suffix] = NegativeBootstrap(n_iter=T, skip_top="auto", random_state=seed, **kw)
        else:
            out[f"NB skip {float(skip):g}" + suffix] = NegativeBootstrap(n_iter=T, skip_top=float(skip), random_state=seed, **kw)
    return out


def run_concept(X, y, pool, test, classes, missing, rare_fraction, n_pos, T, seed, variants):
    rng = np.random.default_rng([seed, int(1000 * missing), *classes])
    in_concept = np.isin(y, classes)
    members = pool[in_concept[pool]]
    pos = np.sort(rng.choice(members, size=min(n_pos, members.size), replace=False))
    pool_rows = np.setdiff1d(pool, pos)
    if rare_fraction is not None:  # keep only rare_fraction of the pool in the concept
        members = pool_rows[in_concept[pool_rows]]
        keep = int(round(rare_fraction * (pool_rows.size - members.size) / (1 - rare_fraction)))
        drop = np.setdiff1d(members, rng.choice(members, size=min(keep, members.size), replace=False))
        pool_rows = np.setdiff1d(pool_rows, drop)
    tags = [[CLASS_NAMES[int(c)]] for c in y]
    untagged = pool_rows[in_concept[pool_rows]]
    untagged = rng.choice(untagged, size=int(round(missing * untagged.size)), replace=False)
    for r in untagged:
        tags[int(r)] = []
    rel = in_concept[test]
    concept_tags = [CLASS_NAMES[c] for c in classes]
    out = {"pool_size": int(pool_rows.size), "concept_share": float(in_concept[pool_rows].mean()),
           "n_untagged_positives": int(untagged.size),
           "test_positives": int(rel.sum()), "AP": {}, "AP_vs_T": {}, "fit_s": {}, "untagged_positive_share_of_negatives": {},
           "mean_skipped": {}}
    for name, est in methods(T, seed, variants, pos.size).items():
        t0 = time.perf_counter()
        est.fit(X[pos], X, exclude_tags=concept_tags, pool_tags=tags, pool_rows=pool_rows)
        out["fit_s"][name] = round(time.perf_counter() - t0, 2)
        out["AP"][name] = float(average_precision(rel, est.compress().decision_function(X[test])))
        out["AP_vs_T"][name] = {str(t): float(average_precision(rel, est.compress(n_members=t).decision_function(X[test])))
                                for t in (1, 5, 10, 20, 30, 50) if t <= T}
        chosen = np.concatenate([r["rows"] for r in est.iterations_[1:]]) if T > 1 else np.array([], int)
        out["untagged_positive_share_of_negatives"][name] = float(in_concept[chosen].mean()) if chosen.size else 0.0
        out["mean_skipped"][name] = float(np.mean([r.get("n_skipped", 0) for r in est.iterations_[1:]])) if T > 1 else 0.0
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--features", default="fashion-mnist-cnn", help="store name/path, or fashion-raw")
    ap.add_argument("--pool", type=int, default=20000)
    ap.add_argument("--test", type=int, default=2000)
    ap.add_argument("--n-pos", type=int, default=100)
    ap.add_argument("--T", type=int, default=50, help="T, meta classifiers (the paper: 50); AP at T = 1, 5, 10, 20, 30 too")
    ap.add_argument("--missing", type=float, nargs="+", default=[0.1, 0.3, 0.5])
    ap.add_argument("--groups", nargs="+", default=["common", "rare"], choices=list(GROUPS))
    ap.add_argument("--methods", nargs="+", default=["ab", "nb", "auto", "0.1"],
                    help="ab, nb (paper), auto, or a skip fraction; an NB one may end in +mK (K |B+| candidates) or +mcv (n_candidates='cv')")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="one run per seed (split, positives, tags, methods)")
    ap.add_argument("--tag", default="", help="suffix for the results file")
    args = ap.parse_args(argv)

    results = []
    t_all = time.perf_counter()
    for seed in args.seeds:
        X, y, desc = load(args.features, args.pool + args.test, seed)
        perm = np.random.default_rng(seed).permutation(len(y))
        test, pool = np.sort(perm[: args.test]), np.sort(perm[args.test :])
        for group in args.groups:
            for cname, classes in GROUPS[group].items():
                for missing in args.missing:
                    t0 = time.perf_counter()
                    r = run_concept(X, y, pool, test, classes, missing, 0.01 if group == "rare" else None,
                                    args.n_pos, args.T, seed, args.methods)
                    r.update(group=group, concept=cname, classes=classes, missing=missing, seed=seed)
                    results.append(r)
                    print(f"[seed {seed} {group} {cname} missing={missing}] {time.perf_counter() - t0:.0f} s "
                          + " ".join(f"{k}={v:.4f}" for k, v in r["AP"].items()), file=sys.stderr, flush=True)
    # mean over seeds per (group, concept, missing rate, method)
    summary, rows = [], []
    keys = list(dict.fromkeys((r["group"], r["concept"], r["missing"]) for r in results))
    for group, cname, missing in keys:
        runs = [r for r in results if (r["group"], r["concept"], r["missing"]) == (group, cname, missing)]
        share = float(np.mean([r["concept_share"] for r in runs]))
        ap = {m: float(np.mean([r["AP"][m] for r in runs])) for m in runs[0]["AP"]}
        neg = {m: float(np.mean([r["untagged_positive_share_of_negatives"][m] for r in runs])) for m in ap}
        skipped = {m: float(np.mean([r["mean_skipped"][m] for r in runs])) for m in ap}
        summary.append({"group": group, "concept": cname, "missing": missing, "concept_share": share,
                        "n_seeds": len(runs), "mean_AP": ap})
        ab = ap.get("asymmetric bagging")
        for name, v in ap.items():
            delta = "" if ab is None or name == "asymmetric bagging" else f"{v - ab:+.4f}"
            rows.append(f"| {group} | {cname} | {share:.3f} | {missing} | {name} | {v:.4f} | {delta} | {neg[name]:.3f} | {skipped[name]:.0f} |")
    name = "concept_missing_tags_" + Path(args.features).name + (f"_{args.tag}" if args.tag else "")
    path = write_results(name, {
        "study": "concept_missing_tags", "features": desc, "pool": int(pool.size), "test": int(test.size),
        "n_pos": args.n_pos, "T": args.T, "seeds": args.seeds, "missing": args.missing, "groups": args.groups,
        "methods": args.methods, "seconds": round(time.perf_counter() - t_all, 1), "summary": summary, "results": results,
    })
    print(f"{desc}; pool {pool.size}, test {test.size}, |B+| = {args.n_pos}, T = {args.T}, "
          f"mean over seeds {args.seeds} -> {path}")
    print("| group | concept | share of pool | untagged | method | AP | vs AB | untagged positives among chosen negatives | skipped / iter |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
