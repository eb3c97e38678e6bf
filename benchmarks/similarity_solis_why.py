"""Why learning hurts at 10K words (issue 13): label coverage, label count, selection criterion.

Data and protocol as benchmarks/similarity_solis.py (MNIST 5k dense-SIFT, TF-IDF l2 rows,
5 queries per class, the rest the database; draws seeded 100 + d). Each learner keeps the
parameters that benchmark chose at that vocabulary size, so only the quantity studied moves.

1. Coverage: the words a w1 = 0 learner can ever move are those of the 7 x 10 training
   positives (v = x_a ⊙ (x_p - x_n) is zero off supp(x_a), and anchors are positives); every
   other word keeps w = 0 and drops out of the ranking.
2. Labels: the Section 5.3 budget of 210,000 triplets, but drawn (Section 5.4 sampler) from
   L labeled images per class, L = 7 ... all (~495): does mAP recover with more labels?
3. Passes: the same 7-positive triplets, 1 and 3 passes (more triplets from the same labels).
4. Selection: for each grid candidate, the held-out triplet error (what the benchmark picks
   by), a held-out retrieval mAP on the same held-out labels (each held-out positive ranks
   the other held-out positives of its class among that class's held-out negatives), and
   the test mAP; Spearman correlation of each criterion with the test mAP.

Usage: nice -n 10 .venv/bin/python benchmarks/similarity_solis_why.py [--words 10000] [--draws 2]
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import markdown_table, write_results  # noqa: E402
from benchmarks.similarity_solis import GRIDS, bag_of_words, make, mean_ap, split, triplet_error  # noqa: E402
from hardneg.negatives import concept_triplets, random_triplets  # noqa: E402
from hardneg.similarity._select import heldout_map  # noqa: E402

# the parameters benchmarks/similarity_solis.py chose (held-out triplet error), per vocabulary
CHOSEN = {
    10000: {("OASIS-diag", 1.0): 1.0, ("S-ADA", 0.0): (0.03, 1e-5), ("S-ADA", 1.0): (0.3, 0.0),
            ("S-AFB", 0.0): (0.3, 1e-5), ("S-AFB", 1.0): (0.1, 0.0)},
    1000: {("OASIS-diag", 1.0): 1.0, ("S-ADA", 0.0): (0.3, 3e-5), ("S-ADA", 1.0): (0.3, 0.0),
           ("S-AFB", 0.0): (0.1, 3e-5), ("S-AFB", 1.0): (0.1, 0.0)},
}
LABELS = (7, 20, 50, 150, 0)  # 0: every database image labeled


def spearman(a, b):
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def run(n_words, draws, tree):
    X, y, _ = bag_of_words(n_words, False, tree)
    chosen = CHOSEN[n_words]
    out = {"coverage": [], "labels": [], "passes": [], "selection": []}
    for d in range(draws):
        rng = np.random.default_rng(100 + d)
        q, db = split(y, rng)
        t = concept_triplets(y, n_positives=7, n_negatives=500, rows=db, random_state=rng)
        pos = np.unique(t[:, 0])
        covered = np.zeros(n_words, bool)
        covered[X[pos].indices] = True
        mass = X[db].multiply(X[db]).tocsc()  # l2 rows: per-word share of each image's squared norm
        share = float(np.asarray(mass[:, covered].sum()) / np.asarray(mass.sum()))
        qcov = float(np.mean([covered[X[i].indices].mean() for i in q]))
        out["coverage"].append({"draw": d, "training positives": int(pos.size), "words covered %": 100 * covered.mean(),
                                "db squared-norm share on covered words %": 100 * share, "query words covered %": 100 * qcov})
        print(f"# draw {d}: {pos.size} positives cover {100 * covered.mean():.1f}% of the words, "
              f"{100 * share:.1f}% of the database's mass, {100 * qcov:.1f}% of a query's words", flush=True)
        sub = np.random.default_rng(d)
        for L in LABELS:
            rows = db if L == 0 else np.concatenate([sub.choice(db[y[db] == c], L, replace=False) for c in np.unique(y)])
            tl = random_triplets(y, t.shape[0], rows=rows, random_state=sub)
            for (name, w0), value in chosen.items():
                m = make(name, value, w0).fit(X, triplets=tl)
                out["labels"].append({"draw": d, "labeled per class": L or int(np.bincount(y[db]).min()), "method": name,
                                      "w_init": w0, "mAP": mean_ap(m, X, y, q, db), "sparsity": m.sparsity_})
            print(f"  labels {L}: " + ", ".join(f"{r['method']}/{r['w_init']:.0f} {100 * r['mAP']:.1f}" for r in out["labels"][-len(chosen):]), flush=True)
        for passes in (1, 3):
            tp = np.concatenate([t[np.random.default_rng(k).permutation(t.shape[0])] if k else t for k in range(passes)])
            for (name, w0), value in chosen.items():
                m = make(name, value, w0).fit(X, triplets=tp)
                out["passes"].append({"draw": d, "passes": passes, "method": name, "w_init": w0,
                                      "mAP": mean_ap(m, X, y, q, db), "sparsity": m.sparsity_})
        print("  passes: " + ", ".join(f"{r['passes']}x {r['method']}/{r['w_init']:.0f} {100 * r['mAP']:.1f}" for r in out["passes"][-2 * len(chosen):]), flush=True)
        if d == 0:  # selection study on the first draw only
            vrng = np.random.default_rng(0)
            rest = np.setdiff1d(db, np.unique(t))
            vt = concept_triplets(y, n_positives=7, n_negatives=500, rows=rest, random_state=vrng)
            for (name, w0) in chosen:
                if not name.startswith("S-"):
                    continue
                for value in GRIDS[name]:
                    m = make(name, value, w0).fit(X, triplets=t)
                    out["selection"].append({"method": name, "w_init": w0, "param": list(value),
                                             "heldout triplet error": triplet_error(m, X, vt[:10_000]),
                                             "heldout retrieval mAP": heldout_map(m, X, vt),
                                             "test mAP": mean_ap(m, X, y, q, db)})
                rows = [r for r in out["selection"] if r["method"] == name and r["w_init"] == w0]
                te, hm, tm = (np.array([r[k] for r in rows]) for k in ("heldout triplet error", "heldout retrieval mAP", "test mAP"))
                print(f"  selection {name}/{w0:.0f}: spearman(-triplet err, test mAP) {spearman(-te, tm):.2f}, "
                      f"spearman(heldout mAP, test mAP) {spearman(hm, tm):.2f}; by err -> {100 * tm[te.argmin()]:.1f}, "
                      f"by heldout mAP -> {100 * tm[hm.argmax()]:.1f}, best {100 * tm.max():.1f}", flush=True)
    return out


def summarize(out, key):
    groups = {}
    for r in out[key]:
        k = (r.get("labeled per class", r.get("passes")), r["method"], r["w_init"])
        groups.setdefault(k, []).append(r["mAP"])
    return [{key: k[0], "method": k[1], "w_init": k[2], "mAP %": f"{100 * np.mean(v):.2f} ± {100 * np.std(v):.2f}", "draws": len(v)}
            for k, v in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0]))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=10000)
    ap.add_argument("--draws", type=int, default=2)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    out = run(args.words, args.draws, tree=args.words > 1000)
    lab, pas = summarize(out, "labels"), summarize(out, "passes")
    for r in lab:
        r["labels"] = r.pop("labels")
    tables = {"labels": markdown_table(lab, ["labels", "method", "w_init", "mAP %", "draws"]),
              "passes": markdown_table(pas, ["passes", "method", "w_init", "mAP %", "draws"])}
    write_results(f"similarity_solis_why_{args.words // 1000}k", {
        "words": args.words, "draws": args.draws, "chosen": {f"{k[0]} w1={k[1]:.0f}": v for k, v in CHOSEN[args.words].items()},
        "labels_note": "210,000 random triplets over L labeled images per class (0 = all database images)",
        **out, "tables": tables, "seconds": time.perf_counter() - t0,
    })
    for v in tables.values():
        print(v)


if __name__ == "__main__":
    main()
