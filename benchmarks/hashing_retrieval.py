"""TSVM hashing (Cevikalp et al., CVIU 2017) vs hashing baselines: retrieval mAP.

Studies (one process, same data, same queries):
  1. The paper's MNIST protocol (Section 3.5, Table 5) on MNIST 5k, Fashion-MNIST (784-d gray
     values, the full 60k training split as database) and Fashion-MNIST CNN features
     (EfficientNet-Lite0 @96 px, l2-normalized, from the cached feature store): labeled and
     unlabeled samples per class from the database side; test images as queries; mAP over the
     top 500 returned (Hamming ties broken at random, fixed seed); 32/64/128/256 bits for TSVM
     hashing, LSH, PCA-ITQ, PCA-RR, SKLSH, PQ (ADC) and exact Euclidean search. TSVM hashing's
     C is chosen from {1, 10} per data set on the labeled samples alone (select_C).
  2. Robustness: 10/20/40% of the training labels flipped to another class, ramp loss vs hinge
     loss (64 bits, MNIST 5k, two seeds, C = 1 and C = 10); and the same at the level of one
     RTSVM node (binary test accuracy, symmetric flips), where the loss acts alone.
  3. The value of unlabeled data (64 bits, MNIST 5k and Fashion-MNIST): without unlabeled
     samples, with them under the paper's balancing constraint, with them and no constraint
     (the library default).
  4. Full training on Fashion-MNIST: all 60,000 training images labeled, 64 and 256 bits,
     wall time and mAP.
  5. Trees (issue 12): the paper's per-tree random class subsets and its embedding mode (the
     outputs of every node of 20 trees, then PCA-ITQ to the code length) beside the default
     (every tree on all classes, bits = signs of the nodes), 32 and 64 bits, MNIST 5k and
     Fashion-MNIST (same splits as study 1), C fixed per data set at the value C="auto"
     chose in study 1 (1 and 10), so the default's row repeats study 1's figures. Results in
     hashing_trees.json (one key per data set, so the two data sets can run as two processes).

TSVM hashing is fitted once at the longest code and shorter codes are its prefixes: trees are
seeded by SeedSequence.spawn, so a prefix equals fitting with the shorter n_bits
(tests/hashing/test_hashing.py checks this).

Usage: .venv/bin/python benchmarks/hashing_retrieval.py [--quick] [--only NAME ...] [--unlabeled-on mnist fashion]
       [--c-star-ratio R]  (C*/C of TSVM hashing; issue 28 compared 1, the old default, with 0.25)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import RESULTS, keep_earlier_studies, markdown_table, write_results  # noqa: E402
from hardneg.datasets import load_fashion_mnist, load_mnist_5k  # noqa: E402
from hardneg.eval import hamming_rank, mean_average_precision_at_k, relevance_from_labels  # noqa: E402
from hardneg.hashing import LSHHasher, PCAITQHasher, PCARRHasher, PQHasher, SKLSHHasher, TSVMHashing  # noqa: E402
from hardneg.svm import LinearSVM, RampTSVM  # noqa: E402

TOP = 500
BASELINES = (("lsh", LSHHasher), ("pca_itq", PCAITQHasher), ("pca_rr", PCARRHasher), ("sklsh", SKLSHHasher))
STUDIES = ("retrieval", "noise", "unlabeled", "full", "trees")
#: the keys of hashing_retrieval.json that the studies write (trees go to their own file)
STUDY_KEYS = ("retrieval", "setups", "label_noise", "label_noise_node", "unlabeled", "full_training")
#: (name, TSVMHashing parameters) of the trees study; "itq" rows are fitted once at 64 bits and their
#: 32-bit codes come from PCA-ITQ on the same trees' embedding (what mode="itq" does at 32 bits)
TREE_VARIANTS = (
    ("bits, all classes", dict(mode="bits", class_subset=1.0)),
    ("bits, class_subset 0.5", dict(mode="bits", class_subset=0.5)),
    ("itq 20 trees, class_subset 0.5", dict(mode="itq", n_trees=20, class_subset=0.5)),
    ("itq 20 trees, all classes", dict(mode="itq", n_trees=20, class_subset=1.0)),
    ("bits, class_subset 0.7", dict(mode="bits", class_subset=0.7)),
)


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


def tsvm_map(X, y, setup, seed=0, bits=64, labels=None, unlabeled=True, **kwargs):
    q, db, lab, unl = setup
    labels = y if labels is None else labels
    h = TSVMHashing(n_bits=bits, random_state=seed, **kwargs)
    h.fit(X[lab], labels[lab], X_unlabeled=X[unl] if unlabeled else None)
    return hamming_map(h.transform(X[q]), h.transform(X[db]), y[q], y[db])


def select_C(X, y, setup, grid, seed, bits=64):
    """Pick TSVM hashing's C on the labeled data alone: a fifth of each class's labeled samples
    are validation queries against the other four fifths (no test image is looked at)."""
    _, _, lab, unl = setup
    rng = np.random.default_rng(seed + 1)
    val = np.concatenate([rng.permutation(lab[y[lab] == c])[: max(1, (y[lab] == c).sum() // 5)] for c in np.unique(y[lab])])
    fit = np.setdiff1d(lab, val)
    scores = {C: tsvm_map(X, y, (val, fit, fit, unl), seed=seed, bits=bits, C=C) for C in grid}
    print("C selection", {C: round(100 * v, 2) for C, v in scores.items()}, flush=True)
    return max(scores, key=scores.get), scores


def retrieval_study(name, X, y, setup, bits_list, seed, C_grid=(1.0, 10.0)):
    q, db, lab, unl = setup
    Xq, Xdb, yq, ydb = X[q], X[db], y[q], y[db]
    C, C_scores = select_C(X, y, setup, C_grid, seed)
    index = faiss.IndexFlatL2(X.shape[1])
    index.add(Xdb)
    eucl = mean_ap(index.search(Xq, TOP)[1], yq, ydb)
    t = time.perf_counter()
    tsvm = TSVMHashing(n_bits=max(bits_list), C=C, random_state=seed).fit(X[lab], y[lab], X_unlabeled=X[unl])
    fit_s = time.perf_counter() - t
    cq_t, cdb_t = tsvm.transform(Xq), tsvm.transform(Xdb)
    fit_on = np.concatenate([lab, unl])
    rows = []
    for bits in bits_list:
        row = {"dataset": name, "bits": bits, "tsvm": hamming_map(prefix_codes(cq_t, bits), prefix_codes(cdb_t, bits), yq, ydb)}
        for key, cls in BASELINES:
            h = cls(n_bits=bits, random_state=seed).fit(X[fit_on])
            row[key] = hamming_map(h.transform(Xq), h.transform(Xdb), yq, ydb)
        pq = PQHasher(n_bits=bits, random_state=seed).fit(X[fit_on])
        row["pq"] = mean_ap(pq.search(Xq, pq.transform(Xdb), TOP)[0], yq, ydb)
        row["euclidean"] = eucl
        rows.append(row)
        print(name, bits, {k: round(100 * v, 2) for k, v in row.items() if isinstance(v, float)}, flush=True)
    setup_info = {"queries": int(q.size), "database": int(db.size), "labeled": int(lab.size),
                  "unlabeled": int(unl.size), "dim": int(X.shape[1]), "tsvm_fit_s": fit_s,
                  "C": C, "C_validation_map": {str(k): v for k, v in C_scores.items()}}
    return rows, setup_info


def flip_labels(y, rows, rate, n_classes, rng):
    """A flipped label becomes one of the other classes, uniformly."""
    noisy = y.copy()
    flip = rows[rng.random(rows.size) < rate]
    noisy[flip] = (y[flip] + rng.integers(1, n_classes, flip.size)) % n_classes
    return noisy


def noise_study(X, y, setup, rates, seeds, Cs):
    out = []
    for C in Cs:
        for rate in rates:
            for seed in seeds:
                noisy = flip_labels(y, setup[2], rate, 10, np.random.default_rng(100 + seed))
                row = {"C": C, "flip_rate": rate, "seed": seed}
                for loss in ("ramp", "hinge"):
                    row[loss] = tsvm_map(X, y, setup, seed=seed, labels=noisy, C=C, loss=loss)
                out.append(row)
                print("noise", row, flush=True)
    return out


def node_noise_study(X, y, rates, groups=((3, 5, 8), (4, 7, 9)), n_train=2500, seed=0):
    """One RTSVM node: binary accuracy on clean test labels after symmetric label flips."""
    rng = np.random.default_rng(seed)
    Xn = X - X.mean(axis=0)
    Xn /= np.linalg.norm(Xn, axis=1).mean()
    out = []
    for group in groups:
        yb = np.where(np.isin(y, group), 1, -1)
        for rate in rates:
            perm = rng.permutation(len(X))
            tr, te = perm[:n_train], perm[n_train:]
            noisy = yb[tr] * np.where(rng.random(tr.size) < rate, -1, 1)
            row = {"positive_classes": list(group), "flip_rate": rate}
            for key, model in (("ramp", RampTSVM(loss="ramp", random_state=seed)),
                               ("hinge", RampTSVM(loss="hinge", random_state=seed)),
                               ("linear_svm", LinearSVM(random_state=seed))):
                row[key] = float((model.fit(Xn[tr], noisy).predict(Xn[te]) == yb[te]).mean())
            out.append(row)
            print("node noise", row, flush=True)
    return out


def unlabeled_study(name, X, y, setup, seed=0):
    # C = 1 fixed (not "auto"): the study isolates the unlabelled data and the constraint
    row = {"dataset": name, "C": 1.0,
           "without": tsvm_map(X, y, setup, seed=seed, unlabeled=False, C=1.0),
           "with_balancing": tsvm_map(X, y, setup, seed=seed, balance=True, C=1.0),
           "with_no_constraint": tsvm_map(X, y, setup, seed=seed, balance=False, C=1.0)}
    print("unlabeled", row, flush=True)
    return row


def full_training_study(Xf, yf, train, queries, bits_list, seed=0):
    out = []
    for bits in bits_list:
        t = time.perf_counter()
        h = TSVMHashing(n_bits=bits, random_state=seed).fit(Xf[train], yf[train])
        fit_s = time.perf_counter() - t
        m = hamming_map(h.transform(Xf[queries]), h.transform(Xf[train]), yf[queries], yf[train])
        out.append({"bits": bits, "labeled": int(train.size), "trees": int(h.trees_.shape[0]), "fit_s": fit_s, "map": m})
        print("full training", out[-1], flush=True)
    return out


def trees_study(name, X, y, setup, C, bits_list, seed=0, on_row=None):
    """Class subsets and the embedding mode beside the default, on one data set (study 5);
    ``on_row(rows)`` after every variant (the results so far are written as they come)."""
    q, db, lab, unl = setup
    Xq, Xdb, yq, ydb = X[q], X[db], y[q], y[db]
    train = np.vstack([X[lab], X[unl]])
    rows, base_s = [], None
    for variant, params in TREE_VARIANTS:
        t = time.perf_counter()
        h = TSVMHashing(n_bits=max(bits_list), C=C, random_state=seed, **params).fit(X[lab], y[lab], X_unlabeled=X[unl])
        fit_s = time.perf_counter() - t
        base_s = fit_s if base_s is None else base_s
        row = {"dataset": name, "variant": variant, "C": C, "trees": int(h.trees_.shape[0]),
               "nodes": int(h.coef_.shape[0]), "fit_s": fit_s, "fit_vs_default": fit_s / base_s}
        if params["mode"] == "bits":
            cq, cdb = h.transform(Xq), h.transform(Xdb)
            for bits in bits_list:
                row[f"map_{bits}"] = hamming_map(prefix_codes(cq, bits), prefix_codes(cdb, bits), yq, ydb)
        else:
            def project(A):
                return A @ h.coef_.T + h.intercept_
            for bits in bits_list:
                itq = h.itq_ if bits == h.n_bits_ else PCAITQHasher(n_bits=bits, random_state=seed).fit(project(train))
                row[f"map_{bits}"] = hamming_map(itq.transform(project(Xq)), itq.transform(project(Xdb)), yq, ydb)
        rows.append(row)
        if on_row is not None:
            on_row(rows)
        print("trees", {k: round(100 * v, 2) if k.startswith("map") else v for k, v in row.items()}, flush=True)
    return rows


def fashion_cnn():
    """Fashion-MNIST CNN features in dataset order, l2-normalized; None when the store is missing."""
    from hardneg.features import fashion_mnist_store_path, load_fashion_mnist_features

    if not fashion_mnist_store_path("cnn").exists():
        print("no CNN store; run `hardneg extract fashion-mnist --features cnn` first", flush=True)
        return None
    try:
        X = load_fashion_mnist_features("cnn")
    except ValueError as exc:  # a store still being built
        print(f"CNN store not usable: {exc}", flush=True)
        return None
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", nargs="+", choices=STUDIES, default=list(STUDIES))
    ap.add_argument("--trees-on", nargs="+", choices=("mnist", "fashion"), default=["mnist", "fashion"],
                    help="data sets of the trees study")
    ap.add_argument("--unlabeled-on", nargs="+", choices=("mnist", "fashion"), default=["mnist", "fashion"],
                    help="data sets of the unlabeled study")
    ap.add_argument("--c-star-ratio", type=float, default=None,
                    help="C*/C of every TSVM hashing node (default: the library's C_STAR_RATIO); results go to "
                         "<name>_cstar<ratio>.json so runs with different ratios sit side by side")
    args = ap.parse_args()
    if args.c_star_ratio is not None:
        from hardneg.hashing import _tsvm_hashing

        _tsvm_hashing.C_STAR_RATIO = args.c_star_ratio  # read by TSVMHashing.fit when C_star is None
    seed = 0
    bits_list = [32, 64] if args.quick else [32, 64, 128, 256]
    t_start = time.perf_counter()
    result = {"protocol": f"mAP@{TOP}, Hamming ties at random (seed 0); TSVM codes are prefixes of one "
                          f"{max(bits_list)}-bit model; TSVMHashing defaults unless a study says otherwise"}

    mn = load_mnist_5k()
    X, y = (mn.X / 255.0).astype(np.float32), mn.y
    setup_m = split_protocol(X, y, 100, 100 if args.quick else 200, 2000, np.random.default_rng(seed))
    fm = load_fashion_mnist()
    Xf, yf = (fm.X / 255.0).astype(np.float32), fm.y
    tr, te = np.flatnonzero(fm.split == "train"), np.flatnonzero(fm.split == "test")
    rf = np.random.default_rng(seed)
    db_f = np.sort(rf.choice(tr, 10_000, replace=False)) if args.quick else tr
    q_f = np.sort(rf.choice(te, 1000, replace=False))
    setup_f = split_protocol(Xf, yf, 0, 300 if args.quick else 500, 5000, rf, q_f, db_f)

    if "retrieval" in args.only:
        rows, setups = [], {}
        r, setups["MNIST-5k"] = retrieval_study("MNIST-5k", X, y, setup_m, bits_list, seed)
        rows += r
        r, setups["Fashion-MNIST"] = retrieval_study("Fashion-MNIST", Xf, yf, setup_f, bits_list, seed)
        rows += r
        Xc = fashion_cnn()
        if Xc is not None:
            r, setups["Fashion-MNIST CNN"] = retrieval_study("Fashion-MNIST CNN", Xc, yf, setup_f, bits_list, seed)
            rows += r
        elif (RESULTS / "hashing_retrieval.json").exists() and not args.quick:
            # keep the last CNN rows, marked as not re-run with this code
            old = json.loads((RESULTS / "hashing_retrieval.json").read_text())
            for row in old.get("retrieval", []):
                if row["dataset"] == "Fashion-MNIST CNN":
                    rows.append({**row, "dataset": "Fashion-MNIST CNN (earlier run)"})
            if "Fashion-MNIST CNN" in old.get("setups", {}):
                setups["Fashion-MNIST CNN (earlier run)"] = old["setups"]["Fashion-MNIST CNN"]
        result["retrieval"], result["setups"] = rows, setups
    if "noise" in args.only:
        rates = [0.2] if args.quick else [0.1, 0.2, 0.4]
        result["label_noise"] = noise_study(X, y, setup_m, rates, [0] if args.quick else [0, 1], [1.0, 10.0])
        result["label_noise_node"] = node_noise_study(X, y, [0.2, 0.4])
    if "unlabeled" in args.only:
        result["unlabeled"] = []
        if "mnist" in args.unlabeled_on:
            result["unlabeled"].append(unlabeled_study("MNIST-5k", X, y, setup_m, seed))
        if "fashion" in args.unlabeled_on:
            result["unlabeled"].append(unlabeled_study("Fashion-MNIST", Xf, yf, setup_f, seed))
    if "full" in args.only:
        full_bits = [64] if args.quick else [64, 256]
        result["full_training"] = full_training_study(Xf, yf, tr if not args.quick else db_f, q_f, full_bits, seed)
    if "trees" in args.only:
        cstar = "" if args.c_star_ratio is None else f"_cstar{args.c_star_ratio:g}"
        trees_path = RESULTS / (f"hashing_trees_quick{cstar}.json" if args.quick else f"hashing_trees{cstar}.json")
        trees = {}
        for key in args.trees_on:
            t0 = time.perf_counter()
            name, Xs, ys, setup, C = (("MNIST-5k", X, y, setup_m, 1.0) if key == "mnist"
                                      else ("Fashion-MNIST", Xf, yf, setup_f, 10.0))

            def save(rows, name=name, t0=t0):
                # re-read before writing: the data sets may run as two processes
                nonlocal trees
                trees = ({k: v for k, v in json.loads(trees_path.read_text()).items() if k != "machine"}
                         if trees_path.exists() else {})
                trees["protocol"] = (f"mAP@{TOP} in study 1's splits; C fixed at the value C='auto' chose there; bits "
                                     "rows are prefixes of one 64-bit model, itq rows one 20-tree embedding, PCA-ITQ "
                                     "per length; fit_vs_default: fit time over the first row's, same process")
                trees[name] = {"rows": list(rows), "seconds": time.perf_counter() - t0}
                write_results(trees_path.stem, trees)

            trees_study(name, Xs, ys, setup, C, [32, 64], seed, on_row=save)
        rows = [r for k, v in trees.items() if isinstance(v, dict) and "rows" in v for r in v["rows"]]
        print(markdown_table([{**r, "map_32": round(100 * r["map_32"], 2), "map_64": round(100 * r["map_64"], 2)}
                              for r in rows], ["dataset", "variant", "trees", "nodes", "map_32", "map_64",
                                               "fit_vs_default"]))
        if set(args.only) == {"trees"}:
            print(f"-> {trees_path}")
            return
    result["total_seconds"] = time.perf_counter() - t_start
    name = "hashing_retrieval_quick" if args.quick else "hashing_retrieval"
    if args.c_star_ratio is not None:
        name += f"_cstar{args.c_star_ratio:g}"
    from hardneg.hashing._tsvm_hashing import C_STAR_RATIO

    result["c_star_ratio"] = C_STAR_RATIO
    if set(args.only) != set(STUDIES):
        keep_earlier_studies(RESULTS / f"{name}.json", STUDY_KEYS, result)
    path = write_results(name, result)

    def pct(rows, keys):
        return [{**r, **{k: round(100 * r[k], 2) for k in keys}} for r in rows]

    if "retrieval" in result:
        keys = ["tsvm", "pca_itq", "pca_rr", "lsh", "sklsh", "pq", "euclidean"]
        print(markdown_table(pct(result["retrieval"], keys), ["dataset", "bits"] + keys))
    if "label_noise" in result:
        print(markdown_table(pct(result["label_noise"], ["ramp", "hinge"]), ["C", "flip_rate", "seed", "ramp", "hinge"]))
        print(markdown_table(pct(result["label_noise_node"], ["ramp", "hinge", "linear_svm"]),
                             ["positive_classes", "flip_rate", "ramp", "hinge", "linear_svm"]))
    if "unlabeled" in result:
        keys = ["without", "with_balancing", "with_no_constraint"]
        print(markdown_table(pct(result["unlabeled"], keys), ["dataset"] + keys))
    if "full_training" in result:
        print(markdown_table(pct(result["full_training"], ["map"]), ["bits", "labeled", "trees", "fit_s", "map"]))
    print(f"total {result['total_seconds']:.0f} s -> {path}")


if __name__ == "__main__":
    main()
