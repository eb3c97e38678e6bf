"""A lead for search by description on a store with no tags: the query mapped onto ImageNet's classes.

Issue 38: on a store with no tags ConSE ([Norouzi14] Eq. (2)-(3)) stays below 3x random
(``text_search.json``). This study scores the other way round, with no training either: the
query ``q`` becomes a distribution over the 1,000 ImageNet classes, ``w = softmax(cos(s(y), q) / τ)``
(``s(y)`` the MiniLM embeddings ConSE uses), and an image scores ``Σ_y p(y | x) w_y``, its
probability of the classes the query names ("rev"); ``conse+rev`` is the sum of the two scores'
z-scores. Queries, categories and the validation categories are those of
``benchmarks/results/text_search.json`` (run that first); ``val``: the mean over its splits of the
validation categories (seen categories held out for choosing), ``all``: every category, as its
``notags`` figures. Not in the library: a measured lead, not a default.

    taskset -c 1 env OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/zeroshot_conse_query_classes.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import RESULTS, write_results  # noqa: E402
from benchmarks.concept_openclipart import cache_dir, load  # noqa: E402

TAUS = (0.05, 0.1, 0.2)


def zscore(s):
    return (s - s.mean()) / max(float(s.std()), 1e-12)


def main():
    from hardneg.eval import average_precision
    from hardneg.zeroshot import ConSE
    from hardneg.zeroshot._descriptions import embed_texts

    X, ids, tags = load(cache_dir() / "store")
    source = json.loads((RESULTS / "text_search.json").read_text())
    cats, vals = list(source["queries"]), source["validation_categories"]
    Q = {kind: embed_texts([source["queries"][c][kind] for c in cats]) for kind in ("name", "title")}
    conse = ConSE().fit()
    P, S = conse.predict_proba(X), conse.class_embeddings_
    F = conse.transform(X)
    F /= np.maximum(np.linalg.norm(F, axis=1, keepdims=True), 1e-12)
    ap = {}
    for i, c in enumerate(cats):
        rel = np.array([c in ts for ts in tags], dtype=int)
        for kind in ("name", "title"):
            q = Q[kind][i]
            sc = {"conse": F @ q, "random": None}
            for tau in TAUS:
                w = np.exp((S @ q) / tau)
                sc[f"rev_tau{tau}"] = P @ (w / w.sum())
                sc[f"conse+rev_tau{tau}"] = zscore(sc["conse"]) + zscore(sc[f"rev_tau{tau}"])
            for m, s in sc.items():
                ap[(c, kind, m)] = float(rel.mean()) if s is None else float(average_precision(rel, s))
    methods = sorted({k[2] for k in ap})
    summary = {}
    for part, sets in (("val", [set(v) for v in vals]), ("all", [set(cats)])):
        summary[part] = {kind: {m: float(np.mean([np.mean([ap[(c, kind, m)] for c in s]) for s in sets])) for m in methods}
                         for kind in ("name", "title")}
    val_score = {m: (summary["val"]["name"][m] + summary["val"]["title"][m]) / 2 for m in methods if m != "random"}
    best = max(val_score, key=val_score.get)
    for part in summary:
        for kind in ("name", "title"):
            r = summary[part][kind]["random"]
            print(part, kind, {m: f"{v:.4f} ({v / r:.2f}x)" for m, v in summary[part][kind].items()})
    print("validation choice:", best)
    print(f"wrote {write_results('zeroshot_conse_query_classes', {'summary': summary, 'validation_score': val_score, 'validated_choice': best, 'taus': TAUS, 'source': 'text_search.json'})}")


if __name__ == "__main__":
    main()
