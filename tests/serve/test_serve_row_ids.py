"""The service's Hamming mode over a row-id index (built by build_ivf_index): no id table, the same answers."""

import numpy as np
import pytest
from sklearn.datasets import load_digits

from hardneg.hashing import LSHHasher
from hardneg.index import HammingIndex, StoreCodes, build_ivf_index
from hardneg.serve._modes import HammingMode
from hardneg.store import FeatureStore


def test_row_id_index_serves_like_an_id_index(tmp_path):
    X = load_digits().data[:500].astype(np.float32)
    with FeatureStore.create(tmp_path / "store", dim=X.shape[1], chunk_rows=64) as store:
        store.append(X, ids=[f"d{i}" for i in range(500)])
    store = FeatureStore.open(tmp_path / "store")
    hasher = LSHHasher(n_bits=32, random_state=0).fit(X)
    models = tmp_path / "models"
    models.mkdir()
    hasher.save(models / HammingMode.HASHER)
    meta = {"hasher": type(hasher).__name__, "hasher_fingerprint": hasher.fingerprint()}
    build_ivf_index(StoreCodes(store, hasher, chunk_rows=128), models / HammingMode.INDEX, nlist=8, meta=meta)
    mode = HammingMode.open(store, models)
    assert mode.rows is None and mode.approximate
    by_id = HammingIndex.from_store(store, hasher)
    q = X[[3, 250, 499]]
    got = mode.search(q, 5, nprobe=8)
    ref = by_id.search(hasher.transform(q), 5)
    np.testing.assert_array_equal(-got.scores, ref.distances)
    np.testing.assert_array_equal(got.rows[:, 0], [3, 250, 499])
    exact = mode.search(q, 5, exact=True)  # the exhaustive scan of the same codes
    np.testing.assert_array_equal(exact.scores, got.scores)
    # a row-id index of another store (other row count) is refused
    with FeatureStore.create(tmp_path / "small", dim=X.shape[1]) as small:
        small.append(X[:100], ids=[f"d{i}" for i in range(100)])
    with pytest.raises(ValueError, match="rebuild the index"):
        HammingMode.open(FeatureStore.open(tmp_path / "small"), models)


def test_a_row_id_index_over_changed_rows_is_refused(tmp_path):
    """Same row count, other rows (two removed, two appended): the index's digest of the store's vectors
    no longer matches, so the service refuses to open it instead of serving the wrong items."""
    from hardneg.store import remove_items

    X = load_digits().data[:300].astype(np.float32)
    with FeatureStore.create(tmp_path / "store", dim=X.shape[1], chunk_rows=64) as store:
        store.append(X[:200], ids=[f"d{i}" for i in range(200)])
    store = FeatureStore.open(tmp_path / "store")
    hasher = LSHHasher(n_bits=32, random_state=0).fit(X)
    models = tmp_path / "models"
    models.mkdir()
    hasher.save(models / HammingMode.HASHER)
    index = build_ivf_index(StoreCodes(store, hasher), models / HammingMode.INDEX, nlist=4)
    assert index.meta["source_digest"] == store.vectors_digest()
    store.close()
    remove_items(tmp_path / "store", ["d5", "d6"])
    with FeatureStore.open(tmp_path / "store", mode="a") as store:
        store.append(X[200:202], ids=["n0", "n1"])
    changed = FeatureStore.open(tmp_path / "store")
    assert len(changed) == len(index)
    with pytest.raises(ValueError, match="vectors changed since the index was built"):
        HammingMode.open(changed, models)
