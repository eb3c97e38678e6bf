"""Tests for hardneg.eval: hand-worked values and slow reference implementations."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from hardneg.eval import (
    ap_at_k,
    average_precision,
    generalized_zsl_scores,
    hamming_distances,
    hamming_rank,
    mean_average_precision_at_k,
    mean_per_class_accuracy,
    precision_at_k,
    precision_at_ranks,
    precision_recall_curve,
    relevance_from_labels,
)


# --------------------------------------------------------------------------- AP
def test_average_precision_hand_example():
    rel = [1, 0, 1, 0, 0, 1]
    scores = [6, 5, 4, 3, 2, 1]
    assert average_precision(rel, scores) == pytest.approx((1 / 1 + 2 / 3 + 3 / 6) / 3)


@pytest.mark.parametrize("seed", range(8))
def test_average_precision_matches_sklearn_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    y = rng.integers(0, 2, n)
    y[rng.integers(n)] = 1
    # few distinct values -> many ties
    scores = rng.integers(0, 5, n).astype(float) if seed % 2 else rng.normal(size=n)
    assert average_precision(y, scores) == pytest.approx(average_precision_score(y, scores), abs=1e-12)


def test_average_precision_all_tied():
    y = [1, 0, 0, 1]
    assert average_precision(y, [0.3] * 4) == pytest.approx(0.5)
    assert average_precision(y, [0.3] * 4) == pytest.approx(average_precision_score(y, [0.3] * 4))


def test_ap_at_k_both_normalizations_by_hand():
    rel = [1, 0, 1, 0, 0, 1]
    # top 3: hits at ranks 1 and 3
    assert ap_at_k(rel, 3) == pytest.approx((1 + 2 / 3) / 2)
    assert ap_at_k(rel, 3, normalize="all") == pytest.approx((1 + 2 / 3) / 3)
    # the collection holds 10 relevant items; min(k, 10) = 3
    assert ap_at_k(rel, 3, n_relevant=10, normalize="all") == pytest.approx((1 + 2 / 3) / 3)
    assert ap_at_k(rel, 6, n_relevant=10, normalize="all") == pytest.approx((1 + 2 / 3 + 3 / 6) / 6)
    # full list, "all" -> plain AP
    assert ap_at_k(rel, normalize="all") == pytest.approx(average_precision(rel, -np.arange(6)))
    assert ap_at_k([0, 0, 1], 2) == 0.0
    assert ap_at_k([0, 0, 0], 3, normalize="all") == 0.0


def test_map_at_k_vectorized_matches_loop():
    rng = np.random.default_rng(1)
    rel = rng.random((30, 40)) < 0.3
    n_rel = rel.sum(1) + rng.integers(0, 5, 30)
    for normalize, nr in (("retrieved", None), ("all", n_rel)):
        value, per_q = mean_average_precision_at_k(rel, 25, n_relevant=nr, normalize=normalize, return_per_query=True)
        loop = [
            ap_at_k(rel[i], 25, n_relevant=None if nr is None else int(nr[i]), normalize=normalize) for i in range(30)
        ]
        np.testing.assert_allclose(per_q, loop)
        assert value == pytest.approx(np.mean(loop))


def test_map_from_labels_and_multilabel():
    q = np.array([0, 1])
    ranked = np.array([[0, 1, 0], [0, 0, 1]])
    expected = ((1 + 2 / 3) / 2 + (1 / 3) / 1) / 2
    assert mean_average_precision_at_k((q, ranked)) == pytest.approx(expected)
    qm = np.array([[1, 1, 0]])
    rm = np.array([[[0, 1, 0], [0, 0, 1], [1, 0, 1]]])
    assert relevance_from_labels(qm, rm).tolist() == [[True, False, True]]
    assert mean_average_precision_at_k((qm, rm), k=2) == pytest.approx(1.0)


def test_precision_at_k_and_ranks():
    rel = np.array([[1, 0, 1, 1], [0, 0, 0, 1]])
    assert precision_at_k(rel[0], 3) == pytest.approx(2 / 3)
    assert precision_at_k(rel, 4) == pytest.approx((3 / 4 + 1 / 4) / 2)
    ranks, p = precision_at_ranks(rel, [1, 4])
    assert ranks.tolist() == [1, 4]
    np.testing.assert_allclose(p, [0.5, 0.5])


def test_precision_recall_curve_wraps_sklearn():
    p, r, t = precision_recall_curve([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1])
    assert r[0] == 1.0 and p[-1] == 1.0 and len(t) == len(p) - 1


# ------------------------------------------------------------ classification
def test_mean_per_class_accuracy_hand():
    y_true = [0, 0, 0, 0, 1, 1, 2]
    y_pred = [0, 0, 0, 1, 1, 0, 0]
    assert mean_per_class_accuracy(y_true, y_pred) == pytest.approx((3 / 4 + 1 / 2 + 0) / 3)
    assert mean_per_class_accuracy(y_true, y_pred, labels=[0, 1]) == pytest.approx((3 / 4 + 1 / 2) / 2)
    with pytest.raises(ValueError, match="labels"):
        mean_per_class_accuracy(y_true, y_pred, labels=[5])


def test_generalized_zsl_harmonic_hand():
    # seen {0,1}: class 0 2/2, class 1 0/2 (predicted as unseen 2) -> S = 0.5
    # unseen {2,3}: class 2 1/1, class 3 1/2 -> U = 0.75
    y_true = [0, 0, 1, 1, 2, 3, 3]
    y_pred = [0, 0, 2, 2, 2, 3, 0]
    s = generalized_zsl_scores(y_true, y_pred, seen_classes=[0, 1], unseen_classes=[2, 3])
    assert s["seen"] == pytest.approx(0.5)
    assert s["unseen"] == pytest.approx(0.75)
    assert s["harmonic"] == pytest.approx(2 * 0.5 * 0.75 / 1.25)
    zero = generalized_zsl_scores([0, 1], [1, 0], [0], [1])
    assert zero == {"seen": 0.0, "unseen": 0.0, "harmonic": 0.0}
    with pytest.raises(ValueError, match="overlap"):
        generalized_zsl_scores([0, 1], [0, 1], [0, 1], [1])
    with pytest.raises(ValueError, match="neither"):
        generalized_zsl_scores([0, 5], [0, 5], [0], [1])


# ------------------------------------------------------------------- Hamming
def _brute_force_rank(q, db, k):
    qb = np.unpackbits(q, axis=1).astype(np.int64)
    dbb = np.unpackbits(db, axis=1).astype(np.int64)
    idx, dist = [], []
    for row in qb:
        d = (row[None, :] != dbb).sum(1)
        order = np.lexsort((np.arange(len(d)), d))[:k]
        idx.append(order)
        dist.append(d[order])
    return np.array(idx), np.array(dist)


@pytest.mark.parametrize("n_bytes,k,block", [(1, 17, None), (2, 50, 3), (5, 200, 7), (9, 10, None)])
def test_hamming_rank_matches_brute_force(n_bytes, k, block):
    rng = np.random.default_rng(n_bytes)
    # few distinct codes -> many ties
    pool = rng.integers(0, 256, (12, n_bytes), dtype=np.uint8)
    db = pool[rng.integers(0, 12, 200)]
    q = pool[rng.integers(0, 12, 15)]
    idx, dist = hamming_rank(q, db, k=k, block_size=block)
    ref_idx, ref_dist = _brute_force_rank(q, db, k)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(dist, ref_dist)
    assert idx.dtype == np.int64 and dist.shape == (15, k)
    np.testing.assert_array_equal(hamming_distances(q, db)[np.arange(15)[:, None], idx], dist)


def test_hamming_rank_random_ties():
    rng = np.random.default_rng(3)
    pool = rng.integers(0, 256, (4, 2), dtype=np.uint8)
    db = pool[rng.integers(0, 4, 100)]
    q = db[:6]
    a_idx, a_dist = hamming_rank(q, db, k=30, ties="random", random_state=5)
    b_idx, _ = hamming_rank(q, db, k=30, ties="random", random_state=5)
    _, ref_dist = _brute_force_rank(q, db, 30)
    np.testing.assert_array_equal(a_idx, b_idx)
    np.testing.assert_array_equal(a_dist, ref_dist)  # same distances, tie order may differ
    d_full = hamming_distances(q, db)
    np.testing.assert_array_equal(np.take_along_axis(d_full, a_idx, 1), a_dist)
    s_idx, _ = hamming_rank(q, db, k=30)
    assert not np.array_equal(a_idx, s_idx)


# --------------------------------------------------------------- bad inputs
def test_bad_inputs():
    with pytest.raises(ValueError, match="k=7"):
        ap_at_k([1, 0, 1], 7)
    with pytest.raises(ValueError, match="k=7"):
        mean_average_precision_at_k(np.ones((2, 3)), 7)
    with pytest.raises(ValueError, match="scores"):
        average_precision([1, 0, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="NaN"):
        average_precision([1, 0], [np.nan, 0.2])
    with pytest.raises(ValueError, match="empty"):
        average_precision([], [])
    with pytest.raises(ValueError, match="no relevant"):
        average_precision([0, 0], [1, 2])
    with pytest.raises(ValueError, match="binary"):
        ap_at_k([2, 0, 1], 2)
    with pytest.raises(ValueError, match="normalize"):
        ap_at_k([1, 0], 1, normalize="bogus")
    with pytest.raises(ValueError, match="n_relevant"):
        ap_at_k([1, 1, 0], 3, n_relevant=1, normalize="all")
    with pytest.raises(ValueError, match="rows"):
        relevance_from_labels([0, 1], [[0, 1]])
    with pytest.raises(ValueError, match="y_pred"):
        mean_per_class_accuracy([0, 1], [0])
    db = np.zeros((5, 2), np.uint8)
    with pytest.raises(ValueError, match="larger than the collection"):
        hamming_rank(db[:1], db, k=6)
    with pytest.raises(ValueError, match="bytes per code"):
        hamming_rank(np.zeros((1, 3), np.uint8), db)
    with pytest.raises(TypeError, match="uint8"):
        hamming_rank(np.zeros((1, 2), np.int64), db)
    with pytest.raises(ValueError, match="empty"):
        hamming_rank(np.zeros((0, 2), np.uint8), db)
    with pytest.raises(ValueError, match="ties"):
        hamming_rank(db[:1], db, ties="first")
