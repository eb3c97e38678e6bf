import numpy as np
import pytest

from hardneg.svm import LinearSVM, fit_linear_svm


def test_hard_margin_width_is_hull_distance():
    rng = np.random.default_rng(0)
    A = rng.uniform(0, 1, (40, 2))
    B = rng.uniform(0, 1, (40, 2)) + np.array([3.0, 0.0])
    # hull gap along x: min x of B minus max x of A (the hulls are axis-separated boxes)
    X = np.vstack([A, B])
    y = np.repeat([-1, 1], 40)
    w, b = fit_linear_svm(X, y, C=1e4, max_iter=20000)
    gap = B[:, 0].min() - A[:, 0].max()
    assert 2 / np.linalg.norm(w) <= gap + 1e-3
    assert 2 / np.linalg.norm(w) >= 0.9 * gap  # hard margin: close to the true hull distance
    assert np.all(np.sign(X @ w + b) == y)


def test_labels_mapping_and_estimator():
    X = np.array([[0.0], [1.0], [3.0], [4.0]])
    clf = LinearSVM(C=100.0).fit(X, ["a", "a", "b", "b"])
    assert clf.predict([[0.2], [3.9]]).tolist() == ["a", "b"]
    assert clf.margin_ == pytest.approx(2.0, rel=0.05)


@pytest.mark.parametrize(
    "X, y, kwargs, err",
    [
        (np.ones((4, 2)), [1, 1, 1, 1], {}, ValueError),
        (np.array([[np.nan, 1], [0, 1]]), [0, 1], {}, ValueError),
        (np.ones((4, 2)), [0, 1, 0, 1], {"C": -1.0}, ValueError),
        (np.ones((4, 2)), [0, 1, 0, 1], {"loss": "log"}, ValueError),
        (np.ones((4, 2)), [0, 1, 0], {}, ValueError),
    ],
)
def test_bad_input(X, y, kwargs, err):
    with pytest.raises(err):
        fit_linear_svm(X, y, **kwargs)
