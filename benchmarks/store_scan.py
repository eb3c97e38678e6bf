"""FeatureStore chunked scan: throughput vs a .npy memory map, and peak memory.

Both layouts hold the same float32 rows. A scan reads every row in blocks and
reduces it (a column sum, so every byte is touched). Timings alternate between
the two readers in one process, after a warm-up pass that puts both files in
the page cache, and the throughput ratio store / memmap is reported (goal:
>= 0.7). Peak resident memory is measured per reader in a fresh child process
(``ru_maxrss``), because a memory map's touched pages count as resident.

Run: ``python benchmarks/store_scan.py`` (1,000,000 × 1,280, ~5 GB per copy)
or ``--quick`` (100,000 × 1,280).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import markdown_table, write_results  # noqa: E402
from hardneg.store import FeatureStore  # noqa: E402

# Both readers use the store's chunk size (its default block, which it hands
# out zero-copy); ~16 MiB blocks at 1,280 dims.


def build(folder: Path, n: int, dim: int, batch: int = 50_000) -> tuple[Path, Path]:
    store_path, npy_path = folder / "scan.store", folder / "scan.npy"
    if store_path.exists() and npy_path.exists() and len(FeatureStore.open(store_path)) == n:
        return store_path, npy_path
    rng = np.random.default_rng(0)
    mm = np.lib.format.open_memmap(npy_path, mode="w+", dtype=np.float32, shape=(n, dim))
    with FeatureStore.create(store_path, dim=dim, overwrite=True) as store:
        for lo in range(0, n, batch):
            block = rng.random((min(batch, n - lo), dim), dtype=np.float32)
            store.append(block)
            mm[lo : lo + len(block)] = block
    mm.flush()
    del mm
    return store_path, npy_path


def block_rows(dim: int) -> int:
    from hardneg.store._writer import DEFAULT_CHUNK_BYTES

    return max(1024, DEFAULT_CHUNK_BYTES // (4 * dim))


def scan_store(path) -> np.ndarray:
    store = FeatureStore.open(path)
    total = np.zeros(store.dim, np.float32)
    for _, block in store.iter_chunks():
        total += block.sum(axis=0)
    return total


def scan_store_unchecked(path) -> np.ndarray:
    """The store scan without the per-block NaN/infinity check: what the check costs."""
    from hardneg.store import _chunks

    checked = _chunks.all_finite
    _chunks.all_finite = lambda block: True
    try:
        return scan_store(path)
    finally:
        _chunks.all_finite = checked


def scan_memmap(path) -> np.ndarray:
    mm = np.load(path, mmap_mode="r")
    rows = block_rows(mm.shape[1])
    total = np.zeros(mm.shape[1], np.float32)
    for lo in range(0, mm.shape[0], rows):
        total += mm[lo : lo + rows].sum(axis=0)
    return total


def _vm_hwm_kib() -> int:
    """Peak RSS of this process (VmHWM). Unlike ru_maxrss it is not inherited
    from the parent across fork + exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


_WARM_MAPS: dict = {}


def scan_memmap_reused(path) -> np.ndarray:
    """The same scan over a mapping kept open between scans: its page tables
    are already filled, so no page faults — an upper bound no fresh job sees."""
    mm = _WARM_MAPS.setdefault(str(path), np.load(path, mmap_mode="r"))
    rows = block_rows(mm.shape[1])
    total = np.zeros(mm.shape[1], np.float32)
    for lo in range(0, mm.shape[0], rows):
        total += mm[lo : lo + rows].sum(axis=0)
    return total


def child_peak_rss(kind: str, path: Path) -> tuple[float, float]:
    """(peak RSS after imports, peak RSS after one scan) in MiB, in a fresh process."""
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "from benchmarks.store_scan import scan_store, scan_memmap, _vm_hwm_kib\n"
        "base = _vm_hwm_kib()\n"
        "scan_%s(%r)\n"
        "print(base, _vm_hwm_kib())\n"
    ) % (str(Path(__file__).resolve().parents[1]), kind, str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]) / 1024.0, int(out[1]) / 1024.0


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100,000 rows instead of 1,000,000")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--dim", type=int, default=1280)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workdir", default=None, help="where to build the data (default: a temp dir, removed after)")
    args = ap.parse_args(argv)
    n = args.rows or (100_000 if args.quick else 1_000_000)
    folder = Path(args.workdir or tempfile.mkdtemp(prefix="hardneg-scan-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        store_path, npy_path = build(folder, n, args.dim)
        build_s = time.perf_counter() - t0
        ref = scan_memmap(npy_path)  # warm-up: both files into the page cache
        np.testing.assert_allclose(scan_store(store_path), ref, rtol=1e-5)
        times = {"store": [], "store_unchecked": [], "memmap": [], "memmap_reused": []}
        scan_memmap_reused(npy_path)
        for _ in range(args.repeats):  # alternate so all see the same machine state
            for kind, fn, path in (("store", scan_store, store_path), ("store_unchecked", scan_store_unchecked, store_path),
                                   ("memmap", scan_memmap, npy_path), ("memmap_reused", scan_memmap_reused, npy_path)):
                t = time.perf_counter()
                fn(path)
                times[kind].append(time.perf_counter() - t)
        gb = n * args.dim * 4 / 1e9
        rows = []
        for kind, path in (("store", store_path), ("memmap", npy_path)):
            best = min(times[kind])
            base_mib, peak_mib = child_peak_rss(kind, path)
            rows.append({"reader": "FeatureStore.iter_chunks()" if kind == "store" else f".npy memmap, blocks of {block_rows(args.dim)}",
                         "best_s": best, "GB_per_s": gb / best, "peak_rss_MiB": peak_mib, "rss_after_imports_MiB": base_mib})
        best = min(times["memmap_reused"])
        rows.append({"reader": ".npy memmap kept mapped between scans", "best_s": best, "GB_per_s": gb / best,
                     "peak_rss_MiB": float("nan"), "rss_after_imports_MiB": float("nan")})
        best = min(times["store_unchecked"])
        rows.append({"reader": "FeatureStore.iter_chunks() without the NaN/inf check", "best_s": best, "GB_per_s": gb / best,
                     "peak_rss_MiB": float("nan"), "rss_after_imports_MiB": float("nan")})
        ratio = min(times["memmap"]) / min(times["store"])
        check_cost = min(times["store"]) / min(times["store_unchecked"])
        ratio_reused = min(times["memmap_reused"]) / min(times["store"])
        result = {"rows": n, "dim": args.dim, "gigabytes": gb, "build_s": build_s, "repeats": args.repeats,
                  "readers": rows, "throughput_ratio_store_vs_memmap": ratio,
                  "throughput_ratio_store_vs_memmap_kept_mapped": ratio_reused, "goal": ">= 0.7",
                  "time_ratio_checked_vs_unchecked_store_scan": check_cost}
        name = "store_scan_quick" if args.quick else "store_scan"
        path = write_results(name, result)
        print(markdown_table(rows, ["reader", "best_s", "GB_per_s", "peak_rss_MiB", "rss_after_imports_MiB"]))
        print(f"\nfull NaN/inf check: scan time x{check_cost:.2f} of the unchecked scan")
        print(f"\nthroughput ratio store/memmap: {ratio:.2f} (kept mapped: {ratio_reused:.2f}; goal >= 0.7); {n:,} × {args.dim} float32 = {gb:.2f} GB; results in {path}")
        return result
    finally:
        if args.workdir is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
