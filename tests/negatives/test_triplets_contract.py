"""Contracts of the triplet samplers that their users' tests do not pin (from mutation-testing survivors)."""

import numpy as np
import pytest

from hardneg.negatives import concept_triplets, random_triplets


def _labels():
    return np.repeat(np.arange(3), 12)  # three classes of 12 rows


def test_concept_triplets_default_is_the_papers_seven_positives_per_concept():
    # [Gao17] Section 5.3: 7 positives -> 7 * 6 ordered pairs, each with every negative
    t = concept_triplets(_labels(), n_negatives=5, random_state=0)
    assert t.shape == (3 * 7 * 6 * 5, 3) and t.dtype == np.int64
    y = _labels()
    for c in range(3):
        mine = t[y[t[:, 0]] == c]
        assert len(np.unique(mine[:, 0])) == 7 and np.all(y[mine[:, 1]] == c) and np.all(y[mine[:, 2]] != c)


def test_random_triplets_are_int64_rows_of_one_class_and_another():
    y = _labels()
    t = random_triplets(y, 200, random_state=0)
    assert t.shape == (200, 3) and t.dtype == np.int64
    assert np.all(y[t[:, 0]] == y[t[:, 1]]) and np.all(t[:, 0] != t[:, 1]) and np.all(y[t[:, 2]] != y[t[:, 0]])


@pytest.mark.parametrize("sample", [lambda y, r: random_triplets(y, 10, rows=r, random_state=0),
                                    lambda y, r: concept_triplets(y, n_negatives=2, rows=r, random_state=0)])
def test_rows_must_be_one_dimensional_indices_into_y(sample):
    y = _labels()
    with pytest.raises(ValueError, match="1-D row indices"):
        sample(y, np.arange(36).reshape(6, 6))  # in range, but 2-D
    with pytest.raises(ValueError, match="1-D row indices"):
        sample(y, np.array([0, 1, 36]))
