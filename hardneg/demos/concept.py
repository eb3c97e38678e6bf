"""Concept-search demo: Negative Bootstrap vs its baselines on sklearn digits.

Each digit class in turn is the concept; its positives are 20 training
images, the pool is the rest of the training split with user-like tags (the
class name, but a fraction of items carry a wrong or no tag), and ranking
the test split is scored by AP and P@20. The featured concept gets an HTML
report: top results as an image grid, the mAP-vs-iteration curve (the
paper's Fig. 2) and the tags of the negatives bootstrap chose (Fig. 7).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["noisy_tags", "run_concept_demo"]


def noisy_tags(labels, class_names, noise: float, rng) -> list[list[str]]:
    """Labels as tags; a fraction ``noise`` gets a wrong tag (half) or none (half)."""
    tags = []
    n_cls = len(class_names)
    for lab in labels:
        u = rng.random()
        if u < noise / 2:
            tags.append([class_names[(int(lab) + int(rng.integers(1, n_cls))) % n_cls]])
        elif u < noise:
            tags.append([])
        else:
            tags.append([class_names[int(lab)]])
    return tags


def _methods(n_iter: int, seed: int):
    from hardneg.concept import AsymmetricBagging, NegativeBootstrap, PooledClassifier, PositiveSampling, RandomSampling

    return {
        "negative bootstrap": NegativeBootstrap(n_iter=n_iter, random_state=seed),
        "asymmetric bagging": AsymmetricBagging(n_iter=n_iter, random_state=seed),
        "random sampling": RandomSampling(n_iter=n_iter, random_state=seed),
        "sampling positives": PositiveSampling(n_iter=n_iter, random_state=seed),
        "pooled (class-weighted)": PooledClassifier(random_state=seed),
    }


def run_concept_demo(out_dir, *, concept: int = 3, n_positives: int = 20, n_iter: int = 10, tag_noise: float = 0.2,
                     seed: int = 0, progress=None, extra_tables=None) -> dict:
    """Train concepts on digits, compare with the baselines, write ``concept_report.html``.

    ``extra_tables`` (list of dicts with ``title``, ``header``, ``rows``) are
    added to the report as a section each: :func:`hardneg.demos.digits.run_demo` puts
    the query-by-example results it prints (TSVM hashing, Euclidean kNN) there.
    Returns a JSON-serializable summary (also written to ``concept_summary.json``).
    """
    from hardneg.datasets import load_digits
    from hardneg.eval import average_precision, precision_at_k
    from hardneg.report import HTMLReport, svg_line_chart

    from ..concept import search

    t_start = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ds = load_digits()
    X, y, names, images = ds.X, ds.y, ds.class_names, ds.images
    if names is None or images is None:
        raise ValueError("load_digits() gave no class names or images")
    train, test = np.flatnonzero(ds.split == "train"), np.flatnonzero(ds.split == "test")
    rng = np.random.default_rng(seed)
    tags = noisy_tags(y, names, tag_noise, rng)  # only pool (train) tags are ever read
    ap: dict[str, list[float]] = {m: [] for m in _methods(n_iter, seed)}
    p20: dict[str, list[float]] = {m: [] for m in ap}
    featured = {}
    for c in range(len(names)):
        pos = rng.choice(train[y[train] == c], size=n_positives, replace=False)
        pool_rows = np.setdiff1d(train, pos)
        relevant = y[test] == c
        for name, est in _methods(n_iter, seed).items():
            est.fit(X[pos], X, exclude_tags=names[c], pool_tags=tags, pool_rows=pool_rows)
            if c == concept:
                curve = [average_precision(relevant, s) for s in est.staged_decision_function(X[test])]
                featured[name] = (est, curve)
            scores = est.decision_function(X[test])
            ap[name].append(average_precision(relevant, scores))
            p20[name].append(precision_at_k(relevant[np.argsort(-scores, kind="stable")], 20))
        if progress is not None:
            progress(1)

    nb = featured["negative bootstrap"][0]
    exact_scores = nb.decision_function(X[test])
    model = nb.compress()
    comp_scores = model.decision_function(X[test])
    rel_c = y[test] == concept
    hits = search(model, X, k=20, rows=test)
    summary: dict[str, Any] = {
        "dataset": "sklearn digits (8x8, 64-d grey levels)",
        "protocol": f"each class as concept; {n_positives} positives from train; pool = rest of train, "
                    f"tags = labels with {tag_noise:.0%} wrong/missing; AP and P@20 on the test split; T = {n_iter}",
        "mAP": {m: float(np.mean(v)) for m, v in ap.items()},
        "P@20": {m: float(np.mean(v)) for m, v in p20.items()},
        "featured_concept": names[concept],
        "compression": {
            "AP_exact": float(average_precision(rel_c, exact_scores)),
            "AP_compressed": float(average_precision(rel_c, comp_scores)),
            "max_abs_error": float(np.abs(exact_scores - comp_scores).max()),
            "error_bound": float(model.table.error_bound),
            "n_bins": int(model.table.n_bins),
        },
        "top20_precision": float(np.mean(y[hits.rows] == concept)),
        "seconds": None,
    }

    label = f"Concept 'digit {names[concept]}' (sklearn digits)"
    report = HTMLReport(f"Concept search demo: {label} from {n_positives} positives")
    report.paragraph(summary["protocol"])
    report.heading(f"Mean over all {len(names)} concepts (sklearn digits, T = {n_iter} bootstrap iterations)")
    report.table(["method", "mAP", "P@20"], [[m, summary["mAP"][m], summary["P@20"][m]] for m in ap])
    report.heading(f"{label}: top 20 test images (compressed model; green = correct)")
    report.image_grid([images[r] for r in hits.rows], captions=[f"{s:.2f}" for s in hits.scores],
                      relevant=(y[hits.rows] == concept).tolist())
    title = f"{label}: AP against the bootstrap iteration t"
    report.heading(title)
    report.figure(
        svg_line_chart({m: list(enumerate(c, start=1)) for m, (_, c) in featured.items()},
                       x_label="bootstrap iteration t", y_label="AP on the test split", title=title, integer_x=True),
        f"{label}, {n_positives} positives, pool tags {tag_noise:.0%} wrong or missing: AP on the test split of the "
        f"model after t of T = {n_iter} iterations, per method (as in the paper's Fig. 2). A method without "
        f"iterations is one model, drawn as a dashed level line.")
    report.heading(f"{label}: tags of the negatives bootstrap selected, per iteration (as in the paper's Fig. 7)")
    report.table(["iteration", "most frequent tags (count)"],
                 [[i + 1, ", ".join(f"{t} ({n})" for t, n in it[:5]) or "(untagged)"]
                  for i, it in enumerate(nb.negative_tag_counts())])
    report.heading(f"{label}: Model Compression of the negative bootstrap model")
    comp = summary["compression"]
    report.table(["AP exact", "AP compressed", f"max |error| (q={comp['n_bins']})", "error bound"],
                 [[comp["AP_exact"], comp["AP_compressed"], comp["max_abs_error"], comp["error_bound"]]])
    for t in extra_tables or ():
        report.heading(t["title"])
        report.table(t["header"], t["rows"])
    path = report.write(out / "concept_report.html")
    summary["report"] = str(path)
    summary["seconds"] = round(time.perf_counter() - t_start, 2)
    (out / "concept_summary.json").write_text(json.dumps(summary, indent=1))
    logger.info("concept demo written to %s", path)
    return summary
