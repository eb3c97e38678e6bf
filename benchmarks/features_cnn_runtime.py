"""EfficientNet-Lite0 extraction: the whole pipeline against the network's forward rate.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/features_cnn_runtime.py [--n 210] [--repeats 3] [--threads 2]

Data: a fixed seeded sample of the Debian package ``openclipart-png`` (real
clip art of mixed sizes and modes: RGBA, grey+alpha, palette), plus its
21k x 30k decompression-bomb-sized file, which every pipeline skips with
one line. Files of more than 50 Mpx are left out of the sample (16 of the
8,121 files hold 68 % of the collection's pixels; one of them costs more
to decode than the forward pass of the whole sample; the JSON counts those
left out). Rows, all in one process on the same images, each repeat in turn:

- forward torch / onnx: ``transform`` on the images already decoded and
  resized to 224 x 224 (normalization + forward: the pure forward rate;
  PyTorch on the first ``--n-torch`` of them); ONNX as shipped (``--threads``
  intra-op threads, no spin-wait), with spin-wait, and with one thread: the
  ratios are to the best of these three in each repeat;
- pipeline new: ``extract_to_store`` as shipped (ONNX; decode, compositing
  and the one resize in threads, the next batch while this one runs, each
  batch appended to the store in a writer thread while the next runs);
- pipeline new with ONNX Runtime's spin-wait; with one ONNX Runtime thread
  (the other core left to decoding); with the append inline (as
  before, between two forwards); with the read as before (decoded reduced
  down to 2x the side, plain bicubic resize);
- pipeline serial: ``decode_threads=0`` (each image decoded full size in
  the calling thread, resized in the extractor), ONNX;
- pipeline old: serial, with the float32 NumPy compositing that extraction
  used before (as of commit fec49fb), ONNX.

Every pipeline row commits batches of 64 images. One small extraction
(8 files) before the repeats warms up the store code, as the forward rows
get a warm-up batch. Speeds are ratios to the best ONNX forward of the same
repeat (the machine is shared and noisy); min and median over repeats;
rows after the first run in another order each repeat; CPU ms per image
(the process's CPU time, all threads) beside each. The loader's CPU per
image is split into its steps (decode, PNG check, compositing, resize).
Cosines per row: ONNX vs PyTorch forward; new vs old pipeline (same ids);
and, for images at least twice the input side, the loader's reduced read
(integer box reduction after the PNG decode, JPEG draft mode on a
quality-95 JPEG copy, then the resize with ``reducing_gap``) vs the full
decode and plain resize. Writes benchmarks/results/features_cnn_runtime.json.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._common import markdown_table, write_results  # noqa: E402

BATCH = 64  # images per committed batch in every pipeline row
BOMB = "signs_and_symbols/stop_sign_miguel_s_nchez_.png"
NEW = "pipeline new (threads + prefetch + writer thread)"
OLD = "pipeline old (serial, float compositing)"


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


def old_load(item):
    """Extraction's read before the threaded loader (fec49fb): full decode, float32 NumPy compositing."""
    from hardneg._imaging import open_image

    im = open_image(item.path)
    with im:
        if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
            a = np.asarray(im.convert("RGBA"))
            alpha = a[:, :, 3:4].astype(np.float32) / 255.0
            rgb = a[:, :, :3].astype(np.float32) * alpha + 255.0 * (1.0 - alpha)
            return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
        return np.asarray(im.convert("RGB"))


def read_square_2x(path, size, resize, *, target_size=None):
    """The loader's read before the 3x limit (5ef6796): decoded reduced down to 2x the side, plain bicubic resize."""
    from hardneg._imaging import open_image
    from hardneg.features._images import rgb_image, fit_square

    im = open_image(path, target_size=target_size)
    with im:
        return np.asarray(fit_square(rgb_image(im, path), size, resize))


def pixels(path) -> int:
    from PIL import Image

    with Image.open(path) as im:  # the header only; the 21k x 30k bomb raises here
        return im.size[0] * im.size[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=210)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n-torch", type=int, default=32, help="images in the PyTorch forward row (eager PyTorch is ~20x slower)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    load_start = os.getloadavg()

    import torch
    from PIL import Image

    from hardneg.features import EfficientNetLite0, extract_to_store
    from hardneg.features import _pipeline as pipeline_mod
    from hardneg.features._extract import _Extraction
    from hardneg.features._images import ImageItem, ImageReadError, fit_square, read_image, read_image_square
    from hardneg.store import FeatureStore

    class SpinningLite0(EfficientNetLite0):
        """ONNX Runtime's intra-op threads spin-wait for work: the comparison row (the library never spins)."""

        def _session_config(self):
            return {**super()._session_config(), "session.intra_op.allow_spinning": "1"}

    torch.set_num_threads(args.threads)
    picked = sample(openclipart_files(), args.n)
    huge = [f for f in picked if not f.endswith(BOMB) and pixels(f) > 50e6]  # Pillow's guard refuses > 179 Mpx
    paths = [p for p in picked if p not in huge]
    full, decoded = [], []
    for p in paths:
        try:
            full.append(read_image(p))
            decoded.append(p)
        except ImageReadError as exc:
            print(f"(forward rows skip {Path(p).name}: {type(exc).__name__})", flush=True)
    sides = np.sqrt([im.shape[0] * im.shape[1] for im in full])
    images = [np.asarray(fit_square(Image.fromarray(im), 224, "stretch")) for im in full]  # network-ready

    def make(runtime, threads=args.threads, spinning=False):
        return (SpinningLite0 if spinning else EfficientNetLite0)(resize="stretch", num_threads=threads, runtime=runtime)

    torch_ext, onnx_ext = make("torch"), make("onnx")
    t = time.perf_counter()
    if onnx_ext.active_runtime != "onnx":
        raise SystemExit("onnxruntime is not usable here")
    onnx_open_s = time.perf_counter() - t
    spin_ext, one_ext = make("onnx", spinning=True), make("onnx", threads=1)
    for ext in (torch_ext, onnx_ext, spin_ext, one_ext):
        ext.transform(images[:2])  # warm-up: model load, allocator
    if onnx_ext._session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") != "0":
        raise RuntimeError("the shipped session spins")

    def pipeline(folder, threads, ext=onnx_ext, old=False, inline=False, read_2x=False, files=paths):
        shutil.rmtree(folder, ignore_errors=True)
        load, run_batches, square = ImageItem.load, _Extraction._transform_and_append, pipeline_mod.read_image_square
        if old:
            ImageItem.load = old_load
        if inline:
            _Extraction._transform_and_append = lambda self, loaded, progress, background: run_batches(self, loaded, progress, background=False)
        if read_2x:
            pipeline_mod.read_image_square = read_square_2x
        try:
            return extract_to_store(files, folder, ext, overwrite=True, batch_size=BATCH, decode_threads=threads)
        finally:
            ImageItem.load, _Extraction._transform_and_append, pipeline_mod.read_image_square = load, run_batches, square

    tmp = Path(tempfile.mkdtemp(prefix="hardneg-bench-"))
    forwards = ("forward onnx", "forward onnx, spinning", "forward onnx, 1 thread")
    rows_fn = {
        "forward torch": lambda: torch_ext.transform(images[: args.n_torch]),
        "forward onnx": lambda: onnx_ext.transform(images),
        "forward onnx, spinning": lambda: spin_ext.transform(images),
        "forward onnx, 1 thread": lambda: one_ext.transform(images),
        NEW: lambda: pipeline(tmp / "new", None),
        "pipeline new, spinning": lambda: pipeline(tmp / "spin", None, ext=spin_ext),
        "pipeline new, ORT 1 thread": lambda: pipeline(tmp / "ort1", None, ext=one_ext),
        "pipeline new, append inline": lambda: pipeline(tmp / "inline", None, inline=True),
        "pipeline new, 2x read (before)": lambda: pipeline(tmp / "read2x", None, read_2x=True),
        "pipeline serial (decode_threads=0)": lambda: pipeline(tmp / "serial", 0),
        OLD: lambda: pipeline(tmp / "old", 0, old=True),
    }
    names = tuple(rows_fn)
    runs: dict = {k: [] for k in names}
    cos_fwd = cos_pipe = None
    cos_vs: dict = {}
    try:
        cos_reduce = reduced_decode_cosines(onnx_ext, decoded, full, tmp, read_image_square)
        loader_cpu = loader_stages(decoded)
        pipeline(tmp / "warm", None, files=paths[:8])  # first use of the store code (zarr, parquet) in this process
        for rep in range(args.repeats):
            rates = {}
            cpu = {}
            rest = names[1:]  # torch first (the reference of the ONNX cosines), the others in turn from another row each repeat
            for name in names[:1] + rest[rep % len(rest):] + rest[: rep % len(rest)]:
                t, c = time.perf_counter(), time.process_time()
                out = rows_fn[name]()
                dt, dc = time.perf_counter() - t, time.process_time() - c
                n_done = len(out) if name.startswith("forward") else out.n_added
                rates[name], cpu[name] = n_done / dt, dc / n_done
                if rep == 0 and name == "forward torch":
                    ref = out
                if rep == 0 and name == "forward onnx":
                    cos_fwd = cosine(out[: len(ref)], ref)
                if name.startswith("pipeline") and rep == 0 and out.n_failed != len(paths) - len(images):
                    raise RuntimeError(f"{name}: unexpected failures {out.failed}")
            best = max(rates[k] for k in forwards)
            for k, v in rates.items():
                runs[k].append({"images_per_s": v, "vs_best_onnx_forward": v / best, "vs_shipped_onnx_forward": v / rates["forward onnx"],
                                "cpu_ms_per_img": 1e3 * cpu[k], "load_avg_1min": os.getloadavg()[0]})
            print(f"repeat {rep}: " + ", ".join(f"{k} {rates[k]:.2f}/s" for k in names), flush=True)
            if rep == 0:
                new = FeatureStore.open(str(tmp / "new"))
                inn = new.items.column("id").to_pylist()
                for other in ("old", "read2x"):
                    st = FeatureStore.open(str(tmp / other))
                    order = [inn.index(i) for i in st.items.column("id").to_pylist()]
                    cos_vs[other] = cosine(np.asarray(new.to_numpy())[order], np.asarray(st.to_numpy()))
                cos_pipe = cos_vs["old"]

            rows = []
            for k, rs in runs.items():
                ips = np.array([r["images_per_s"] for r in rs])
                rat = np.array([r["vs_best_onnx_forward"] for r in rs])
                rows.append({"row": k, "img/s min": float(ips.min()), "img/s median": float(np.median(ips)),
                             "vs best onnx fwd min": float(rat.min()), "vs best onnx fwd median": float(np.median(rat)),
                             "CPU ms/img median": float(np.median([r["cpu_ms_per_img"] for r in rs]))})
            ratio = {k: np.array([r["vs_best_onnx_forward"] for r in runs[k]]) for k in names}
            new_vs_old = np.array([a["images_per_s"] / b["images_per_s"] for a, b in zip(runs[NEW], runs[OLD])])
            payload = {
                "study": "features_cnn_runtime",
                "data": {"source": "openclipart-png", "n_files": len(paths), "n_decodable": len(images), "seed": 0,
                         "left_out_over_50_mpx": [Path(f).name for f in huge],
                         "side_px_percentiles_10_50_90_max": [float(v) for v in np.percentile(sides, [10, 50, 90, 100])]},
                "settings": {"n_torch_forward": args.n_torch, "model": "EfficientNet-Lite0", "input_size": 224, "resize": "stretch", "threads": args.threads,
                             "batch": BATCH, "repeats": args.repeats, "torch": torch.__version__,
                             "onnxruntime": __import__("onnxruntime").__version__, "onnx_session_open_s": round(onnx_open_s, 2)},
                "rows": rows,
                "runs": runs,
                "ratios_are_to": "the best of the three ONNX forward rows in each repeat",
                "best_forward_row_per_repeat": [max(forwards, key=lambda k: runs[k][r]["images_per_s"]) for r in range(rep + 1)],
                "pipeline_new_vs_onnx_forward": _mm(ratio[NEW]),
                "pipeline_new_vs_shipped_onnx_forward": _mm([r["vs_shipped_onnx_forward"] for r in runs[NEW]]),
                "pipeline_old_vs_onnx_forward": _mm(ratio[OLD]),
                "pipeline_new_vs_old": _mm(new_vs_old),
                "onnx_vs_torch_forward": _mm([1.0 / r["vs_shipped_onnx_forward"] for r in runs["forward torch"]]),
                "cosine_onnx_vs_torch_forward": _mm(cos_fwd),
                "cosine_new_vs_old_pipeline": _mm(cos_pipe),
                "cosine_new_vs_2x_read_pipeline": {**_mm(cos_vs["read2x"]), "n_below_0.999": int((cos_vs["read2x"] < 0.999).sum())},
                "cosine_reduced_vs_full_decode": cos_reduce,
                "loader_cpu_ms_per_img": loader_cpu,
                "load_avg_start": load_start, "load_avg_end": os.getloadavg(), "repeats_done": rep + 1,
            }
            path = write_results("features_cnn_runtime", payload)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(markdown_table(rows, ["row", "img/s min", "img/s median", "vs best onnx fwd min", "vs best onnx fwd median", "CPU ms/img median"]))
    print(f"loader CPU ms/img: {payload['loader_cpu_ms_per_img']}")
    for k in ("pipeline_new_vs_onnx_forward", "pipeline_old_vs_onnx_forward", "pipeline_new_vs_old", "cosine_new_vs_old_pipeline",
              "cosine_reduced_vs_full_decode"):
        print(f"{k}: {payload[k]}")
    print(f"load average start {load_start}, end {payload['load_avg_end']}; wrote {path}")


def _mm(a) -> dict:
    a = np.asarray(a, dtype=float)
    return {"min": float(a.min()), "median": float(np.median(a)), "max": float(a.max())}


def loader_stages(paths) -> dict:
    """CPU ms per image of each step of the loader's read (one thread, as a decode thread does it)."""
    from hardneg import _imaging
    from hardneg.features._images import RESIZE_REDUCING_GAP, rgb_image, fit_square

    spent = dict.fromkeys(("open and decode, without the PNG check", "PNG completeness check (second inflate)",
                           "to RGB (compositing)", "bicubic resize"), 0.0)
    check = _imaging._check_png_complete

    def timed_check(fp, label):
        c = time.thread_time()
        check(fp, label)
        spent["PNG completeness check (second inflate)"] += time.thread_time() - c

    _imaging._check_png_complete = timed_check
    try:
        for p in paths:
            c0 = time.thread_time()
            im = _imaging.open_image(p, target_size=int(224 * RESIZE_REDUCING_GAP / _imaging.REDUCING_GAP))
            c1 = time.thread_time()
            rgb = rgb_image(im, p)
            c2 = time.thread_time()
            fit_square(rgb, 224, "stretch", reducing_gap=RESIZE_REDUCING_GAP)
            c3 = time.thread_time()
            spent["open and decode, without the PNG check"] += c1 - c0
            spent["to RGB (compositing)"] += c2 - c1
            spent["bicubic resize"] += c3 - c2
    finally:
        _imaging._check_png_complete = check
    spent["open and decode, without the PNG check"] -= spent["PNG completeness check (second inflate)"]
    out = {k: round(1e3 * v / len(paths), 3) for k, v in spent.items()}
    out["total"] = round(sum(out.values()), 3)
    return out


def reduced_decode_cosines(ext, paths, full, tmp, read_image_square) -> dict:
    """Per-row cosine, the loader's reduced read vs full decode and plain resize, on the images
    with a side at least ``RESIZE_REDUCING_GAP`` times the input side (the others read the same)."""
    from PIL import Image

    from hardneg.features._images import RESIZE_REDUCING_GAP

    size = 224
    big = [(p, im) for p, im in zip(paths, full) if max(im.shape[:2]) >= RESIZE_REDUCING_GAP * size]
    out = {"n_images": len(big)}
    if not big:
        return out
    full_rows = ext.transform([read_image_square(p, size, "stretch") for p, _ in big])
    png_reduced = ext.transform([read_image_square(p, size, "stretch", target_size=size) for p, _ in big])
    jpgs = []
    for k, (_, im) in enumerate(big):
        jpgs.append(tmp / f"{k}.jpg")
        Image.fromarray(im).save(jpgs[-1], quality=95)
    jpg_full = ext.transform([read_image_square(p, size, "stretch") for p in jpgs])
    jpg_draft = ext.transform([read_image_square(p, size, "stretch", target_size=size) for p in jpgs])
    for name, c in (("png_box_reduce", cosine(png_reduced, full_rows)), ("jpeg_draft", cosine(jpg_draft, jpg_full))):
        out[name] = {**_mm(c), "p01": float(np.percentile(c, 1)), "n_below_0.999": int((c < 0.999).sum())}
    return out


if __name__ == "__main__":
    main()
