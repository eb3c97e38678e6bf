"""Search by description on real clip art: a text query ranks images of classes never trained on (issue 26).

Data: the Debian package ``openclipart-png``; every category folder with at least
``--min-images`` (40) PNGs of its own is a class (``unsorted`` left out), at most
``--per-class`` (40) images each, with the cached EfficientNet-Lite0 features (1280-d) of
``benchmarks/zeroshot_openclipart.py`` (``~/.cache/hardneg/zsl-openclipart/``).
Descriptions: the gloss of the first WordNet noun sense of each category's leaf name
(:func:`hardneg.zeroshot._descriptions.wordnet_gloss`), embedded by all-MiniLM-L6-v2 (384-d).

Protocol: ``--splits`` (5) random 60/40 seen/unseen class splits. A model is trained on all
images of the seen classes with the seen classes' gloss embeddings
(:func:`hardneg.zeroshot.fit_text_search`). For every unseen category, the query is its
gloss text, embedded as a free-text query (:func:`hardneg.zeroshot.text_search`); the
ranking's average precision for that category is measured over (a) all images of the
unseen classes and (b) the whole collection (seen classes' images too, on which the model
was trained). Methods on the same split and queries: the zero-shot model of [Bucher16]
(``ZeroShotClassifier``, the library's default for text search: uncertainty sampler
[Bucher16] Eq. (8), 2 negatives, 10 epochs), ESZSL (closed form), and a random ranking
(mean AP of ``--random-draws`` seeded permutations: the prevalence). Figures: mean over the
unseen categories of a split, then mean ± std over splits; also each method minus random,
split by split.

    taskset -c 1 env OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/concept_text_search.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import markdown_table, write_results  # noqa: E402
from benchmarks.zeroshot_openclipart import NO_SUBJECT, cnn_features, openclipart_classes  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-images", type=int, default=40)
    ap.add_argument("--per-class", type=int, default=40)
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--random-draws", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--name", default="concept_text_search")
    args = ap.parse_args()

    from hardneg.concept._related import load_wordnet
    from hardneg.eval import average_precision
    from hardneg.zeroshot import ESZSL, ZeroShotClassifier, fit_text_search, text_search
    from hardneg.zeroshot._descriptions import embed_texts, wordnet_gloss

    t0 = time.perf_counter()
    classes = openclipart_classes(args.min_images, args.per_class)
    X, y, _ = cnn_features(classes, args.threads)  # cached by this exact file list
    all_names = list(classes)
    names = [c for c in all_names if c.split("/")[-1] not in NO_SUBJECT]
    keep = np.isin(np.asarray(all_names)[y], names)
    X, y = X[keep], np.searchsorted(names, np.asarray(all_names)[y[keep]])
    wn = load_wordnet()
    glosses = [wordnet_gloss(c, wn) for c in names]
    described = np.array([g is not None for g in glosses])
    if not described.all():
        print("no WordNet gloss (left out):", [c for c, d in zip(names, described) if not d])
    names = [c for c, d in zip(names, described) if d]
    glosses = [g for g in glosses if g is not None]
    X, y = X[described[y]], np.searchsorted(np.flatnonzero(described), y[described[y]])
    D = embed_texts(glosses)  # the class descriptions; the same texts are the queries of the unseen classes
    n_classes = len(names)
    print(f"{X.shape[0]} images, {n_classes} classes, features {X.shape[1]}-d; loaded in {time.perf_counter() - t0:.0f}s")

    methods = {
        "zero-shot [Bucher16]": lambda s: ZeroShotClassifier(sampler="uncertainty", n_negatives=2, n_epochs=args.epochs,
                                                             random_state=s),
        "ESZSL": lambda s: ESZSL(),
    }
    per_split = {m: {"unseen": [], "all": []} for m in [*methods, "random"]}
    per_class: dict[str, dict[str, list]] = {m: {} for m in per_split}
    seconds = {m: [] for m in methods}
    for s in range(args.splits):
        rng = np.random.default_rng(1000 + s)
        perm = rng.permutation(n_classes)
        n_seen = int(round(0.6 * n_classes))
        seen, unseen = np.sort(perm[:n_seen]), np.sort(perm[n_seen:])
        train = np.isin(y, seen)
        unseen_rows = np.flatnonzero(~train)
        table = {names[c]: D[c] for c in seen}
        for m, make in methods.items():
            t = time.perf_counter()
            model = fit_text_search(X[train], [[names[c]] for c in y[train]], descriptions=table, estimator=make(s),
                                    max_per_class=None)
            fit_s = time.perf_counter() - t
            aps_u, aps_a = [], []
            for c in unseen:
                res = text_search(model, X, glosses[c], k=X.shape[0])  # the query text, embedded like any user's
                scores = np.empty(X.shape[0])
                scores[res.rows] = res.scores
                aps_u.append(average_precision(y[unseen_rows] == c, scores[unseen_rows]))
                aps_a.append(average_precision(y == c, scores))
                per_class[m].setdefault(names[c], []).append(aps_u[-1])
            per_split[m]["unseen"].append(float(np.mean(aps_u)))
            per_split[m]["all"].append(float(np.mean(aps_a)))
            seconds[m].append(time.perf_counter() - t)
            print(f"split {s}: {m}: AP unseen {per_split[m]['unseen'][-1]:.3f}, all {per_split[m]['all'][-1]:.3f} "
                  f"(fit {fit_s:.1f}s, {time.perf_counter() - t:.1f}s with the {unseen.size} queries)", flush=True)
        rr = np.random.default_rng(s)
        aps_u, aps_a = [], []
        for c in unseen:
            draws_u = [average_precision(y[unseen_rows] == c, rr.random(unseen_rows.size)) for _ in range(args.random_draws)]
            draws_a = [average_precision(y == c, rr.random(y.size)) for _ in range(args.random_draws)]
            aps_u.append(float(np.mean(draws_u)))
            aps_a.append(float(np.mean(draws_a)))
            per_class["random"].setdefault(names[c], []).append(aps_u[-1])
        per_split["random"]["unseen"].append(float(np.mean(aps_u)))
        per_split["random"]["all"].append(float(np.mean(aps_a)))
        print(f"split {s}: random: AP unseen {per_split['random']['unseen'][-1]:.3f}, all {per_split['random']['all'][-1]:.3f}")

    summary = {}
    for m, v in per_split.items():
        summary[m] = {}
        for where in ("unseen", "all"):
            a = np.asarray(v[where])
            b = np.asarray(per_split["random"][where])
            summary[m][where] = {"mean": float(a.mean()), "std": float(a.std()), "splits": a.tolist(),
                                 "minus_random_mean": float((a - b).mean()), "minus_random_std": float((a - b).std())}
    cols = ["method", "mAP over unseen-class images", "mAP over the whole collection", "unseen minus random (paired)"]
    rows = [dict(zip(cols, [m, f"{summary[m]['unseen']['mean']:.3f} ± {summary[m]['unseen']['std']:.3f}",
                            f"{summary[m]['all']['mean']:.3f} ± {summary[m]['all']['std']:.3f}",
                            f"{summary[m]['unseen']['minus_random_mean']:+.3f} ± {summary[m]['unseen']['minus_random_std']:.3f}"]))
            for m in summary]
    table_md = markdown_table(rows, cols)
    print(table_md)
    best = {m: sorted(((float(np.mean(v)), c) for c, v in per_class[m].items()), reverse=True) for m in methods}
    path = write_results(args.name, {
        "protocol": {"min_images": args.min_images, "per_class": args.per_class, "splits": args.splits,
                     "seen_fraction": 0.6, "n_classes": n_classes, "n_images": int(X.shape[0]),
                     "features": "EfficientNet-Lite0 1280-d (cached, benchmarks/zeroshot_openclipart.py)",
                     "descriptions": "WordNet gloss of the leaf name, all-MiniLM-L6-v2 384-d",
                     "query": "the unseen category's gloss text, embedded as free text",
                     "epochs": args.epochs, "random_draws": args.random_draws},
        "summary": summary,
        "seconds_per_split": {m: float(np.mean(v)) for m, v in seconds.items()},
        "per_class_ap_unseen": {m: {c: float(np.mean(v)) for c, v in d.items()} for m, d in per_class.items()},
        "best_queries": {m: [{"class": c, "ap": a, "gloss": glosses[names.index(c)]} for a, c in b[:5]] for m, b in best.items()},
        "worst_queries": {m: [{"class": c, "ap": a, "gloss": glosses[names.index(c)]} for a, c in b[-5:]] for m, b in best.items()},
        "table": table_md,
        "seconds_total": time.perf_counter() - t0,
    })
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
