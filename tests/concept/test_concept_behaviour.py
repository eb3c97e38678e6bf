"""The HIK ensemble concept learners: bookkeeping, staged ensembles, compression metadata, messages.

Written against mutants of ``hardneg/concept/_ensemble.py``, ``_compressed.py`` and ``_search.py``
that the other tests left alive. Each test checks behaviour against a plain reference (the
kernel expansion of the members, Eq. (9)-(12)) or a hand-worked small case.
"""

from __future__ import annotations

import numpy as np
import pytest

from hardneg.concept import (AsymmetricBagging, CompressedConcept, NegativeBootstrap, PooledClassifier,
                             PositiveSampling, RandomSampling, search)
from hardneg.concept._ensemble import _exclusions, _second_argument_is_pool, _shape
from hardneg.svm import HIKExactTable


def kernel(X, Y):
    return np.minimum(np.asarray(X, float)[:, None, :], np.asarray(Y, float)[None]).sum(-1)


def toy(seed=0, n_pos=8, n_pool=120, d=5):
    rng = np.random.default_rng(seed)
    pos = (rng.random((n_pos, d)) * 0.5 + np.r_[1.0, np.zeros(d - 1)]).astype(np.float32)
    pool = rng.random((n_pool, d)).astype(np.float32)
    tags = [["concept"] if i % 10 == 0 else ["near"] if i % 10 == 1 else ["other"] for i in range(n_pool)]
    return pos, pool, tags


def member_scores(est, X, t):
    s, c, b = est.member_support_[t], est.member_dual_coef_[t], est.member_intercept_[t]
    return kernel(X, est.support_vectors_[s]) @ c + b


def test_staged_ensemble_is_the_running_weighted_mean_of_members():
    pos, pool, _ = toy(1)
    w = np.array([1.0, 3.0, 2.0, 2.0])
    nb = NegativeBootstrap(n_iter=4, weights=w, skip_top=0.0, random_state=0).fit(pos, pool)
    np.testing.assert_allclose(nb.weights_, w / w.sum())
    members = [member_scores(nb, pool, t) for t in range(4)]
    for t, staged in enumerate(nb.staged_decision_function(pool), start=1):
        ref = np.average(members[:t], axis=0, weights=w[:t])
        np.testing.assert_allclose(staged, ref, atol=1e-4)
        # the same G_t through compression of the first t members
        np.testing.assert_allclose(nb.compress(None, n_members=t).decision_function(pool), ref, atol=1e-4)
    assert nb.intercept_ == pytest.approx(np.average(nb.member_intercept_, weights=w))


def test_random_sampling_stages_are_the_members_themselves():
    pos, pool, _ = toy(2)
    rs = RandomSampling(n_iter=3, random_state=0).fit(pos, pool)
    for t, staged in enumerate(rs.staged_decision_function(pool)):
        np.testing.assert_allclose(staged, member_scores(rs, pool, t), atol=1e-4)
    assert rs.intercept_ == pytest.approx(rs.member_intercept_[-1])


def test_iteration_records():
    pos, pool, tags = toy(3)
    nb = NegativeBootstrap(n_iter=3, skip_top=0.0, random_state=0).fit(pos, pool, exclude_tags="concept",
                                                                     pool_tags=tags)
    recs = nb.iterations_
    assert [r["iteration"] for r in recs] == [1, 2, 3]
    assert recs[0]["scores"] is None and recs[0]["n_candidates"] == 0  # random negatives first (Table I step 3)
    for r in recs:
        assert len(r["rows"]) == len(pos) == nb.n_negatives_
        assert r["ids"] == [str(x) for x in r["rows"]]
        assert r["tags"] == [tags[x] for x in r["rows"]]
        assert r["n_skipped"] == 0
    for r, s in zip(recs, nb.member_support_):
        assert r["n_support"] == len(s)
    for r in recs[1:]:
        assert r["n_candidates"] == 10 * len(pos)  # m = 10 |B+| by default
        assert len(r["scores"]) == len(pos) and r["scores"] == sorted(r["scores"], reverse=True)
    assert nb.n_positives_ == len(pos)
    assert nb.excluded_tags_ == ["concept"]
    assert nb.classes_.tolist() == [0, 1]
    counts = nb.negative_tag_counts()
    assert len(counts) == 3
    for rec, c in zip(recs, counts):
        assert sum(n for _, n in c) == sum(len(t) for t in rec["tags"])
        assert "concept" not in dict(c)
    assert all(len(c) <= 1 for c in nb.negative_tag_counts(top=1))


def test_support_vectors_are_merged_by_origin():
    pos, pool, _ = toy(4, n_pool=30)
    ab = AsymmetricBagging(n_iter=6, random_state=0).fit(pos, pool)
    origins = ab.support_origin_
    assert len(origins) == len(set(origins)) == ab.support_vectors_.shape[0]
    for (kind, row), vec in zip(origins, ab.support_vectors_):
        np.testing.assert_array_equal(vec, pos[row] if kind == "pos" else pool[row])
    seen = {o for o in origins if o[0] == "pool"}
    chosen = {("pool", r) for rec in ab.iterations_ for r in rec["rows"]}
    assert seen <= chosen
    # small pool, six draws of 8 rows: some rows repeat, and they share one slot
    assert sum(len(rec["rows"]) for rec in ab.iterations_) > len(chosen)


def test_counts_are_capped_by_the_pool_and_fractions_round():
    pos, pool, _ = toy(5, n_pos=9, n_pool=20)
    nb = NegativeBootstrap(n_iter=2, n_negatives=50, random_state=0).fit(pos, pool)
    assert nb.n_negatives_ == 20 and nb.iterations_[1]["n_candidates"] == 20
    ps = PositiveSampling(n_iter=2, positive_fraction=0.3, random_state=0).fit(pos, pool)
    assert ps.n_negatives_ == 3  # round(0.3 * 9)
    # each member is trained on 3 positives: its positive support vectors are among them
    for s in ps.member_support_:
        rows = {ps.support_origin_[j][1] for j in s if ps.support_origin_[j][0] == "pos"}
        assert len(rows) <= 3
    tiny = PositiveSampling(n_iter=1, positive_fraction=0.01, random_state=0).fit(pos, pool)
    assert tiny.n_negatives_ == 1  # never fewer than one positive
    pc = PooledClassifier(max_negatives=7, random_state=0).fit(pos, pool)
    assert pc.n_negatives_ == 7 and len(pc.iterations_) == 1
    nc = NegativeBootstrap(n_iter=2, n_candidates=12, random_state=0).fit(pos, pool)
    assert nc.iterations_[1]["n_candidates"] == 12


def test_fit_messages():
    pos, pool, tags = toy(6)
    X = np.vstack([pos, pool])
    y = np.r_[np.ones(len(pos)), np.zeros(len(pool))]
    with pytest.raises(TypeError, match=r"^fit: pass either y \(labels of X\) or pool=, not both$"):
        NegativeBootstrap(n_iter=2).fit(X, y, pool=pool)
    with pytest.raises(ValueError, match="^NegativeBootstrap requires y to be passed, but the target y is None"):
        NegativeBootstrap(n_iter=2).fit(X)
    with pytest.raises(ValueError, match=r"^positives: needs at least 1 row, got shape \(0, 5\)"):
        NegativeBootstrap(n_iter=2).fit(pos[:0], pool)
    with pytest.raises(ValueError, match="^pool: has 3 features but positives have 5$"):
        NegativeBootstrap(n_iter=2).fit(pos, pool[:, :3])
    with pytest.raises(ValueError, match=r"^related_tags='auto': needs exclude_tags"):
        NegativeBootstrap(n_iter=2).fit(pos, pool, related_tags="auto", pool_tags=tags)
    with pytest.raises(ValueError, match=r"^pool_rows: only with fit\(positives, pool\)"):
        NegativeBootstrap(n_iter=2).fit(X, y, pool_rows=[0, 1])
    with pytest.raises(ValueError, match=r"^y: only one class \(.*1\.0\)\) is present: no unlabeled pool rows"):
        NegativeBootstrap(n_iter=2).fit(X, np.ones(len(X)))
    with pytest.raises(ValueError, match=r"^y: only one class \(.*0\.0\)\) is present: no positives"):
        NegativeBootstrap(n_iter=2).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="positives and pool cannot be told apart"):
        NegativeBootstrap(n_iter=2).fit(X, np.array(["a"] * len(X)))
    with pytest.raises(ValueError, match="^Only binary classification is supported"):
        NegativeBootstrap(n_iter=2).fit(X, np.arange(len(X)) % 3)
    with pytest.raises(ValueError, match=r"^Negative values in data passed to positives \(min -"):
        NegativeBootstrap(n_iter=2).fit(-pos - 1, pool)
    # the parameter constraints refuse inf before _fit's own finiteness check is reached
    with pytest.raises(ValueError, match="'C' parameter"):
        NegativeBootstrap(n_iter=2, C=np.inf).fit(pos, pool)


@pytest.mark.parametrize("w", [[1.0, 1.0], [1.0, np.nan, 1.0], [1.0, -1.0, 1.0], [0.0, 0.0, 0.0]])
def test_bad_weights_message(w):
    pos, pool, _ = toy(7)
    with pytest.raises(ValueError, match="^weights: expected 'uniform' or 3 non-negative weights lambda_t"):
        AsymmetricBagging(n_iter=3, weights=w).fit(pos, pool)


def test_uniform_weights_string_equals_default():
    pos, pool, _ = toy(7)
    a = AsymmetricBagging(n_iter=3, weights="uniform", random_state=0).fit(pos, pool)
    b = AsymmetricBagging(n_iter=3, random_state=0).fit(pos, pool)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    assert a.weights_.tolist() == pytest.approx([1 / 3] * 3)


def test_related_tags_given_are_excluded_and_recorded():
    pos, pool, tags = toy(8)
    nb = NegativeBootstrap(n_iter=2, random_state=0).fit(pos, pool, exclude_tags="concept", related_tags=["near"],
                                                         pool_tags=tags)
    assert nb.related_tags_ == {"near": "given"}
    assert nb.excluded_tags_ == ["concept", "near"]
    assert all(t == ["other"] for rec in nb.iterations_ for t in rec["tags"])
    nb2 = NegativeBootstrap(n_iter=2, random_state=0).fit(pos, pool, exclude_tags="concept", related_tags="near",
                                                          pool_tags=tags)
    assert nb2.related_tags_ == {"near": "given"}
    nb3 = NegativeBootstrap(n_iter=2, random_state=0).fit(pos, pool, exclude_tags="concept", pool_tags=tags)
    assert nb3.related_tags_ == {}


def test_exclusions_and_dispatch_helpers():
    assert _exclusions("a", None) == ["a"]
    assert _exclusions(["a", 1], "b") == ["a", "1", "b"]
    assert _exclusions(None, None) == []
    X = np.zeros((4, 3))
    assert _second_argument_is_pool(X, np.zeros(4)) is False
    assert _second_argument_is_pool(X, np.zeros((4, 1))) is False  # a label column
    assert _second_argument_is_pool(np.zeros((4, 1)), np.zeros((5, 1))) is True  # one-feature pool
    assert _second_argument_is_pool(X, np.zeros((5, 3))) is True
    assert _second_argument_is_pool(X, [0, 1, 0, 1]) is False
    assert _second_argument_is_pool(X, [[0, 1], [0]]) is False  # ragged: labels, let validation say so
    assert _shape([[0, 1], [0]]) is None
    assert _shape([[0, 1], [2, 3]]) == (2, 2)


def test_predict_and_score():
    pos, pool, _ = toy(9)
    X = np.vstack([pos, pool])
    y = np.r_[np.full(len(pos), "yes"), np.full(len(pool), "no")]
    nb = NegativeBootstrap(n_iter=2, random_state=0).fit(X, y)
    assert nb.classes_.tolist() == ["no", "yes"]
    scores = nb.decision_function(X)
    np.testing.assert_array_equal(nb.predict(X), np.where(scores > 0, "yes", "no"))
    from sklearn.metrics import average_precision_score

    assert nb.score(X, y) == pytest.approx(average_precision_score(y == "yes", scores))
    with pytest.raises(ValueError, match=r"^y: labels \['maybe'\] were not seen in fit"):
        nb.score(X[:2], ["maybe", "yes"])
    assert nb.decision_function(np.zeros((0, X.shape[1]), np.float32)).shape == (0,)


def test_compress_metadata_and_errors(tmp_path):
    pos, pool, tags = toy(10)
    nb = NegativeBootstrap(n_iter=3, n_bins=12, random_state=0).fit(pos, pool, exclude_tags="concept",
                                                                    pool_tags=tags)
    model = nb.compress()
    assert nb.compressed_ is model and model.table.n_bins == 12
    m = model.meta
    assert m["estimator"] == "NegativeBootstrap" and m["n_iter"] == 3 and m["n_positives"] == len(pos)
    assert m["excluded_tags"] == ["concept"]
    assert m["n_support"] == int(np.count_nonzero(nb.dual_coef_))
    assert m["params"]["n_bins"] == 12 and m["params"]["skip_top"] == "auto" and "weights" in m["params"]
    part = nb.compress(5, n_members=2)
    assert part.meta["n_iter"] == 2 and part.table.n_bins == 5
    assert nb.compressed_ is model  # a partial compression does not replace the model
    with pytest.raises(ValueError, match="^n_members=4 but the ensemble has 3 meta classifiers$"):
        nb.compress(n_members=4)
    # save reuses the compressed model unless another n_bins is asked for
    loaded = NegativeBootstrap.load(nb.save(tmp_path / "a.npz"))
    assert loaded.table.n_bins == 12
    loaded = NegativeBootstrap.load(nb.save(tmp_path / "b.npz", n_bins=None))
    assert loaded.exact
    with pytest.raises(ValueError, match="n_bins"):
        nb.compress(0)


def test_compressed_concept_object():
    t = HIKExactTable.from_support_vectors(np.array([[1.0, 2.0]]), np.array([1.0]), 0.5)
    c = CompressedConcept(t, meta={"concept": "dog"})
    assert c.exact and c.n_features_in_ == 2
    assert repr(c) == "CompressedConcept(d=2, exact, concept='dog')"
    b = CompressedConcept(t.to_bins(4))
    assert not b.exact and repr(b) == "CompressedConcept(d=2, 4 bins, concept=None)"
    np.testing.assert_allclose(c.decision_function([[0.5, 3.0]]), [0.5 + 0.5 + 2.0])
    with pytest.raises(TypeError, match="^table: expected an HIKBinTable or HIKExactTable, got dict$"):
        CompressedConcept({})
    with pytest.raises(ValueError, match="negative"):
        c.decision_function([[-1.0, 0.0]])


class _Sum:
    def decision_function(self, X):
        return np.asarray(X, float).sum(axis=1)


def test_search_chunks_ties_subsets_and_progress():
    X = np.array([[1.0], [3.0], [2.0], [3.0], [0.0], [5.0], [2.0]])
    seen = []
    for chunk in (1, 2, 3, 100):
        res = search(_Sum(), X, k=4, chunk_rows=chunk, progress=seen.append)
        assert res.rows.tolist() == [5, 1, 3, 2]  # ties by row position
        assert res.scores.tolist() == [5.0, 3.0, 3.0, 2.0]
        assert res.ids == ["5", "1", "3", "2"]
    assert sum(seen) == 4 * len(X)
    sub = search(_Sum(), X, k=2, rows=[6, 0, 4, 6], chunk_rows=2)
    assert sub.rows.tolist() == [6, 0] and sub.scores.tolist() == [2.0, 1.0]
    assert search(_Sum(), X, k=7).rows.tolist() == [5, 1, 3, 2, 6, 0, 4]
    with pytest.raises(ValueError, match="k"):
        search(_Sum(), X, k=8)
    with pytest.raises(ValueError, match="k"):
        search(_Sum(), X, k=3, rows=[0, 1])
    with pytest.raises(IndexError, match=r"^rows: out of range for a collection of 7 items$"):
        search(_Sum(), X, k=1, rows=[7])
    with pytest.raises(TypeError, match=r"^rows: expected a 1-D array of integer row positions, got shape \(2,\) "
                                        r"dtype float64$"):
        search(_Sum(), X, k=1, rows=[1.0, 2.0])
    with pytest.raises(TypeError, match="^model: expected an object with a decision_function method, got int$"):
        search(3, X, k=1)
    with pytest.raises(ValueError, match="chunk_rows"):
        search(_Sum(), X, k=1, chunk_rows=0)
