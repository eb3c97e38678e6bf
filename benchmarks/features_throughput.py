"""Images/s of the two extractors at their default settings, on this machine.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/features_throughput.py [--quick] [--threads 2]

Rows: EfficientNet-Lite0 at 224 (library default) on the skimage/sklearn
photos, EfficientNet-Lite0 at 96 on Fashion-MNIST (the cached store's
setting), dense SIFT + 1,024-word BoW at the library default (step 8, bins
4/6/8, photos downscaled to 320 px) on the photos, and the Fashion-MNIST
dense-SIFT setting. Timings are also given as ratios to the CNN at 224,
measured in the same process. Writes benchmarks/results/features_throughput.json.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import write_results  # noqa: E402


def photos():
    import skimage.data as d
    from sklearn.datasets import load_sample_images

    names = ["astronaut", "camera", "cat", "chelsea", "coffee", "coins", "horse", "hubble_deep_field", "immunohistochemistry", "moon", "page", "rocket", "text"]
    imgs = []
    for n in names:
        try:
            imgs.append(np.asarray(getattr(d, n)()))
        except Exception:  # some skimage images need pooch downloads
            pass
    imgs += list(load_sample_images().images)
    return [im if im.dtype == np.uint8 else (im * 255).astype(np.uint8) for im in imgs]


def timed(fn, images, repeats):
    fn(images[:2])  # warm-up: model load, allocator
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn(images)
        best = min(best, time.perf_counter() - t)
    return len(images) / best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import torch

    from hardneg.datasets import load_fashion_mnist
    from hardneg.features import BagOfWords, DenseSift, EfficientNetLite0, fashion_extractor

    torch.set_num_threads(args.threads)
    repeats = 1 if args.quick else 2
    ph = photos()
    if args.quick:
        ph = ph[:6]
    fm = load_fashion_mnist()
    fm_imgs = list(fm.images[: 64 if args.quick else 512])
    sizes = [f"{im.shape[1]}x{im.shape[0]}" for im in ph]

    cnn224 = EfficientNetLite0(num_threads=args.threads)
    cnn96 = fashion_extractor("cnn", num_threads=args.threads)
    bow = BagOfWords(DenseSift(), n_words=1024, random_state=0).fit_images(ph)
    fm_bow = fashion_extractor("dsift").fit_images(list(fm.images[-(200 if args.quick else 2000):]), random_state=0)
    rows = []
    base = None
    for name, data_name, ext, imgs in [
        ("EfficientNet-Lite0 @224 (default)", "photos", cnn224, ph),
        ("EfficientNet-Lite0 @96 (fashion-mnist-cnn)", "Fashion-MNIST", cnn96, fm_imgs),
        ("dense SIFT + BoW-1024 (default)", "photos", bow, ph),
        ("dense SIFT only (default)", "photos", bow.descriptor.describe, ph),
        ("dense SIFT 64px + BoW-1024 (fashion-mnist-dsift1024)", "Fashion-MNIST", fm_bow, fm_imgs),
        ("dense SIFT 64px only", "Fashion-MNIST", fm_bow.descriptor.describe, fm_imgs),
    ]:
        fn = ext.transform if hasattr(ext, "transform") else ext
        ips = timed(fn, imgs, repeats)
        base = base or ips
        rows.append({"extractor": name, "data": data_name, "n_images": len(imgs), "images_per_s": round(ips, 2), "speed_vs_cnn224": round(ips / base, 2)})

    result = {
        "study": "features_throughput",
        "quick": args.quick,
        "photo_sizes": sizes,
        "rows": rows,
        "machine": {
            "processor": platform.processor(), "cpu_count": os.cpu_count(), "torch_threads": args.threads,
            "numpy": np.__version__, "torch": torch.__version__, "load_avg": os.getloadavg(),
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
        },
    }
    write_results("features_throughput_quick" if args.quick else "features_throughput", result)
    print("| extractor | data | images | images/s | speed vs CNN@224 |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['extractor']} | {r['data']} | {r['n_images']} | {r['images_per_s']} | {r['speed_vs_cnn224']}x |")


if __name__ == "__main__":
    main()
