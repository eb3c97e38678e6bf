"""TSVM hashing (Cevikalp et al., CVIU 2017) vs hashing baselines: retrieval mAP.

Studies (one process, same data, same queries):
  1. The paper's MNIST protocol (Section 3.5, Table 5) on MNIST 5k and Fashion-MNIST:
     784-d gray values; labeled and unlabeled samples per class from the database
     (training) side; test images as queries; mAP over the top 500 returned
     (Hamming ties broken at random, fixed seed); 32/64/128/256 bits for TSVM hashing,
     LSH, PCA-ITQ, PCA-RR, SKLSH, PQ (ADC) and exact Euclidean search.
  2. Robustness: 10/20/40% of the training labels flipped, ramp loss vs hinge loss (64 bits, MNIST 5k).
  3. The value of unlabeled data: with vs without unlabeled samples (64 bits, MNIST 5k).

TSVM hashing is fitted once at the largest code length and shorter codes are its prefixes:
trees are seeded by SeedSequence.spawn, so a prefix equals fitting with the shorter n_bits
(tests/test_hashing.py checks this).

Usage: PYTHONPATH=. .venv/bin/python benchmarks/hashing_retrieval.py [--quick] [--fashion-db N]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time

import faiss
import numpy as np

from hardneg.datasets import load_fashion_mnist, load_mnist_5k
from hardneg.eval import hamming_rank, mean_average_precision_at_k, relevance_from_labels
from hardneg.hashing import LSHHasher, PCAITQHasher, PCARRHasher, PQHasher, SKLSHHasher, TSVMHashing

TOP = 500


def mean_ap(rows, yq, ydb):
    return float(mean_average_precision_at_k(relevance_from_labels(yq, ydb[rows])))


def hamming_map(cq, cdb, yq, ydb):
    rows, _ = hamming_rank(cq, cdb, k=TOP, ties="random", random_state=0)
    return mean_ap(rows, yq, ydb)


def prefix_codes(codes, n_bits):
    return np.packbits(np.unpackbits(codes, axis=1)[:, :n_bits], axis=1)


def split_protocol(X, y, n_query_per_class, n_labeled_per_class, n_unlabeled, rng, query_rows=None, db_rows=None):
    classes = np.unique(y)
    if query_rows is None:
        query_rows, db_rows = [], []
        for c in classes:
            members = rng.permutation(np.flatnonzero(y == c))
            query_rows.append(members[:n_query_per_class])
            db_rows.append(members[n_query_per_class:])
        query_rows, db_rows = np.concatenate(query_rows), np.concatenate(db_rows)
    labeled = np.concatenate([rng.permutation(db_rows[y[db_rows] == c])[:n_labeled_per_class] for c in classes])
    rest = np.setdiff1d(db_rows, labeled)
    unlabeled = rng.permutation(rest)[:n_unlabeled]
    return query_rows, db_rows, labeled, unlabeled


def retrieval_study(name, X, y, q, db, lab, unl, bits_list, seed, tsvm_kwargs):
    Xq, Xdb, yq, ydb = X[q], X[db], y[q], y[db]
    rows = []
    timing = {}
    # exact Euclidean
    index = faiss.IndexFlatL2(X.shape[1])
    index.add(Xdb)
    _, I = index.search(Xq, TOP)
    eucl = mean_ap(I, yq, ydb)
    # TSVM hashing, fitted once at the longest code
    t = time.perf_counter()
    tsvm = TSVMHashing(n_bits=max(bits_list), random_state=seed, **tsvm_kwargs).fit(X[lab], y[lab], X_unlabeled=X[unl])
    timing["tsvm_fit_s"] = time.perf_counter() - t
    cq_t, cdb_t = tsvm.transform(Xq), tsvm.transform(Xdb)
    for bits in bits_list:
        row = {"dataset": name, "bits": bits, "euclidean": eucl}
        row["tsvm"] = hamming_map(prefix_codes(cq_t, bits), prefix_codes(cdb_t, bits), yq, ydb)
        fit_on = np.concatenate([lab, unl])
        for key, cls in (("lsh", LSHHasher), ("pca_itq", PCAITQHasher), ("pca_rr", PCARRHasher), ("sklsh", SKLSHHasher)):
            h = cls(n_bits=bits, random_state=seed).fit(X[fit_on])
            row[key] = hamming_map(h.transform(Xq), h.transform(Xdb), yq, ydb)
        pq = PQHasher(n_bits=bits, random_state=seed).fit(X[fit_on])
        I, _ = pq.search(Xq, pq.transform(Xdb), TOP)
        row["pq"] = mean_ap(I, yq, ydb)
        rows.append(row)
        print(name, bits, {k: round(v, 4) for k, v in row.items() if isinstance(v, float)}, flush=True)
    return rows, timing


def noise_study(X, y, q, db, lab, unl, seed, rates, tsvm_kwargs, bits=64):
    out = []
    rng = np.random.default_rng(seed)
    for rate in rates:
        noisy = y.copy()
        flip = rng.random(lab.size) < rate
        # a flipped label becomes one of the other classes, uniformly
        shift = rng.integers(1, 10, lab.size)
        noisy[lab[flip]] = (y[lab[flip]] + shift[flip]) % 10
        row = {"flip_rate": rate}
        for loss in ("ramp", "hinge"):
            h = TSVMHashing(n_bits=bits, loss=loss, random_state=seed, **tsvm_kwargs).fit(X[lab], noisy[lab], X_unlabeled=X[unl])
            row[loss] = hamming_map(h.transform(X[q]), h.transform(X[db]), y[q], y[db])
        out.append(row)
        print("noise", row, flush=True)
    return out


def unlabeled_study(X, y, q, db, lab, unl, seed, tsvm_kwargs, bits=64):
    row = {}
    for key, XU in (("with_unlabeled", X[unl]), ("without_unlabeled", None)):
        h = TSVMHashing(n_bits=bits, random_state=seed, **tsvm_kwargs).fit(X[lab], y[lab], X_unlabeled=XU)
        row[key] = hamming_map(h.transform(X[q]), h.transform(X[db]), y[q], y[db])
    print("unlabeled", row, flush=True)
    return row


def table(rows):
    keys = ["tsvm", "pca_itq", "pca_rr", "lsh", "sklsh", "pq", "euclidean"]
    lines = ["| dataset | bits | " + " | ".join(keys) + " |", "|" + "---|" * (len(keys) + 2)]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['bits']} | " + " | ".join(f"{100 * r[k]:.2f}" for k in keys) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--fashion-db", type=int, default=60000, help="database (training) images used from Fashion-MNIST")
    ap.add_argument("--skip-fashion", action="store_true")
    args = ap.parse_args()
    seed = 0
    bits_list = [32, 64] if args.quick else [32, 64, 128, 256]
    tsvm_kwargs = {}
    t_start = time.perf_counter()
    result = {
        "machine": {"processor": platform.processor(), "cpu_count": os.cpu_count(), "numpy": np.__version__,
                    "date": datetime.datetime.now().isoformat(timespec="seconds")},
        "protocol": f"mAP@{TOP}, Hamming ties at random (seed 0); TSVM codes are prefixes of one {max(bits_list)}-bit model",
    }
    rng = np.random.default_rng(seed)
    mn = load_mnist_5k()
    X, y = mn.X / 255.0, mn.y
    X = X.astype(np.float32)
    q, db, lab, unl = split_protocol(X, y, 100, 100 if args.quick else 200, 2000, rng)
    result["mnist5k_setup"] = {"queries": int(q.size), "database": int(db.size), "labeled": int(lab.size), "unlabeled": int(unl.size)}
    rows, timing = retrieval_study("MNIST-5k", X, y, q, db, lab, unl, bits_list, seed, tsvm_kwargs)
    result["mnist5k_timing"] = timing
    if not args.skip_fashion:
        fm = load_fashion_mnist()
        Xf, yf = (fm.X / 255.0).astype(np.float32), fm.y
        tr, te = np.flatnonzero(fm.split == "train"), np.flatnonzero(fm.split == "test")
        rf = np.random.default_rng(seed)
        n_db = min(args.fashion_db, tr.size) if not args.quick else 10000
        db_f = np.sort(rf.choice(tr, n_db, replace=False))
        q_f = np.sort(rf.choice(te, 1000, replace=False))
        _, _, lab_f, unl_f = split_protocol(Xf, yf, 0, 300 if args.quick else 500, 5000, rf, q_f, db_f)
        result["fashion_setup"] = {"queries": int(q_f.size), "database": int(db_f.size), "labeled": int(lab_f.size), "unlabeled": int(unl_f.size)}
        rows_f, timing_f = retrieval_study("Fashion-MNIST", Xf, yf, q_f, db_f, lab_f, unl_f, bits_list, seed, tsvm_kwargs)
        rows += rows_f
        result["fashion_timing"] = timing_f
    result["retrieval"] = rows
    result["label_noise"] = noise_study(X, y, q, db, lab, unl, seed, [0.1, 0.2, 0.4] if not args.quick else [0.2], tsvm_kwargs)
    result["unlabeled"] = unlabeled_study(X, y, q, db, lab, unl, seed, tsvm_kwargs)
    result["total_seconds"] = time.perf_counter() - t_start
    name = "hashing_retrieval_quick.json" if args.quick else "hashing_retrieval.json"
    with open(os.path.join(os.path.dirname(__file__), "results", name), "w") as fh:
        json.dump(result, fh, indent=2)
    print(table(rows))
    print("\n| flip rate | ramp | hinge |\n|---|---|---|")
    for r in result["label_noise"]:
        print(f"| {r['flip_rate']:.0%} | {100 * r['ramp']:.2f} | {100 * r['hinge']:.2f} |")
    u = result["unlabeled"]
    print(f"\nunlabeled data (64 bits, MNIST 5k): with {100 * u['with_unlabeled']:.2f}, without {100 * u['without_unlabeled']:.2f}")
    print(f"total {result['total_seconds']:.0f} s")


if __name__ == "__main__":
    main()
