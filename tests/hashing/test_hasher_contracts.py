"""Hashers: contracts a user relies on that no other test pinned.

* ``hull_distance_qp`` gives the exact hull distance of points in tiny units too (the step
  size of its projected gradient stays positive whatever the scale of the data).
* ``normalized_cut`` never leaves one side empty, even when the second eigenvector is
  numerically of one sign and flat (the docstring's promise, on extreme similarities).
* ``PQHasher`` fitted on fewer rows than centroids saves and loads like any other model,
  and ``n_centroids_`` survives the round trip; ``search`` takes database codes as plain
  integer lists (codes read back from JSON) and ranks them as the uint8 codes.
* ``TSVMHashing``: ``n_trees`` giving exactly ``n_bits`` hyperplanes is enough; the
  ``C="auto"`` progress units add up to ``progress_total`` when there are too few labels to
  validate; the ``C="auto"`` log line reports mAP@100 and the C chosen; different seeds give
  different trees (the tree seeds are drawn from the full 63-bit range).
* ``fingerprint`` of a hasher whose ``fit`` failed raises ``NotFittedError``.
"""

from __future__ import annotations

import logging
import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from hardneg.hashing import PQHasher, TSVMHashing
from hardneg.hashing._hierarchy import hull_distance_qp, normalized_cut


def _classes(n_per, k=3, d=5, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d)) * 3
    y = np.repeat(np.arange(k), n_per)
    return (centres[y] + rng.normal(size=(y.size, d))).astype(np.float32), y


# --------------------------------------------------------------------------- hierarchy
@pytest.mark.parametrize("scale", [1.0, 5e-8])
def test_hull_distance_is_exact_for_tiny_coordinates(scale):
    # two triangles; the nearest points are the vertex (1, 2) of A and the vertex (1, 3) of B: distance 1
    A = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 2.0]])
    B = np.array([[1.0, 3.0], [3.0, 5.0], [-1.0, 4.0]])
    assert hull_distance_qp(scale * A, scale * B) == pytest.approx(scale * 1.0, rel=1e-6)


def test_normalized_cut_never_leaves_a_side_empty():
    # similarities spanning 1e-300..1e200: the second generalized eigenvector comes out positive
    # and equal on three of the five classes, so neither its sign nor its median splits them
    W = np.array([
        [0.0, 1e200, 1e-200, 1e50, 1e-300],
        [1e200, 0.0, 1e-200, 1e-200, 1e-200],
        [1e-200, 1e-200, 0.0, 1e-6, 1e50],
        [1e50, 1e-200, 1e-6, 0.0, 1.0],
        [1e-300, 1e-200, 1e50, 1.0, 0.0],
    ])
    mask = normalized_cut(W)
    assert isinstance(mask, np.ndarray) and mask.dtype == bool and mask.shape == (5,)
    assert 0 < mask.sum() < 5


# --------------------------------------------------------------------------- product quantization
def _small_pq():
    X = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # fewer rows than centroids: warned, tested elsewhere
        return PQHasher(n_bits=16, random_state=0).fit(X), X


def test_pq_fitted_on_few_rows_round_trips(tmp_path):
    pq, X = _small_pq()
    assert pq.n_centroids_ == 5
    again = PQHasher.load(pq.save(tmp_path / "pq.npz"))
    assert again.n_centroids_ == 5
    np.testing.assert_array_equal(again.transform(X), pq.transform(X))
    assert again.fingerprint() == pq.fingerprint()


def test_pq_round_trip_keeps_n_centroids_with_enough_rows(tmp_path):
    X = np.random.default_rng(1).normal(size=(300, 8)).astype(np.float32)
    pq = PQHasher(n_bits=16, random_state=0).fit(X)
    assert PQHasher.load(pq.save(tmp_path / "pq.npz")).n_centroids_ == pq.n_centroids_ == 256


def test_pq_search_takes_codes_as_integer_lists():
    pq, X = _small_pq()
    codes = pq.transform(X)
    idx, dist = pq.search(X, codes, k=3)
    idx_list, dist_list = pq.search(X, codes.tolist(), k=3)  # e.g. codes read back from JSON
    np.testing.assert_array_equal(idx_list, idx)
    np.testing.assert_array_equal(dist_list, dist)
    np.testing.assert_array_equal(idx[:, 0], np.arange(5))  # every row's centroid is itself


# --------------------------------------------------------------------------- TSVM hashing
def test_n_trees_giving_exactly_n_bits_is_enough():
    X, y = _classes(8)
    # 3 classes: 2 hyperplanes per tree, so 2 trees give exactly 4 bits
    h = TSVMHashing(n_bits=4, n_trees=2, C=1.0, random_state=0).fit(X, y)
    assert h.trees_.shape == (2, 2, 3) and h.coef_.shape == (4, 5)
    assert h.transform(X).shape == (X.shape[0], 1)
    with pytest.raises(ValueError, match=r"n_trees=1: 1 trees of 2 bits .* cannot give n_bits=4"):
        TSVMHashing(n_bits=4, n_trees=1, C=1.0, random_state=0).fit(X, y)


def test_progress_adds_up_when_too_few_labels_to_validate_C():
    X, y = _classes(2)  # 2 rows per class: a fifth of each class is no row, nothing to validate on
    h = TSVMHashing(n_bits=4, n_trees=2, random_state=0)
    counts = []
    h.fit(X, y, progress=counts.append)
    assert h.C_ == 1.0 and h.C_scores_ == {}
    assert all(isinstance(c, int) and c >= 1 for c in counts)
    assert sum(counts) == h.progress_total(3) == 2 * 2 + 2 * 2 * 2  # the skipped candidates' share included


def test_auto_C_logs_the_validation_map_at_100_and_the_choice(caplog):
    X, y = _classes(45)  # 135 rows: 27 validation queries against 108 rows, so mAP@100
    caplog.set_level(logging.INFO, logger="hardneg.hashing._tsvm_hashing")
    h = TSVMHashing(n_bits=4, n_trees=2, random_state=0).fit(X, y)
    lines = [r.getMessage() for r in caplog.records if "C='auto'" in r.getMessage()]
    assert len(lines) == 1, lines
    found = re.fullmatch(r"C='auto': validation mAP@100 (\{.*\}) -> C=(\S+)", lines[0])
    assert found, lines[0]
    assert float(found.group(2)) == h.C_ and h.C_ in h.C_scores_
    assert found.group(1) == str(h.C_scores_)


def test_different_seeds_give_different_trees():
    X, y = _classes(4, k=2)
    U = np.random.default_rng(9).normal(size=(12, 5)).astype(np.float32)
    coefs = [
        TSVMHashing(n_bits=1, C=1.0, random_state=seed).fit(X, y, X_unlabeled=U).coef_.tobytes()
        for seed in range(30)
    ]
    assert len(set(coefs)) == len(coefs)


def test_fingerprint_of_a_failed_fit_is_not_fitted():
    X, _ = _classes(4)
    h = TSVMHashing(n_bits=4, C=1.0)
    with pytest.raises(ValueError, match="at least 2 classes"):
        h.fit(X, np.zeros(X.shape[0], dtype=int))
    with pytest.raises(NotFittedError):
        h.fingerprint()
