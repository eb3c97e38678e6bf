"""SOLIS Section 5.3 protocol on Fashion-MNIST dense-SIFT bag of words (issue 13), 1K and 10K words.

Images: a SUBSET of Fashion-MNIST, 1,000 per class (10,000 images, drawn with seed 0 from all
70,000), to keep the dense-SIFT extraction and the tree vocabulary within minutes on the shared
2-core machine. Dense SIFT as the store ``~/.cache/hardneg/stores/fashion-mnist-dsift1024``
(step 4, bins 4 and 6 px, images resized to 64 px, flat patches dropped).

* 1K words: the store's rows (its flat 1,024-word FAISS codebook, learned on all 70,000 images),
  term frequencies of the subset's rows;
* 10K words: a vocabulary tree (branching 10, FAISS k-means per node) learned on 400,000
  descriptors sampled from the subset, every subset image quantized.

Rows are TF-IDF weighted (idf over the subset) and l2-normalized, as for MNIST. The protocol,
parameter grids and selection are those of benchmarks/similarity_solis.py (``run``): per draw 5
queries per class, the other 9,950 images the database, per class 7 positives x 6 x 500
negatives = 21,000 triplets, one pass; mean ± std over the draws.

Usage: nice -n 10 .venv/bin/python benchmarks/similarity_solis_fashion.py [--words 1000 10000] [--draws 5] [--select error map]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if __name__ == "__main__":  # one thread per process for the timings; not when a test imports this module
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import markdown_table, write_results  # noqa: E402
from benchmarks.similarity_solis import CACHE, run  # noqa: E402
from hardneg.features import Codebook, DenseSift  # noqa: E402
from hardneg.similarity import tfidf_transform  # noqa: E402

STORE = CACHE.parent / "stores" / "fashion-mnist-dsift1024"
PER_CLASS = 1000


def subset_rows(y):
    rng = np.random.default_rng(0)
    return np.sort(np.concatenate([rng.choice(np.flatnonzero(y == c), PER_CLASS, replace=False) for c in np.unique(y)]))


def idf_l2(counts):
    df = np.asarray((counts > 0).sum(axis=0)).ravel()
    idf = (np.log((1.0 + counts.shape[0]) / (1.0 + df)) + 1.0).astype(np.float32)
    return tfidf_transform(sp.csr_matrix(counts, dtype=np.float32), idf, l2=True)


def features(n_words: int):
    """``(X, y, seconds)`` for the 10,000-image subset (cached)."""
    path = CACHE / f"fashion10k-dsift{n_words}.npz"
    if path.is_file():
        z = np.load(path)
        return sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])), z["y"], float(z["seconds"])
    from hardneg.datasets import load_fashion_mnist

    ds = load_fashion_mnist()
    rows = subset_rows(ds.y)
    t0 = time.perf_counter()
    if n_words == 1000:
        from hardneg.store import FeatureStore

        store = FeatureStore.open(STORE)
        # the store's ids are "train-NNNNN" / "test-NNNNN"; its rows are in the order they were written
        ids = store.ids()
        index = np.array([int(i[6:]) if i.startswith("train-") else 60_000 + int(i[5:]) for i in ids])
        row_of = np.empty(index.size, np.int64)
        row_of[index] = np.arange(index.size)
        if not np.array_equal(store.labels()[row_of[rows]], ds.y[rows]):
            raise RuntimeError(f"{STORE}: its labels disagree with Fashion-MNIST's for the same ids")
        X = idf_l2(sp.csr_matrix(store.take(row_of[rows])))
    else:
        desc_path = CACHE / "fashion10k-dsift-descriptors.npz"
        if desc_path.is_file():
            z = np.load(desc_path)
            desc, lengths = z["desc"], z["lengths"]
        else:
            sets = DenseSift(step=4, bin_sizes=(4, 6), resize_to=64, drop_flat=True).describe(list(ds.images[rows]))
            desc, lengths = np.vstack(sets).astype(np.uint8), np.array([s.shape[0] for s in sets], np.int64)
            np.savez(desc_path, desc=desc, lengths=lengths)
        print(f"# {desc.shape[0]:,} descriptors, {time.perf_counter() - t0:.0f} s", flush=True)
        sample = desc[np.sort(np.random.default_rng(0).choice(desc.shape[0], min(400_000, desc.shape[0]), replace=False))].astype(np.float32)
        cb = Codebook(n_words, n_iter=10, max_descriptors=sample.shape[0], tree_branching=10, random_state=0).fit(sample)
        X = idf_l2(cb.counts([s.astype(np.float32) for s in np.split(desc, np.cumsum(lengths)[:-1])]))
    seconds = time.perf_counter() - t0
    y = ds.y[rows].astype(np.int64)
    np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), y=y, seconds=seconds)
    return X, y, seconds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--select", nargs="+", default=["both"], choices=["error", "map", "both"],
                    help="both: the paper's selection (triplet error) plus the extra rows chosen by held-out retrieval mAP")
    args = ap.parse_args(argv)
    for n_words in args.words:
        data = features(n_words)
        for select in args.select:
            rows = run(data[0].shape[1], args.draws, False, tree=n_words > 1000, data=data, select=select)
            for r in rows:
                r["select"] = select
            cols = ["words", "method", "w_init", "param", "mAP %", "sparsity %", "train s", "time / OASIS-diag"]
            table = markdown_table(rows, cols)
            write_results(f"similarity_solis_fashion_{n_words // 1000}k_{select}", {
                "protocol": f"Section 5.3 on a Fashion-MNIST subset ({PER_CLASS} per class, 10,000 images, seed 0), dense-SIFT BoW, "
                            "TF-IDF l2 rows; 5 queries per class, the rest the database",
                "codebook": "flat FAISS k-means, 1,024 words (the store's)" if n_words == 1000 else "vocabulary tree b=10",
                "draws": args.draws, "select": select, "rows": rows, "table": table,
            })
            print(table, flush=True)


if __name__ == "__main__":
    main()
