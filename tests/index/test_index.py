import numpy as np
import pytest
from sklearn.datasets import load_digits

from hardneg._persist import ModelFileError
from hardneg.eval import hamming_distances
from hardneg.hashing import load_hasher
from hardneg.index import HammingIndex


def _codes(seed, n, n_bytes=4):
    return np.random.default_rng(seed).integers(0, 256, (n, n_bytes), dtype=np.uint8)


@pytest.mark.parametrize("seed", range(3))
def test_search_matches_brute_force(seed):
    db = _codes(seed, 500)
    q = _codes(seed + 100, 20)
    index = HammingIndex(32)
    index.add(db[:300])
    index.add(db[300:])
    rows, dist = index.rank(q, k=25)
    ref = hamming_distances(q, db)
    for i in range(len(q)):
        # the distances are the 25 smallest, and each returned row really is that far
        np.testing.assert_array_equal(dist[i], np.sort(ref[i])[:25])
        np.testing.assert_array_equal(ref[i, rows[i]], dist[i])
        assert len(set(rows[i].tolist())) == 25


@pytest.mark.parametrize("n_bits, k", [(32, 600), (64, 10), (256, 600)])
def test_both_faiss_scans_match_brute_force(n_bits, k):
    # k >= 500 on short codes takes FAISS's counting-sort scan, the rest its heap scan
    db = _codes(7, 3000, n_bits // 8)
    q = _codes(8, 5, n_bits // 8)
    index = HammingIndex(n_bits)
    index.add(db)
    rows, dist = index.rank(q, k=k)
    ref = hamming_distances(q, db)
    for i in range(len(q)):
        np.testing.assert_array_equal(dist[i], np.sort(ref[i])[:k])
        np.testing.assert_array_equal(ref[i, rows[i]], dist[i])
        assert len(set(rows[i].tolist())) == k


def test_ids_and_round_trip(tmp_path):
    db = _codes(0, 100, 2)
    index = HammingIndex(13)  # not a multiple of 8: codes are 2 bytes
    index.add(db, ids=[f"item-{i}" for i in range(100)])
    res = index.search(db[[5, 7]], k=1)
    ids, dist = res.ids, res.distances
    assert ids[:, 0].tolist() == ["item-5", "item-7"] and dist.max() == 0
    path = index.save(tmp_path / "codes.faissbin")
    back = HammingIndex.load(path)
    assert len(back) == 100 and back.n_bits == 13
    np.testing.assert_array_equal(back.codes(), db)
    np.testing.assert_array_equal(back.search(db[:10], k=5).distances, index.search(db[:10], k=5).distances)
    assert back.search(db[:3], k=1).ids[:, 0].tolist() == ["item-0", "item-1", "item-2"]


def test_torn_or_corrupt_files_are_detected(tmp_path):
    index = HammingIndex(16)
    index.add(_codes(0, 10, 2))
    path = index.save(tmp_path / "idx")
    other = HammingIndex(16)
    other.add(_codes(1, 20, 2))
    other.save(tmp_path / "other")
    # pair the index file with a sidecar from another index
    (tmp_path / "idx.ids.npz").write_bytes((tmp_path / "other.ids.npz").read_bytes())
    with pytest.raises(ModelFileError):
        HammingIndex.load(path)
    with pytest.raises(ModelFileError):
        HammingIndex.load(tmp_path / "nope")
    # a file that is not an index (e.g. a hasher model given in its place)
    (tmp_path / "model.npz").write_bytes(b"not an index")
    with pytest.raises(ModelFileError, match="not a Hamming index"):
        HammingIndex.load(tmp_path / "model.npz")


def test_bad_input():
    index = HammingIndex(16)
    with pytest.raises(ValueError, match="empty"):
        index.rank(_codes(0, 1, 2), k=1)
    index.add(_codes(0, 5, 2))
    with pytest.raises(ValueError, match="larger"):
        index.rank(_codes(0, 1, 2), k=6)
    with pytest.raises(ValueError, match="bytes"):
        index.rank(_codes(0, 1, 3), k=1)
    with pytest.raises(TypeError):
        index.add(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="ids"):
        index.add(_codes(0, 2, 2), ids=["a"])


def test_store_index_and_cli(tmp_path):
    from hardneg.cli.main import main
    from hardneg.hashing import LSHHasher
    from hardneg.store import FeatureStore

    X, y = load_digits(return_X_y=True)
    X, y = X[:400].astype(np.float32), y[:400]
    store_path = tmp_path / "store"
    with FeatureStore.create(store_path, dim=X.shape[1]) as store:
        store.append(X[:200], ids=[f"d{i}" for i in range(200)], labels=y[:200])
        store.append(X[200:], ids=[f"d{i}" for i in range(200, 400)])
    store = FeatureStore.open(store_path)
    hasher = LSHHasher(n_bits=16, random_state=0).fit(X)
    index = HammingIndex.from_store(store, hasher, chunk_rows=64)
    np.testing.assert_array_equal(index.codes(), hasher.transform(X))
    assert index.ids[:3].tolist() == ["d0", "d1", "d2"]
    store.close()

    model, idx = tmp_path / "m.npz", tmp_path / "idx.bin"
    assert main(["hash", "train", str(store_path), "--out", str(model), "--bits", "18", "--n-unlabeled", "100"]) == 0
    assert main(["hash", "index", str(model), str(store_path), "--out", str(idx)]) == 0
    assert main(["hash", "search", str(model), str(idx), "--store", str(store_path), "-q", "d3", "-k", "5"]) == 0
    assert main(["hash", "search", str(model), str(idx), "--store", str(store_path), "-q", "missing"]) == 2
    assert main(["hash", "train", str(store_path), "--out", str(model), "--method", "nope"]) == 2
    assert main(["hash", "train", str(store_path), "--out", str(model), "--C", "0"]) == 2
    balanced = tmp_path / "balanced.npz"
    args = ["--bits", "9", "--n-unlabeled", "100", "--cost", "3", "--balance"]
    assert main(["hash", "train", str(store_path), "--out", str(balanced), *args]) == 0
    back = load_hasher(balanced)
    assert back.balance is True and back.C == 3.0


def _clustered_codes(seed, n, n_bits=64, n_centers=20, flip=0.05):
    rng = np.random.default_rng(seed)
    centers = rng.random((n_centers, n_bits)) < 0.5
    bits = centers[rng.integers(0, n_centers, n)] ^ (rng.random((n, n_bits)) < flip)
    return np.packbits(bits, axis=1)


def test_ivf_probing_every_list_is_exact():
    db = _clustered_codes(0, 3000)
    q = _clustered_codes(1, 20)
    exact, ivf = HammingIndex(64), HammingIndex(64, nlist=16, nprobe=2)
    exact.add(db)
    ivf.add(db)  # trains its lists on these codes
    assert ivf.approximate and not exact.approximate
    d_exact = exact.rank(q, k=30)[1]
    rows, dist = ivf.rank(q, k=30, nprobe=16)
    np.testing.assert_array_equal(dist, d_exact)
    ref = hamming_distances(q, db)
    np.testing.assert_array_equal(np.take_along_axis(ref, rows, axis=1), dist)
    # fewer lists probed: never better than exact, every returned distance is real
    rows1, dist1 = ivf.rank(q, k=30, nprobe=1)
    assert (dist1 >= d_exact).all()
    found = rows1 >= 0
    np.testing.assert_array_equal(np.take_along_axis(ref, np.maximum(rows1, 0), axis=1)[found], dist1[found])
    # recall with the default nprobe on clustered codes is high
    hits = (ivf.rank(q, k=30)[1] <= d_exact[:, -1:]).mean()
    assert hits >= 0.9
    np.testing.assert_array_equal(ivf.codes(), db)


def test_ivf_round_trip_and_missing_places(tmp_path):
    db = _clustered_codes(2, 2000)
    index = HammingIndex(64, nlist=32, nprobe=3)
    index.train(db[:1000])
    index.add(db[:1500], ids=[f"a{i}" for i in range(1500)])
    index.add(db[1500:], ids=[f"b{i}" for i in range(500)])
    path = index.save(tmp_path / "ivf.bin")
    back = HammingIndex.load(path)
    assert back.approximate and back.nlist == 32 and back.nprobe == 3 and len(back) == 2000
    res, res_b = index.search(db[:20], k=10), back.search(db[:20], k=10)
    ids, dist, ids_b, dist_b = res.ids, res.distances, res_b.ids, res_b.distances
    np.testing.assert_array_equal(dist_b, dist)
    np.testing.assert_array_equal(ids_b, ids)
    assert ids[:, 0].tolist() == [f"a{i}" for i in range(20)]  # every code finds itself
    np.testing.assert_array_equal(back.codes(), db)
    # k beyond what one probed list holds: missing places are marked, not filled with row 0
    small = HammingIndex(64, nlist=50, nprobe=1)
    small.add(_clustered_codes(3, 60, n_centers=50, flip=0.0))
    res = small.search(_clustered_codes(3, 1, n_centers=50, flip=0.0), k=60)
    ids, dist = res.ids, res.distances
    assert (ids == "").any() and (dist[ids == ""] == 65).all()
    rows, _ = small.rank(_clustered_codes(3, 1, n_centers=50, flip=0.0), k=60)
    assert (rows[ids == ""] == -1).all()


def test_ivf_bad_use(tmp_path):
    index = HammingIndex(64, nlist=100)
    with pytest.raises(ValueError, match="train"):
        index.add(_clustered_codes(0, 50))
    with pytest.raises(ValueError, match="nlist"):
        index.train(_clustered_codes(0, 50))
    with pytest.raises(ValueError, match="approximate"):
        HammingIndex(64).train(_clustered_codes(0, 50))
    with pytest.raises((ValueError, TypeError)):
        HammingIndex(64, nlist=0)
    # a flat index file with an IVF sidecar (or the reverse) is refused
    flat, ivf = HammingIndex(64), HammingIndex(64, nlist=4)
    flat.add(_clustered_codes(1, 200))
    ivf.add(_clustered_codes(1, 200))
    flat.save(tmp_path / "flat")
    ivf.save(tmp_path / "ivf")
    (tmp_path / "flat.ids.npz").write_bytes((tmp_path / "ivf.ids.npz").read_bytes())
    with pytest.raises(ModelFileError):
        HammingIndex.load(tmp_path / "flat")


def test_to_approximate_and_cli_nlist(tmp_path):
    from hardneg.cli.main import main
    from hardneg.store import FeatureStore

    db = _clustered_codes(5, 1500)
    exact = HammingIndex(64, meta={"note": "x"})
    exact.add(db, ids=[f"i{j}" for j in range(1500)])
    ivf = exact.to_approximate(8, nprobe=8)
    assert ivf.approximate and ivf.meta == {"note": "x"} and len(ivf) == 1500
    np.testing.assert_array_equal(ivf.search(db[:30], k=10).distances, exact.search(db[:30], k=10).distances)
    np.testing.assert_array_equal(ivf.ids, exact.ids)

    X, y = load_digits(return_X_y=True)
    X, y = X[:300].astype(np.float32), y[:300]
    store_path = tmp_path / "store"
    with FeatureStore.create(store_path, dim=X.shape[1]) as store:
        store.append(X, ids=[f"d{i}" for i in range(300)], labels=y)
    model, idx = tmp_path / "m.npz", tmp_path / "idx.bin"
    assert main(["hash", "train", str(store_path), "--out", str(model), "--method", "lsh", "--bits", "16"]) == 0
    assert main(["hash", "index", str(model), str(store_path), "--out", str(idx), "--nlist", "4", "--nprobe", "2"]) == 0
    back = HammingIndex.load(idx)
    assert back.approximate and back.nlist == 4 and back.nprobe == 2 and len(back) == 300
    assert main(["hash", "search", str(model), str(idx), "-q", "d3", "-k", "5", "--nprobe", "4"]) == 0
    assert main(["hash", "index", str(model), str(store_path), "--out", str(tmp_path / "x.bin"), "--nlist", "301"]) == 2



def test_stratified_sample_keeps_class_proportions():
    from hardneg.cli.hash import stratified_sample

    rows = np.arange(1000, 2000)
    labels = np.repeat([0, 1, 2], [600, 300, 100])
    got = stratified_sample(rows, labels, 100, np.random.default_rng(0))
    assert got.size == 100 and np.all(np.diff(got) > 0) and np.isin(got, rows).all()
    assert np.bincount(labels[got - 1000]).tolist() == [60, 30, 10]
    # a rare class keeps one row, taken from the largest class
    labels = np.repeat([0, 1, 2], [997, 2, 1])
    got = stratified_sample(rows, labels, 10, np.random.default_rng(1))
    assert np.bincount(labels[got - 1000], minlength=3).tolist() == [8, 1, 1]
    # fewer rows than classes: the largest classes; more than the rows: all of them
    assert np.bincount(labels[stratified_sample(rows, labels, 2, np.random.default_rng(1)) - 1000], minlength=3).tolist() == [1, 1, 0]
    assert stratified_sample(rows, labels, 5000, np.random.default_rng(1)).tolist() == rows.tolist()


def test_hash_train_max_labeled_trains_on_the_cap(tmp_path, capsys):
    from hardneg.cli.main import main
    from hardneg.store import FeatureStore

    X, y = load_digits(return_X_y=True)
    X, y = X[:400].astype(np.float32), y[:400]
    with FeatureStore.create(tmp_path / "store", dim=X.shape[1]) as store:
        store.append(X, ids=[f"d{i}" for i in range(400)], labels=y)
    model = tmp_path / "m.npz"
    args = ["hash", "train", str(tmp_path / "store"), "--out", str(model), "--bits", "8", "--n-unlabeled", "50", "--cost", "1"]
    assert main([*args, "--max-labeled", "100"]) == 0
    assert "TSVM hashing on 100 of the labeled rows" in capsys.readouterr().out
    assert load_hasher(model).n_bits_ == 8
    assert main([*args, "--max-labeled", "0"]) == 0  # 0: every labeled row, no line about a cap
    assert "of the labeled rows" not in capsys.readouterr().out


def test_a_row_id_index_is_refused_once_the_stores_rows_change(tmp_path, capsys):
    """Items removed and as many appended keep the row count, yet the index's row r is no longer the
    store's row r: `hash search` must refuse it, not return the wrong items; tag edits change nothing."""
    from hardneg.cli.main import main
    from hardneg.store import FeatureStore, remove_items

    X, y = load_digits(return_X_y=True)
    X = X[:300].astype(np.float32)
    store_path = tmp_path / "store"
    with FeatureStore.create(store_path, dim=X.shape[1], chunk_rows=64) as store:
        store.append(X[:200], ids=[f"d{i}" for i in range(200)], labels=y[:200])
    model, idx = tmp_path / "m.npz", tmp_path / "idx.bin"
    assert main(["hash", "train", str(store_path), "--out", str(model), "--method", "lsh", "--bits", "16"]) == 0
    build = ["hash", "index", str(model), str(store_path), "--out", str(idx), "--nlist", "4", "--work-dir", str(tmp_path / "w")]
    assert main(build) == 0
    assert HammingIndex.load(idx).row_ids
    search = ["hash", "search", str(model), str(idx), "-q", "d150", "-k", "3", "--json"]
    with FeatureStore.open(store_path, mode="a") as store:
        store.edit_items(add_tags={"d3": ["kept"]})
    capsys.readouterr()
    assert main(search) == 0  # a tag edit leaves the rows as they were
    assert remove_items(store_path, ["d0", "d1"]) == 2
    with FeatureStore.open(store_path, mode="a") as store:
        store.append(X[200:202], ids=["n0", "n1"])
    capsys.readouterr()
    assert main(search) == 2
    err = capsys.readouterr().err
    assert "vectors changed since the index was built" in err and "rebuild it: hardneg hash index" in err
    assert "--nlist 4 --work-dir" in err  # the hint rebuilds the same kind of index
    assert main(build) == 0
    assert main(search) == 0
