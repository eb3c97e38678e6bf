"""Issue 36, the everyday flow through the CLI: tag a handful of items, leave the rest untagged, search.

sklearn's digits (real handwriting): the user tags 15 train images of an 8 as ``mine``; the other
~115 eights of the train split stay untagged in the pool. The paper's selection mines them as
negatives; the default (spies held out of B+ size the rank window) must not fall below asymmetric
bagging, averaged over three seeds.
"""

import json

import numpy as np
import pytest

from hardneg.cli.main import main
from hardneg.store import FeatureStore

SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def digits_store(tmp_path_factory):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    split = np.where(rng.random(len(y)) < 0.7, "train", "test")
    mine = rng.choice(np.flatnonzero((y == 8) & (split == "train")), size=15, replace=False)
    tags = [["mine"] if i in set(mine.tolist()) else [] for i in range(len(y))]
    path = tmp_path_factory.mktemp("untagged") / "digits.store"
    with FeatureStore.create(path, dim=X.shape[1]) as store:
        store.append(X.astype(np.float32), labels=y, tags=tags, split=split.tolist())
    return path


def _ap(store, tmp_path, capsys, method, seed, extra=()):
    model = tmp_path / f"{method}{seed}{''.join(extra)}.npz"
    assert main(["concept", "train", str(store), "-c", "mine", "-o", str(model), "-T", "10", "--method", method,
                 "--seed", str(seed), *extra]) == 0
    out = capsys.readouterr().out
    assert main(["concept", "eval", str(model), str(store), "--label", "8", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["ap"], out


def test_default_is_not_below_bagging_on_an_untagged_pool(digits_store, tmp_path, capsys):
    default, bagging, paper = [], [], []
    for seed in SEEDS:
        ap, out = _ap(digits_store, tmp_path, capsys, "bootstrap", seed)
        default.append(ap)
        # the one line on what was estimated: the pool has no other item tagged 'mine'
        assert "skipped" in out and "spies" in out
        bagging.append(_ap(digits_store, tmp_path, capsys, "bagging", seed)[0])
        ap, out = _ap(digits_store, tmp_path, capsys, "bootstrap", seed, ("--skip-top", "0"))
        paper.append(ap)
        assert "paper's selection" in out
    assert np.mean(default) >= np.mean(bagging)
    assert np.mean(default) > np.mean(paper) + 0.1  # the paper's selection trains against the untagged eights
