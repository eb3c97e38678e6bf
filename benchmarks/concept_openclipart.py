"""Negative Bootstrap vs asymmetric bagging vs random negatives on real clip art (issue 28).

Data: the Debian package ``openclipart-png``. Every folder holding at least ``--min-images``
(40) PNGs of its own, except ``unsorted``, is a category; the store holds all images of those
folders (6,705), 1280-d EfficientNet-Lite0 features, tagged with every folder level
(``hardneg extract images SRC -o STORE --features cnn --tags-from-folders``; SRC mirrors the
chosen folders with symbolic links so the ids are the package's relative paths). A concept is
a category's folder name as a tag: its positives are the items carrying the tag, so a parent
(``transportation``) includes its sub-folders (``vehicles``, ``roadsigns``, ...), as in
``hardneg concept train -c``.

Protocol, per seed (``--seeds``, 3): a 70/30 train/test split stratified by the item's own
folder. Per concept and condition -- complete tags, or ``--missing`` (30 %) of the concept's
train positives stripped of the concept's tag (they stay in the pool, untagged) -- B+ is at
most 100 random tagged train positives (the CLI's ``-p 100``), the pool is the train split
with the concept's tag excluded (what ``hardneg concept train`` does), and every method ranks
the test split; AP against the full tags. Methods: Negative Bootstrap ([Li13] Table I, T = 50,
m = 10 |B+|; ``skip_top`` variants), asymmetric bagging and random negatives, all T = 50
(``--T``), same B+ and pool.

NB diagnostics, over the selections of iterations 2..T: the share of selected negatives that
are positives of the concept under the full tags (untagged positives), the share that are
near-duplicates of a positive (cosine >= ``--dup-cos`` to some train positive; the package
also ships some images twice, as symbolic links, in two folders), and the mean number of
candidates ``skip_top`` passed over.

    taskset -c 1 env OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/concept_openclipart.py
    # or one process per seed (--seeds S --name concept_openclipart_seedS), then --merge FILES

Issue 28 runs, 3 seeds (0 and 1 with the ``auto+dup0.99`` extra, seed 2 with ``--nb auto,0``; merged over the
methods all three have), mean AP over 53 concepts, complete tags / 30 % untagged: NB (skip_top="auto") 0.624 /
0.607, NB (paper's selection, skip_top=0) 0.619 / 0.597, asymmetric bagging 0.583 / 0.566, random negatives
0.551 / 0.537. NB below bagging by > 1 point: 5 and 7 of 53 concepts ("auto"), 8 and 11 (paper's selection).
Noisy tags (``--missing 0.1 --wrong 0.1``: 20 % tag noise, half missing, half wrong; 3 seeds,
``concept_openclipart_noisy.json``): NB 0.594, bagging 0.554, random 0.503; on the 30 rare concepts
(<= 1.5 % of the pool) 0.575 / 0.522 / 0.467; NB below bagging by > 1 point on 7 of 53.

Follow-up (issue 28): seeds 0-2 picked the losing concepts, so they were rerun on fresh seeds; every summary
holds ``paired_vs_bagging``: per concept, AP minus bagging's over seeds (same split, B+ and pool), its sd and a
paired 95 % t-interval. ``--nb`` variants also take ``+mK`` (m = K |B+| candidates).

* ``concept_openclipart_fresh.json`` (seeds 3-12, the 10 losing concepts, NB "auto" and 0): significantly
  below bagging with complete tags arrows, etiquette-theme, roadsigns; with 30 % untagged map_symbols,
  roadsigns, transportation; hardware and africa (and action, for "auto") were noise.
* ``concept_openclipart_grid.json`` (seeds 3-8: skip_top 0 / auto / 0.05, ``auto+dup0.99``, m = 5 and 20 |B+|),
  ``concept_openclipart_grid2.json`` (seeds 3-12: 0.02 / 0.05 / 0.1, ``auto+dup0.95``, ``auto+dup0.9``,
  ``auto+m5``), ``concept_openclipart_grid_T10.json`` / ``_T25.json`` (T = 10, 25 for every method):
  T does not matter; near-duplicate exclusion does not help; harder selection (m = 20 |B+|) loses on the symbol
  concepts, softer (m = 5 |B+|) helps them.
* ``concept_openclipart_m.json`` (all 53 concepts, seeds 0-5; "auto", 0, ``auto+m5``, ``0+m5``, ``auto+m3``),
  mean AP complete / 30 % untagged: auto 0.619 / 0.603, auto+m5 0.614 / 0.600, auto+m3 0.606 / 0.594,
  bagging 0.579 / 0.565; concepts > 1 point below bagging 6 / 7, 6 / 3, 2 / 1; significantly below
  (paired 95 %) 0 / 3, 0 / 0, 0 / 0. Noisy tags, seeds 0-2 (``concept_openclipart_noisy_m.json``): auto 0.594,
  auto+m5 0.593, bagging 0.554; > 1 point below bagging 7 and 3 concepts, none significantly.

Runs split by seed and concept (one process each, ``OMP_NUM_THREADS=1``) and merged with ``--merge``; a merge
records the parts' machines and commits (``part_machines``, ``part_commits``).

Writes ``benchmarks/results/concept_openclipart.json`` (``--name``) via ``write_results``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import markdown_table, write_results  # noqa: E402
from hardneg.concept import AsymmetricBagging, NegativeBootstrap, RandomSampling  # noqa: E402
from hardneg.eval import average_precision  # noqa: E402

ROOT = Path("/usr/share/openclipart/png")
NO_SUBJECT = {"unsorted"}


def cache_dir() -> Path:
    base = os.environ.get("HARDNEG_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "hardneg") / "nb-openclipart"


def build_store(min_images: int) -> Path:
    """Extract the store once (resumable): a symlink mirror of the chosen folders, then the CLI."""
    import subprocess

    src, store = cache_dir() / "src", cache_dir() / "store"
    if (store / "meta.json").exists():
        return store  # built (a partial store resumes with the extract command above)
    for d in sorted(p for p in ROOT.rglob("*") if p.is_dir()):
        own = sorted(f for f in d.iterdir() if f.suffix == ".png")
        if len(own) >= min_images:
            out = src / d.relative_to(ROOT)
            out.mkdir(parents=True, exist_ok=True)
            for f in own:
                if not (out / f.name).exists():
                    (out / f.name).symlink_to(f)
    subprocess.run([str(Path(sys.executable).parent / "hardneg"), "extract", "images", str(src), "-o", str(store),
                    "--features", "cnn", "--tags-from-folders"], check=True)
    return store


def load(store_path: Path):
    from hardneg.store import FeatureStore

    store = FeatureStore.open(store_path)
    X = np.asarray(store.to_numpy(), dtype=np.float32)
    ids = [str(i) for i in store.ids()]
    tags = [list(t or []) for t in store.items.column("tags").to_pylist()]
    return X, ids, tags


def categories(ids, min_images: int) -> list[str]:
    """Folders with >= min_images items of their own; concept = the folder's last component."""
    own = Counter(os.path.dirname(i) for i in ids)
    leaf = {}
    for folder, n in own.items():
        name = folder.rsplit("/", 1)[-1]
        if n >= min_images and folder and name not in NO_SUBJECT:
            leaf.setdefault(name, folder)
    return sorted(leaf)


def split(ids, test_fraction: float, seed: int) -> np.ndarray:
    """Boolean test mask, stratified by the item's own folder."""
    rng = np.random.default_rng(seed)
    folders = np.array([os.path.dirname(i) for i in ids])
    test = np.zeros(len(ids), dtype=bool)
    for f in np.unique(folders):
        rows = rng.permutation(np.flatnonzero(folders == f))
        test[rows[: int(round(test_fraction * rows.size))]] = True
    return test


def nb_variants(spec: str) -> dict:
    """``skip[+dupC][+mK]``: skip_top ('auto' or a fraction), near_duplicate=C, n_candidates = K |B+|."""
    out = {}
    for v in spec.split(","):
        v = v.strip()
        skip, *extras = v.split("+")
        kw = dict(skip_top=skip if skip == "auto" else float(skip), near_duplicate=None)
        for e in extras:
            if e.startswith("dup"):
                kw["near_duplicate"] = float(e[3:])
            elif e.startswith("m"):
                kw["m_factor"] = "cv" if e[1:] == "cv" else float(e[1:])
            else:
                raise SystemExit(f"--nb: unknown modifier {e!r} in {v!r}")
        out[f"nb[{v}]"] = kw
    return out


def run_concept(X, Xn, tags_full, train, test, concept, missing, seed, T, variants, dup_cos, n_pos_max=100,
                related=None, wrong=0.0):
    key = [seed, zlib.crc32(concept.encode()), int(round(missing * 100))] + ([int(round(wrong * 100))] if wrong else [])
    rng = np.random.default_rng(key)
    has = np.array([concept in t for t in tags_full])
    train_rows, test_rows = np.flatnonzero(train), np.flatnonzero(test)
    pos_train = np.flatnonzero(has & train)
    untagged = np.sort(rng.choice(pos_train, size=int(round(missing * pos_train.size)), replace=False))
    tags = [list(t) for t in tags_full]
    for r in untagged:
        tags[r] = [x for x in tags[r] if x != concept]
    # wrong tags: as many random train non-positives as wrong * |train positives| carry the concept's tag
    mislabelled = np.sort(rng.choice(np.flatnonzero(~has & train), size=int(round(wrong * pos_train.size)), replace=False))
    for r in mislabelled:
        tags[r] = tags[r] + [concept]
    tagged = np.union1d(np.setdiff1d(pos_train, untagged), mislabelled)
    B = np.sort(rng.choice(tagged, size=min(n_pos_max, tagged.size), replace=False))
    pool_tags = [tags[r] for r in train_rows]
    y_test = has[test_rows].astype(int)
    # near-duplicate of a positive: cosine to some train positive >= dup_cos
    if pos_train.size == 0 or y_test.sum() == 0:
        raise SystemExit(f"concept {concept!r}: no train or test positives in this store")
    near_dup = (Xn[train_rows] @ Xn[pos_train].T).max(axis=1) >= dup_cos
    is_pos_pool = has[train_rows]
    row = {"seed": seed, "concept": concept, "missing": missing, "wrong": wrong, "n_pos_train": int(pos_train.size),
           "prevalence": float(pos_train.size / train_rows.size), "n_untagged": int(untagged.size),
           "n_wrong": int(mislabelled.size), "n_bplus": int(B.size), "n_test_pos": int(y_test.sum())}
    models = {name: NegativeBootstrap(n_iter=T, random_state=seed, n_candidates=(
        None if "m_factor" not in kw else "cv" if kw["m_factor"] == "cv" else int(round(kw["m_factor"] * B.size))),
        **{k: v for k, v in kw.items() if k != "m_factor"}) for name, kw in variants.items()}
    models["bagging"] = AsymmetricBagging(n_iter=T, random_state=seed)
    models["random"] = RandomSampling(n_iter=T, random_state=seed)
    for name, est in models.items():
        t0 = time.perf_counter()
        est.fit(X[B], X[train_rows], exclude_tags=[concept], related_tags=related, pool_tags=pool_tags)
        if name == "bagging" and related:
            row["related"] = sorted(est.related_tags_)
        row[name] = float(average_precision(y_test, est.decision_function(X[test_rows])))
        row[f"{name}_s"] = time.perf_counter() - t0
        if name.startswith("nb"):
            sel = np.concatenate([np.asarray(it["rows"], dtype=np.int64) for it in est.iterations_[1:]] or [[]])
            sel = sel.astype(np.int64)
            row[f"{name}_sel_pos"] = float(is_pos_pool[sel].mean()) if sel.size else 0.0
            row[f"{name}_sel_dup"] = float(near_dup[sel].mean()) if sel.size else 0.0
            row[f"{name}_sel_dup_neg"] = float((near_dup & ~is_pos_pool)[sel].mean()) if sel.size else 0.0
            row[f"{name}_skipped"] = float(np.mean([it["n_skipped"] for it in est.iterations_[1:]] or [0]))
            row[f"{name}_near_dups"] = int(est.n_near_duplicates_)
            row[f"{name}_m"] = int(est.iterations_[-1]["n_candidates"]) if T > 1 else 0
    return row


RARE = 0.015  # a concept is rare when its positives are at most 1.5 % of the pool


def paired_vs_bagging(rows, concepts, methods):
    """Per concept and method: AP - bagging's AP over seeds (same split, B+ and pool), mean, std, 95 % t-interval."""
    from scipy.stats import t as student_t

    out = {}
    for c in concepts:
        cr = sorted((r for r in rows if r["concept"] == c), key=lambda r: r["seed"])
        out[c] = {}
        for m in methods:
            d = np.array([r[m] - r["bagging"] for r in cr])
            sd = float(d.std(ddof=1)) if d.size > 1 else float("nan")
            half = float(student_t.ppf(0.975, d.size - 1) * sd / np.sqrt(d.size)) if d.size > 1 else float("nan")
            out[c][m] = {"n": int(d.size), "mean": float(d.mean()), "std": sd,
                         "ci95": [float(d.mean() - half), float(d.mean() + half)]}
    return out


def summarize(rows, methods):
    out = []
    for missing, wrong in sorted({(r["missing"], r.get("wrong", 0.0)) for r in rows}):
        rs = [r for r in rows if r["missing"] == missing and r.get("wrong", 0.0) == wrong]
        concepts = sorted({r["concept"] for r in rs})
        per = {}
        for c in concepts:
            cr = [r for r in rs if r["concept"] == c]
            per[c] = {m: float(np.mean([r[m] for r in cr])) for m in methods}
            for k in cr[0]:
                if k.startswith("nb") and ("_sel_" in k or k.endswith("_skipped")) and all(k in r for r in cr):
                    per[c][k] = float(np.mean([r[k] for r in cr]))
            per[c]["n_pos_train"] = cr[0]["n_pos_train"]
            per[c]["prevalence"] = next((r["prevalence"] for r in cr if r.get("prevalence") is not None), None)
        mean = {m: float(np.mean([per[c][m] for c in concepts])) for m in methods}
        below = {m: [c for c in concepts if per[c][m] < per[c]["bagging"] - 0.01] for m in methods if m.startswith("nb")}
        rare = [c for c in concepts if per[c]["prevalence"] is not None and per[c]["prevalence"] <= RARE]
        mean_rare = {m: float(np.mean([per[c][m] for c in rare])) for m in methods} if rare else None
        out.append({"missing": missing, "wrong": wrong, "per_concept": per, "mean_ap": mean, "below_bagging_by_1pt": below,
                    "paired_vs_bagging": paired_vs_bagging(rs, concepts, [m for m in methods if m != "bagging"]),
                    "n_concepts": len(concepts), "seeds": sorted({r["seed"] for r in rs}),
                    "rare_concepts": rare, "mean_ap_rare": mean_rare})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--missing", type=float, nargs="+", default=[0.0, 0.3])
    ap.add_argument("--wrong", type=float, default=0.0,
                    help="noisy tags: also tag this share (of the concept's train positives) of random non-positives "
                         "with the concept (--missing 0.1 --wrong 0.1: 20 %% tag noise, half missing, half wrong)")
    ap.add_argument("--T", type=int, default=50)
    ap.add_argument("--min-images", type=int, default=40)
    ap.add_argument("--concepts", nargs="*", default=None, help="only these concepts (default: every category)")
    ap.add_argument("--nb", default="auto,0,auto+dup0.95",
                    help="comma-separated NB variants: skip_top ('auto' or a fraction), optionally '+dupC' for "
                         "near_duplicate=C and '+mK' for K |B+| candidates (default 10), '+mcv' for n_candidates='cv'")
    ap.add_argument("--dup-cos", type=float, default=0.95)
    ap.add_argument("--name", default="concept_openclipart")
    ap.add_argument("--related", default=None, choices=["auto"],
                    help="related_tags='auto' for every method: the paper's related-tag exclusion (WordNet "
                         "hyponyms + NGD over the train split's tags)")
    ap.add_argument("--merge", nargs="+", default=None,
                    help="result files of runs split by seed: summarize their rows together into --name")
    args = ap.parse_args()
    t_start = time.perf_counter()
    if args.merge:
        import json

        parts = [json.loads(Path(f).read_text()) for f in args.merge]
        rows = [r for p in parts for r in p["rows"]]
        methods = [m for m in parts[0]["methods"] if all(m in p["methods"] for p in parts)]
        concepts = sorted({r["concept"] for r in rows})
        # where the parts ran (a merge of runs made elsewhere records their machines and commits, not its own)
        machines = {json.dumps({k: p["machine"].get(k) for k in ("processor", "cpu_count", "versions")}, sort_keys=True)
                    for p in parts if "machine" in p}
        commits = sorted({f"{p.get('commit')}{'+dirty' if p.get('dirty') else ''}" for p in parts})
        report(args.name, {**{k: parts[0][k] for k in ("protocol", "n_items")}, "concepts": concepts,
                           "methods": methods, "merged_from": [Path(f).name for f in args.merge],
                           "part_machines": [json.loads(m) for m in sorted(machines)], "part_commits": commits,
                           "summary": summarize(rows, methods),
                           "rows": rows, "total_seconds": sum(p["total_seconds"] for p in parts)}, methods)
        return
    X, ids, tags = load(build_store(args.min_images))
    # only items of folders with >= min_images own items (a store may hold more)
    own = Counter(os.path.dirname(i) for i in ids)
    keep = np.array([own[os.path.dirname(i)] >= args.min_images for i in ids])
    X, ids, tags = X[keep], [i for i, k in zip(ids, keep) if k], [t for t, k in zip(tags, keep) if k]
    Xn = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    concepts = args.concepts or categories(ids, args.min_images)
    variants = nb_variants(args.nb)
    methods = [*variants, "bagging", "random"]
    print(f"{len(ids)} items, {len(concepts)} concepts: {', '.join(concepts)}", flush=True)
    rows = []
    for seed in args.seeds:
        test = split(ids, 0.3, seed)
        for missing in args.missing:
            for c in concepts:
                r = run_concept(X, Xn, tags, ~test, test, c, missing, seed, args.T, variants, args.dup_cos,
                                related=args.related, wrong=args.wrong)
                rows.append(r)
                print(seed, missing, c, {m: round(r[m], 3) for m in methods},
                      {k: round(v, 3) for k, v in r.items() if k.startswith("nb") and "_sel_" in k}, flush=True)
    summary = summarize(rows, methods)
    result = {
        "protocol": ("openclipart-png, folders with >= %d own images (not 'unsorted'), CNN features; 70/30 split "
                     "stratified by folder per seed; B+ <= 100 tagged train positives; pool = train split, concept "
                     "tag excluded; missing = share of the concept's train positives without its tag; wrong = "
                     "random non-positives given the tag, as a share of the train positives; AP on the "
                     "test split against full tags; T = %d; related_tags = %s" % (args.min_images, args.T, args.related)),
        "n_items": len(ids), "concepts": concepts, "methods": methods, "summary": summary, "rows": rows,
        "total_seconds": time.perf_counter() - t_start,
    }
    report(args.name, result, methods)


def report(name, result, methods):
    path = write_results(name, result)
    for s in result["summary"]:
        table = [{"concept": c, **{m: round(v[m], 3) for m in methods}, "n_pos": v["n_pos_train"]}
                 for c, v in s["per_concept"].items()]
        table.append({"concept": "MEAN", **{m: round(s["mean_ap"][m], 3) for m in methods}, "n_pos": ""})
        print(f"\nmissing = {s['missing']}, wrong = {s.get('wrong', 0.0)}")
        print(markdown_table(table, ["concept", *methods, "n_pos"]))
        print("below bagging - 1 pt:", {m: len(v) for m, v in s["below_bagging_by_1pt"].items()}, s["below_bagging_by_1pt"])
        for c, per in s.get("paired_vs_bagging", {}).items():
            worse = {m: v for m, v in per.items() if m.startswith("nb") and v["mean"] < -0.01}
            if worse:
                print(f"  {c}: " + "; ".join(f"{m} - bagging {v['mean']:+.3f} (sd {v['std']:.3f}, 95 % "
                                             f"[{v['ci95'][0]:+.3f}, {v['ci95'][1]:+.3f}], n {v['n']})"
                                             for m, v in worse.items()))
    print(f"total {result['total_seconds']:.0f} s -> {path}")


if __name__ == "__main__":
    main()
