"""Contracts of the pool and the triplet samplers that the other tests leave open.

Pinned here:

- ``NegativePool.take`` of no rows (an empty list, as a caller with nothing selected passes it)
  is an empty ``(0, d)`` block, for an array pool and a store pool alike;
- ``random_triplets`` groups rows by class stably: the draw depends on each class's rows in the
  order given, not on how the classes interleave in ``rows``, so the same seed gives the same
  triplets for a collection listed class by class or interleaved;
- triplet samplers refuse row positions outside ``y``, naming ``rows``.
"""

import numpy as np
import pytest

from hardneg.negatives import NegativePool, concept_triplets, random_triplets
from hardneg.store import FeatureStore


def test_take_of_no_rows_is_an_empty_block(tmp_path):
    X = np.random.default_rng(0).random((6, 3)).astype(np.float32)
    with FeatureStore.create(tmp_path / "s", dim=3) as st:
        st.append(X)
    for pool in (NegativePool(X), NegativePool(FeatureStore.open(tmp_path / "s"))):
        block = pool.take([])
        assert block.shape == (0, 3)
        np.testing.assert_array_equal(pool.take([4, 1]), X[[4, 1]])


def test_random_triplets_do_not_depend_on_how_classes_interleave_in_rows():
    y = np.tile(np.arange(3), 20)  # 60 rows, the classes interleaved
    interleaved = np.arange(60)
    by_class = np.concatenate([np.flatnonzero(y == c) for c in range(3)])  # same rows per class, same order
    a = random_triplets(y, 40, rows=interleaved, random_state=7)
    b = random_triplets(y, 40, rows=by_class, random_state=7)
    np.testing.assert_array_equal(a, b)
    assert np.all(y[a[:, 0]] == y[a[:, 1]]) and np.all(y[a[:, 2]] != y[a[:, 0]])


@pytest.mark.parametrize("rows", [[-1, 0, 1], [0, 1, 60]])
def test_triplet_samplers_refuse_rows_outside_y(rows):
    y = np.repeat(np.arange(3), 20)
    with pytest.raises(ValueError, match="^rows: "):
        random_triplets(y, 5, rows=rows, random_state=0)
    with pytest.raises(ValueError, match="^rows: "):
        concept_triplets(y, n_positives=2, n_negatives=2, rows=rows, random_state=0)
