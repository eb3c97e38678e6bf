"""Concept search on an untagged collection: the everyday setting (issue 36).

A user tags a handful of items (B+) and leaves the rest of the collection untagged, so the
pool that Negative Bootstrap mines holds the concept's other members at their natural
frequency. [Li13]'s selection (the most positive-looking candidates) then takes exactly
them as negatives. This study runs, side by side on the same B+ and pool:

* ``nb-paper``: Negative Bootstrap as printed (``skip_top=0``, [Li13] Eq. (6)-(8));
* ``nb``: the library default (``skip_top="auto"``: the rank window sized from held-out
  positives -- the pool's tagged items, or spies held out of B+ when the pool has fewer
  than 10 tagged items);
* ``bagging``: asymmetric bagging (random pool negatives per member, averaged);
* ``random``: random negatives (one SVM);
* ``nb@median`` (a study variant): the default with the estimate at the median only, the
  rule before issue 36 (it differs from the default only where the pool has tagged items).

Cells: concept x |B+| (``--n-pos``) x the concept's share of the pool (``natural``, or
``1%``: the concept's other members dropped from the pool down to 1 %) x the share of
those other members that carry the concept's tag (``--tagged``: 0 is the everyday case;
1 is a fully tagged pool, the papers' setting). The only tag is the concept's own. AP on
a held-out test set against the true classes.

Data (``--data``):

* ``fashion``: a Fashion-MNIST CNN FeatureStore (``--store``, default the cached
  ``fashion-mnist-cnn``; ``hardneg extract fashion-mnist --features cnn``); each of the
  ten classes and the super-concepts tops (4 classes, ~40 % of the pool), footwear (~30 %)
  and trouser+dress (~20 %); ``--pool`` rows (pool) and ``--test`` rows (test) drawn per seed.
* ``openclipart``: the ``benchmarks/concept_openclipart.py`` store (openclipart-png, CNN);
  the 53 concepts (a folder's name as a tag, parents include their sub-folders); pool =
  a 70 % split stratified by folder, test = the rest; the natural share only (most
  concepts are 0.5-2 % of the pool already).

Each cell is paired over ``--seeds``: per method, AP minus bagging's and minus random's,
mean and a paired 95 % t-interval; the fit time of each method. Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/concept_untagged.py --data fashion --seeds 0 1 2
    PYTHONPATH=. .venv/bin/python benchmarks/concept_untagged.py --data openclipart --seeds 0 1 2

Writes ``benchmarks/results/concept_untagged_<data>[_<tag>].json`` via ``write_results``
and prints one markdown row per cell.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import zlib
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write_results  # noqa: E402
from hardneg.concept import AsymmetricBagging, NegativeBootstrap, RandomSampling  # noqa: E402
from hardneg.eval import average_precision  # noqa: E402
from hardneg.negatives import _pool_bootstrap  # noqa: E402

FASHION_CONCEPTS = {
    **{name: [c] for c, name in enumerate(["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt",
                                            "sneaker", "bag", "ankle-boot"])},
    "tops": [0, 2, 4, 6], "footwear": [5, 7, 9], "trouser+dress": [1, 3],
}


@contextlib.contextmanager
def _study(**values):
    old = {k: getattr(_pool_bootstrap, k) for k in values}
    for k, v in values.items():
        setattr(_pool_bootstrap, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(_pool_bootstrap, k, v)


def make_method(name: str, T: int, seed: int):
    """``(estimator, context)`` for a method name."""
    if name == "bagging":
        return AsymmetricBagging(n_iter=T, random_state=seed), contextlib.nullcontext()
    if name == "random":
        return RandomSampling(n_iter=1, random_state=seed), contextlib.nullcontext()
    if name == "nb-paper":
        return NegativeBootstrap(n_iter=T, skip_top=0.0, random_state=seed), contextlib.nullcontext()
    if name == "nb":
        return NegativeBootstrap(n_iter=T, random_state=seed), contextlib.nullcontext()
    if name == "nb@median":  # the default with the median rule only (the estimate before issue 36)
        return NegativeBootstrap(n_iter=T, random_state=seed), _study(AUTO_QUANTILES=(0.5,))
    raise SystemExit(f"unknown method {name!r}")


def run_cell(X, in_concept, pool, test, *, n_pos, share, tagged, seed, methods, T, key):
    rng = np.random.default_rng([seed, n_pos, int(round(1000 * tagged)), 0 if share is None else 1, key])
    members = pool[in_concept[pool]]
    if members.size < n_pos + 1:
        return None
    pos = np.sort(rng.choice(members, size=n_pos, replace=False))
    pool_rows = np.setdiff1d(pool, pos)
    if share is not None:  # keep the concept's other members at `share` of the pool
        others = pool_rows[in_concept[pool_rows]]
        keep = int(round(share * (pool_rows.size - others.size) / (1 - share)))
        if keep < others.size:
            pool_rows = np.setdiff1d(pool_rows, np.setdiff1d(others, rng.choice(others, size=keep, replace=False)))
    others = pool_rows[in_concept[pool_rows]]
    tagged_rows = rng.choice(others, size=int(round(tagged * others.size)), replace=False)
    tags: list[list[str]] = [[] for _ in range(X.shape[0])]
    for r in np.r_[pos, tagged_rows]:
        tags[int(r)] = ["concept"]
    rel = in_concept[test]
    out = {"pool_size": int(pool_rows.size), "concept_share": float(in_concept[pool_rows].mean()),
           "n_tagged_in_pool": int(tagged_rows.size), "n_untagged_positives": int(others.size - tagged_rows.size),
           "test_positives": int(rel.sum()), "AP": {}, "fit_s": {}, "skipped_fraction": {},
           "untagged_positive_share_of_negatives": {}}
    for name in methods:
        est, ctx = make_method(name, T, seed)
        t0 = time.perf_counter()
        with ctx:
            est.fit(X[pos], X, exclude_tags=["concept"], pool_tags=tags, pool_rows=pool_rows)
        out["fit_s"][name] = time.perf_counter() - t0
        out["AP"][name] = float(average_precision(rel, est.compress().decision_function(X[test])))
        its = getattr(est, "iterations_", [])
        chosen = np.concatenate([r["rows"] for r in its[1:]]).astype(int) if len(its) > 1 else np.array([], int)
        out["untagged_positive_share_of_negatives"][name] = float(in_concept[chosen].mean()) if chosen.size else None
        out["skipped_fraction"][name] = float(getattr(est, "skipped_fraction_", 0.0))
    return out


def paired(diffs) -> dict:
    d = np.asarray(diffs, dtype=float)
    mean = float(d.mean())
    if d.size < 2:
        return {"mean": mean, "lo": None, "hi": None, "n": int(d.size)}
    half = float(stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": int(d.size)}


def summarize(results, methods):
    cells = list(dict.fromkeys((r["concept"], r["n_pos"], r["share"], r["tagged"]) for r in results))
    out = []
    for cell in cells:
        runs = [r for r in results if (r["concept"], r["n_pos"], r["share"], r["tagged"]) == cell]
        row = {"concept": cell[0], "n_pos": cell[1], "share": cell[2], "tagged": cell[3], "n_seeds": len(runs),
               "concept_share": float(np.mean([r["concept_share"] for r in runs])),
               "mean_AP": {m: float(np.mean([r["AP"][m] for r in runs])) for m in methods},
               "fit_s": {m: float(np.mean([r["fit_s"][m] for r in runs])) for m in methods},
               "skipped_fraction": {m: float(np.mean([r["skipped_fraction"][m] for r in runs])) for m in methods},
               "paired": {}}
        for m in methods:
            for base in ("bagging", "random"):
                if m != base and base in methods:
                    row["paired"][f"{m}-{base}"] = paired([r["AP"][m] - r["AP"][base] for r in runs])
        out.append(row)
    return out


def verdict(summary, method: str) -> dict:
    """The issue's check for ``method``: cells below max(bagging, random) - 0.5 points, and significantly below either."""
    below, significant = [], []
    for row in summary:
        ap = row["mean_AP"]
        best = max(ap.get("bagging", -1), ap.get("random", -1))
        label = f"{row['concept']} |B+|={row['n_pos']} share={row['share']} tagged={row['tagged']}"
        if ap[method] < best - 0.005:
            below.append(f"{label}: {100 * (ap[method] - best):+.1f}")
        for base in ("bagging", "random"):
            p = row["paired"].get(f"{method}-{base}")
            if p and p["hi"] is not None and p["hi"] < 0:
                significant.append(f"{label} vs {base}: {100 * p['mean']:+.1f} [{100 * p['lo']:+.1f}, {100 * p['hi']:+.1f}]")
    return {"n_cells": len(summary), "below_best_baseline_by_0.5": below, "significantly_below": significant}


def load_fashion(store: str, n_rows: int, seed: int):
    from benchmarks.concept_missing_tags import load

    return load(store, n_rows, seed)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=["fashion", "openclipart"], default="fashion")
    ap.add_argument("--store", default="fashion-mnist-cnn", help="fashion: store name (cache) or path")
    ap.add_argument("--pool", type=int, default=10000)
    ap.add_argument("--test", type=int, default=2000)
    ap.add_argument("--concepts", nargs="*", default=None, help="a subset of the concepts (default: all)")
    ap.add_argument("--n-pos", type=int, nargs="+", default=[10, 50])
    ap.add_argument("--share", nargs="+", default=["natural", "0.01"], help="'natural' or a share of the pool")
    ap.add_argument("--tagged", type=float, nargs="+", default=[0.0, 0.3, 0.7, 1.0])
    ap.add_argument("--methods", nargs="+", default=["nb-paper", "nb", "bagging", "random"])
    ap.add_argument("--T", type=int, default=20, help="meta classifiers of NB and bagging (AP levels off by T = 10)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--min-images", type=int, default=40, help="openclipart: a folder's own images to be a concept")
    ap.add_argument("--tag", default="", help="suffix of the results file")
    args = ap.parse_args(argv)
    shares = [None if s == "natural" else float(s) for s in args.share]

    results = []
    t_all = time.perf_counter()
    for seed in args.seeds:
        if args.data == "fashion":
            X, y, desc = load_fashion(args.store, args.pool + args.test, seed)
            perm = np.random.default_rng(seed).permutation(len(y))
            test, pool = np.sort(perm[: args.test]), np.sort(perm[args.test:])
            concepts = {c: np.isin(y, cls) for c, cls in FASHION_CONCEPTS.items()}
        else:
            from benchmarks import concept_openclipart as oc

            X, ids, tags_full = oc.load(oc.build_store(args.min_images))
            desc = f"openclipart-png CNN store, {len(ids)} items"
            is_test = oc.split(ids, 0.3, seed)
            test, pool = np.flatnonzero(is_test), np.flatnonzero(~is_test)
            concepts = {c: np.array([c in t for t in tags_full]) for c in oc.categories(ids, args.min_images)}
        for cname, in_concept in concepts.items():
            if args.concepts and cname not in args.concepts:
                continue
            for n_pos in args.n_pos:
                for share in shares:
                    for tagged in args.tagged:
                        t0 = time.perf_counter()
                        r = run_cell(X, in_concept, pool, test, n_pos=n_pos, share=share, tagged=tagged, seed=seed,
                                     methods=args.methods, T=args.T, key=zlib.crc32(cname.encode()))
                        if r is None:
                            continue
                        r.update(concept=cname, n_pos=n_pos, share="natural" if share is None else share,
                                 tagged=tagged, seed=seed)
                        results.append(r)
                        print(f"[seed {seed} {cname} |B+|={n_pos} share={r['share']} tagged={tagged}] "
                              f"{time.perf_counter() - t0:.1f} s " + " ".join(f"{k}={v:.3f}" for k, v in r["AP"].items()),
                              file=sys.stderr, flush=True)
    summary = summarize(results, args.methods)
    checks = {m: verdict(summary, m) for m in args.methods if m.startswith("nb")}
    fit_ratio = {m: float(np.sum([r["fit_s"][m] for r in results]) / np.sum([r["fit_s"]["nb-paper"] for r in results]))
                 for m in args.methods if "nb-paper" in args.methods}
    name = f"concept_untagged_{args.data}" + (f"_{args.tag}" if args.tag else "")
    path = write_results(name, {
        "study": "concept_untagged", "data": args.data, "features": desc, "pool": args.pool if args.data == "fashion" else None,
        "test": args.test if args.data == "fashion" else None, "T": args.T, "seeds": args.seeds, "n_pos": args.n_pos,
        "share": args.share, "tagged": args.tagged, "methods": args.methods,
        "fit_time_vs_nb_paper": fit_ratio, "checks": checks, "seconds": round(time.perf_counter() - t_all, 1),
        "summary": summary, "results": results,
    })
    print(f"{desc}; T = {args.T}; seeds {args.seeds} -> {path}")
    print("| concept | |B+| | share | tagged | " + " | ".join(args.methods) + " |")
    print("|---|---|---|---|" + "---|" * len(args.methods))
    for row in summary:
        print(f"| {row['concept']} | {row['n_pos']} | {row['share']} | {row['tagged']} | "
              + " | ".join(f"{row['mean_AP'][m]:.3f}" for m in args.methods) + " |")
    for m, c in checks.items():
        print(f"{m}: {len(c['below_best_baseline_by_0.5'])} of {c['n_cells']} cells > 0.5 points below max(bagging, random); "
              f"{len(c['significantly_below'])} significantly below one of them")
    print("fit time / nb-paper:", {m: round(v, 2) for m, v in fit_ratio.items()})


if __name__ == "__main__":
    main()
