import numpy as np
import pytest
from sklearn.datasets import load_digits

from hardneg._persist import ModelFileError
from hardneg.hashing import (
    LSHHasher,
    PCAITQHasher,
    PCARRHasher,
    PQHasher,
    SKLSHHasher,
    TSVMHashing,
    build_hierarchy,
    class_similarity,
    convex_hull_distances,
    load_hasher,
    normalized_cut,
)
from hardneg.hashing._hierarchy import _indicator, hull_distance_qp


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X.astype(np.float32), y


def _blocks(groups, rng, noise=0.02):
    """Similarity with dense blocks (the groups) and weak links between them."""
    n = sum(groups)
    W = rng.uniform(0, noise, (n, n))
    start = 0
    for g in groups:
        W[start : start + g, start : start + g] = rng.uniform(0.8, 1.0, (g, g))
        start += g
    W = (W + W.T) / 2
    np.fill_diagonal(W, 0)
    return W


@pytest.mark.parametrize("seed", range(5))
def test_normalized_cut_splits_well_separated_groups(seed):
    rng = np.random.default_rng(seed)
    groups = [3, 4]
    W = _blocks(groups, rng)
    perm = rng.permutation(7)
    W = W[np.ix_(perm, perm)]
    mask = normalized_cut(W)
    truth = perm < 3
    assert np.array_equal(mask, truth) or np.array_equal(mask, ~truth)


def test_hierarchy_from_geometry():
    # four classes: {0, 1} close together, {2, 3} close together, the pairs far apart
    rng = np.random.default_rng(0)
    centers = np.array([[0, 0], [0, 3], [30, 0], [30, 3]], float)
    X = np.vstack([c + rng.uniform(-0.5, 0.5, (30, 2)) for c in centers])
    y = np.repeat(np.arange(4), 30)
    _, Y = _indicator(y, len(y))
    D = convex_hull_distances(X, Y, C=1e4)
    nodes = build_hierarchy(class_similarity(D))
    assert nodes.shape == (3, 4)
    root = nodes[0]
    assert root[0] == root[1] and root[2] == root[3] and root[0] == -root[2]
    # every node splits its classes in two non-empty sides, children nest inside parents
    for row in nodes:
        assert (row > 0).any() and (row < 0).any()


def test_hull_distance_svm_and_qp_agree_on_separable_data():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(25, 3))
    B = rng.normal(size=(25, 3)) + np.array([6.0, 0, 0])
    X = np.vstack([A, B])
    _, Y = _indicator(np.repeat([0, 1], 25), 50)
    d_svm = convex_hull_distances(X, Y, C=1e5)[0, 1]
    d_qp = convex_hull_distances(X, Y, method="qp")[0, 1]
    assert d_qp == pytest.approx(d_svm, rel=0.05)
    # brute-force upper bound: no pair of points is closer than the hulls
    assert d_qp <= np.min(np.linalg.norm(A[:, None] - B[None], axis=2)) + 1e-9
    assert hull_distance_qp(A, A + 0.01) == pytest.approx(0.0, abs=0.05)


def test_multilabel_cooccurrence_gives_similarity_one():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 4)) + np.repeat(np.eye(4)[:3] * 8, 20, axis=0)
    Y = np.zeros((60, 3), int)
    Y[np.arange(60), np.repeat(np.arange(3), 20)] = 1
    Y[0, 1] = 1  # one image of class 0 also carries class 1
    D = convex_hull_distances(X, Y.astype(bool))
    assert D[0, 1] == 0 and D[0, 2] > 0
    W = class_similarity(D)
    assert W[0, 1] == 1.0
    nodes = build_hierarchy(W)
    assert nodes[0, 0] == nodes[0, 1] != nodes[0, 2]  # co-occurring classes split last
    h = TSVMHashing(n_bits=4, random_state=0).fit(X, Y)
    assert h.transform(X).shape == (60, 1)


def test_tsvm_hashing_deterministic_and_prefix_consistent(digits):
    X, y = digits
    kw = dict(random_state=3, n_epochs=2, max_iter=3, C=1.0)
    a = TSVMHashing(n_bits=12, **kw).fit(X[:400], y[:400], X_unlabeled=X[400:700])
    b = TSVMHashing(n_bits=12, **kw).fit(X[:400], y[:400], X_unlabeled=X[400:700])
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    longer = TSVMHashing(n_bits=20, **kw).fit(X[:400], y[:400], X_unlabeled=X[400:700])
    bits_a = np.unpackbits(a.transform(X), axis=1)[:, :12]
    bits_l = np.unpackbits(longer.transform(X), axis=1)[:, :12]
    np.testing.assert_array_equal(bits_a, bits_l)
    # codes are the signs of the embedding
    np.testing.assert_array_equal(np.unpackbits(a.transform(X[:50]), axis=1)[:, :12], a.embed(X[:50]) > 0)


def test_tsvm_hashing_passes_balance_to_every_node(digits, monkeypatch):
    import hardneg.hashing._tsvm_hashing as module

    seen = []
    real = module.RampTSVM

    class Spy(real):
        def fit(self, X, y, X_unlabeled=None, sample_weight=None):
            seen.append((self.balance, None if X_unlabeled is None else X_unlabeled.shape[0]))
            return super().fit(X, y, X_unlabeled=X_unlabeled, sample_weight=sample_weight)

    monkeypatch.setattr(module, "RampTSVM", Spy)
    X, y = digits
    kw = dict(n_bits=9, random_state=0, n_epochs=1, max_iter=1, C=1.0)
    TSVMHashing(**kw).fit(X[:300], y[:300], X_unlabeled=X[300:600])
    TSVMHashing(balance=True, **kw).fit(X[:300], y[:300], X_unlabeled=X[300:600])
    assert [b for b, _ in seen] == [False] * 9 + [True] * 9
    assert all(n is not None and n > 0 for _, n in seen)


@pytest.mark.parametrize("mode", ["bits", "itq"])
def test_tsvm_save_load_round_trip(digits, tmp_path, mode):
    X, y = digits
    h = TSVMHashing(n_bits=16, mode=mode, random_state=0, n_epochs=1, max_iter=2).fit(X[:300], y[:300])
    path = h.save(tmp_path / "m.npz")
    back = load_hasher(path)
    assert isinstance(back, TSVMHashing) and back.mode == mode
    np.testing.assert_array_equal(back.transform(X), h.transform(X))
    np.testing.assert_allclose(back.embed(X[:5]), h.embed(X[:5]), rtol=1e-5)


@pytest.mark.parametrize("cls", [LSHHasher, PCAITQHasher, PCARRHasher, SKLSHHasher, PQHasher])
def test_baselines_round_trip_and_determinism(digits, tmp_path, cls):
    X, _ = digits
    h = cls(n_bits=16, random_state=1).fit(X[:1000])
    codes = h.transform(X)
    assert codes.dtype == np.uint8 and codes.shape == (len(X), 2)
    np.testing.assert_array_equal(cls(n_bits=16, random_state=1).fit(X[:1000]).transform(X), codes)
    back = cls.load(h.save(tmp_path / "h.npz"))
    np.testing.assert_array_equal(back.transform(X), codes)
    assert type(load_hasher(tmp_path / "h.npz")) is cls


@pytest.mark.parametrize("cls", [LSHHasher, PCAITQHasher, PCARRHasher, SKLSHHasher])
def test_binary_codes_are_signs_of_embedding(digits, cls):
    X, _ = digits
    h = cls(n_bits=16, random_state=0).fit(X)
    np.testing.assert_array_equal(np.unpackbits(h.transform(X[:200]), axis=1), h.embed(X[:200]) > 0)


def test_pq_search_matches_brute_force_adc(digits):
    X, _ = digits
    pq = PQHasher(n_bits=16, random_state=0).fit(X)
    codes = pq.transform(X)
    idx, dist = pq.search(X[:5], codes, k=10)
    # brute-force ADC: distance from the query to every decoded database vector
    decoded = pq.index_.sa_decode(codes)[:, : X.shape[1]]
    ref = ((X[:5, None, :].astype(float) - decoded[None].astype(float)) ** 2).sum(-1)
    np.testing.assert_allclose(dist, np.sort(ref, axis=1)[:, :10], rtol=1e-3, atol=1e-2)


def test_bad_inputs(digits, tmp_path):
    X, y = digits
    with pytest.raises(ValueError, match="classes"):
        TSVMHashing(n_bits=8).fit(X[:20], np.zeros(20, int))
    with pytest.raises(ValueError, match="n_trees"):
        TSVMHashing(n_bits=30, n_trees=2).fit(X[:200], y[:200])
    with pytest.raises(ValueError, match="mode"):
        TSVMHashing(mode="pca").fit(X[:200], y[:200])
    h = LSHHasher(n_bits=8, random_state=0).fit(X)
    with pytest.raises(ValueError, match="features"):
        h.transform(X[:, :10])
    with pytest.raises(ValueError, match="NaN"):
        h.transform(np.full((2, X.shape[1]), np.nan))
    with pytest.raises(ValueError, match="n_bits"):
        PCAITQHasher(n_bits=100).fit(X)
    with pytest.raises(ValueError, match="multiple of 8"):
        PQHasher(n_bits=12).fit(X)
    with pytest.raises(TypeError):
        LSHHasher(n_bits="8").fit(X)
    with pytest.raises(ModelFileError):
        load_hasher(tmp_path / "missing.npz")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelFileError):
        LSHHasher.load(bad)


@pytest.mark.parametrize("offset", [0.0, 50.0, -300.0])
def test_hull_distance_svm_is_exact_far_from_the_origin(offset):
    # a regularized bias (liblinear) ties 2 / ||w|| to the origin; the hull distance must not move with it
    rng = np.random.default_rng(4)
    A = rng.normal(size=(40, 5))
    B = rng.normal(size=(40, 5)) + np.array([6.0, 2.0, 0, 0, 0])
    X = np.vstack([A, B]) + offset
    _, Y = _indicator(np.repeat([0, 1], 40), 80)
    d_svm = convex_hull_distances(X, Y)[0, 1]
    d_qp = hull_distance_qp(A + offset, B + offset, max_iter=100_000, tol=1e-15)
    assert d_svm == pytest.approx(d_qp, rel=1e-3)
    assert d_svm <= np.min(np.linalg.norm(A[:, None] - B[None], axis=2)) * (1 + 1e-6)


def test_hull_distances_match_qp_on_every_digit_pair(digits):
    # raw digits lie far from the origin; every pair's SVM margin equals the exact hull distance
    X, y = digits
    _, Y = _indicator(y, len(y))
    D = convex_hull_distances(X, Y, max_per_class=60, random_state=0)
    rng = np.random.default_rng(0)
    members = [np.sort(rng.choice(np.flatnonzero(y == c), 60, replace=False)) for c in range(10)]
    for i, j in [(0, 1), (3, 8), (4, 9), (1, 7)]:
        ref = hull_distance_qp(X[members[i]], X[members[j]], max_iter=30_000, tol=1e-14)
        assert D[i, j] == pytest.approx(ref, rel=1e-3)


def test_tsvm_bits_follow_the_tree_on_separable_classes():
    # known answer: four well-separated classes, {0, 1} and {2, 3} close pairs. Every node's bit is 1
    # exactly on the classes of its positive side (Eq. (12)), so every class has one code of its own and
    # retrieval is perfect; the root splits the pairs
    from hardneg.eval import hamming_rank, mean_average_precision_at_k, relevance_from_labels

    rng = np.random.default_rng(0)
    centers = np.array([[0, 0, 0], [0, 6, 0], [40, 0, 0], [40, 6, 0]], float) + 100.0
    y = np.repeat(np.arange(4), 60)
    X = (centers[y] + rng.normal(0, 0.7, (240, 3))).astype(np.float32)
    h = TSVMHashing(n_bits=6, random_state=0).fit(X[::2], y[::2], X_unlabeled=X[1::2])
    assert h.trees_.shape == (2, 3, 4)
    root = h.trees_[0, 0]
    assert root[0] == root[1] == -root[2] == -root[3]
    bits = np.unpackbits(h.transform(X), axis=1)[:, :6]
    for t in range(2):
        for k in range(3):
            for c in range(4):
                side = h.trees_[t, k, c]
                if side != 0:
                    assert (bits[y == c, 3 * t + k] == (side > 0)).all(), (t, k, c)
    codes = h.transform(X)
    assert len({bytes(codes[y == c][0]) for c in range(4)}) == 4
    idx, _ = hamming_rank(codes[1::2], codes[::2], k=20, ties="random", random_state=0)
    assert mean_average_precision_at_k(relevance_from_labels(y[1::2], y[::2][idx])) == pytest.approx(1.0)


def test_tsvm_hashing_beats_its_own_chance_and_lsh(digits):
    from hardneg.eval import hamming_rank, mean_average_precision_at_k, relevance_from_labels

    X, y = digits

    def mean_ap(h):
        codes = h.transform(X)
        idx, _ = hamming_rank(codes[1500:], codes[:1500], k=50, ties="random", random_state=0)
        return mean_average_precision_at_k(relevance_from_labels(y[1500:], y[:1500][idx]))

    kw = dict(n_bits=18, random_state=0, n_epochs=2, max_iter=3)
    tsvm = mean_ap(TSVMHashing(**kw).fit(X[:500], y[:500], X_unlabeled=X[500:1000]))
    shuffled = mean_ap(TSVMHashing(**kw).fit(X[:500], np.random.default_rng(0).permutation(y[:500])))
    lsh = mean_ap(LSHHasher(n_bits=18, random_state=0).fit(X[:1000]))
    assert tsvm >= 0.8
    assert tsvm >= shuffled + 0.1 and tsvm >= lsh + 0.15


def test_C_auto_picks_the_better_candidate_on_labelled_data(digits, tmp_path, monkeypatch):
    import hardneg.hashing._tsvm_hashing as module

    X, y = digits
    kw = dict(n_bits=9, random_state=0, n_epochs=2, max_iter=2)
    h = TSVMHashing(**kw).fit(X[:400], y[:400], X_unlabeled=X[400:600])
    assert h.C == "auto" and h.C_ in module.C_GRID and set(h.C_scores_) == set(module.C_GRID)
    assert h.C_scores_[h.C_] == max(h.C_scores_.values())
    # the chosen C is the one the final model was fitted with
    fixed = TSVMHashing(**{**kw, "C": h.C_}).fit(X[:400], y[:400], X_unlabeled=X[400:600])
    assert fixed.C_ == h.C_
    back = load_hasher(h.save(tmp_path / "auto.npz"))
    assert back.C == "auto" and back.C_ == h.C_ and back.fingerprint() == h.fingerprint()
    # a grid whose second value is hopeless must not be chosen; validation uses labelled data only
    monkeypatch.setattr(module, "C_GRID", (1.0, 1e-6))
    picked = TSVMHashing(**kw).fit(X[:400], y[:400])
    assert picked.C_ == 1.0 and picked.C_scores_[1.0] > picked.C_scores_[1e-6]


def test_hierarchy_helpers_known_values():
    from hardneg.hashing._hierarchy import _project_simplex

    np.testing.assert_allclose(_project_simplex(np.array([2.0, 0.0])), [1.0, 0.0])
    np.testing.assert_allclose(_project_simplex(np.array([1.0, 1.0, 1.0])), [1 / 3] * 3)
    np.testing.assert_allclose(_project_simplex(np.array([0.5, 0.3, -1.0])), [0.6, 0.4, 0.0])
    D = np.array([[0.0, 1.0, 3.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]])
    W = class_similarity(D)
    np.testing.assert_allclose(W, np.exp(-D / 2.0) * (1 - np.eye(3)))  # t = mean off-diagonal distance = 2
    np.testing.assert_allclose(class_similarity(D, t=1.0), np.exp(-D) * (1 - np.eye(3)))
    with pytest.raises(ValueError, match="t"):
        class_similarity(D, t=0.0)
    assert normalized_cut(np.array([[0.0, 1.0], [1.0, 0.0]])).tolist() == [True, False]
    with pytest.raises(ValueError):
        normalized_cut(np.zeros((1, 1)))
    with pytest.raises(ValueError, match="multi-hot"):
        _indicator(np.array([[0, 2], [1, 0]]), 2)
    with pytest.raises(ValueError, match="labels"):
        _indicator(np.array([0, 1, 2]), 2)
    classes, Y = _indicator(np.array([5, 7, 5]), 3)
    assert classes.tolist() == [5, 7] and Y.tolist() == [[True, False], [False, True], [True, False]]


@pytest.mark.parametrize("seed", range(3))
def test_build_hierarchy_nests_and_separates_every_pair(seed):
    rng = np.random.default_rng(seed)
    n = 7
    W = _blocks([2, 2, 3], rng)
    nodes = build_hierarchy(W)
    assert nodes.shape == (n - 1, n)
    assert (nodes[0] != 0).all()  # the root holds every class
    for row in nodes[1:]:
        members = row != 0
        # a child's classes all lie on one side of some earlier node
        assert any(((prev > 0) & members).sum() == members.sum() or ((prev < 0) & members).sum() == members.sum()
                   for prev in nodes[: list(map(tuple, nodes)).index(tuple(row))])
    # every pair of classes is separated by exactly one node (the leaves are single classes)
    for i in range(n):
        for j in range(i + 1, n):
            assert sum(row[i] * row[j] == -1 for row in nodes) == 1


# --- per-tree class subsets and the embedding mode (issue 12) -------------------------------------


def test_every_tree_is_built_on_its_own_random_class_subset(digits, monkeypatch):
    import hardneg.hashing._tsvm_hashing as module

    X, y = digits
    X, y, XU = X[:400], y[:400], X[400:600]
    counts = np.bincount(y, minlength=10)
    seen = []
    real = module.RampTSVM

    class Spy(real):
        def fit(self, X, y, X_unlabeled=None, sample_weight=None):
            seen.append(X.shape[0])
            return super().fit(X, y, X_unlabeled=X_unlabeled, sample_weight=sample_weight)

    monkeypatch.setattr(module, "RampTSVM", Spy)
    kw = dict(n_bits=24, class_subset=0.5, C=1.0, random_state=5, n_epochs=1, max_iter=1)
    h = TSVMHashing(**kw).fit(X, y, X_unlabeled=XU)
    # m = 5 classes per tree, 4 nodes per tree, ceil(24 / 4) = 6 trees
    assert h.trees_.shape == (6, 4, 10) and h.coef_.shape == (24, 64)
    subsets = []
    for tree in h.trees_:
        root = tree[0] != 0
        assert root.sum() == 5  # the tree's hierarchy holds exactly its sampled classes ...
        assert not ((tree != 0) & ~root).any()  # ... and no node reaches outside them
        assert {frozenset(np.flatnonzero(row > 0)) for row in tree}.isdisjoint({frozenset()})  # no empty side
        assert {frozenset(np.flatnonzero(row < 0)) for row in tree}.isdisjoint({frozenset()})
        subsets.append(frozenset(np.flatnonzero(root)))
    assert len(set(subsets)) > 1  # the subsets are drawn per tree, not once
    # every node is trained on the labelled samples of its own classes only (subsample = 0.5 of each)
    expected = [sum(int(round(0.5 * counts[c])) for c in np.flatnonzero(row)) for tree in h.trees_ for row in tree]
    assert seen == expected
    # seeded: the same subsets and codes again; a longer code extends a shorter one
    again = TSVMHashing(**kw).fit(X, y, X_unlabeled=XU)
    np.testing.assert_array_equal(again.trees_, h.trees_)
    np.testing.assert_array_equal(again.transform(X), h.transform(X))
    longer = TSVMHashing(**{**kw, "n_bits": 32}).fit(X, y, X_unlabeled=XU)
    np.testing.assert_array_equal(longer.trees_[:6], h.trees_)
    np.testing.assert_array_equal(np.unpackbits(longer.transform(X), axis=1)[:, :24], np.unpackbits(h.transform(X), axis=1))
    other = TSVMHashing(**{**kw, "random_state": 6}).fit(X, y, X_unlabeled=XU)
    assert not np.array_equal(other.trees_, h.trees_)


def test_class_subsets_keep_the_bits_balanced_and_informative(digits):
    from hardneg.eval import hamming_rank, mean_average_precision_at_k, relevance_from_labels

    X, y = digits
    h = TSVMHashing(n_bits=32, class_subset=0.5, C=1.0, random_state=0, n_epochs=2, max_iter=3)
    codes = h.fit(X[:500], y[:500], X_unlabeled=X[500:1000]).transform(X)
    bits = np.unpackbits(codes, axis=1)[:, :32]
    ones = bits.mean(axis=0)
    assert ones.min() > 0.05 and ones.max() < 0.95  # no bit is (nearly) constant
    # a node's bit separates its two class groups on held-out data
    test = np.arange(1000, 1797)
    for k, row in enumerate(h.trees_.reshape(-1, 10)):
        pos, neg = np.isin(y[test], np.flatnonzero(row > 0)), np.isin(y[test], np.flatnonzero(row < 0))
        assert bits[test][pos, k].mean() > 0.7 and bits[test][neg, k].mean() < 0.3, k
    idx, _ = hamming_rank(codes[1500:], codes[:1500], k=50, ties="random", random_state=0)
    assert mean_average_precision_at_k(relevance_from_labels(y[1500:], y[:1500][idx])) >= 0.8


def test_class_subset_one_gives_every_tree_all_classes_and_two_classes_per_tree_one_node():
    rng = np.random.default_rng(0)
    centers = np.array([[0, 0, 0], [0, 6, 0], [40, 0, 0], [40, 6, 0]], float) + 100.0
    y = np.repeat(np.arange(4), 60)
    X = (centers[y] + rng.normal(0, 0.7, (240, 3))).astype(np.float32)
    full = TSVMHashing(n_bits=6, class_subset=1.0, random_state=0).fit(X, y)
    assert full.trees_.shape == (2, 3, 4) and (full.trees_[:, 0] != 0).all()
    # class_subset 0.25 of 4 classes still gives 2 classes, one node per tree: that node's bit is the pair's split
    pairs = TSVMHashing(n_bits=5, class_subset=0.25, C=1.0, random_state=0).fit(X, y)
    assert pairs.trees_.shape == (5, 1, 4)
    bits = np.unpackbits(pairs.transform(X), axis=1)[:, :5]
    for t, row in enumerate(pairs.trees_[:, 0]):
        assert (row != 0).sum() == 2
        for c in np.flatnonzero(row):
            assert (bits[y == c, t] == (row[c] > 0)).all(), (t, c)


def test_embedding_mode_is_itq_on_the_outputs_of_many_trees(digits, tmp_path):
    import hardneg.hashing._tsvm_hashing as module

    X, y = digits
    kw = dict(n_bits=16, mode="itq", class_subset=0.5, C=1.0, random_state=0, n_epochs=1, max_iter=1)
    h = TSVMHashing(**kw).fit(X[:300], y[:300], X_unlabeled=X[300:500])
    # the paper's 15-40 trees, not the ceil(16 / 4) = 4 that the bits would need
    assert 15 <= module.EMBEDDING_TREES <= 40
    assert h.trees_.shape == (module.EMBEDDING_TREES, 4, 10)
    assert h.coef_.shape == (4 * module.EMBEDDING_TREES, 64) and h.itq_.n_features_in_ == 4 * module.EMBEDDING_TREES
    codes = h.transform(X)
    assert codes.shape == (X.shape[0], 2) and codes.dtype == np.uint8
    # ITQ is applied: the codes are ITQ's codes of the trees' real-valued outputs, not the signs of 16 of them
    outputs = X @ h.coef_.T + h.intercept_
    np.testing.assert_array_equal(codes, h.itq_.transform(outputs))
    np.testing.assert_allclose(h.embed(X[:20]), h.itq_.embed(outputs[:20]), rtol=1e-4, atol=1e-4)
    assert h.embed(X).shape == (X.shape[0], 16)
    assert not np.array_equal(np.unpackbits(codes, axis=1), (outputs[:, :16] > 0).astype(np.uint8))
    np.testing.assert_array_equal(np.unpackbits(codes, axis=1), h.embed(X) > 0)
    # seeded
    np.testing.assert_array_equal(TSVMHashing(**kw).fit(X[:300], y[:300], X_unlabeled=X[300:500]).transform(X), codes)
    # round trip through the model file
    back = load_hasher(h.save(tmp_path / "emb.npz"))
    assert back.mode == "itq" and back.class_subset == 0.5 and back.fingerprint() == h.fingerprint()
    np.testing.assert_array_equal(back.transform(X), codes)
    np.testing.assert_array_equal(back.trees_, h.trees_)
    # n_trees: explicit, and grown when n_bits needs more hyperplanes than EMBEDDING_TREES trees give
    assert TSVMHashing(mode="itq", n_bits=16, n_trees=15)._plan(10) == (16, 15, 10)
    assert TSVMHashing(mode="itq", n_bits=256, class_subset=1.0)._plan(10) == (256, 29, 10)
    assert TSVMHashing(mode="bits", n_bits=16, class_subset=0.5)._plan(10) == (16, 4, 5)
    with pytest.raises(ValueError, match="n_trees"):
        TSVMHashing(mode="itq", n_bits=64, n_trees=15, class_subset=0.5, C=1.0).fit(X[:300], y[:300])


def test_model_files_check_the_class_subsets(digits, tmp_path):
    from hardneg._persist import load_model, save_model

    X, y = digits
    h = TSVMHashing(n_bits=8, class_subset=0.5, C=1.0, random_state=0, n_epochs=1, max_iter=1).fit(X[:300], y[:300])
    path = h.save(tmp_path / "m.npz")
    arrays, meta = load_model(path, h._kind, (1,))

    def resave(edit_arrays=None, edit_meta=None, name="e.npz"):
        a = {k: np.array(v) for k, v in arrays.items()}
        m = {**meta, "params": dict(meta["params"]), "extra": dict(meta["extra"])}
        if edit_arrays:
            edit_arrays(a)
        if edit_meta:
            edit_meta(m)
        return save_model(tmp_path / name, h._kind, 1, a, m)

    assert meta["extra"]["classes_per_tree"] == 5
    with pytest.raises(ModelFileError, match="class_subset"):
        load_hasher(resave(edit_meta=lambda m: m["params"].__setitem__("class_subset", 1.0)))
    with pytest.raises(ModelFileError, match="classes_per_tree"):
        load_hasher(resave(edit_meta=lambda m: m["extra"].__setitem__("classes_per_tree", 4)))

    def outside(a):
        a["trees"][0, 1, np.flatnonzero(a["trees"][0, 0] == 0)[0]] = 1  # a node reaching outside the tree's classes

    with pytest.raises(ModelFileError, match="hierarchies"):
        load_hasher(resave(edit_arrays=outside))
    with pytest.raises(ModelFileError, match="classes_per_tree"):
        load_hasher(resave(edit_meta=lambda m: m["extra"].pop("classes_per_tree")))
    # a file from before class subsets (no classes_per_tree, every tree on all classes) loads as class_subset = 1
    old = TSVMHashing(n_bits=9, class_subset=1.0, C=1.0, random_state=0, n_epochs=1, max_iter=1).fit(X[:300], y[:300])
    arrays, meta = load_model(old.save(tmp_path / "old.npz"), old._kind, (1,))

    def before(m):
        m["extra"].pop("classes_per_tree")
        m["params"].pop("class_subset")

    back = load_hasher(resave(edit_meta=before, name="old2.npz"))
    assert back.class_subset == 1.0
    np.testing.assert_array_equal(back.transform(X), old.transform(X))
