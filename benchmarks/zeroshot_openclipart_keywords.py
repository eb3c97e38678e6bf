"""Zero-shot on openclipart with per-image keyword attributes from the SVG sources ([Bucher16] Table 1's samplers).

Issue 38 item 4, the per-image protocol. Images, classes, features and splits are those of
``benchmarks/zeroshot_openclipart.py`` (folders with >= 40 PNGs, <= 40 images each,
EfficientNet-Lite0 1280-d, ``--splits`` random 60/40 seen/unseen class splits, 80 % of
each seen class trains, PCA-64 of the features fitted on the split's training images).
Side information: for every PNG, the SVG of the same name in Debian's ``openclipart-svg``;
its ``<dc:subject>`` keywords (``<rdf:li>``) and the words of its ``<dc:title>`` (lower case,
letters only, >= 3 letters, a short stop-word list removed), each image's set of keywords.
Attributes: one binary attribute per keyword carried by >= ``--min-keyword-images`` (20) of
the kept images, less noise words (``hash``, ``magick``, ``unsorted``, ``clip``, ``art``, ...).
Every image has its own attribute vector (as aP&Y's per-image annotations): training pairs
use it, and a class's prototype is the mean of its images' vectors -- for the unseen classes
too, as in [Bucher16]'s aP&Y protocol, which is what makes this per-image protocol the one
where [Bucher16] Eq. (9)-(10) (unc./cor., ``sampler="correlation"``) applies.

Methods, on the same split: ESZSL, DAP, Bucher [1] as printed ([Bucher16]'s baseline: random
negatives, n = 1, [Bucher16] Eq. (6), a fresh negative set every epoch), and with n = ``--n``
(2), [Bucher16] Eq. (11) and the growing D- (cap 10 per image): random, uncertainty
([Bucher16] Eq. (8)) and unc./cor. ([Bucher16] Eq. (9)-(10)). Every ZeroShotClassifier uses
the library's defaults of issue 38 (loss-plateau stopping, ``lr="auto"``, mu 1e-2); untuned.
ZSL accuracy: mean per-class accuracy on the unseen classes' images among the unseen classes
([Bucher16] Eq. (7)). Paired per-split differences against random and against ESZSL.

    taskset -c 1 env OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/zeroshot_openclipart_keywords.py
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write_results  # noqa: E402
from benchmarks.zeroshot_openclipart import (  # noqa: E402
    NO_SUBJECT, ROOT, cnn_features, openclipart_classes, paired, split, split_inputs, summary,
)

SVG_ROOT = Path("/usr/share/openclipart/svg")
NOISE = {"hash", "magick", "unsorted", "clip", "art", "clipart", "openclipart", "image", "png", "svg", "media",
         "the", "and", "with", "for", "from", "lumen", "design", "studio", "architetto", "francesco", "rollandin",
         "public", "domain", "untitled", "remix",
         # authors' names and dates that the SVG metadata carries as keywords: not about the picture
         "architetto francesco rollandin", "alan", "buculei", "gramastar", "horkan", "nicu", "aug", "wed"}
_LI = re.compile(r"<rdf:li>([^<]*)</rdf:li>")
_SUBJECT = re.compile(r"<dc:subject>(.*?)</dc:subject>", re.S)
_TITLE = re.compile(r"<dc:title>([^<]*)</dc:title>")


def svg_keywords(png: str) -> set[str]:
    """The keywords of one image: its SVG's <dc:subject> items and the words of its first <dc:title>."""
    svg = SVG_ROOT / Path(png).relative_to(ROOT).with_suffix(".svg")
    try:
        text = svg.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    words: set[str] = set()
    subject = _SUBJECT.search(text)
    if subject:
        words |= {w.strip().lower() for w in _LI.findall(subject.group(1)) if w.strip()}
    title = _TITLE.search(text)
    if title:
        words |= {w for w in re.findall(r"[a-z]+", title.group(1).lower()) if len(w) >= 3}
    return {w for w in words if w not in NOISE}


def keyword_attributes(paths: list[str], min_images: int) -> tuple[np.ndarray, list[str], int]:
    """Binary (n_images, n_keywords) attributes, the vocabulary, and how many images carry none of it."""
    kws = [svg_keywords(p) for p in paths]
    counts = Counter(k for ks in kws for k in ks)
    vocab = sorted(k for k, c in counts.items() if c >= min_images)
    index = {k: i for i, k in enumerate(vocab)}
    A = np.zeros((len(paths), len(vocab)), np.float32)
    for r, ks in enumerate(kws):
        for k in ks:
            if k in index:
                A[r, index[k]] = 1.0
    return A, vocab, int((A.sum(1) == 0).sum())


def methods(args):
    from hardneg.zeroshot import DAP, ESZSL, ZeroShotClassifier

    hard = dict(n_negatives=args.n, max_negatives=args.max_negatives)
    return {
        "ESZSL": lambda s: ESZSL(),
        "DAP": lambda s: DAP(),
        "Bucher [1] (random, n=1, Eq. 6, redraw)": lambda s: ZeroShotClassifier(
            sampler="random", n_negatives=1, balanced=False, negative_set="redraw", random_state=s),
        "random": lambda s: ZeroShotClassifier(sampler="random", random_state=s, **hard),
        "uncertainty": lambda s: ZeroShotClassifier(sampler="uncertainty", random_state=s, **hard),
        "unc./cor.": lambda s: ZeroShotClassifier(sampler="correlation", random_state=s, **hard),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-images", type=int, default=40)
    ap.add_argument("--per-class", type=int, default=40)
    ap.add_argument("--min-keyword-images", type=int, default=20)
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--n", type=int, default=2)
    ap.add_argument("--max-negatives", type=int, default=10)
    ap.add_argument("--pca", type=int, default=64)
    ap.add_argument("--name", default="zeroshot_openclipart_keywords")
    args = ap.parse_args()
    t_start = time.time()
    classes = openclipart_classes(args.min_images, args.per_class)
    X_cnn, y, kept = cnn_features(classes, 1)
    paths = np.asarray([f for fs in classes.values() for f in fs])[kept]
    cats = list(classes)
    drop = [k for k, c in enumerate(cats) if c in NO_SUBJECT]
    if drop:  # the same classes as zeroshot_openclipart.py
        keep = ~np.isin(y, drop)
        X_cnn, y, paths = X_cnn[keep], np.searchsorted(np.setdiff1d(np.arange(len(cats)), drop), y[keep]), paths[keep]
        cats = [c for c in cats if c not in NO_SUBJECT]
    A_img, vocab, n_empty = keyword_attributes(list(paths), args.min_keyword_images)
    print(f"[{time.time() - t_start:.0f}s] {len(cats)} classes, {len(y)} images, {len(vocab)} keywords "
          f"({n_empty} images with none), {A_img.sum(1).mean():.2f} per image", flush=True)
    import torch

    torch.set_num_threads(1)
    from hardneg.eval import mean_per_class_accuracy

    make = methods(args)
    acc: dict = {}
    fit_s: dict = {}
    epochs: dict = {}
    pa = argparse.Namespace(pca=args.pca, attr_dims=0)
    for s in range(args.splits):
        seen, unseen, train, test_seen, test_unseen = split(y, len(cats), s)
        X, _ = split_inputs(X_cnn, A_img, train, seen, pa)
        # the unseen classes' prototypes: their images' mean keyword vectors ([Bucher16]'s aP&Y protocol)
        ut = (unseen, np.stack([A_img[y == c].mean(0) for c in unseen]))
        for name, mk in make.items():
            clf = mk(s)
            t0 = time.perf_counter()
            clf.fit(X[train], y[train], sample_attributes=A_img[train])
            fit_s.setdefault(name, []).append(time.perf_counter() - t0)
            a = 100 * mean_per_class_accuracy(y[test_unseen], clf.predict(X[test_unseen], class_attributes=ut))
            acc.setdefault(name, []).append(a)
            if hasattr(clf, "n_epochs_"):
                epochs.setdefault(name, []).append(clf.n_epochs_)
            print(f"[{time.time() - t_start:.0f}s] split {s} {name}: {a:.2f} ({fit_s[name][-1]:.1f}s)", flush=True)
        ratio = {k: float(np.median([a / b for a, b in zip(v, fit_s["random"])])) for k, v in fit_s.items()}
        results = {
            "zsl": summary(acc), "paired_vs_random": paired(acc, "random"), "paired_vs_ESZSL": paired(acc, "ESZSL"),
            "epochs_run_mean": {k: float(np.mean(v)) for k, v in epochs.items()},
            "fit_time_ratio_vs_random_median": ratio,
            "setup": {
                "data": f"openclipart-png images of {len(cats)} folders (as zeroshot_openclipart.py), {len(y)} images; "
                        "features EfficientNet-Lite0 1280-d, PCA-64 per split",
                "attributes": f"{len(vocab)} binary keywords from openclipart-svg <dc:subject> and <dc:title> words, each on "
                              f">= {args.min_keyword_images} images; {n_empty} images carry none; "
                              f"{float(A_img.sum(1).mean()):.2f} per image",
                "keywords": vocab, "noise_words_removed": sorted(NOISE),
                "protocol": "per-image attribute vectors for training; class prototypes = class means (unseen too)",
                "splits": s + 1, "splits_asked": args.splits, "n": args.n, "max_negatives": args.max_negatives,
                "params": "library defaults of issue 38 (tol 1e-3, n_iter_no_change 5, n_epochs cap 200, lr 'auto', "
                          "mu 1e-2, m 16, lam 0.1), untuned",
                "chance_zsl": 100.0 / len(unseen),
            },
        }
        path = write_results(args.name, results)
    print(path)


if __name__ == "__main__":
    main()
