"""Why S-ADA (w1 = 0) and OASIS-diag trade places between 1K and 10K words in the per-concept protocol
([Gao17] Section 5.3, benchmarks/similarity_solis_concept.py; issue 28). A diagnostic, not a result table.

Only words of the ANCHOR images can ever be updated: the triplet subgradient is ``g = -x ⊙ (x⁺ - x⁻)``
with the anchor ``x`` (one of the 7 positives), for S-ADA ([Gao17] Eq. (21)) and for OASIS-diag's PA
step alike. So with w1 = 0 every word outside the 7 positives' words (V+) has weight 0, whatever λ and
η; OASIS-diag starts at the identity and keeps weight 1 there: outside V+ it IS the TF-IDF cosine.
This script measures, per concept on the VALIDATION draws (seeds and queries of the held-out selection,
never the test draws):

* ``|V+|``, the words of the 7 positives, and the share of a query's (l2-normalized) TF-IDF mass on V+,
  for the queries and for the database images of the concept and of the others;
* S-ADA w1 = 0 and OASIS-diag at the given parameters (default: the values the held-out selection
  chose, read from ``similarity_solis_concept_heldout_<data>_<words>.json``): mAP, violated triplets,
  words with a non-zero (S-ADA) or a changed (OASIS-diag) weight, and whether all lie in V+;
* the same OASIS-diag weights with every word outside V+ set to 0 (what w1 = 0 forces on S-ADA), and
  TF-IDF restricted to V+ the same way: if OASIS-diag's lead comes from its identity start on the unseen
  words, it should vanish there;
* S-ADA w1 = 0 with λ = 0 (no l1: the averaged-gradient weighting alone, [Gao17] Eq. (22) without the
  threshold) and TF-IDF restricted to S-ADA's non-zero words (its word choice with the cosine's weights):
  which of the two, S-ADA's weights or its word choice, costs the mAP; how many of the λ = 0 weights are
  positive (words that co-occur in an anchor and its positives more than with the negatives: the only
  words that can raise a same-concept image's score) and negative, and its mAP with the negative weights
  set to 0;
* S-ADA w1 = 0 trained on the same 21,000 triplets for ``--passes`` passes (the protocol is one pass: a
  diagnostic of whether the solver is under-trained, not a protocol change);
* with ``--w1-one-grid``: S-ADA with w1 = 1 (the identity start OASIS-diag has; the l1 threshold
  ``η t λ / δ`` still zeroes every word outside V+ once ``ηλ >= δ / t``) over the λ x η grid of the held-out
  selection, validation mAP only: whether the identity start, not the solver, is what the 10K words need.

Usage: nice .venv/bin/python benchmarks/similarity_solis_concept_why.py --data mnist --words 10000 1000
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import RESULTS, markdown_table, write_results  # noqa: E402
from benchmarks.similarity_solis import bag_of_words  # noqa: E402
from benchmarks.similarity_solis_concept import (  # noqa: E402
    ETA_PATH, LAM_PATH, VAL_SEED, concept_map, concept_split, fashion_bag_of_words, query_halves)
from hardneg.similarity import OasisDiagonal, SolisADA, TfidfCosine  # noqa: E402


def fixed_weights(w: np.ndarray) -> TfidfCosine:
    """A diagonal similarity with the given weights (the rows are TF-IDF, l2-normalized: w = 1 is the cosine)."""
    model = TfidfCosine()
    model._w = np.asarray(w, np.float64)
    return model


def mass_on(X, rows, words_mask) -> float:
    """Mean share of the rows' squared l2 norm (1: the rows are normalized) on the masked words."""
    Z = X[rows]
    sq = Z.multiply(Z)
    return float(np.mean(np.asarray(sq[:, words_mask].sum(axis=1)).ravel() / np.asarray(sq.sum(axis=1)).ravel()))


def selected_values(data: str, n_words: int, tree: bool) -> dict:
    name = f"similarity_solis_concept_heldout_{data}_{n_words // 1000}k{'_tree' if tree else ''}"
    path = RESULTS / f"{name}.json"
    if not path.is_file():
        return {}
    sel = json.loads(path.read_text()).get("selected", {}).get(str(n_words), {})
    out = {"source": name}
    if "OASIS-diag" in sel:
        out["C"] = sel["OASIS-diag"]["C"] if isinstance(sel["OASIS-diag"], dict) else sel["OASIS-diag"]
    ada = sel.get("S-ADA|0.0|triplets")
    if ada is not None:
        out.update({"lam": ada["lam"], "eta": ada.get("eta", 0.1)} if isinstance(ada, dict) else {"lam": ada, "eta": 0.1})
    return out


def study(X, y, n_words: int, lam: float, eta: float, C: float, val_draws: int, n_queries: int, passes: int) -> list[dict]:
    val = query_halves(y)
    rows = []
    for v in range(val_draws):
        rng = np.random.default_rng(VAL_SEED + v)  # the held-out selection's validation draws
        for c in np.unique(y):
            t, train, db, queries = concept_split(y, c, rng, 7, 500, n_queries, val)
            anchors = np.unique(t[:, 0])
            vplus = np.zeros(n_words, bool)
            vplus[X[anchors].indices] = True
            ada = SolisADA(lam=lam, eta=eta, w_init=0.0).fit(X, triplets=t)
            diag = OasisDiagonal(C=C).fit(X, triplets=t)
            w_ada, w_diag = ada.w_, diag.w_
            dense = SolisADA(lam=0.0, eta=eta, w_init=0.0).fit(X, triplets=t)
            multi = SolisADA(lam=lam, eta=eta, w_init=0.0).fit(X, triplets=np.concatenate([t] * passes)) if passes > 1 else None
            ones = np.ones(n_words)
            r: dict[str, Any] = {
                "draw": v, "concept": int(c), "|V+|": int(vplus.sum()),
                "query mass on V+ %": 100 * mass_on(X, queries, vplus),
                "db same-concept mass on V+ %": 100 * mass_on(X, db[y[db] == c], vplus),
                "db other mass on V+ %": 100 * mass_on(X, db[y[db] != c], vplus),
                "S-ADA mAP": 100 * concept_map(ada, X, y, c, db, queries),
                "S-ADA violated": int(ada.n_updates_), "S-ADA non-zero words": int(np.count_nonzero(w_ada)),
                "S-ADA non-zero outside V+": int(np.count_nonzero(w_ada[~vplus])),
                "OASIS-diag mAP": 100 * concept_map(diag, X, y, c, db, queries),
                "OASIS-diag violated": int(diag.n_updates_), "OASIS-diag changed words": int(np.count_nonzero(w_diag != 1.0)),
                "OASIS-diag changed outside V+": int(np.count_nonzero(w_diag[~vplus] != 1.0)),
                "OASIS-diag on V+ only mAP": 100 * concept_map(fixed_weights(np.where(vplus, w_diag, 0.0)), X, y, c, db, queries),
                "TF-IDF mAP": 100 * concept_map(fixed_weights(ones), X, y, c, db, queries),
                "TF-IDF on V+ only mAP": 100 * concept_map(fixed_weights(vplus.astype(float)), X, y, c, db, queries),
                "S-ADA λ=0 mAP": 100 * concept_map(dense, X, y, c, db, queries),
                "S-ADA λ=0 positive words": int(np.count_nonzero(dense.w_ > 0)),
                "S-ADA λ=0 negative words": int(np.count_nonzero(dense.w_ < 0)),
                "S-ADA λ=0, negative weights set to 0 mAP": 100 * concept_map(fixed_weights(np.maximum(dense.w_, 0.0)), X, y, c, db, queries),
                "TF-IDF on S-ADA's words mAP": 100 * concept_map(fixed_weights((w_ada != 0).astype(float)), X, y, c, db, queries),
            }
            if multi is not None:
                r[f"S-ADA {passes} passes mAP"] = 100 * concept_map(multi, X, y, c, db, queries)
            rows.append(r)
    return rows


def w1_one_grid(X, y, lams, etas, val_draws: int, n_queries: int) -> list[dict]:
    """Mean validation mAP and sparsity of S-ADA with w1 = 1 at every (λ, η) (a diagnostic: not selected from)."""
    val = query_halves(y)
    acc: dict[tuple, dict] = {}
    for v in range(val_draws):
        rng = np.random.default_rng(VAL_SEED + v)
        for c in np.unique(y):
            t, _, db, queries = concept_split(y, c, rng, 7, 500, n_queries, val)
            for lam in lams:
                for eta in etas:
                    m = SolisADA(lam=lam, eta=eta, w_init=1.0).fit(X, triplets=t)
                    a = acc.setdefault((lam, eta), {"map": [], "sparsity": []})
                    a["map"].append(100 * concept_map(m, X, y, c, db, queries))
                    a["sparsity"].append(100 * m.sparsity_)
    return [{"λ": lam, "η": eta, "val mAP %": round(float(np.mean(a["map"])), 2), "sparsity %": round(float(np.mean(a["sparsity"])), 1)}
            for (lam, eta), a in acc.items()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=["mnist", "fashion"], default="mnist")
    ap.add_argument("--words", type=int, nargs="+", default=[10000, 1000])
    ap.add_argument("--tree", action="store_true")
    ap.add_argument("--val-draws", type=int, default=1)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--lam", type=float, default=None, help="S-ADA's λ (default: the held-out selection's)")
    ap.add_argument("--eta", type=float, default=None, help="S-ADA's η (default: the held-out selection's)")
    ap.add_argument("--C", type=float, default=None, help="OASIS-diag's C (default: the held-out selection's)")
    ap.add_argument("--w1-one-grid", action="store_true", help="also S-ADA w1 = 1 over the λ x η grid (validation mAP)")
    ap.add_argument("--name", default=None)
    args = ap.parse_args(argv)
    out, summary = {}, []
    for n_words in args.words:
        X, y, _ = bag_of_words(n_words, False, tree=args.tree) if args.data == "mnist" else fashion_bag_of_words(n_words, False, tree=args.tree)
        sel = selected_values(args.data, n_words, args.tree)
        lam = args.lam if args.lam is not None else sel.get("lam", 1e-4)
        eta = args.eta if args.eta is not None else sel.get("eta", 0.1)
        C = args.C if args.C is not None else sel.get("C", 0.1)
        rows = study(X, y, n_words, lam, eta, C, args.val_draws, args.queries, args.passes)
        mean = {k: round(float(np.mean([r[k] for r in rows])), 2) for k in rows[0] if k not in ("draw", "concept")}
        summary.append({"words": n_words, "S-ADA": f"λ={lam:g}, η={eta:g}", "OASIS-diag": f"C={C:g}", **mean})
        out[str(n_words)] = {"parameters": {"lam": lam, "eta": eta, "C": C, "from": sel.get("source", "defaults / command line")},
                             "per_concept": rows, "mean": mean}
        print(markdown_table(summary[-1:], list(summary[-1])), flush=True)
        if args.w1_one_grid:
            g = w1_one_grid(X, y, LAM_PATH, ETA_PATH, args.val_draws, args.queries)
            out[str(n_words)]["s_ada_w1_1_grid"] = g
            print(markdown_table(g, list(g[0])), flush=True)
    write_results(args.name or f"similarity_solis_concept_why_{args.data}{'_tree' if args.tree else ''}", {
        "what": "per-concept diagnostics on the held-out selection's validation draws (not the test draws): V+ = words of the "
                "7 positives (the only words any triplet's subgradient touches); S-ADA w1 = 0 and OASIS-diag at the given "
                "parameters; OASIS-diag and TF-IDF with every word outside V+ set to 0; S-ADA over several passes (diagnostic)",
        "data": args.data, "val_draws": args.val_draws, "queries": args.queries, "passes": args.passes,
        "summary": summary, "table": markdown_table(summary, list(summary[0])), "by_words": out})


if __name__ == "__main__":
    main()
