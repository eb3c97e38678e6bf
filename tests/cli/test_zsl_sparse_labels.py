"""Issue 39 item 2: a huge class id must not size an array (zsl train reached 17.6 GB on label 2**63 - 1)."""

import numpy as np

from hardneg.cli.zsl import _class_space
from hardneg.store import FeatureStore


def _store(path, labels):
    with FeatureStore.create(path, dim=3) as store:
        store.append(np.ones((len(labels), 3), np.float32), labels=labels)
    return FeatureStore.open(path)


def test_sparse_class_numbers_are_mapped_through_the_classes_present(tmp_path):
    big = 2**63 - 1
    store = _store(tmp_path / "s", [0, big, 7, -1, big])
    codes, names = _class_space(store, "s", None)
    assert names == ["0", "7", str(big)]
    assert codes.tolist() == [0, 2, 1, -1, 2]


def test_dense_class_numbers_keep_their_numbers(tmp_path):
    store = _store(tmp_path / "s", [0, 3, 2, -1])
    codes, names = _class_space(store, "s", None)
    assert names == ["0", "1", "2", "3"] and codes.tolist() == [0, 3, 2, -1]
