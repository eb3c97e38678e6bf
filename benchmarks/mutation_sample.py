"""Mutation kill rate of the test suite over svm/, concept/, negatives/ and hashing/ (issue 12).

mutmut (configured under ``[tool.mutmut]`` in pyproject.toml) makes ~7,000 mutants of
those folders; running them all takes about two hours on two cores. This script
estimates the kill rate from a seeded uniform sample of mutants instead and reports a
95% Wilson interval with it, per folder and overall. Run on a copy of the tracked tree
(mutmut writes a ``mutants/`` folder next to the sources).

Usage::

    .venv/bin/pip install -e ".[mutation]"
    .venv/bin/python benchmarks/mutation_sample.py [--sample 200] [--seed 12] [--jobs 1]

Counts: "killed" includes mutants whose test run crashed (segfault) or timed out; "no
tests" (no selected test reaches the mutated function) counts as surviving.
Decorated functions (the Numba kernels) are not mutated by mutmut, nor are functions
marked ``# pragma: no mutate block`` (the ones compiled by a ``numba.njit(...)`` call).
"""

from __future__ import annotations

import argparse
import collections
import math
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import RESULTS, earlier_run, keep_earlier_studies, write_results  # noqa: E402

KILLED = {"killed", "segfault", "timeout"}
# hand-run rounds that re-tested one sample's survivors against tests written from them (not made by this script)
EARLIER_ROUNDS = ("after_new_tests", "after_round_3")


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _results(mutmut: str, cwd: Path) -> dict[str, str]:
    out = subprocess.run([mutmut, "results", "--all", "true"], cwd=cwd, capture_output=True, text=True).stdout
    status = {}
    for line in out.splitlines():
        if ":" in line:
            name, st = line.rsplit(":", 1)
            status[name.strip()] = st.strip()
    return status


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--diffs", type=Path, default=None,
                    help="write `mutmut show` of every surviving mutant to this file")
    ap.add_argument("--keep", action="store_true", help="keep the working copy (its path is printed)")
    args = ap.parse_args()
    mutmut = shutil.which("mutmut", path=str(Path(sys.executable).parent))
    if mutmut is None:
        sys.exit('mutmut is not installed: .venv/bin/pip install -e ".[mutation]"')

    work = Path(tempfile.mkdtemp(prefix="hardneg-mutation-"))
    # tracked files plus untracked ones git does not ignore (new tests not yet added)
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        if not (ROOT / f).is_file():  # deleted in the working tree but still tracked
            continue
        (work / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, work / f)
    t0 = time.perf_counter()
    # generate the mutants and the per-test coverage, run none of them
    subprocess.run([mutmut, "run", "no-such-mutant"], cwd=work, capture_output=True, check=False)
    names = sorted(_results(mutmut, work))
    if not names:
        sys.exit(f"mutmut generated no mutants in {work}")
    sample = random.Random(args.seed).sample(names, min(args.sample, len(names)))
    subprocess.run([mutmut, "run", "--max-children", str(args.jobs), *sample], cwd=work, capture_output=True, check=False)
    status = _results(mutmut, work)
    seconds = time.perf_counter() - t0

    by_folder: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    survivors = []
    for name in sample:
        folder = name.split(".")[1]
        st = status.get(name, "not checked")
        by_folder[folder][st] += 1
        by_folder["all"][st] += 1
        if st not in KILLED and st != "not checked":
            survivors.append(name)
    rows = []
    for folder, counts in sorted(by_folder.items()):
        checked = sum(v for k, v in counts.items() if k != "not checked")
        killed = sum(counts[k] for k in KILLED)
        lo, hi = _wilson(killed, checked)
        rows.append({"folder": folder, "checked": checked, "killed": killed,
                     "kill_rate": round(killed / checked, 3) if checked else None,
                     "ci95": [round(lo, 3), round(hi, 3)], "statuses": dict(counts)})
    payload = {"study": "mutation_sample", "n_mutants": len(names), "sample": len(sample), "seed": args.seed,
               "seconds": round(seconds, 1), "folders": rows, "survivors": sorted(survivors)}
    # the re-test rounds of an earlier sample's survivors stay, under the command and commit that measured them,
    # and so does the previous whole-tree sample (the kill rate before this run's tests)
    old = keep_earlier_studies(RESULTS / "mutation_sample.json", EARLIER_ROUNDS, payload)
    if "folders" in old:
        earlier = {k: old[k] for k in ("n_mutants", "sample", "seed", "seconds", "folders", "survivors") if k in old}
        payload["earlier_runs"] = [earlier_run(old, {f"sample_seed{old.get('seed')}": earlier}),
                                   *payload.get("earlier_runs", [])]
    path = write_results("mutation_sample", payload)
    print("| folder | checked | killed | kill rate | 95% CI |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['folder']} | {r['checked']} | {r['killed']} | {r['kill_rate']} | {r['ci95'][0]}-{r['ci95'][1]} |")
    print(f"{len(names)} mutants, {len(sample)} sampled, {seconds:.0f} s; {path}")
    if args.diffs is not None:
        with open(args.diffs, "w") as fh:
            for name in sorted(survivors):
                shown = subprocess.run([mutmut, "show", name], cwd=work, capture_output=True, text=True).stdout
                fh.write(f"### {name}: {status.get(name)}\n{shown}\n")
        print(f"survivor diffs: {args.diffs}")
    if args.keep:
        print(f"working copy kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
