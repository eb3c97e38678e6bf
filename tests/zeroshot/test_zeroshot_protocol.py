"""[Bucher16] protocol details of ZeroShotClassifier: the growing negative set D₋, random negatives at epoch 1."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from hardneg.zeroshot import CorrelationSampler, UncertaintySampler, ZeroShotClassifier, load_zero_shot  # noqa: E402
from hardneg.zeroshot._classifier import grow_negatives  # noqa: E402


def _data(seed=0, n_classes=5, per_class=12):
    rng = np.random.default_rng(seed)
    attrs = 3 * rng.random((n_classes, 4))
    y = np.repeat(np.arange(n_classes), per_class)
    A = attrs[y] + 0.3 * rng.random((y.size, 4))  # per-image vectors: q(Y) varies
    X = A @ rng.normal(size=(4, 10)) + 0.05 * rng.normal(size=(y.size, 10))
    return X, y, attrs, A


def _fit_recording(**params):
    X, y, attrs, A = _data()
    seen = []
    clf = ZeroShotClassifier(m=4, batch_size=16, n_epochs=6, random_state=0, **params)
    clf.fit(X, y, sample_attributes=A, progress=lambda n: seen.append(clf.negatives_.copy()))
    return clf, seen, y.size


def test_grow_negatives_appends_then_drops_oldest_past_the_cap():
    old = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    new = np.array([[7, 8], [9, 10]], np.int32)
    np.testing.assert_array_equal(grow_negatives(None, new, 4), new)
    np.testing.assert_array_equal(grow_negatives(old, new, 5), [[1, 2, 3, 7, 8], [4, 5, 6, 9, 10]])
    np.testing.assert_array_equal(grow_negatives(old, new, 4), [[2, 3, 7, 8], [5, 6, 9, 10]])
    np.testing.assert_array_equal(grow_negatives(old, new, None), new)  # redraw


def test_growing_negative_set_is_monotone_until_the_cap_and_keeps_earlier_pairs():
    clf, sets, n = _fit_recording(sampler="uncertainty", n_negatives=2, max_negatives=7)
    sizes = [s.shape[1] for s in sets]
    assert sizes == [2, 4, 6, 7, 7, 7]
    assert clf.history_["negatives"] == [n * k for k in sizes]
    assert clf.history_["pairs"] == [n * (1 + k) for k in sizes]
    assert clf.negatives_.shape == (n, 7)
    for before, after in zip(sets, sets[1:]):
        # what was there stays (the oldest columns dropped past the cap), the new draws come last
        dropped = before.shape[1] + 2 - after.shape[1]
        np.testing.assert_array_equal(after[:, : before.shape[1] - dropped], before[:, dropped:])
    y = _data()[1]
    # every kept negative is a candidate (per-image vector) of another class
    assert not (y[clf.negatives_] == y[:, None]).any()


def test_redraw_replaces_the_negative_set_every_epoch():
    clf, sets, n = _fit_recording(sampler="uncertainty", n_negatives=3, negative_set="redraw", max_negatives=3)
    assert [s.shape[1] for s in sets] == [3] * 6
    assert clf.history_["negatives"] == [3 * n] * 6
    assert any(not np.array_equal(a, b) for a, b in zip(sets, sets[1:]))
    assert clf.get_params()["negative_set"] == "redraw"


def test_negative_set_parameters_are_checked():
    X, y, attrs, _ = _data()
    with pytest.raises(ValueError, match="negative_set"):
        ZeroShotClassifier(negative_set="keep", n_epochs=1).fit(X, y, attrs)
    with pytest.raises(ValueError, match="max_negatives"):
        ZeroShotClassifier(n_negatives=5, max_negatives=4, n_epochs=1).fit(X, y, attrs)
    ZeroShotClassifier(n_negatives=5, max_negatives=4, negative_set="redraw", n_epochs=1, m=2).fit(X, y, attrs)


def _hand_uniform(labels, y, k, seed):
    """Uniform draws among other-class candidates, written out: one integer per slot, redrawn while same-class."""
    rng = np.random.default_rng(seed)
    out = rng.integers(0, labels.size, size=(y.size, k))
    bad = labels[out] == y[:, None]
    while bad.any():
        out[bad] = rng.integers(0, labels.size, size=int(bad.sum()))
        bad = labels[out] == y[:, None]
    return out


@pytest.mark.parametrize("cls", [UncertaintySampler, CorrelationSampler])
def test_epoch_one_of_hard_samplers_is_uniform(cls):
    vecs = np.array([[0.0], [1.0], [5.0], [5.0], [9.0], [20.0]])  # class 0's q differs from class 1's
    labels = np.array([0, 0, 1, 1, 2, 2])
    s = cls().prepare(vecs, labels)
    y = np.array([0, 1, 2, 0])
    pos = np.array([0, 2, 4, 1])
    assert not s.uses_scores(1)
    P = s.probabilities(None, None, pos, y, epoch=1)
    expected = np.array([[0, 0, 1, 1, 1, 1], [1, 1, 0, 0, 1, 1], [1, 1, 1, 1, 0, 0], [0, 0, 1, 1, 1, 1]]) / 4.0
    np.testing.assert_allclose(P, expected)
    drawn = s.sample(None, None, pos, y, 5, 1, np.random.default_rng(42))
    np.testing.assert_array_equal(drawn, _hand_uniform(labels, y, 5, 42))
    # epoch 2 on: weighted by the model (not uniform any more)
    E = np.array([[0.0], [5.0], [9.0], [1.0]])
    assert s.uses_scores(2)
    assert not np.allclose(s.probabilities(E, vecs, pos, y, epoch=2), expected)


def test_classifier_epoch_one_negatives_are_the_random_samplers():
    # same seed, same candidates: epoch 1 of uncertainty and of unc./cor. draws exactly what random draws
    first = {}
    for sampler in ("random", "uncertainty", "correlation"):
        _, sets, _ = _fit_recording(sampler=sampler, n_negatives=3)
        first[sampler] = sets
    np.testing.assert_array_equal(first["uncertainty"][0], first["random"][0])
    np.testing.assert_array_equal(first["correlation"][0], first["random"][0])
    assert not np.array_equal(first["correlation"][1][:, 3:], first["random"][1][:, 3:])


def test_save_load_keeps_the_negative_set_parameters(tmp_path):
    clf, _, _ = _fit_recording(sampler="random", n_negatives=2, max_negatives=9, negative_set="redraw")
    path = clf.save(tmp_path / "zsl")
    back = load_zero_shot(path)
    assert back.negative_set == "redraw" and back.max_negatives == 9
