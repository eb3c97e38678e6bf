"""What the ``meta.json`` item summary costs an append (issue 29).

Every append merges the new part's counts (splits, labels, tags) into the
summary and rewrites ``meta.json`` with it; an edit counts the whole new
table. This runs the same workload -- create a store, append ``--batches``
batches of ``--rows`` rows (two tags per row from a vocabulary of V tags, a
label of 100 classes, a split), then one tag edit -- with this checkout's
hardneg and with the hardneg of each ``--compare-source`` folder (the code
before the summary), in fresh processes, interleaved round by round, and
reports the median wall time of the appends (all but the first, which
imports Zarr) and of the edit, their ratio to
the first compare source, and the size of ``meta.json``. Writes
``benchmarks/results/store_append_summary[_<tag>].json``.

Usage::

    python benchmarks/store_append_summary.py --compare-source DIR [--vocab 100 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write_results  # noqa: E402

_WORK = r"""
import json, sys, time
import numpy as np
from hardneg.store import FeatureStore
path, batches, rows, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
words = [f"tag{k}" for k in range(vocab)]
appends = []
with FeatureStore.create(path, 64, overwrite=True) as store:
    for b in range(batches):
        X = rng.random((rows, 64), dtype=np.float32)
        tags = [[words[i] for i in rng.choice(vocab, 2, replace=False)] for _ in range(rows)]
        t = time.perf_counter()
        store.append(X, ids=[f"b{b}r{r}" for r in range(rows)], tags=tags, labels=rng.integers(0, 100, rows).tolist(),
                     split=["train" if u < 0.8 else "test" for u in rng.random(rows)])
        appends.append(time.perf_counter() - t)
    t = time.perf_counter()
    store.edit_items(add_tags={f"b0r{r}": ["edited"] for r in range(rows)})
    edit = time.perf_counter() - t
import hardneg
print(json.dumps({"appends_s": sum(appends[1:]), "append_median_s": sorted(appends)[len(appends) // 2], "edit_s": edit,
                  "meta_bytes": len(open(path + "/meta.json", "rb").read()), "hardneg": hardneg.__file__}))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare-source", type=Path, action="append", default=[], required=True,
                    help="Folder holding another hardneg package (e.g. `git archive <commit> hardneg | tar -x -C DIR`); repeatable.")
    ap.add_argument("--vocab", type=int, nargs="+", default=[100, 5000], help="Distinct tags of each workload.")
    ap.add_argument("--batches", type=int, default=50, help="Appends per run.")
    ap.add_argument("--rows", type=int, default=200, help="Rows per append.")
    ap.add_argument("--repeat", type=int, default=3, help="Runs of each (interleaved).")
    ap.add_argument("--tag", default="", help="Suffix of the result file.")
    args = ap.parse_args(argv)
    sources = {"this checkout": None, **{f.resolve().name: f.resolve() for f in args.compare_source}}
    env = {**os.environ}
    env.pop("PYTHONPATH", None)
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for vocab in args.vocab:
            runs: dict[str, list[dict]] = {name: [] for name in sources}
            for _ in range(args.repeat):
                for name, folder in sources.items():
                    extra = {"PYTHONPATH": str(folder)} if folder is not None else {}
                    proc = subprocess.run([sys.executable, "-c", _WORK, str(Path(tmp) / "s"), str(args.batches), str(args.rows), str(vocab)],
                                          env={**env, **extra}, cwd=tmp, capture_output=True, text=True)
                    if proc.returncode:
                        raise SystemExit(f"{name}: {proc.stderr[-1500:]}")
                    runs[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            base = next(iter(args.compare_source)).resolve().name
            rows = {}
            for name, rs in runs.items():
                med = {k: statistics.median(r[k] for r in rs) for k in ("appends_s", "append_median_s", "edit_s")}
                rows[name] = {**med, "meta_bytes": rs[-1]["meta_bytes"], "hardneg": rs[-1]["hardneg"], "runs": rs,
                              "appends_ratio_to_before": med["appends_s"] / statistics.median(r["appends_s"] for r in runs[base]),
                              "edit_ratio_to_before": med["edit_s"] / statistics.median(r["edit_s"] for r in runs[base])}
            results[f"vocab={vocab}"] = rows
    print("| workload | hardneg | appends s (median of runs) | x before | edit s | x before | meta.json bytes |")
    print("|---|---|---|---|---|---|---|")
    for work, rows in results.items():
        for name, r in rows.items():
            print(f"| {work} | {name} | {r['appends_s']:.3f} | {r['appends_ratio_to_before']:.2f} | {r['edit_s']:.4f} "
                  f"| {r['edit_ratio_to_before']:.2f} | {r['meta_bytes']:,} |")
    path = write_results("store_append_summary" + (f"_{args.tag}" if args.tag else ""),
                         {"batches": args.batches, "rows": args.rows, "repeat": args.repeat, "results": results,
                          "compare_source": [str(f) for f in args.compare_source], "load_avg_end": os.getloadavg()})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
