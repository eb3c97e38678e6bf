"""The streaming, resumable IVF build (hardneg.index.build_ivf_index) and row-id indexes."""

import faiss
import numpy as np
import pytest

from hardneg.eval import hamming_distances
from hardneg.index import ArrayCodes, HammingIndex, IVFBuilder, StoreCodes, build_ivf_index
from hardneg.index._nearest import nearest_centroid


def _clustered_codes(seed, n, n_bits=64, n_centers=20, flip=0.05):
    rng = np.random.default_rng(seed)
    centers = rng.random((n_centers, n_bits)) < 0.5
    bits = centers[rng.integers(0, n_centers, n)] ^ (rng.random((n, n_bits)) < flip)
    return np.packbits(bits, axis=1)


class Killed(Exception):
    pass


class Flaky(ArrayCodes):
    """An array source that records the chunks read and dies (an exception) when asked for chunk ``die_at``."""

    def __init__(self, codes, *, chunk_rows, die_at=None):
        super().__init__(codes, chunk_rows=chunk_rows)
        self.die_at, self.read = die_at, []

    def chunk(self, j):
        if j == self.die_at:
            raise Killed(f"killed before chunk {j}")
        self.read.append(j)
        return super().chunk(j)


@pytest.mark.parametrize("n_bytes", [1, 3, 8, 20])
def test_nearest_centroid_matches_faiss_and_brute_force(n_bytes):
    rng = np.random.default_rng(n_bytes)
    codes = rng.integers(0, 256, (500, n_bytes), dtype=np.uint8) & 0x13  # few distinct bits: many ties
    cents = rng.integers(0, 256, (37, n_bytes), dtype=np.uint8) & 0x13
    got = nearest_centroid(codes, cents)
    ref = hamming_distances(codes, cents)
    np.testing.assert_array_equal(got, np.argmin(ref, axis=1))  # argmin: the first of equal minima
    q = faiss.IndexBinaryFlat(8 * n_bytes)
    q.add(cents)
    np.testing.assert_array_equal(got, q.search(codes, 1)[1][:, 0])
    assert nearest_centroid(codes[:0], cents).shape == (0,)


def test_build_probing_every_list_equals_exact(tmp_path):
    db = _clustered_codes(0, 3000)
    q = _clustered_codes(1, 25)
    ivf = build_ivf_index(db, tmp_path / "ivf.index", nlist=16, nprobe=2, chunk_rows=700)
    assert ivf.approximate and ivf.row_ids and len(ivf) == 3000
    exact = HammingIndex(64)
    exact.add(db)
    d_exact = exact.rank(q, k=30)[1]
    rows, dist = ivf.rank(q, k=30, nprobe=16)
    np.testing.assert_array_equal(dist, d_exact)
    ref = hamming_distances(q, db)
    np.testing.assert_array_equal(np.take_along_axis(ref, rows, axis=1), dist)  # rows are the source rows
    np.testing.assert_array_equal(ivf.codes(), db)
    assert not (tmp_path / "ivf.index.build").exists()  # the checkpoints are removed once the index is written
    # the same index as FAISS's own add with the same centroids (its quantizer->assign)
    ref_ivf = HammingIndex(64, nlist=16)
    ref_ivf._quantizer.add(faiss.vector_to_array(ivf._quantizer.xb).reshape(16, 8))
    ref_ivf._index.is_trained = True
    ref_ivf.add(db)
    for lst in range(16):
        assert ivf._index.invlists.list_size(lst) == ref_ivf._index.invlists.list_size(lst)
    np.testing.assert_array_equal(ref_ivf.rank(q, k=30, nprobe=3)[0], ivf.rank(q, k=30, nprobe=3)[0])


def test_resumed_build_equals_uninterrupted(tmp_path):
    db = _clustered_codes(2, 2500)
    q = _clustered_codes(3, 10)
    whole = build_ivf_index(db, tmp_path / "a.index", nlist=8, chunk_rows=400)
    flaky = Flaky(db, chunk_rows=400, die_at=3)
    with pytest.raises(Killed):
        IVFBuilder(flaky, tmp_path / "b.index", nlist=8).run()
    assert sorted(p.name for p in (tmp_path / "b.index.build").glob("chunk-*.npz")) == [
        "chunk-000000.npz", "chunk-000001.npz", "chunk-000002.npz"]
    assert not (tmp_path / "b.index").exists()
    again = Flaky(db, chunk_rows=400)
    seen = []
    resumed = IVFBuilder(again, tmp_path / "b.index", nlist=8, progress=seen.append).run()
    assert again.read == [3, 4, 5, 6]  # chunks 0-2 were not read again
    assert sum(seen) == 2500
    assert (tmp_path / "a.index").read_bytes() == (tmp_path / "b.index").read_bytes()
    np.testing.assert_array_equal(whole.rank(q, k=20)[0], resumed.rank(q, k=20)[0])
    back = HammingIndex.load(tmp_path / "b.index")
    np.testing.assert_array_equal(back.rank(q, k=20)[0], whole.rank(q, k=20)[0])


@pytest.mark.parametrize("damage", ["truncate", "flip", "other_chunk"])
def test_corrupt_checkpoint_is_detected_and_redone(tmp_path, damage, caplog):
    db = _clustered_codes(4, 2000)
    build_ivf_index(db, tmp_path / "a.index", nlist=8, chunk_rows=500)
    with pytest.raises(Killed):
        IVFBuilder(Flaky(db, chunk_rows=500, die_at=3), tmp_path / "b.index", nlist=8).run()
    work = tmp_path / "b.index.build"
    ckpt = work / "chunk-000001.npz"
    raw = bytearray(ckpt.read_bytes())
    if damage == "truncate":
        ckpt.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":
        raw[len(raw) // 3] ^= 0xFF
        ckpt.write_bytes(bytes(raw))
    else:
        ckpt.write_bytes((work / "chunk-000000.npz").read_bytes())
    again = Flaky(db, chunk_rows=500)
    IVFBuilder(again, tmp_path / "b.index", nlist=8).run()
    assert again.read == [1, 3]
    assert "redoing it" in caplog.text
    assert (tmp_path / "a.index").read_bytes() == (tmp_path / "b.index").read_bytes()


def test_damaged_quantizer_is_retrained(tmp_path):
    db = _clustered_codes(5, 1500)
    build_ivf_index(db, tmp_path / "a.index", nlist=8, chunk_rows=500)
    with pytest.raises(Killed):
        IVFBuilder(Flaky(db, chunk_rows=500, die_at=1), tmp_path / "b.index", nlist=8).run()
    (tmp_path / "b.index.build" / "quantizer.npz").write_bytes(b"not a zip")
    IVFBuilder(ArrayCodes(db, chunk_rows=500), tmp_path / "b.index", nlist=8).run()
    assert (tmp_path / "a.index").read_bytes() == (tmp_path / "b.index").read_bytes()


def test_bad_input(tmp_path):
    db = _clustered_codes(6, 500)
    out = tmp_path / "x.index"
    with pytest.raises(TypeError, match="uint8"):
        build_ivf_index(db.astype(np.int64), out, nlist=4)
    with pytest.raises(TypeError, match="packed codes"):
        build_ivf_index("codes.bin", out, nlist=4)
    with pytest.raises(ValueError, match="0 rows"):
        build_ivf_index(db[:0], out, nlist=4)
    with pytest.raises(ValueError, match=r"shape \(n_codes, n_bytes\)"):
        build_ivf_index(db.ravel(), out, nlist=4)
    with pytest.raises(ValueError, match="nlist=600"):
        build_ivf_index(db, out, nlist=600)
    with pytest.raises(ValueError, match="n_bits=70"):
        ArrayCodes(db, n_bits=70)
    with pytest.raises(TypeError, match="CodeSource"):
        IVFBuilder(db, out, nlist=4)

    class Wide(ArrayCodes):
        def chunk(self, j):
            return np.zeros((self.bounds(j)[1] - self.bounds(j)[0], 9), np.uint8)

    with pytest.raises(ValueError, match=r"source.chunk\(0\): has 9 bytes per code but the index holds 8"):
        IVFBuilder(Wide(db, chunk_rows=200), out, nlist=4).run()

    class Short(ArrayCodes):
        def chunk(self, j):
            return super().chunk(j)[:-1]

    with pytest.raises(ValueError, match=r"source.chunk\(0\): 199 codes for rows 0..200"):
        IVFBuilder(Short(db, chunk_rows=200), out, nlist=4, work_dir=tmp_path / "short").run()
    # a work folder of another build is refused, not mixed in
    with pytest.raises(ValueError, match="holds another build"):
        IVFBuilder(ArrayCodes(db, chunk_rows=200), out, nlist=8).run()
    assert not out.exists()


def test_row_id_index_round_trip(tmp_path):
    db = _clustered_codes(7, 400)
    index = HammingIndex(64, row_ids=True)
    index.add(db[:150])
    index.add(db[150:])
    with pytest.raises(ValueError, match="row_ids index"):
        index.add(db[:2], ids=["a", "b"])
    res = index.search(db[[7, 300]], k=3)
    assert res.ids[:, 0].tolist() == ["7", "300"] and res.rows[:, 0].tolist() == [7, 300]
    assert index.ids_of(np.array([[5, -1]])).tolist() == [["5", ""]]
    with pytest.raises(ValueError, match="rows"):
        index.ids_of([400])
    index.save(tmp_path / "r.index")
    back = HammingIndex.load(tmp_path / "r.index")
    assert back.row_ids and len(back) == 400 and back._ids == []
    np.testing.assert_array_equal(back.search(db[:5], k=4).rows, index.search(db[:5], k=4).rows)
    approx = back.to_approximate(8, 8)
    assert approx.row_ids and approx.search(db[[9]], k=1, nprobe=8).ids.tolist() == [["9"]]
    with pytest.raises(TypeError, match="row_ids"):
        HammingIndex(64, row_ids="yes")
    # a string-id index is unchanged (format version 1)
    named = HammingIndex(64)
    named.add(db[:3], ids=["a", "b", "c"])
    assert named.search(db[[1]], k=1).ids.tolist() == [["b"]]
    assert named.ids_of(np.array([2, -1])).tolist() == ["c", ""]


def test_store_source_builds_the_store_index(tmp_path):
    from sklearn.datasets import load_digits

    from hardneg.hashing import LSHHasher
    from hardneg.store import FeatureStore

    X = load_digits().data[:600].astype(np.float32)
    with FeatureStore.create(tmp_path / "store", dim=X.shape[1], chunk_rows=64) as store:
        store.append(X, ids=[f"d{i}" for i in range(600)])
    hasher = LSHHasher(n_bits=32, random_state=0).fit(X)
    source = StoreCodes(tmp_path / "store", hasher, chunk_rows=100)
    assert source.n_chunks == 5 and source.bounds(0) == (0, 128)  # whole store chunks
    index = build_ivf_index(source, tmp_path / "s.index", nlist=8)
    np.testing.assert_array_equal(index.codes(), hasher.transform(X))
    with pytest.raises(ValueError, match="64-d features"):
        StoreCodes(tmp_path / "store", LSHHasher(n_bits=8, random_state=0).fit(np.zeros((5, 3), np.float32)))
    # a build left half done over a store whose rows then change is not resumed over the new rows
    work = tmp_path / "work"
    builder = IVFBuilder(StoreCodes(tmp_path / "store", hasher, chunk_rows=100), tmp_path / "t.index", nlist=8, work_dir=work)
    builder.train()
    with FeatureStore.open(tmp_path / "store", mode="a") as store:
        store.edit_items(add_tags={"d1": ["x"]})  # not the rows' vectors: the build resumes
    IVFBuilder(StoreCodes(tmp_path / "store", hasher, chunk_rows=100), tmp_path / "t.index", nlist=8, work_dir=work)
    from hardneg.store import remove_items

    remove_items(tmp_path / "store", ["d0"])
    with FeatureStore.open(tmp_path / "store", mode="a") as store:
        store.append(X[:1], ids=["again"])
    with pytest.raises(ValueError, match="holds another build"):
        IVFBuilder(StoreCodes(tmp_path / "store", hasher, chunk_rows=100), tmp_path / "t.index", nlist=8, work_dir=work)


def test_cli_hash_index_work_dir(tmp_path, capsys):
    from sklearn.datasets import load_digits

    from hardneg.cli.main import main
    from hardneg.store import FeatureStore

    X, y = load_digits(return_X_y=True)
    X, y = X[:300].astype(np.float32), y[:300]
    store_path = tmp_path / "store"
    with FeatureStore.create(store_path, dim=X.shape[1]) as store:
        store.append(X, ids=[f"d{i}" for i in range(300)], labels=y)
    model, idx, work = tmp_path / "m.npz", tmp_path / "idx.bin", tmp_path / "work"
    assert main(["hash", "train", str(store_path), "--out", str(model), "--bits", "16", "--n-unlabeled", "100"]) == 0
    assert main(["hash", "index", str(model), str(store_path), "--out", str(idx), "--work-dir", str(work)]) == 2
    assert "only with --nlist" in capsys.readouterr().err
    args = ["hash", "index", str(model), str(store_path), "--out", str(idx), "--nlist", "4", "--nprobe", "4", "--work-dir", str(work)]
    assert main(args) == 0
    assert HammingIndex.load(idx).row_ids and not work.exists()
    capsys.readouterr()
    assert main(["hash", "search", str(model), str(idx), "--store", str(store_path), "-q", "d3", "-k", "3", "--keep-query", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"id": "d3"' in out and '"label": "3"' in out  # ids and store columns of the rows found
