"""Instance retrieval (the task of Zepeda & Pérez): E-SVM against centring and centring + PCA-whitening.

The paper evaluates E-SVM on Holidays and Oxford: a handful of relevant images
per query (copies of one scene), not a whole class. Neither set can be had
offline here, so this builds a Copydays-style set from real images, the
Debian package ``openclipart-png`` (~8,000 clip-art PNGs, composited on white):

- Q query images (default 100); each has C copies (default 5) in the database,
  one per attack: a crop (50-70 % of the area), a rotation (10-30 degrees, then
  rescaled), a strong downscale + JPEG (quality 15-30), a colour change (hue,
  saturation, brightness, contrast) with a slight crop, and a perspective warp
  (corners moved by 8-15 % of the side) + JPEG 50;
- D distractors (default 2,000): other clip-art images, in the database;
- P pool images (default 1,000): other images again, the negatives of the
  E-SVMs and the data the centring mean / PCA are fitted on (never queried).

A query's relevant set is its C copies; mAP over the Q queries against the
C * Q + D database images.

Features, cached under ``~/.cache/hardneg/esvm-instance/`` (keyed by the
set's parameters): EfficientNet-Lite0 (224 x 224, stretched, ONNX Runtime when
installed), l2; VLAD-64 over dense SIFT (:class:`hardneg.features.VLAD`,
codebook from 300 pool images). Encoders (all fitted on the pool only):

- base: the l2-normalized features;
- centring: :class:`hardneg.encoding.CentringEncoder`, ``(x - mu) / ||x - mu||``;
- centring + whitening: :class:`hardneg.encoding.WhiteningEncoder` (PCA-whitening
  to ``n_components`` dimensions, then l2), for several ``n_components``;
- E-SVM (the encoder's default α₋) and RE-SVM-2; E-SVM at the former
  ``alpha_neg="auto"`` (total negative weight 2) for reference;

each with its mAP and, for the E-SVMs, the separation fraction
(:meth:`hardneg.encoding.ESVMEncoder.separation_fraction` on the queries: the
share of exemplars whose SVM scores them above every pool negative).

Usage: PYTHONPATH=. .venv/bin/python benchmarks/esvm_instance.py [--stage features|eval|all]
       [--queries 100] [--copies 5] [--distractors 2000] [--pool 1000] [--threads 2]
Writes benchmarks/results/esvm_instance.json.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import write_results  # noqa: E402

SIDE = 384  # canonical image: longest side in pixels, before the attacks
ATTACKS = ("crop", "rotate", "scale_jpeg", "colour", "perspective")
BOMB = "stop_sign_miguel_s_nchez_.png"


def cache_dir() -> Path:
    base = os.environ.get("HARDNEG_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "hardneg") / "esvm-instance"


def openclipart_files() -> list[str]:
    out = subprocess.run(["dpkg", "-L", "openclipart-png"], capture_output=True, text=True, check=False).stdout
    files = sorted(line for line in out.split() if line.endswith(".png") and os.path.isfile(line) and BOMB not in line)
    if not files:
        raise SystemExit("openclipart-png is not installed: apt-get install -y openclipart-png")
    return files


def usable(path: str) -> bool:
    """Large enough to attack (shorter side >= 96 px) and not absurdly large (header only)."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            w, h = im.size
    except Exception:  # noqa: BLE001 - any unreadable file is skipped
        return False
    return min(w, h) >= 96 and w * h <= 40_000_000


def choose(n_q: int, n_d: int, n_p: int, seed: int = 0):
    files = openclipart_files()
    order = np.random.default_rng(seed).permutation(len(files))
    picked = []
    for i in order:
        if usable(files[i]):
            picked.append(files[i])
            if len(picked) == n_q + n_d + n_p:
                break
    if len(picked) < n_q + n_d + n_p:
        raise SystemExit(f"only {len(picked)} usable images, need {n_q + n_d + n_p}")
    return picked[:n_q], picked[n_q : n_q + n_d], picked[n_q + n_d :]


def canonical(path: str):
    """RGB on white, longest side SIDE (PIL image)."""
    from PIL import Image

    from hardneg.features import read_image

    im = Image.fromarray(read_image(path, target_size=SIDE, max_pixels=50_000_000))
    im.thumbnail((SIDE, SIDE), Image.BICUBIC)
    return im


def _jpeg(im, quality: int):
    from PIL import Image

    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=int(quality))
    buf.seek(0)
    return Image.open(buf).convert("RGB")


def _perspective_coeffs(src, dst):
    """PIL's PERSPECTIVE coefficients mapping output points ``dst`` to input points ``src``."""
    A, b = [], []
    for (x, y), (u, v) in zip(dst, src):
        A.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        A.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        b += [u, v]
    return np.linalg.solve(np.asarray(A, float), np.asarray(b, float)).tolist()


def attack(im, kind: str, rng):
    """One Copydays-style copy of ``im`` (PIL RGB)."""
    from PIL import Image, ImageEnhance

    w, h = im.size
    white = (255, 255, 255)
    if kind == "crop":
        f = np.sqrt(rng.uniform(0.5, 0.7))
        cw, ch = max(8, int(w * f)), max(8, int(h * f))
        x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        return _jpeg(im.crop((x0, y0, x0 + cw, y0 + ch)), 75)
    if kind == "rotate":
        out = im.rotate(float(rng.choice([-1, 1]) * rng.uniform(10, 30)), Image.BICUBIC, expand=True, fillcolor=white)
        s = rng.uniform(0.6, 0.9)
        return _jpeg(out.resize((max(8, int(out.size[0] * s)), max(8, int(out.size[1] * s))), Image.BICUBIC), 75)
    if kind == "scale_jpeg":
        s = rng.uniform(0.25, 0.4)
        small = im.resize((max(8, int(w * s)), max(8, int(h * s))), Image.BILINEAR)
        return _jpeg(small, int(rng.integers(15, 31)))
    if kind == "colour":
        out = ImageEnhance.Color(im).enhance(rng.uniform(0.2, 1.8))
        out = ImageEnhance.Brightness(out).enhance(rng.uniform(0.7, 1.3))
        out = ImageEnhance.Contrast(out).enhance(rng.uniform(0.6, 1.4))
        hsv = np.asarray(out.convert("HSV")).copy()
        hsv[..., 0] = (hsv[..., 0].astype(int) + int(rng.integers(20, 90))) % 256
        out = Image.fromarray(hsv, "HSV").convert("RGB")
        m = int(min(w, h) * 0.05)
        return _jpeg(out.crop((m, m, w - m, h - m)), 75)
    if kind == "perspective":
        j = rng.uniform(0.08, 0.15)
        src = [(0, 0), (w, 0), (w, h), (0, h)]
        dst = [(x + rng.uniform(-j, j) * w, y + rng.uniform(-j, j) * h) for x, y in src]
        coeffs = _perspective_coeffs(src, dst)
        return _jpeg(im.transform((w, h), Image.PERSPECTIVE, coeffs, Image.BICUBIC, fillcolor=white), 50)
    raise ValueError(kind)


def build_images(n_q, n_c, n_d, n_p, seed=0):
    """(images, roles, query_ids): canonical queries, their copies, distractors, pool; uint8 RGB arrays."""
    q_files, d_files, p_files = choose(n_q, n_d, n_p, seed)
    rng = np.random.default_rng(seed + 1)
    images, role, owner = [], [], []
    for qi, f in enumerate(q_files):
        im = canonical(f)
        images.append(np.asarray(im))
        role.append("query")
        owner.append(qi)
        for c in range(n_c):
            images.append(np.asarray(attack(im, ATTACKS[c % len(ATTACKS)], rng)))
            role.append("copy")
            owner.append(qi)
    for f in d_files:
        images.append(np.asarray(canonical(f)))
        role.append("distractor")
        owner.append(-1)
    for f in p_files:
        images.append(np.asarray(canonical(f)))
        role.append("pool")
        owner.append(-1)
    return images, np.asarray(role), np.asarray(owner), q_files


def features(args) -> dict:
    """Cached CNN and VLAD features for every image, with roles and owners."""
    key = hashlib.sha256(json.dumps([args.queries, args.copies, args.distractors, args.pool, SIDE, ATTACKS, 1]).encode()).hexdigest()[:12]
    path = cache_dir() / f"features-{key}.npz"
    if path.exists():
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    logging.info("building %d images", args.queries * (1 + args.copies) + args.distractors + args.pool)
    t = time.perf_counter()
    images, role, owner, _ = build_images(args.queries, args.copies, args.distractors, args.pool)
    out = {"role": role, "owner": owner, "seconds_images": np.float64(time.perf_counter() - t)}
    logging.info("images built in %.0f s", out["seconds_images"])

    from hardneg.features import VLAD, DenseSift, EfficientNetLite0

    t = time.perf_counter()
    cnn = EfficientNetLite0(resize="stretch", num_threads=args.threads)
    chunks = []
    for lo in range(0, len(images), 256):
        chunks.append(cnn.transform(images[lo : lo + 256]))
        logging.info("CNN %d/%d (%.0f s, runtime %s)", lo + len(chunks[-1]), len(images), time.perf_counter() - t, cnn.active_runtime)
    out["cnn"] = np.concatenate(chunks)
    out["seconds_cnn"] = np.float64(time.perf_counter() - t)

    t = time.perf_counter()
    pool_idx = np.flatnonzero(role == "pool")[:300]
    ext = VLAD(DenseSift(), n_words=64, max_descriptors=200_000, random_state=0).fit_images([images[i] for i in pool_idx])
    chunks = []
    for lo in range(0, len(images), 256):
        chunks.append(ext.transform(images[lo : lo + 256]))
        logging.info("VLAD %d/%d (%.0f s)", lo + len(chunks[-1]), len(images), time.perf_counter() - t)
    out["vlad"] = np.concatenate(chunks).astype(np.float32)
    out["seconds_vlad"] = np.float64(time.perf_counter() - t)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **out)
    os.replace(tmp, path)
    return out


def mean_ap(Q, D, owner_q, owner_d) -> float:
    """mAP of queries ``Q`` against database ``D`` (cosine / dot of the codes); relevant: the same owner."""
    from sklearn.metrics import average_precision_score

    S = Q @ D.T
    return float(np.mean([average_precision_score(owner_d == o, S[i]) for i, o in enumerate(owner_q)]))


def separation(W, X, Z) -> float:
    """Share of rows whose code ``w`` scores the row itself above every pool row: ``w . x > max_z w . z``."""
    return float(np.mean(np.einsum("ij,ij->i", W, X) > (W @ Z.T).max(axis=1)))


def l2(X):
    return (X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-30)).astype(np.float32)


def evaluate(args, data) -> None:
    from hardneg.encoding import CentringEncoder, ESVMEncoder, WhiteningEncoder
    from hardneg.encoding._esvm import AUTO_TOTAL_WEIGHT

    role, owner = data["role"], data["owner"]
    qi, di, pi = np.flatnonzero(role == "query"), np.flatnonzero(role != "query"), np.flatnonzero(role == "pool")
    di = di[role[di] != "pool"]
    results = {"setup": {"queries": int(qi.size), "copies_per_query": args.copies, "database": int(di.size),
                         "distractors": args.distractors, "pool": int(pi.size), "attacks": list(ATTACKS), "side": SIDE,
                         "data": "openclipart-png (Debian), composited on white; copies by PIL attacks (Copydays-style)",
                         "seconds_extract": {k: float(data[k]) for k in ("seconds_images", "seconds_cnn", "seconds_vlad")}},
               "features": {}}
    for feat in args.features:
        X = l2(data[feat].astype(np.float32))
        P, Q, D = X[pi], X[qi], X[di]
        rows = []

        def add(name, cq, cd, sep=None, seconds=None, **extra):
            row = {"encoding": name, "mAP": mean_ap(cq, cd, owner[qi], owner[di]), "separation": sep, "seconds": seconds, **extra}
            rows.append(row)
            logging.info("%s %s", feat, row)

        add("base", Q, D, sep=separation(Q, Q, P))
        c = CentringEncoder().fit(P)
        add("centring", c.transform(Q), c.transform(D), sep=separation(c.transform(Q), Q, P))
        for k in args.whiten:
            if k >= P.shape[0]:
                continue
            w = WhiteningEncoder(n_components=k).fit(P)
            add(f"centring + PCA-whitening ({k})", w.transform(Q), w.transform(D), n_components=k)
        # images without a descriptor (plain clip art) have all-zero VLAD: E-SVM refuses them as negatives or
        # exemplars, so they are left out of the pool and keep an all-zero code (score 0, as in every other row)
        P = P[P.any(axis=1)]
        zero_q, zero_d = ~Q.any(axis=1), ~D.any(axis=1)
        if zero_q.any() or zero_d.any():
            logging.warning("%s: %d query and %d database rows are all zero; their E-SVM codes are zero",
                            feat, int(zero_q.sum()), int(zero_d.sum()))

        def encode(enc, A, zero, k):
            out = np.zeros(A.shape, np.float32)
            out[~zero] = enc.transform(A[~zero], n_recursions=k)
            return out

        for T in args.totals:
            t = time.perf_counter()
            mean_sq = float((P.astype(np.float64) ** 2).sum(1).mean())
            alpha = "auto" if T == AUTO_TOTAL_WEIGHT else T * 0.1 / (P.shape[0] * mean_sq)
            enc = ESVMEncoder(n_recursions=2 if T == AUTO_TOTAL_WEIGHT else 1, alpha_neg=alpha, random_state=0).fit(P)
            cq, cd = encode(enc, Q, zero_q, 1), encode(enc, D, zero_d, 1)
            name = "E-SVM (default)" if alpha == "auto" else f"E-SVM (T = {T:g})"
            sep = enc.separation_fraction(Q[~zero_q], n_recursions=1, codes=cq[~zero_q])
            # how many negatives end at their bound: the re-centring regime (w = a x - (alpha_neg / lam) sum z)
            add(name, cq, cd, sep=sep, seconds=time.perf_counter() - t, total_weight=T, alpha_neg=enc.alpha_neg_)
            if alpha == "auto":
                t = time.perf_counter()
                cq2, cd2 = encode(enc, Q, zero_q, 2), encode(enc, D, zero_d, 2)
                add("RE-SVM-2 (default)", cq2, cd2, sep=enc.separation_fraction(Q[~zero_q], n_recursions=2, codes=cq2[~zero_q]),
                    seconds=time.perf_counter() - t)
                # E-SVM's closed form at the bound: re-centring by s = (alpha_neg / lam) sum z
                s = (enc.alpha_neg_ / enc.lam) * P.astype(np.float64).sum(0)
                def cf(A, zero):
                    out = np.zeros(A.shape, np.float32)
                    B = A[~zero].astype(np.float64)
                    out[~zero] = l2(((1 + B @ s) / (B * B).sum(1))[:, None] * B - s)
                    return out
                add("E-SVM closed form, all negatives at bound", cf(Q, zero_q), cf(D, zero_d),
                    cosine_to_esvm=float(np.mean(np.einsum("ij,ij->i", cf(Q, zero_q)[~zero_q], cq[~zero_q]))))
        results["features"][feat] = rows
        write_results("esvm_instance", results)  # after each feature: a long run keeps what it measured
    for feat, rows in results["features"].items():
        print(f"\n{feat}\n| encoding | mAP | separation |\n|---|---|---|")
        for r in rows:
            sep = "—" if r["separation"] is None else f"{r['separation']:.2f}"
            print(f"| {r['encoding']} | {r['mAP']:.4f} | {sep} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stage", choices=("features", "eval", "all"), default="all")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--copies", type=int, default=5)
    ap.add_argument("--distractors", type=int, default=2000)
    ap.add_argument("--pool", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--features", nargs="+", default=["cnn", "vlad"], choices=["cnn", "vlad"])
    ap.add_argument("--whiten", nargs="+", type=int, default=[64, 128, 256, 512], help="PCA-whitening dimensions")
    ap.add_argument("--totals", nargs="+", type=float, default=[2.0, 0.5, 10.0],
                    help="E-SVM negatives' total weight T (2: the default, with RE-SVM-2)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    data = features(args)
    if args.stage == "features":
        return
    evaluate(args, data)


if __name__ == "__main__":
    main()
