"""Search by description on real clip art: ConSE (no training) vs learned models vs both (issue 38).

Data: the openclipart store of ``benchmarks/concept_openclipart.py`` (Debian ``openclipart-png``,
6,702 items, EfficientNet-Lite0 pooled features, tagged with every folder level;
``~/.cache/hardneg/nb-openclipart/store``). Categories: the folders with >= 40 images of their
own (``categories``); an item is relevant to a category when it carries the category's tag
(a parent folder includes its sub-folders).

Protocol, per split (``--splits``, 3 seeds): ``--unseen`` (40 %) of the categories are held out:
their tags are removed from every item before a learned model is trained, so they are classes it
never saw. Each held-out category is queried twice: by its name (``"hot air balloons"``) and by
the title of one of its items (the ``<dc:title>`` of the item's SVG source in Debian
``openclipart-svg``; the file name stem when that package is missing, recorded in the results).
Every query ranks the whole collection; AP against the category's tag (for a title query, the
item whose title it is is left out of the ranking scored: finding the item a title was copied
from is no search by description); mean over the held-out categories of a split, then mean and
sd over splits. Random: the prevalence (expected AP of a random ranking).

The text index (what ``hardneg concept search auto`` ranks), by default: per split, two stores
are written and every method of ``INDEX_METHODS`` (and ``auto``) is built on them with
:func:`hardneg.zeroshot._text_index.build_text_index`: ``tags`` (every item keeps its folder tags
less the held-out ones) and ``captions`` (an item of a held-out category has no tag at all; every
other item its folder tags plus its SVG title and ``<dc:subject>`` keywords, its caption). Test:
the held-out categories queried. Validation: a fifth (``--val``) of the seen categories held out
as well and queried instead; the ranking of best mean validation AP over both stores and both query
kinds is the validated choice (``auto`` must be it): among those with the file names for a store
whose names carry words (``auto``), among the ``/no-names`` ones for a store whose names carry
none (``auto/no-names``). ConSE's variants are compared on the same validation categories of the
no-tags store. The unseen categories are never used to choose.

With ``--learned``, the array-level comparison below as well (ESZSL's raw score, [Bucher16]):

- ``conse``: [Norouzi14] Eq. (2)-(3), T = 10, class text "lemmas: definition" (the library default);
  ``conse_lemma`` (class text: lemmas only, the paper's label-name embedding), ``conse_T1`` / ``conse_T5``.
- ``eszsl``: ESZSL trained on the seen tags (WordNet gloss descriptions), cosine of ``Vᵀx`` with the
  query (what the text index does); ``eszsl_raw``: its own score ``xᵀ V q``.
- ``bucher16``: the library's [Bucher16] model with the defaults of ``fit_text_search``.
- ``conse+eszsl``: sum of the two cosines (the text index's combination);
  ``conse+bucher16``: sum of the z-scored scores over the collection.
- No tags at all (``notags``): ConSE alone on every category (nothing held out; a learned model has
  nothing to train on), as arrays (the variants above) and through the text index of a store with
  no tags, what the CLI ranks: ``index_paper`` ([Norouzi14] Eq. (2)-(3), ``extras=False``),
  ``index_prior`` (the class prior and the query offset), ``index_default`` (and the
  pseudo-relevance feedback: the library's default).

Every text-index method is scored with the pseudo-relevance feedback (the default) and without it
(``METHOD/no-feedback``, the same index), and without the file-name captions (``METHOD/no-names``:
the stores' item ids are the images' relative paths, so each item's file-name stem is its name;
never its folders, which are the tags); the validation compares all of them. On the no-tags store
``index_no_names`` is the default less the file names (the previous default).

Timing (``timing``; ``--only-timing`` writes it alone to ``NAME_timing.json``): :func:`hardneg.zeroshot.open_text_index` on a store of ``--timing-items``
(10,000: the openclipart vectors repeated) with an empty cache: the first query (builds the index)
vs the second (reads it), in process, each including the query's embedding; reported as a ratio.
Then ``hardneg concept search auto STORE --text ...`` three times in fresh processes (``cli``): the
first builds the ``auto`` index, the next read it (wall time of the whole command, start-up included,
and its CPU time, user + system, which a shared machine does not inflate); then the same on a copy
of that store whose item ids are the clip-art files' paths (``cli_named``: ``auto`` uses the file names),
and the ``conse`` index of that store built in process with and without the file names (``build_names``).

    taskset -c 1 env OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/text_search.py
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import markdown_table, write_results  # noqa: E402
from benchmarks.concept_openclipart import cache_dir, categories, load  # noqa: E402

SVG_ROOT = Path("/usr/share/openclipart/svg")
_TITLE = re.compile(r"<dc:title>([^<]*)</dc:title>")
_LI = re.compile(r"<rdf:li>([^<]*)</rdf:li>")
_SUBJECT = re.compile(r"<dc:subject>(.*?)</dc:subject>", re.S)
#: keywords that say nothing about the picture (tool names, licence words, authors)
NOISE = {"hash", "magick", "unsorted", "clip", "art", "clipart", "openclipart", "image", "png", "svg", "media", "public",
         "domain", "untitled", "remix", "architetto francesco rollandin", "lumen design studio"}
#: the text index's methods that the validation compares (auto picks one of them)
INDEX_METHODS = ("conse", "conse+eszsl", "captions", "conse+captions", "conse+eszsl+captions")
#: suffix of a method's figures without the pseudo-relevance feedback (the same index, ``feedback=False``)
NO_FEEDBACK = "/no-feedback"
#: suffix of a method's figures without the file-name captions (the same index, ``names=False``)
NO_NAMES = "/no-names"
#: every ranking the validation compares: each method as built, without the feedback, without the file names
INDEX_RANKINGS = tuple(m + f for m in INDEX_METHODS for f in ("", NO_FEEDBACK, NO_NAMES))


def item_keywords(item_id: str) -> list[str]:
    """The SVG's title (one keyword, lower case) and its <dc:subject> keywords, less :data:`NOISE`."""
    svg = SVG_ROOT / Path(item_id).with_suffix(".svg")
    if not svg.is_file():
        return []
    text = svg.read_text(encoding="utf-8", errors="replace")
    out = []
    m = _TITLE.search(text)
    if m and m.group(1).strip():
        out.append(m.group(1).strip().lower())
    sub = _SUBJECT.search(text)
    if sub:
        out.extend(w.strip().lower() for w in _LI.findall(sub.group(1)) if w.strip())
    import html
    import unicodedata

    def tag_text(w):  # a keyword that is a valid store tag: no ';', no control character
        w = html.unescape(html.unescape(w))
        return " ".join("".join(" " if c == ";" or unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in w).split())

    clean = [tag_text(w) for w in out]
    return [w for w in dict.fromkeys(clean) if w and w not in NOISE]


def item_title(item_id: str) -> tuple[str, str]:
    """``(title, source)``: the SVG's first ``<dc:title>`` (the work's), else the file name stem."""
    svg = SVG_ROOT / Path(item_id).with_suffix(".svg")
    if svg.is_file():
        m = _TITLE.search(svg.read_text(encoding="utf-8", errors="replace"))
        if m and m.group(1).strip():
            return m.group(1).strip(), "svg"
    stem = re.sub(r"_\d+$", "", Path(item_id).stem)
    return stem.replace("_", " "), "stem"


def zscore(s):
    s = np.asarray(s, dtype=np.float64)
    return (s - s.mean()) / max(s.std(), 1e-12)


def unit(A):
    A = np.asarray(A, dtype=np.float32)
    return A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-12)


def scored_ap(rel, scores, left_out=None):
    """AP of ``scores`` against ``rel``, the row ``left_out`` (a title query's own item) not scored."""
    from hardneg.eval import average_precision

    if left_out is None:
        return float(average_precision(rel, scores))
    keep = np.ones(rel.size, dtype=bool)
    keep[left_out] = False
    return float(average_precision(rel[keep], np.asarray(scores)[keep]))


def run_split(X, tags, cats, unseen, queries, conse_vecs, args, seed):
    """Mean AP per method over the unseen categories, by name and by title."""
    from hardneg.zeroshot import ESZSL, TrainingDivergedError, fit_text_search

    held = set(unseen)
    seen_tags = [[t for t in ts if t not in held] for ts in tags]
    t = time.perf_counter()
    eszsl = fit_text_search(X, seen_tags, estimator=ESZSL(), random_state=seed)
    eszsl_s = time.perf_counter() - t
    E = ((X - eszsl.mean_) / eszsl.scale_) @ eszsl.V_
    bucher, bucher_s, diverged = None, 0.0, False
    if not args.no_bucher:
        t = time.perf_counter()
        try:
            bucher = fit_text_search(X, seen_tags, random_state=seed)
        except TrainingDivergedError:
            diverged = True
        bucher_s = time.perf_counter() - t
    rows = []
    for c in unseen:
        rel = np.array([c in ts for ts in tags], dtype=int)
        for kind in ("name", "title"):
            q = queries[c][kind]
            sc = {name: V @ q for name, V in conse_vecs.items()}
            sc["eszsl"] = unit(E) @ q
            sc["eszsl_raw"] = E @ q
            sc["conse+eszsl"] = sc["conse"] + sc["eszsl"]
            if bucher is not None:
                b = -bucher.distances(X, q[None, :])[:, 0]
                sc["bucher16"] = b
                sc["conse+bucher16"] = zscore(sc["conse"]) + zscore(b)
            row = {"category": c, "query": kind, "random": float(rel.mean())}
            row.update({m: scored_ap(rel, s, queries[c].get(f"{kind}_row")) for m, s in sc.items()})
            rows.append(row)
    return rows, {"eszsl_fit_s": eszsl_s, "bucher16_fit_s": bucher_s, "bucher16_diverged": diverged}


def scenario_tags(tags, keywords, held, scenario):
    """The store's tags for one scenario, ``held`` categories untagged.

    ``"tags"``: every item keeps its folder tags less the held-out ones (the protocol of
    ``run_split``); ``"captions"``: an item of a held-out category has no tag at all, every
    other item its folder tags plus its SVG title and keywords (its caption).
    """
    out = []
    for ts, kw in zip(tags, keywords):
        if scenario == "tags":
            out.append([t for t in ts if t not in held])
        elif any(t in held for t in ts):
            out.append([])
        else:
            out.append(list(dict.fromkeys([*ts, *kw])))
    return out


def run_index(X, ids, tags, keywords, held, queried, queries, attrs, scenario, tmp):
    """AP of every text-index method (and ``auto``) on a store whose ``held`` categories are untagged,
    for the ``queried`` categories by name and by title: what ``hardneg concept search auto`` ranks."""
    from hardneg.store import FeatureStore
    from hardneg.zeroshot._text_index import build_text_index, resolve_method

    path = Path(tmp) / f"store-{scenario}-{len(held)}"
    st = FeatureStore.create(path, dim=X.shape[1], attrs=dict(attrs))
    st.append(X, ids=ids, tags=scenario_tags(tags, keywords, held, scenario))
    st.close()
    st = FeatureStore.open(path)
    auto = resolve_method(st, "auto")  # the store's file names carry words: what auto does on such a store
    auto_unnamed = resolve_method(st, "auto", file_names=False)  # ... and on a store whose names carry none
    indexes, secs = {}, {}
    for m in INDEX_METHODS:
        t = time.perf_counter()
        indexes[m] = build_text_index(st, method=m)
        secs[m] = time.perf_counter() - t
    rows = []
    for c in queried:
        rel = np.array([c in ts for ts in tags], dtype=int)
        for kind in ("name", "title"):
            q = queries[c][kind]
            row = {"category": c, "query": kind, "random": float(rel.mean())}
            out = queries[c].get(f"{kind}_row")
            for m, index in indexes.items():  # as built (the library's default), without the feedback, without the names
                row[m] = scored_ap(rel, index.scores(q), out)
                row[m + NO_FEEDBACK] = scored_ap(rel, index.scores(q, feedback=False), out)
                row[m + NO_NAMES] = scored_ap(rel, index.scores(q, names=False), out)
            row["auto"] = row[auto]
            row["auto" + NO_NAMES] = row[auto_unnamed + NO_NAMES]
            rows.append(row)
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    return rows, {"auto": auto, "auto_unnamed": auto_unnamed, "build_s": secs, "named_share": indexes[INDEX_METHODS[0]].info.get("named_share")}


def summarize(rows, methods):
    out = {}
    for kind in ("name", "title"):
        sel = [r for r in rows if r["query"] == kind]
        out[kind] = {m: float(np.mean([r[m] for r in sel])) for m in methods if all(m in r for r in sel)}
    return out


def timing(store_path, n_items, threads):
    """First vs second query through open_text_index on an n_items store, empty cache."""
    from hardneg.store import FeatureStore
    from hardneg.zeroshot import open_text_index
    from hardneg.zeroshot._descriptions import embed_query_text

    src = FeatureStore.open(store_path)
    src_ids = [str(i) for i in src.ids()]
    X = np.asarray(src.to_numpy(), dtype=np.float32)
    reps = int(np.ceil(n_items / X.shape[0]))
    Xn = np.concatenate([X] * reps)[:n_items]
    tags = [list(t or []) for t in src.items.column("tags").to_pylist()] * reps
    embed_query_text("warm up the sentence model")  # both queries then pay the same embedding
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        st = FeatureStore.create(Path(tmp) / "store", dim=X.shape[1], attrs=dict(src.attrs))
        st.append(Xn, ids=[f"i{r}" for r in range(n_items)], tags=tags[:n_items])
        st.close()
        st = FeatureStore.open(Path(tmp) / "store")
        for method in ("conse", "conse+eszsl", "conse+captions"):
            times = []
            for text in ("a red car", "a cat sleeping on a sofa"):
                t = time.perf_counter()
                index, built = open_text_index(st, method=method, cache_dir=Path(tmp) / "cache")
                index.search(text, k=24)
                times.append(time.perf_counter() - t)
            out[method] = {"first_s": times[0], "second_s": times[1], "ratio": times[0] / times[1]}
        # the CLI: fresh processes, as a user runs it (the index cached beside the store after the first)
        import os
        import subprocess

        exe = str(Path(sys.executable).parent / "hardneg")
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        import resource

        # the same rows named as the clip-art files (unique per copy): auto then uses the file names
        names = [f"copy{r // len(src_ids)}/{src_ids[r % len(src_ids)]}" for r in range(n_items)]
        st = FeatureStore.create(Path(tmp) / "named", dim=X.shape[1], attrs=dict(src.attrs))
        st.append(Xn, ids=names, tags=tags[:n_items])
        st.close()

        def cli_runs(store_dir):
            wall, cpu = [], []
            for text in ("a red car", "a cat sleeping on a sofa", "hot air balloon"):
                t = time.perf_counter()
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run([exe, "concept", "search", "auto", str(store_dir), "--text", text, "-k", "24", "--json"],
                               check=True, capture_output=True, env=env)
                wall.append(time.perf_counter() - t)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                # CPU time of the command: on a shared machine its wall time also counts the other processes' turns
                cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            return {"first_s": wall[0], "second_s": wall[1], "third_s": wall[2], "ratio": wall[0] / wall[1],
                    "first_cpu_s": cpu[0], "second_cpu_s": cpu[1], "third_cpu_s": cpu[2], "method": "auto"}

        out["cli"] = cli_runs(Path(tmp) / "store")
        out["cli_named"] = cli_runs(Path(tmp) / "named")
        # what the file names cost the build: the same conse index of the named store with and without them
        from hardneg.zeroshot._file_names import item_name_texts
        from hardneg.zeroshot._text_index import build_text_index

        named = FeatureStore.open(Path(tmp) / "named")
        build = {}
        for file_names in (False, True):
            t = time.perf_counter()
            build_text_index(named, method="conse", file_names=file_names)
            build[file_names] = time.perf_counter() - t
        out["build_names"] = {"method": "conse", "without_s": build[False], "with_s": build[True],
                              "ratio": build[True] / build[False],
                              "distinct_names": len({t for t in item_name_texts(named) if t is not None})}
        out["load_average_after"] = os.getloadavg()
    return {"n_items": n_items, **out}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--unseen", type=float, default=0.4)
    ap.add_argument("--min-images", type=int, default=40)
    ap.add_argument("--no-bucher", action="store_true")
    ap.add_argument("--learned", action="store_true", help="also the array-level comparison with ESZSL's raw score and [Bucher16]")
    ap.add_argument("--val", type=float, default=0.2, help="fraction of the seen categories held out for validation")
    ap.add_argument("--timing-items", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--name", default="text_search")
    ap.add_argument("--only-timing", action="store_true", help="only the timing (written to NAME_timing.json)")
    args = ap.parse_args()

    from hardneg.zeroshot import ConSE
    from hardneg.zeroshot._descriptions import embed_texts

    t0 = time.perf_counter()
    store_path = cache_dir() / "store"
    if args.only_timing:
        res = timing(store_path, args.timing_items, args.threads)
        print("timing:", res)
        print(f"wrote {write_results(args.name + '_timing', {'timing': res, 'wall_s': time.perf_counter() - t0})}")
        return
    X, ids, tags = load(store_path)
    cats = categories(ids, args.min_images)
    cats = [c for c in cats if sum(c in ts for ts in tags) >= 2]
    rng = np.random.default_rng(0)
    titles, sources, title_rows = {}, {}, {}
    for c in cats:
        members = [r for r, ts in enumerate(tags) if c in ts]
        title_rows[c] = members[int(rng.integers(len(members)))]
        titles[c], sources[c] = item_title(ids[title_rows[c]])
    names = {c: c.replace("_", " ").replace("-", " ") for c in cats}
    Qn = embed_texts([names[c] for c in cats])
    Qt = embed_texts([titles[c] for c in cats])
    queries = {c: {"name": Qn[i], "title": Qt[i], "title_row": title_rows[c]} for i, c in enumerate(cats)}

    conse_vecs = {}
    for label, kw in {"conse": {}, "conse_lemma": {"class_text": "lemma"}, "conse_T1": {"n_top": 1},
                      "conse_T5": {"n_top": 5}, "conse_T20": {"n_top": 20}}.items():
        conse_vecs[label] = unit(ConSE(**kw).fit().transform(X))
    # label-free variants: both class texts summed; the store's mean semantic vector removed (hubness)
    conse_vecs["conse_both"] = unit(conse_vecs["conse"] + conse_vecs["conse_lemma"])
    conse_vecs["conse_centered"] = unit(conse_vecs["conse"] - conse_vecs["conse"].mean(axis=0))

    keywords = [item_keywords(i) for i in ids]
    from hardneg.store import FeatureStore
    from hardneg.zeroshot._text_index import build_text_index

    attrs = dict(FeatureStore.open(store_path).attrs)
    # no tags at all: ConSE alone over every category, as arrays (the paper's variants) and through the text index
    # of a store with no tags (what the CLI ranks): [Norouzi14] Eq. (2)-(3) (extras=False), the class prior and
    # query offset without the feedback, and the library's default (all extras)
    with tempfile.TemporaryDirectory() as tmp:
        st = FeatureStore.create(Path(tmp) / "notags", dim=X.shape[1], attrs=dict(attrs))
        st.append(X, ids=ids)
        st.close()
        st = FeatureStore.open(Path(tmp) / "notags")
        paper, extras = build_text_index(st, method="conse", extras=False), build_text_index(st, method="conse")
    notags_rankings = {"index_paper": lambda q: paper.scores(q),
                       "index_prior": lambda q: extras.scores(q, feedback=False, names=False),
                       "index_no_names": lambda q: extras.scores(q, names=False), "index_default": lambda q: extras.scores(q)}
    notags = []
    for c in cats:
        rel = np.array([c in ts for ts in tags], dtype=int)
        for kind in ("name", "title"):
            row = {"category": c, "query": kind, "random": float(rel.mean())}
            out = queries[c].get(f"{kind}_row")
            row.update({m: scored_ap(rel, V @ queries[c][kind], out) for m, V in conse_vecs.items()})
            row.update({m: scored_ap(rel, f(queries[c][kind]), out) for m, f in notags_rankings.items()})
            notags.append(row)
    notags_methods = [*conse_vecs, *notags_rankings]

    index_rows, index_info, val_lists = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.splits):
            r = np.random.default_rng(seed)
            unseen = sorted(r.choice(cats, size=int(round(args.unseen * len(cats))), replace=False).tolist())
            seen = [c for c in cats if c not in unseen]
            # validation: a fifth of the seen categories held out as well, queried instead of the unseen ones
            val = sorted(np.random.default_rng(100 + seed).choice(seen, size=int(round(args.val * len(seen))),
                                                                 replace=False).tolist())
            val_lists.append(val)
            for scenario in ("tags", "captions"):
                for part, held, queried in (("val", set(unseen) | set(val), val), ("test", set(unseen), unseen)):
                    rows, info = run_index(X, ids, tags, keywords, held, queried, queries, attrs, scenario, tmp)
                    for row in rows:
                        row.update(split=seed, scenario=scenario, part=part)
                    index_rows.extend(rows)
                    index_info.append({"split": seed, "scenario": scenario, "part": part, **info})
                    print(f"split {seed} {scenario} {part}: "
                          f"{summarize(rows, ['random', *INDEX_RANKINGS])}", flush=True)
    index_summary = {}
    for scenario in ("tags", "captions"):
        for part in ("val", "test"):
            sel = [r for r in index_rows if r["scenario"] == scenario and r["part"] == part]
            per = [summarize([r for r in sel if r["split"] == s], ["random", *INDEX_RANKINGS, "auto", "auto" + NO_NAMES])
                   for s in range(args.splits)]
            index_summary[f"{scenario}/{part}"] = {kind: {m: float(np.mean([p[kind][m] for p in per]))
                                                          for m in per[0][kind]} for kind in ("name", "title")}
    # the validated choices: best mean validation AP over both scenarios and both query kinds, for a store whose
    # file names carry words (the rankings with them) and for one whose names carry none (the /no-names rankings)
    val_score = {m: float(np.mean([index_summary[f"{sc}/val"][k][m] for sc in ("tags", "captions") for k in ("name", "title")]))
                 for m in INDEX_RANKINGS}
    chosen = max((m for m in INDEX_RANKINGS if not m.endswith(NO_NAMES)), key=val_score.get)
    chosen_unnamed = max((m for m in INDEX_RANKINGS if m.endswith(NO_NAMES)), key=val_score.get)
    print("validation (mean AP, both scenarios, name and title):", val_score, "->", chosen, "/", chosen_unnamed)

    all_rows, fits = [], []
    for seed in range(args.splits if args.learned else 0):
        r = np.random.default_rng(seed)
        unseen = sorted(r.choice(cats, size=int(round(args.unseen * len(cats))), replace=False).tolist())
        rows, fit = run_split(X, tags, cats, unseen, queries, conse_vecs, args, seed)
        for row in rows:
            row["split"] = seed
        all_rows.extend(rows)
        fits.append(fit)
        print(f"split {seed}: {summarize(rows, [m for m in rows[0] if m not in ('category', 'query', 'split')])}", flush=True)

    methods = [m for m in all_rows[0] if m not in ("category", "query", "split")] if all_rows else []
    per_split = [summarize([r for r in all_rows if r["split"] == s], methods) for s in range(args.splits)] if all_rows else []
    summary = {kind: {m: {"mean": float(np.mean([p[kind][m] for p in per_split if m in p[kind]])),
                          "sd": float(np.std([p[kind][m] for p in per_split if m in p[kind]]))}
                      for m in methods if all(m in p[kind] for p in per_split)}
               for kind in ("name", "title")}
    notags_summary = summarize(notags, ["random", *notags_methods])
    # ConSE's settings chosen on the seen validation categories only (each split's), never on the unseen ones
    val_sets = [set(v) for v in val_lists]
    notags_val = [summarize([r for r in notags if r["category"] in v], ["random", *notags_methods]) for v in val_sets]
    notags_val_summary = {k: {m: float(np.mean([p[k][m] for p in notags_val])) for m in notags_val[0][k]} for k in ("name", "title")}
    conse_val = {m: (notags_val_summary["name"][m] + notags_val_summary["title"][m]) / 2 for m in notags_methods}
    print("ConSE on validation categories:", conse_val, "->", max(conse_val, key=conse_val.get))
    time_res = None
    if args.timing_items:
        try:
            time_res = timing(store_path, args.timing_items, args.threads)
        except Exception as exc:  # noqa: BLE001 - the accuracy figures are written all the same
            time_res = {"error": f"{type(exc).__name__}: {exc}"}

    for key, summ in index_summary.items():
        print(f"\n{key}")
        print(markdown_table([{"method": m, "AP by name": summ["name"][m], "AP by title": summ["title"][m],
                               "x random (name)": summ["name"][m] / summ["name"]["random"],
                               "x random (title)": summ["title"][m] / summ["title"]["random"]} for m in summ["name"]],
                             ["method", "AP by name", "AP by title", "x random (name)", "x random (title)"]))
    table = []
    for m in summary["name"]:
        table.append({"method": m, "AP by name": summary["name"][m]["mean"], "AP by title": summary["title"][m]["mean"]})
    print(markdown_table(table, ["method", "AP by name", "AP by title"]))
    print("no tags:", notags_summary)
    print("timing:", time_res)
    path = write_results(args.name, {
        "protocol": {"store": str(store_path), "n_items": int(X.shape[0]), "n_categories": len(cats), "splits": args.splits,
                     "unseen_fraction": args.unseen, "title_source": sorted(set(sources.values())),
                     "title_query_item": "left out of the ranking scored",
                     "title_sources": {s: sum(v == s for v in sources.values()) for s in set(sources.values())}},
        "queries": {c: {"name": names[c], "title": titles[c], "title_item": ids[title_rows[c]]} for c in cats},
        "notags_index_info": extras.info,
        "index": {"methods": list(INDEX_RANKINGS), "summary": index_summary, "validation_score": val_score,
                  "validated_choice": chosen, "validated_choice_unnamed": chosen_unnamed, "builds": index_info,
                  "rows": index_rows},
        "summary": summary, "per_split": per_split, "notags": notags_summary,
        "notags_validation": notags_val_summary, "conse_validation_score": conse_val, "validation_categories": val_lists, "fits": fits, "timing": time_res,
        "rows": all_rows, "notags_rows": notags, "wall_s": time.perf_counter() - t0,
    })
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
