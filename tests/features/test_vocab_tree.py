"""Hierarchical k-means vocabulary tree (Nistér & Stewénius 2006) and the codebook option that uses it."""

from __future__ import annotations

import numpy as np
import pytest

from hardneg._persist import ModelFileError, load_model, save_model
from hardneg.features import Codebook
from hardneg.features._vocab_tree import VocabularyTree, tree_depth


def _blobs(seed=0, n_centers=27, per=30, d=8, spread=0.05):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 3, (n_centers, d))
    return np.vstack([rng.normal(c, spread, (per, d)) for c in centers]).astype(np.float32)


def _brute_greedy(tree, X):
    """Greedy descent written out with numpy, level by level."""
    b, out = tree.branching, []
    for x in X:
        node = 0
        for level in range(tree.depth):
            first = tree.offsets_[level] + node * b
            children = tree.centers_[first : first + b].astype(np.float64)
            node = node * b + int(np.argmin(((children - x) ** 2).sum(axis=1)))
        out.append(node)
    return np.array(out)


@pytest.mark.parametrize("b,L", [(2, 1), (3, 2), (2, 4), (4, 3)])
def test_leaves_at_most_b_to_the_L_and_greedy_descent(b, L):
    X = _blobs()
    tree = VocabularyTree(b, depth=L, random_state=0).fit(X)
    words = tree.predict(X)
    assert tree.n_words_ == b**L and tree.words_.shape == (b**L, X.shape[1])
    assert tree.centers_.shape[0] == sum(b ** (i + 1) for i in range(L))
    assert words.min() >= 0 and words.max() < b**L
    assert np.unique(words).size <= b**L
    np.testing.assert_array_equal(words, _brute_greedy(tree, X))


def test_deterministic_given_random_state():
    X = _blobs(1)
    a = VocabularyTree(3, depth=2, random_state=5).fit(X)
    b = VocabularyTree(3, depth=2, random_state=5).fit(X)
    np.testing.assert_array_equal(a.centers_, b.centers_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_tiny_nodes_get_empty_words_not_crashes():
    X = _blobs(2, n_centers=3, per=2)  # 6 descriptors for 27 words
    tree = VocabularyTree(3, depth=3, random_state=0).fit(X)
    words = tree.predict(X)
    assert np.isfinite(tree.centers_).all() and np.unique(words).size <= 6
    assert tree.quantization_error(X) < 1e-8  # every descriptor has a leaf of its own


def test_recovers_nested_clusters_and_error_vs_flat():
    """2 far-apart groups of 2 tight blobs: the tree's 4 leaves are the 4 blobs
    and no flat 4-word k-means does better; on unstructured data it is no smaller.
    (Branching 2: FAISS k-means starts from random points, and with k >= 3 it can
    settle in a local minimum that merges two blobs, in a tree as in a flat codebook.)"""
    rng = np.random.default_rng(3)
    tops = rng.normal(0, 100, (2, 4))
    X = np.vstack([rng.normal(t + rng.normal(0, 5, 4), 0.01, (30, 4)) for t in tops for _ in range(2)]).astype(np.float32)
    tree = VocabularyTree(2, depth=2, random_state=0).fit(X)
    words = tree.predict(X)
    assert all(np.unique(words[i : i + 30]).size == 1 for i in range(0, 120, 30)) and np.unique(words).size == 4
    flat = Codebook(n_words=4, n_iter=20, random_state=0).fit(X)
    flat_err = float(np.mean(np.sum((X - flat.centroids_[flat.predict(X)]) ** 2, axis=1)))
    assert tree.quantization_error(X) < 1e-3  # the blobs' own spread (4 x 0.01²)
    assert tree.quantization_error(X) <= flat_err + 1e-6  # flat k-means can only match it (or merge two blobs)
    U = rng.random((2000, 4)).astype(np.float32)
    tree_u = VocabularyTree(4, depth=2, random_state=0).fit(U)
    flat_u = Codebook(n_words=16, n_iter=20, random_state=0).fit(U)
    assert tree_u.quantization_error(U) >= 0.95 * float(np.mean(np.sum((U - flat_u.centroids_[flat_u.predict(U)]) ** 2, axis=1)))


def test_bad_input():
    with pytest.raises(ValueError, match="power"):
        tree_depth(1000, 3)
    assert tree_depth(10_000, 10) == 4
    with pytest.raises(ValueError):
        VocabularyTree(1, depth=2).fit(_blobs())
    with pytest.raises(ValueError, match="sample"):
        VocabularyTree(8, depth=1).fit(_blobs()[:5])
    with pytest.raises(ValueError):
        VocabularyTree(3, depth=1, random_state=0).fit(_blobs()).predict(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="power"):
        Codebook(n_words=100, tree_branching=3).fit(_blobs())


def test_codebook_tree_option_round_trip(tmp_path):
    X = _blobs(4)
    sets = [X[i : i + 30] for i in range(0, X.shape[0], 30)]
    cb = Codebook(n_words=27, tree_branching=3, n_iter=5, random_state=0).fit(sets)
    np.testing.assert_array_equal(cb.predict(X), cb.tree_.predict(X))
    assert cb.centroids_.shape == (27, X.shape[1]) and cb.idf_.shape == (27,)
    H = cb.histograms(sets, sparse=True)
    assert H.shape == (len(sets), 27)
    back = Codebook.load(cb.save(tmp_path / "cb.npz"))
    np.testing.assert_array_equal(back.predict(X), cb.predict(X))
    # a flat codebook is unchanged by the option's existence
    flat = Codebook(n_words=27, n_iter=5, random_state=0).fit(sets)
    assert getattr(flat, "tree_", None) is None
    back_flat = Codebook.load(flat.save(tmp_path / "flat.npz"))
    np.testing.assert_array_equal(back_flat.predict(X), flat.predict(X))
    # forged tree files: one-line ModelFileError
    arrays, meta = load_model(tmp_path / "cb.npz", "hardneg.Codebook", (1,))
    for edit in (lambda a, m: a.update(tree_inner=a["tree_inner"][:-1]),
                 lambda a, m: a["tree_inner"].__setitem__((0, 0), np.nan),
                 lambda a, m: a.pop("tree_inner"),
                 lambda a, m: m.update(tree_branching=4)):
        a, m = {k: v.copy() for k, v in arrays.items()}, dict(meta)
        edit(a, m)
        with pytest.raises(ModelFileError):
            Codebook.load(save_model(tmp_path / "forged.npz", "hardneg.Codebook", 1, a, m))


def test_docstring_example():
    import doctest

    import hardneg.features._vocab_tree as mod

    assert doctest.testmod(mod).failed == 0
