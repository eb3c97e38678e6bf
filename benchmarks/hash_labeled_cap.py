"""How many labeled rows ``hash train`` needs: TSVM hashing's retrieval mAP and training time against the
labeled rows it trains on (issue 41 goal 2: on all 60,000 labeled Fashion-MNIST rows it took more than 20 min).

Data: the Fashion-MNIST CNN store that ``hardneg extract fashion-mnist`` writes (all 70,000 images,
EfficientNet-Lite0 at the command's input size; built here when missing). For each cap N
(``--caps``), the command's own sampling (:func:`hardneg.cli.hash.stratified_sample`: each class in
proportion, seed 0) picks N labeled training rows; 64-bit ``TSVMHashing`` (the command's defaults:
``C="auto"``, 10,000 unlabeled rows) is trained on them and timed; then ``hash eval``'s protocol:
1,000 seeded test queries rank the 60,000 training rows by exact Hamming distance, mAP@100 against
the labels. Each cap's mAP and training time are reported beside the largest cap's (difference and
ratio): the trade-off behind ``hash train --max-labeled``'s default (docs/methods/hashing.md says
which and why). Nothing else should run on the machine meanwhile (the times are wall seconds of one
process).

    PYTHONPATH=. .venv/bin/python benchmarks/hash_labeled_cap.py
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import markdown_table, write_results  # noqa: E402

def fashion_store() -> Path:
    """The store ``hardneg extract fashion-mnist`` writes to its default place (built, or resumed, when missing)."""
    from hardneg.store import FeatureStore

    path = Path.home() / ".cache" / "hardneg" / "stores" / "fashion-mnist-cnn"
    try:
        if len(FeatureStore.open(path)) == 70_000:
            return path
    except (OSError, ValueError):
        pass
    subprocess.run([str(Path(sys.executable).with_name("hardneg")), "extract", "fashion-mnist", "-o", str(path)], check=True)
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--caps", type=int, nargs="+", default=[1000, 2000, 5000, 10000])
    ap.add_argument("--bits", type=int, default=64)
    args = ap.parse_args()
    from hardneg.cli.hash import stratified_sample
    from hardneg.eval import hamming_rank, mean_average_precision_at_k
    from hardneg.hashing import TSVMHashing
    from hardneg.store import FeatureStore

    t0 = time.perf_counter()
    store = FeatureStore.open(fashion_store())
    labels = store.labels()
    train, test = store.select(split="train"), store.select(split="test")
    X_db = np.asarray(store.take(train), dtype=np.float32)
    q_rows = np.sort(np.random.default_rng(0).choice(test, 1000, replace=False))  # hash eval's query subset (seed 0)
    X_q = np.asarray(store.take(q_rows), dtype=np.float32)
    rows = []
    for cap in args.caps:
        rng = np.random.default_rng(0)  # as hash train --seed 0 draws them
        labeled = stratified_sample(train, labels[train], cap, rng)
        unl = np.sort(rng.choice(train, min(10_000, train.size), replace=False))
        t = time.perf_counter()
        model = TSVMHashing(n_bits=args.bits, C="auto", random_state=0).fit(
            np.asarray(store.take(labeled), dtype=np.float32), labels[labeled], X_unlabeled=np.asarray(store.take(unl), dtype=np.float32))
        fit_s = time.perf_counter() - t
        ranked, _ = hamming_rank(model.transform(X_q), model.transform(X_db), k=100)
        rel = labels[train][ranked] == labels[q_rows][:, None]
        m = float(mean_average_precision_at_k(rel, 100))
        rows.append({"max_labeled": cap, "labeled_rows": int(labeled.size), "fit_s": round(fit_s, 1), "map@100": round(m, 4),
                     "C": getattr(model, "C_", None)})
        print(rows[-1], flush=True)
    largest = rows[-1]
    for r in rows:
        r["map_minus_largest"] = round(r["map@100"] - largest["map@100"], 4)
        r["fit_time_largest_over_this"] = round(largest["fit_s"] / r["fit_s"], 2)
    print(markdown_table(rows, ["max_labeled", "labeled_rows", "fit_s", "fit_time_largest_over_this", "map@100", "map_minus_largest"]))
    protocol = {"store": str(store.path), "bits": args.bits, "queries": 1000, "database": int(train.size), "k": 100,
                "n_unlabeled": 10000, "C": "auto"}
    print(f"wrote {write_results('hash_labeled_cap', {'protocol': protocol, 'rows': rows, 'wall_s': time.perf_counter() - t0})}")


if __name__ == "__main__":
    main()
