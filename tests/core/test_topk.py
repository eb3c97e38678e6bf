"""One top-k result type (hardneg.TopK) for every search entry point.

Each entry point returns a TopK whose ids, rows and values agree with each
other and with a brute-force ranking (best first, ties by row); the Hamming
index no longer returns the ``(ids, distances)`` tuple (the reverse of FAISS's
``(D, I)``): fields are read by name and unpacking a result raises.
In-process vs Dask LocalCluster equality of the unified jobs is in
tests/distributed/test_distributed.py.
"""

import csv
import io
import json

import numpy as np
import pytest
import scipy.sparse as sp

import hardneg
from hardneg import TopK
from hardneg.store import FeatureStore


def _check(res, ids_of_rows, values, *, higher, k):
    """ids/rows/values consistent, best first, ties by row, equal to a brute-force ranking of ``values``."""
    assert isinstance(res, TopK)
    assert res.higher_is_better is higher
    rows = np.atleast_2d(res.rows)
    got = np.atleast_2d(res.scores)
    ids = np.atleast_2d(np.asarray(res.ids))
    values = np.atleast_2d(values)
    assert rows.shape == got.shape == ids.shape == (values.shape[0], k)
    for q in range(values.shape[0]):
        key = -values[q] if higher else values[q]
        ref = np.lexsort((np.arange(values.shape[1]), key))[:k]  # best first, ties by row
        assert rows[q].tolist() == ref.tolist()
        np.testing.assert_allclose(got[q], values[q][ref], rtol=1e-5, atol=1e-5)
        assert ids[q].tolist() == [ids_of_rows[r] for r in ref]
        one = res[q]
        assert [i for i, _ in one] == ids[q].tolist()  # one query: (id, score) pairs


class _Sum:
    def decision_function(self, X):
        return np.asarray(X, np.float64).sum(axis=1)


@pytest.fixture
def store(tmp_path):
    X = np.array([[1.0, 0], [3, 0], [2, 0], [3, 0], [0, 0], [5, 0], [2, 0], [1, 1]], np.float32)
    with FeatureStore.create(tmp_path / "s", dim=2, chunk_rows=3) as st:
        st.append(X, ids=[f"x{i}" for i in range(len(X))])
    return FeatureStore.open(tmp_path / "s"), X


def test_type_access_and_export():
    r = TopK(rows=[[2, 0], [1, 3]], scores=[[0.9, 0.5], [0.7, 0.7]], k=2, ids=np.array([["c", "a"], ["b", "d"]]),
             metric="cosine")
    assert hardneg.TopK is TopK and r.n_queries == 2 and r.higher_is_better
    assert r[1].ids == ["b", "d"] and r.for_query(1).rows.tolist() == [1, 3] and list(r[0]) == [("c", 0.9), ("a", 0.5)]
    assert [q.ids for q in r.queries()] == [["c", "a"], ["b", "d"]]
    with pytest.raises(TypeError, match=r"result\.ids"):
        _ids, _scores = r  # the old (ids, distances) tuple: refused loudly, not silently reinterpreted
    with pytest.raises(AttributeError, match="similarity"):
        _ = r.distances
    with pytest.raises(IndexError):
        r[2]
    d = r.to_dict()
    assert json.loads(json.dumps(d)) == d and d["scores"] == [[0.9, 0.5], [0.7, 0.7]] and d["ids"][1] == ["b", "d"]
    recs = r.to_records()
    assert recs[2] == {"query": 1, "rank": 1, "id": "b", "row": 1, "score": 0.7}
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(recs[0]))
    w.writeheader()
    w.writerows(recs)
    assert buf.getvalue().splitlines()[1] == "0,1,c,2,0.9"
    h = TopK(rows=[[4]], scores=[[3]], metric="hamming", ids=np.array([["e"]]))
    assert not h.higher_is_better and h.distances.tolist() == [[3]] and h.to_records()[0]["distance"] == 3


def test_merge_is_exact_for_distances_and_scores():
    from hardneg._topk import merge_topk, topk_of

    rng = np.random.default_rng(0)
    v = rng.integers(0, 4, (2, 40)).astype(float)  # many ties
    rows = np.arange(40)
    for metric, higher in (("l2", False), ("cosine", True)):
        whole = topk_of(rows, v, 7, metric=metric)
        parts = [topk_of(rows[a : a + 9], v[:, a : a + 9], 7, metric=metric) for a in range(0, 40, 9)]
        merged = parts[0]
        for p in parts[3:0:-1] + parts[4:]:
            merged = merge_topk(merged, p)
        assert merged == whole and merged.n_scanned == 40 and whole.higher_is_better is higher
        key = -v if higher else v
        assert whole.rows.tolist() == [np.lexsort((rows, key[q]))[:7].tolist() for q in range(2)]


def test_concept_search_array_and_store(store):
    from hardneg.concept import SearchResult, search

    st, X = store
    s = X.sum(axis=1)
    res = search(_Sum(), X, k=5)
    assert SearchResult is TopK and res.metric == "decision"
    _check(res, [str(i) for i in range(len(X))], s, higher=True, k=5)
    assert res.rows.tolist() == [5, 1, 3, 2, 6]  # ties (3, 3) and (2, 2) by row
    on_store = search(_Sum(), st, k=5)
    _check(on_store, [f"x{i}" for i in range(len(X))], s, higher=True, k=5)
    assert search(_Sum(), st.path, k=5, chunk_rows=2) == on_store  # by path, in blocks of 2: the same result
    assert on_store.n_scanned == len(X)


def test_hamming_search_is_named_not_reversed():
    from hardneg.index import HammingIndex

    codes = np.packbits(np.eye(8, dtype=bool), axis=1)
    codes = np.vstack([codes, codes[:2]])  # rows 8, 9 duplicate rows 0, 1: ties at distance 0
    ids = [f"img{i}" for i in range(10)]
    index = HammingIndex(8)
    index.add(codes, ids=ids)
    res = index.search(codes[[0, 1]], k=4)
    dist = np.unpackbits(codes[[0, 1]][:, None] ^ codes[None], axis=2).sum(2)
    _check(res, ids, dist, higher=False, k=4)
    assert res.metric == "hamming" and res.distances.dtype.kind == "i"
    assert res.ids[0, :2].tolist() == ["img0", "img8"] and res.distances[0, :2].tolist() == [0, 0]
    # FAISS order regression: the old `ids, dist = index.search(...)` must not silently bind ids to distances
    with pytest.raises(TypeError, match="distances"):
        _ids, _dist = res
    rows, d = index.rank(codes[[0, 1]], 4)  # the low-level (rows, distances) pair stays, FAISS's (I, D) as named
    assert np.array_equal(rows, res.rows) and np.array_equal(d, res.distances)


def test_inverted_index_search():
    from hardneg.index import InvertedIndex

    X = sp.csr_matrix(np.array([[1.0, 0, 2], [0, 1.0, 1], [3.0, 0, 0], [1.0, 0, 2]]))
    index = InvertedIndex([1.0, 0.0, 0.5])
    index.add(X, ids=["a", "b", "c", "d"])
    res = index.search(X[:2], k=3)
    ref = (X[:2].multiply([1.0, 0.0, 0.5]) @ X.T).toarray()
    _check(res, ["a", "b", "c", "d"], ref, higher=True, k=3)


def test_knn_search(store):
    from hardneg.index import knn_topk

    st, X = store
    Q = X[[1, 7]]
    d2 = ((Q[:, None, :] - X[None]) ** 2).sum(-1)
    for data, ids in ((st, [f"x{i}" for i in range(len(X))]), (X, [str(i) for i in range(len(X))])):
        res = knn_topk(data, Q, k=4, metric="l2", block_rows=2)
        _check(res, ids, d2, higher=False, k=4)
        ip = knn_topk(data, Q, k=4, metric="ip")
        _check(ip, ids, Q @ X.T, higher=True, k=4)


def test_esvm_search(tmp_path):
    from hardneg.encoding import ESVMEncoder, encode_store
    from hardneg.encoding._retrieval import esvm_search

    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 6)).astype(np.float32)
    with FeatureStore.create(tmp_path / "db", dim=6, chunk_rows=8) as st:
        st.append(X, ids=[f"d{i}" for i in range(24)])
    st = FeatureStore.open(tmp_path / "db")
    enc = ESVMEncoder(alpha_neg=0.01, min_negatives=20, random_state=0).fit(rng.normal(size=(40, 6)))
    codes = encode_store(enc, st, tmp_path / "codes", batch_rows=10)
    q = enc.transform(X[[3, 9]])
    ids = [f"d{i}" for i in range(24)]
    _check(esvm_search(enc, st, X[[3, 9]], 5, mode="asymmetric"), ids, q @ X.T, higher=True, k=5)
    sym = esvm_search(enc, st, X[[3, 9]], 5, mode="symmetric", codes=codes)
    _check(sym, ids, q @ codes.to_numpy().T, higher=True, k=5)
    with pytest.raises(ValueError, match="^codes .*no E-SVM encoder stamp"):
        esvm_search(enc, st, X[[3]], 5, codes=st)


def test_zero_shot_search(tmp_path):
    from hardneg.zeroshot import ZeroShotClassifier, zero_shot_search

    rng = np.random.default_rng(0)
    attrs = rng.random((4, 5))
    y = np.repeat(np.arange(4), 10)
    X = (attrs[y] @ rng.normal(size=(5, 8)) + 0.05 * rng.normal(size=(40, 8))).astype(np.float32)
    clf = ZeroShotClassifier(n_epochs=5, m=4, random_state=0).fit(X, y, attrs)
    with FeatureStore.create(tmp_path / "s", dim=8, chunk_rows=7) as st:
        st.append(X, ids=[f"z{i}" for i in range(40)])
    S = clf.distances(X, attrs[[1, 2]]).T
    res = zero_shot_search(clf, FeatureStore.open(tmp_path / "s"), attrs[[1, 2]], k=6)
    _check(res, [f"z{i}" for i in range(40)], S, higher=False, k=6)
    one = zero_shot_search(clf, X, attrs[1], k=6, chunk_rows=5)
    assert one.n_queries == 1 and one.rows.tolist() == res.rows[:1].tolist()
