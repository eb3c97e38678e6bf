"""What the int8 query graph costs search by description, and what it saves a fresh process (issue 38).

A one-off text query runs an int8 copy of all-MiniLM-L6-v2 (``hardneg/zeroshot/_minilm_onnx.py``:
ONNX Runtime's dynamic quantisation of the MatMul and Gather weights, per channel), the texts an
index is built from stay on the float graph. Measured side by side, on the same data:

- **rankings**: the queries of ``benchmarks/results/text_search.json`` (each openclipart category
  by its name and by one item's title; run that benchmark first) against two text indexes of the
  openclipart store (``benchmarks/concept_openclipart.py``): the store with no tags (``conse``,
  the default extras) and the store tagged with its folders less the held-out categories of
  text_search's split 0 (``auto``: conse+captions), each held-out category queried. Mean AP with
  the float query embedding vs the int8 one, the paired difference over queries, and the cosine
  between the two embeddings;
- **load time**: a fresh process that loads the graph and embeds one query, float vs int8, in
  alternation (``--repeats`` each); wall and CPU seconds, and the ratio.

    PYTHONPATH=. .venv/bin/python benchmarks/text_query_int8.py
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import RESULTS, write_results  # noqa: E402
from benchmarks.concept_openclipart import cache_dir, load  # noqa: E402

_LOAD = """
import resource, sys, time
t = time.perf_counter()
from pathlib import Path
from hardneg.zeroshot import _protocols
from hardneg.zeroshot._minilm_onnx import embed_onnx
embed_onnx(["a cat sleeping on a sofa"], _protocols._model_path(), _protocols._sentence_model, quantized=sys.argv[1] == "int8")
r = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t, r.ru_utime + r.ru_stime)
"""


def load_times(repeats: int) -> dict:
    """Wall and CPU seconds of a fresh process that loads the graph and embeds one query, float vs int8, alternated."""
    out: dict = {"float": {"wall_s": [], "cpu_s": []}, "int8": {"wall_s": [], "cpu_s": []}}
    for r in range(repeats):
        for kind in (("float", "int8") if r % 2 == 0 else ("int8", "float")):
            proc = subprocess.run([sys.executable, "-c", _LOAD, kind], capture_output=True, text=True, check=True)
            wall, cpu = map(float, proc.stdout.split())
            out[kind]["wall_s"].append(wall)
            out[kind]["cpu_s"].append(cpu)
    for kind in out:
        out[kind]["median_wall_s"] = float(np.median(out[kind]["wall_s"]))
        out[kind]["median_cpu_s"] = float(np.median(out[kind]["cpu_s"]))
    out["wall_ratio_float_over_int8"] = out["float"]["median_wall_s"] / out["int8"]["median_wall_s"]
    out["cpu_ratio_float_over_int8"] = out["float"]["median_cpu_s"] / out["int8"]["median_cpu_s"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=6)
    args = ap.parse_args()
    from hardneg.eval import average_precision
    from hardneg.store import FeatureStore
    from hardneg.zeroshot import _protocols
    from hardneg.zeroshot._minilm_onnx import embed_onnx
    from hardneg.zeroshot._text_index import build_text_index

    t0 = time.perf_counter()
    source = json.loads((RESULTS / "text_search.json").read_text())
    queries = source["queries"]
    cats = list(queries)
    texts = [queries[c][k] for c in cats for k in ("name", "title")]
    exact = embed_onnx(texts, _protocols._model_path(), _protocols._sentence_model)
    quick = embed_onnx(texts, _protocols._model_path(), _protocols._sentence_model, quantized=True)
    cos = (exact * quick).sum(axis=1)

    X, ids, tags = load(cache_dir() / "store")
    attrs = dict(FeatureStore.open(cache_dir() / "store").attrs)
    unseen = set(np.random.default_rng(0).choice(cats, size=int(round(0.4 * len(cats))), replace=False).tolist())  # text_search's split 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for scenario, store_tags, queried in (("notags", None, cats),
                                              ("tags", [[t for t in ts if t not in unseen] for ts in tags], sorted(unseen))):
            st = FeatureStore.create(Path(tmp) / scenario, dim=X.shape[1], attrs=attrs)
            st.append(X, ids=ids, tags=store_tags)
            st.close()
            index = build_text_index(FeatureStore.open(Path(tmp) / scenario))
            for c in queried:
                rel = np.array([c in ts for ts in tags], dtype=int)
                for k, kind in enumerate(("name", "title")):
                    i = 2 * cats.index(c) + k
                    rows.append({"scenario": scenario, "method": index.method, "category": c, "query": kind,
                                 "random": float(rel.mean()), "float": float(average_precision(rel, index.scores(exact[i]))),
                                 "int8": float(average_precision(rel, index.scores(quick[i])))})
    summary = {}
    for scenario in ("notags", "tags"):
        for kind in ("name", "title"):
            sel = [r for r in rows if r["scenario"] == scenario and r["query"] == kind]
            d = np.array([r["int8"] - r["float"] for r in sel])
            summary[f"{scenario}/{kind}"] = {
                "method": sel[0]["method"], "n_queries": len(sel), "random": float(np.mean([r["random"] for r in sel])),
                "float": float(np.mean([r["float"] for r in sel])), "int8": float(np.mean([r["int8"] for r in sel])),
                "diff_mean": float(d.mean()), "diff_sem": float(d.std(ddof=1) / np.sqrt(d.size))}
            print(scenario, kind, summary[f"{scenario}/{kind}"], flush=True)
    times = load_times(args.repeats)
    print("load:", {k: times[k] for k in ("wall_ratio_float_over_int8", "cpu_ratio_float_over_int8")})
    print(f"wrote {write_results('text_query_int8', {'cosine': {'min': float(cos.min()), 'mean': float(cos.mean())}, 'summary': summary, 'load': times, 'rows': rows, 'wall_s': time.perf_counter() - t0})}")


if __name__ == "__main__":
    main()
