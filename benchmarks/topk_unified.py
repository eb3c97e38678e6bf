"""One implementation per store-wide job (issue 25): what the shared partition path costs in process.

Side by side in one process on the same data, alternating rounds, best of
``--repeats``: the in-process code each job had before (copied here as the
baseline: concept search's block loop with ``argpartition``, ``HammingIndex.from_store``'s
chunk loop) against the one implementation now (``hardneg.concept.search`` and
``HammingIndex.from_store`` through the local ``Runner``, partitions, exact
tie-aware top-k merge). Results must be equal; the ratio new / old is reported.

Run: ``python benchmarks/topk_unified.py`` (200,000 x 64) or ``--quick`` (50,000 x 64).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import markdown_table, write_results  # noqa: E402
from hardneg._validation import check_matrix  # noqa: E402
from hardneg.concept import search  # noqa: E402
from hardneg.hashing import LSHHasher  # noqa: E402
from hardneg.index import HammingIndex  # noqa: E402
from hardneg.store import FeatureStore  # noqa: E402


class Linear:
    def __init__(self, w):
        self.w = w

    def decision_function(self, X):
        return X @ self.w


def old_search(model, data, k, chunk_rows):
    """The in-process concept search before issue 25 (block loop, argpartition, final lexsort)."""
    is_store = hasattr(data, "iter_chunks")
    if not is_store:
        data = check_matrix(data, "data", non_negative=True, min_rows=0)  # as the old function checked its input
    best_rows, best_scores = np.empty(0, np.int64), np.empty(0, np.float64)
    blocks = data.iter_chunks(chunk_rows) if is_store else ((lo, data[lo : lo + chunk_rows]) for lo in range(0, data.shape[0], chunk_rows))
    for lo, block in blocks:
        scores = np.asarray(model.decision_function(block), np.float64)
        rows = np.concatenate([best_rows, np.arange(lo, lo + block.shape[0])])
        scores = np.concatenate([best_scores, scores])
        if scores.size > k:
            keep = np.argpartition(-scores, k - 1)[:k]
            rows, scores = rows[keep], scores[keep]
        best_rows, best_scores = rows, scores
    order = np.lexsort((best_rows, -best_scores))
    return best_rows[order], best_scores[order]


def old_from_store(store, hasher, chunk_rows):
    """``HammingIndex.from_store`` before issue 25 (exact mode): encode chunk by chunk, add."""
    index = HammingIndex(int(hasher.n_bits_))
    ids = store.ids()
    for first, block in store.iter_chunks(chunk_rows):
        index.add(hasher.transform(block), ids[first : first + block.shape[0]])
    return index


def best_of(fns, repeats):
    times = [[] for _ in fns]
    out = [None] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):  # alternate: drift on a shared machine hits both
            t = time.perf_counter()
            out[i] = fn()
            times[i].append(time.perf_counter() - t)
    return [min(t) for t in times], out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    n, dim, k, chunk = (50_000 if args.quick else 200_000), 64, 100, 16384
    rng = np.random.default_rng(0)
    X = rng.random((n, dim), dtype=np.float32)
    X[n // 2 : n // 2 + 500] = X[7]  # ties across blocks
    model = Linear(rng.normal(size=dim).astype(np.float32))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with FeatureStore.create(Path(tmp) / "s", dim=dim, chunk_rows=chunk) as st:
            st.append(X)
        st = FeatureStore.open(Path(tmp) / "s")
        for name, data in (("concept search, array", X), ("concept search, store", st)):
            (t_old, t_new), (old, new) = best_of([lambda d=data: old_search(model, d, k, chunk),
                                                  lambda d=data: search(model, d, k, chunk_rows=chunk)], args.repeats)
            same = bool(np.array_equal(old[0], new.rows) and np.array_equal(old[1], new.scores))
            rows.append({"job": name, "old_s": t_old, "new_s": t_new, "new_over_old": t_new / t_old, "same_result": same})
        hasher = LSHHasher(n_bits=64, random_state=0).fit(X[:2000])
        (t_old, t_new), (old, new) = best_of([lambda: old_from_store(st, hasher, chunk),
                                              lambda: HammingIndex.from_store(st, hasher, chunk_rows=chunk)], args.repeats)
        same = bool(np.array_equal(old.codes(), new.codes()) and old.ids.tolist() == new.ids.tolist())
        rows.append({"job": "Hamming index from store", "old_s": t_old, "new_s": t_new, "new_over_old": t_new / t_old,
                     "same_result": same})
    print(markdown_table(rows, ["job", "old_s", "new_s", "new_over_old", "same_result"]))
    path = write_results("topk_unified_quick" if args.quick else "topk_unified", {"n": n, "dim": dim, "k": k, "chunk_rows": chunk,
                                                                                  "repeats": args.repeats, "rows": rows})
    print(path)


if __name__ == "__main__":
    main()
