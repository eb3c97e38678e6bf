"""How long the ``hardneg`` command takes to answer (issue 29).

Runs, side by side in one process and interleaved round by round, fresh
Python processes of:

- ``python -c pass`` (the baseline: interpreter start-up),
- ``hardneg --help``,
- ``hardneg store info STORE`` (a 200-row store built here),

and reports min / median wall time of each, the ratio to the baseline, and
(from ``python -X importtime``) the modules that cost most to import for
each command, the heavy libraries each imported, and whether its import
time stays within :data:`BUDGET_MS`. Writes ``benchmarks/results/cli_startup[_<tag>].json``.

Usage::

    python benchmarks/cli_startup.py [--repeat 15] [--tag before]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write_results  # noqa: E402

_CLI = "import sys; from hardneg.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _make_store(path: Path) -> None:
    import numpy as np

    from hardneg.store import FeatureStore

    rng = np.random.default_rng(0)
    store = FeatureStore.create(path, 16)
    store.append(rng.random((200, 16), dtype=np.float32), ids=[f"i{i}" for i in range(200)])
    store.close() if hasattr(store, "close") else None


def _commands(store: Path) -> dict[str, list[str]]:
    py = [sys.executable]
    return {
        "python -c pass": [*py, "-c", "pass"],
        "hardneg --help": [*py, "-c", _CLI, "--help"],
        "hardneg store info": [*py, "-c", _CLI, "store", "info", str(store)],
    }


def _run(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr[-500:]}")
    return dt


# Import-time budget (``python -X importtime``, sum over top-level imports, ms) and the
# libraries a command must not import at all; the goal is < 0.3 s per command on a quiet machine.
BUDGET_MS = {"hardneg --help": 150.0, "hardneg store info": 900.0}
HEAVY = ("torch", "onnxruntime", "sklearn", "scipy", "pyarrow", "pandas", "pydantic", "fastapi", "dask", "numba", "faiss",
         "PIL", "cv2", "zarr")


def _importtime(cmd: list[str], env: dict, top: int = 12) -> dict:
    """Total import time, the most expensive top-level packages and modules (cumulative
    microseconds, any depth), and which heavy libraries the command imported."""
    proc = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    per_pkg: dict[str, int] = {}
    per_module: dict[str, int] = {}
    n_modules = 0
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self_us, cum_us, name = line[len("import time:"):].split("|")
        n_modules += 1
        per_module[name.strip()] = max(per_module.get(name.strip(), 0), int(cum_us))
        depth = (len(name) - len(name.lstrip()) - 1) // 2
        if depth == 0:  # a top-level import: its cumulative time counts once
            pkg = name.strip().split(".")[0]
            per_pkg[pkg] = per_pkg.get(pkg, 0) + int(cum_us)
    biggest = sorted(per_pkg.items(), key=lambda kv: -kv[1])[:top]
    modules = sorted(per_module.items(), key=lambda kv: -kv[1])[: 2 * top]
    imported = {m.split(".")[0] for m in per_module}
    return {"modules": n_modules, "total_ms": round(sum(per_pkg.values()) / 1000, 1),
            "top_level_ms": {k: round(v / 1000, 1) for k, v in biggest},
            "top_modules_cumulative_ms": {k: round(v / 1000, 1) for k, v in modules},
            "heavy_imported": sorted(imported & set(HEAVY))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="Runs of each command (interleaved).")
    ap.add_argument("--tag", default="", help="Suffix of the result file (cli_startup_<tag>.json).")
    args = ap.parse_args(argv)
    env = {**os.environ, "COLUMNS": "80", "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s"
        _make_store(store)
        cmds = _commands(store)
        for cmd in cmds.values():  # warm the file cache and the bytecode
            _run(cmd, env)
        times: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(args.repeat):
            for name, cmd in cmds.items():
                times[name].append(_run(cmd, env))
        imports = {name: _importtime(cmd, env) for name, cmd in cmds.items()}
    base = statistics.median(times["python -c pass"])
    rows = {}
    for name, ts in times.items():
        rows[name] = {"min_s": min(ts), "median_s": statistics.median(ts), "median_minus_python_s": statistics.median(ts) - base,
                      "ratio_to_python": statistics.median(ts) / base, "runs_s": ts, "imports": imports[name]}
        if name in BUDGET_MS:
            over = imports[name]["total_ms"] - imports["python -c pass"]["total_ms"]
            rows[name]["import_budget"] = {"budget_ms": BUDGET_MS[name], "import_ms_above_python": round(over, 1),
                                           "within": over <= BUDGET_MS[name]}
    print("| command | min s | median s | median - python s | x python | modules imported |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['min_s']:.3f} | {r['median_s']:.3f} | {r['median_minus_python_s']:.3f} | {r['ratio_to_python']:.1f} | {r['imports']['modules']} |")
    for name, r in rows.items():
        print(f"{name}: slowest imports (ms) {r['imports']['top_level_ms']}; heavy: {r['imports']['heavy_imported']}")
        if "import_budget" in r:
            b = r["import_budget"]
            print(f"  import budget {b['budget_ms']:.0f} ms: {b['import_ms_above_python']:.0f} ms -> {'within' if b['within'] else 'OVER'}")
    path = write_results("cli_startup" + (f"_{args.tag}" if args.tag else ""), {"repeat": args.repeat, "results": rows,
                                                                                "load_avg_end": os.getloadavg()})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
