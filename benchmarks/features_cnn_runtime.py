"""EfficientNet-Lite0 throughput: eager PyTorch against ONNX Runtime, forward and whole pipeline.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/features_cnn_runtime.py [--n 300] [--repeats 3] [--threads 2]

Data: a fixed seeded sample of the Debian package ``openclipart-png`` (real
clip art of mixed sizes and modes: RGBA, grey+alpha, palette), plus its
21k x 30k decompression-bomb-sized file, which every pipeline skips with
one line. Rows, all in one process on the same images, each repeat in turn:

- forward torch / onnx: ``transform`` on the images already decoded (the
  network's own preprocess + forward; ``resize="stretch"`` as the CLI);
- pipeline old: ``extract_to_store`` as shipped (serial full-size decode,
  PyTorch);
- pipeline old + onnx: the same loop with the ONNX runtime;
- pipeline new: ONNX runtime, and the batch read replaced by
  :func:`hardneg.features._pipeline.load_batch` (decoding in threads,
  downscaled to what the network needs);
- pipeline new + prefetch: as new, with the next batch decoded while the
  current one runs (:func:`hardneg.features._pipeline.prefetch`).

Every pipeline row commits batches of 64 images.

Speeds are ratios to the PyTorch forward of the same repeat (the machine is
shared and noisy); min and median over repeats are reported. Cosines per
row: ONNX forward vs PyTorch forward, and new-pipeline rows vs old-pipeline
rows (same ids). Writes benchmarks/results/features_cnn_runtime.json.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._common import markdown_table, write_results  # noqa: E402

BATCH = 64  # images per committed batch in every pipeline row
BOMB = "signs_and_symbols/stop_sign_miguel_s_nchez_.png"


def openclipart_files() -> list[str]:
    out = subprocess.run(["dpkg", "-L", "openclipart-png"], capture_output=True, text=True, check=False).stdout
    files = sorted(line for line in out.split() if line.endswith(".png") and os.path.isfile(line))
    if not files:
        raise SystemExit("openclipart-png is not installed: apt-get install -y openclipart-png")
    return files


def sample(files: list[str], n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    pick = [files[i] for i in sorted(rng.choice(len(files), size=min(n, len(files)), replace=False))]
    bomb = [f for f in files if f.endswith(BOMB)]
    return pick + [f for f in bomb if f not in pick]


def cosine(a, b):
    return (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    import torch

    from hardneg.features import EfficientNetLite0, extract_to_store
    from hardneg.features import _extract
    from hardneg.features._images import ImageReadError, read_image
    from hardneg.features._images import resolve_images
    from hardneg.features._pipeline import load_batch, prefetch
    from hardneg.store import FeatureStore

    torch.set_num_threads(args.threads)
    paths = sample(openclipart_files(), args.n)
    images, decoded = [], []
    for p in paths:
        try:
            images.append(read_image(p))
            decoded.append(p)
        except ImageReadError as exc:
            print(f"(forward rows skip {Path(p).name}: {type(exc).__name__})")
    sides = np.sqrt([im.shape[0] * im.shape[1] for im in images])

    def make(runtime):
        return EfficientNetLite0(resize="stretch", num_threads=args.threads, runtime=runtime)

    torch_ext, onnx_ext = make("torch"), make("onnx")
    t = time.perf_counter()
    assert onnx_ext.active_runtime == "onnx"
    onnx_open_s = time.perf_counter() - t
    torch_ext.transform(images[:2])
    onnx_ext.transform(images[:2])  # warm-up: model load, allocator

    original_load = _extract._load_batch
    threaded_load = functools.partial(load_batch, target_size=onnx_ext.decode_size, n_threads=args.threads)

    def forward(ext):
        return ext.transform(images)

    def prefetching_load():
        """What the call site would do with hardneg.features._pipeline.prefetch: decode batch k+1 while k runs.
        extract_to_store's loop is not ours to change, so its batch read is answered from a prefetching generator."""
        items = resolve_images(paths)
        batches = [items[lo : lo + BATCH] for lo in range(0, len(items), BATCH)]

        def load(batch):
            summary = types.SimpleNamespace(failed=[])
            return load_batch(batch, summary, target_size=onnx_ext.decode_size, n_threads=args.threads), summary.failed

        gen = prefetch(batches, load)

        def patched(batch, summary):
            want, ((good, imgs), failed) = next(gen)
            if [it.id for it in want] != [it.id for it in batch]:
                raise RuntimeError("prefetched batches out of step with extract_to_store")
            summary.failed.extend(failed)
            return good, imgs

        return patched

    def pipeline(ext, load, folder):
        _extract._load_batch = load() if load is prefetching_load else load
        try:
            shutil.rmtree(folder, ignore_errors=True)
            s = extract_to_store(paths, folder, ext, overwrite=True, batch_size=BATCH)
        finally:
            _extract._load_batch = original_load
        return s

    tmp = Path(tempfile.mkdtemp(prefix="hardneg-bench-"))
    runs = {k: [] for k in ("forward torch", "forward onnx", "pipeline old (torch)", "pipeline old + onnx", "pipeline new (onnx, threaded decode)",
                            "pipeline new + prefetch")}
    cos_fwd, cos_pipe = None, None
    try:
        for rep in range(args.repeats):
            rates = {}
            for name, fn in [
                ("forward torch", lambda: forward(torch_ext)),
                ("forward onnx", lambda: forward(onnx_ext)),
                ("pipeline old (torch)", lambda: pipeline(torch_ext, original_load, tmp / "old")),
                ("pipeline old + onnx", lambda: pipeline(onnx_ext, original_load, tmp / "old_onnx")),
                ("pipeline new (onnx, threaded decode)", lambda: pipeline(onnx_ext, threaded_load, tmp / "new")),
                ("pipeline new + prefetch", lambda: pipeline(onnx_ext, prefetching_load, tmp / "new_prefetch")),
            ]:
                t = time.perf_counter()
                out = fn()
                dt = time.perf_counter() - t
                n_done = len(images) if name.startswith("forward") else out.n_added
                rates[name] = n_done / dt
                if rep == 0 and name == "forward torch":
                    ref = out
                if rep == 0 and name == "forward onnx":
                    cos_fwd = cosine(out, ref)
                if name.startswith("pipeline") and rep == 0:
                    assert out.n_failed == len(paths) - len(images), out.failed
            base = rates["forward torch"]
            for k, v in rates.items():
                runs[k].append({"images_per_s": v, "vs_torch_forward": v / base, "load_avg_1min": os.getloadavg()[0]})
            print(f"repeat {rep}: " + ", ".join(f"{k} {v:.2f}/s" for k, v in rates.items()), flush=True)
            if rep == 0:
                old = FeatureStore.open(str(tmp / "old"))
                new = FeatureStore.open(str(tmp / "new_prefetch"))
                Xo, Xn = np.asarray(old.to_numpy()), np.asarray(new.to_numpy())
                io, inn = [list(s.ids() if callable(s.ids) else s.ids) for s in (old, new)]
                order = [inn.index(i) for i in io]
                cos_pipe = cosine(Xn[order], Xo)

            rows = []
            for k, rs in runs.items():
                ips = np.array([r["images_per_s"] for r in rs])
                rat = np.array([r["vs_torch_forward"] for r in rs])
                rows.append({"row": k, "img/s min": float(ips.min()), "img/s median": float(np.median(ips)),
                             "vs torch fwd min": float(rat.min()), "vs torch fwd median": float(np.median(rat))})
            fwd_onnx = np.array([r["images_per_s"] for r in runs["forward onnx"]])
            new_pipe = np.array([r["images_per_s"] for r in runs["pipeline new + prefetch"]])
            pipe_vs_fwd = new_pipe / fwd_onnx
            payload = {
                "study": "features_cnn_runtime",
                "data": {"source": "openclipart-png", "n_files": len(paths), "n_decodable": len(images), "seed": 0,
                         "side_px_percentiles_10_50_90_max": [float(v) for v in np.percentile(sides, [10, 50, 90, 100])]},
                "settings": {"model": "EfficientNet-Lite0", "input_size": 224, "resize": "stretch", "threads": args.threads,
                             "repeats": args.repeats, "torch": torch.__version__, "onnxruntime": __import__("onnxruntime").__version__,
                             "onnx_session_open_s": round(onnx_open_s, 2)},
                "rows": rows,
                "runs": runs,
                "new_pipeline_vs_onnx_forward": {"min": float(pipe_vs_fwd.min()), "median": float(np.median(pipe_vs_fwd))},
                "cosine_onnx_vs_torch_forward": {"min": float(cos_fwd.min()), "median": float(np.median(cos_fwd))},
                "cosine_new_vs_old_pipeline": {"min": float(cos_pipe.min()), "median": float(np.median(cos_pipe)),
                                               "p01": float(np.percentile(cos_pipe, 1))},
                "load_avg_end": os.getloadavg(), "repeats_done": rep + 1,
            }
            path = write_results("features_cnn_runtime", payload)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(markdown_table(rows, ["row", "img/s min", "img/s median", "vs torch fwd min", "vs torch fwd median"]))
    print(f"new pipeline / onnx forward: {payload['new_pipeline_vs_onnx_forward']}")
    print(f"cosine onnx vs torch (forward): {payload['cosine_onnx_vs_torch_forward']}; new vs old pipeline: {payload['cosine_new_vs_old_pipeline']}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
