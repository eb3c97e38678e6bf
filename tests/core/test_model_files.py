"""Model and index files a careless or hostile user hands to hardneg (issue 10).

Every loader must give back the model that was saved or raise ModelFileError
with one line: never a raw FAISS RuntimeError, never a model that silently
computes NaN or nothing.
"""

import json
import logging
import zipfile

import numpy as np
import pytest
from sklearn.datasets import load_digits

from _helpers import flipped_byte_copies
from hardneg._persist import ModelFileError, load_model, save_model
from hardneg.hashing import LSHHasher, PCAITQHasher, PCARRHasher, SKLSHHasher, load_hasher
from hardneg.hashing._registry import METHODS, hasher_class
from hardneg.index import HammingIndex


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:300].astype(np.float32), y[:300]


# every hasher in the hashers' own list (16 bits), plus TSVM hashing's two embeddings with quick settings
SETTINGS = {"tsvm-bits": ("tsvm", {"n_bits": 9, "n_epochs": 1, "max_iter": 1}),
            "tsvm-itq": ("tsvm", {"n_bits": 8, "mode": "itq", "n_epochs": 1, "max_iter": 1})}
HASHERS = [name for name in METHODS if name != "tsvm"] + list(SETTINGS)


def _fit(name, X, y):
    method, settings = SETTINGS.get(name, (name, {"n_bits": 16}))
    model = hasher_class(method)(random_state=0, **settings)
    return model.fit(X, y) if METHODS[method].labels else model.fit(X)


@pytest.fixture(scope="module")
def saved(digits, tmp_path_factory):
    """name -> (hasher, path of its file, its codes of the first 50 rows)."""
    X, y = digits
    folder = tmp_path_factory.mktemp("hashers")
    out = {}
    for name in HASHERS:
        h = _fit(name, X, y)
        out[name] = (h, h.save(folder / f"{name}.npz"), h.transform(X[:50]))
    return out


def _one_line(exc):
    message = str(exc)
    assert "\n" not in message and "allow_pickle" not in message
    return message


def _resave(path, kind, edit_arrays=None, edit_meta=None, out=None):
    """A file with edited contents and *fresh* checksums: what a forger writes."""
    arrays, meta = load_model(path, kind, (1,))
    if edit_arrays:
        edit_arrays(arrays)
    if edit_meta:
        edit_meta(meta)
    return save_model(out or path, kind, 1, arrays, meta)


# ---------------------------------------------------------------------- hashers
@pytest.mark.parametrize("name", HASHERS)
def test_fingerprint_survives_save_and_load(saved, name):
    h, path, _ = saved[name]
    assert load_hasher(path).fingerprint() == h.fingerprint()


def test_fingerprints_tell_hashers_apart(digits):
    X, _ = digits
    a = LSHHasher(n_bits=16, random_state=0).fit(X)
    assert a.fingerprint() != LSHHasher(n_bits=16, random_state=1).fit(X).fingerprint()
    assert a.fingerprint() != LSHHasher(n_bits=24, random_state=0).fit(X).fingerprint()
    assert a.fingerprint() == LSHHasher(n_bits=16, random_state=0).fit(X).fingerprint()


@pytest.mark.parametrize("name", HASHERS)
def test_flipped_bytes_give_the_same_model_or_a_clear_error(saved, digits, tmp_path, name):
    h, path, codes = saved[name]
    X, _ = digits
    raw = path.read_bytes()
    bad_path = tmp_path / "bad.npz"
    for _ in flipped_byte_copies(raw, bad_path, 100, seed=sum(map(ord, name))):
        try:
            back = load_hasher(bad_path)
        except ModelFileError as exc:
            _one_line(exc)
            continue
        np.testing.assert_array_equal(back.transform(X[:50]), codes)
        assert back.fingerprint() == h.fingerprint()


@pytest.mark.parametrize("name", HASHERS)
def test_edited_arrays_fail_the_checksum(saved, tmp_path, name):
    """A changed byte inside any array, re-zipped with valid CRCs but the old checksums."""
    _, path, _ = saved[name]
    with zipfile.ZipFile(path) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    rng = np.random.default_rng(1)
    arrays = sorted(n for n in entries if n != "__meta__.npy")
    for i in range(20):
        name_ = arrays[i % len(arrays)]
        payload = bytearray(entries[name_])
        pos = 128 + int(rng.integers(0, len(payload) - 128))  # past the .npy header
        payload[pos] ^= int(rng.integers(1, 256))
        with zipfile.ZipFile(tmp_path / "edited.npz", "w") as zf:
            for n, p in entries.items():
                zf.writestr(n, bytes(payload) if n == name_ else p)
        with pytest.raises(ModelFileError, match="checksum"):
            load_hasher(tmp_path / "edited.npz")


@pytest.mark.parametrize("name", ["lsh", "pca-itq", "pca-rr", "pq", "tsvm-itq"])
def test_forged_faiss_blobs_never_escape(saved, digits, tmp_path, name):
    """Flipped bytes in the FAISS blob *with* recomputed checksums: FAISS must not
    raise its own errors or read out of bounds; the model loads or is refused."""
    h, path, _ = saved[name]
    X, _ = digits
    blob_name = "itq_index" if name == "tsvm-itq" else "faiss_index"
    arrays, meta = load_model(path, h._kind, (1,))
    rng = np.random.default_rng(2)
    refused = 0
    for i in range(40):
        blob = arrays[blob_name].copy()
        # every other forgery hits the first bytes, where FAISS keeps types, dimensions and counts
        span = min(blob.size, 200) if i % 2 else blob.size
        for _ in range(int(rng.integers(1, 4))):
            blob[rng.integers(0, span)] ^= rng.integers(1, 256)
        forged = save_model(tmp_path / "forged.npz", h._kind, 1, {**arrays, blob_name: blob}, meta)
        try:
            back = load_hasher(forged)
        except ModelFileError as exc:
            _one_line(exc)
            refused += 1
            continue
        codes = back.transform(X[:5])  # a model that loads must work
        assert codes.shape == (5, (back.n_bits_ + 7) // 8)
    assert refused > 0


def test_a_truncated_or_foreign_faiss_blob(saved, tmp_path):
    _, lsh_path, _ = saved["lsh"]
    _, pq_path, _ = saved["pq"]
    pq_blob = load_model(pq_path, "hash-pq", (1,))[0]["faiss_index"]

    def truncate(a):
        a["faiss_index"] = a["faiss_index"][:100]

    cases = [
        (truncate, "corrupt FAISS index"),
        (lambda a: a.__setitem__("faiss_index", pq_blob), "IndexPQ"),
        (lambda a: a.__setitem__("faiss_index", np.zeros(0, np.uint8)), "FAISS"),
    ]
    for edit, message in cases:
        _resave(lsh_path, "hash-lsh", edit, out=tmp_path / "m.npz")
        with pytest.raises(ModelFileError, match=message) as info:
            LSHHasher.load(tmp_path / "m.npz")
        _one_line(info.value)
    # an LSH blob of 24 bits in a file that says 16
    X = np.random.default_rng(0).normal(size=(50, 64)).astype(np.float32)
    other = LSHHasher(n_bits=24, random_state=0).fit(X)
    other_blob = other._to_arrays()["faiss_index"]
    _resave(lsh_path, "hash-lsh", lambda a: a.__setitem__("faiss_index", other_blob), out=tmp_path / "m.npz")
    with pytest.raises(ModelFileError, match="IndexLSH of 16 bits"):
        LSHHasher.load(tmp_path / "m.npz")


@pytest.mark.parametrize("value", [0, -5, 8.5, "16", True, None, 10**6])
def test_impossible_code_lengths(saved, tmp_path, value):
    _, path, _ = saved["sklsh"]

    def edit(meta):
        meta["n_bits"] = value
        meta["params"]["n_bits"] = value

    _resave(path, "hash-sklsh", edit_meta=edit, out=tmp_path / "m.npz")
    with pytest.raises(ModelFileError) as info:
        SKLSHHasher.load(tmp_path / "m.npz")
    _one_line(info.value)


def _nan_at(key, index=0, value=np.nan):
    def edit(arrays):
        arrays[key] = arrays[key].copy()
        arrays[key].reshape(-1)[index] = value

    return edit


@pytest.mark.parametrize(
    "name, edit_arrays, edit_meta, message",
    [
        ("sklsh", _nan_at("projections"), None, "NaN or infinite"),
        ("sklsh", _nan_at("phases", 3, np.inf), None, "NaN or infinite"),
        ("sklsh", _nan_at("thresholds", 0, -np.inf), None, "NaN or infinite"),
        ("sklsh", _nan_at("phases", 1, 7.0), None, "outside"),
        ("sklsh", _nan_at("thresholds", 1, -1.5), None, "outside"),
        ("sklsh", None, lambda m: m["extra"].__setitem__("gamma", float("nan")), "gamma"),
        ("sklsh", None, lambda m: m.__setitem__("n_features", 10), "shape"),
        ("sklsh", lambda a: a.__setitem__("phases", a["phases"][:3]), None, "shape"),
        ("tsvm-bits", _nan_at("intercept", 2), None, "NaN or infinite"),
        ("tsvm-bits", _nan_at("coef", 5, np.inf), None, "NaN or infinite"),
        ("tsvm-bits", lambda a: a.__setitem__("trees", a["trees"] * 3), None, "trees"),
        ("tsvm-bits", lambda a: a.__setitem__("coef", a["coef"][:4]), None, "shape"),
        ("tsvm-bits", lambda a: a.__setitem__("classes", a["classes"][:5]), None, "classes"),
        ("tsvm-bits", None, lambda m: m["params"].__setitem__("mode", "itq"), "ITQ index"),
        ("tsvm-bits", None, lambda m: m["params"].__setitem__("mode", "nonsense"), "mode"),
        ("tsvm-itq", None, lambda m: m["extra"].__setitem__("itq_features", 3), "itq_features"),
        ("tsvm-bits", None, lambda m: m["params"].__setitem__("no_such_param", 1), "no_such_param"),
        ("tsvm-bits", None, lambda m: m.__setitem__("params", [1]), "params"),
        ("lsh", lambda a: a.__setitem__("extra", np.ones(3)), None, "unexpected array"),
        ("lsh", lambda a: a.__setitem__("faiss_index", a["faiss_index"].astype(np.float32)), None, "expected kind"),
    ],
)
def test_impossible_values_are_refused(saved, tmp_path, name, edit_arrays, edit_meta, message):
    h, path, _ = saved[name]
    _resave(path, h._kind, edit_arrays, edit_meta, out=tmp_path / "m.npz")
    with pytest.raises(ModelFileError, match=message) as info:
        load_hasher(tmp_path / "m.npz")
    _one_line(info.value)


def test_nan_inside_a_faiss_projection_is_refused(digits, tmp_path):
    import faiss

    X = digits[0][:100]
    for cls in (LSHHasher, PCARRHasher, PCAITQHasher):
        h = cls(n_bits=8, random_state=0).fit(X)
        chain = h.index_.chain
        vt = faiss.downcast_VectorTransform(chain.at(chain.size() - 1))
        lt = vt.pca_then_itq if isinstance(vt, faiss.ITQTransform) else vt
        A = faiss.vector_to_array(lt.A)
        A[7] = np.nan
        faiss.copy_array_to_vector(A, lt.A)
        with pytest.raises(ModelFileError, match="NaN or infinite"):
            cls.load(h.save(tmp_path / "m.npz"))


@pytest.mark.parametrize("n_bits", [8, 64, 512])
def test_lsh_with_more_bits_than_inputs_round_trips(tmp_path, n_bits):
    # FAISS draws the rotation square (n_bits x n_bits) when n_bits > d; the
    # deserialization bound must admit what a genuine model holds
    X = np.random.default_rng(0).normal(size=(200, 6)).astype(np.float32)
    h = LSHHasher(n_bits=n_bits, random_state=0).fit(X)
    loaded = load_hasher(h.save(tmp_path / "lsh.npz"))
    np.testing.assert_array_equal(loaded.transform(X), h.transform(X))


# ---------------------------------------------------------------------- concept and codebook
@pytest.fixture(scope="module")
def concept_files(tmp_path_factory):
    from hardneg.concept import NegativeBootstrap

    rng = np.random.default_rng(0)
    pos, pool = rng.random((10, 5)) + 0.5, rng.random((200, 5))
    nb = NegativeBootstrap(n_iter=2, random_state=0).fit(pos, pool)
    folder = tmp_path_factory.mktemp("concepts")
    return {q: nb.save(folder / f"c{q}.npz", n_bins=q) for q in (20, None)}, pool


@pytest.mark.parametrize("q", [20, None])
def test_concept_flipped_bytes(concept_files, tmp_path, q):
    from hardneg.concept import load_concept

    files, pool = concept_files
    ref = load_concept(files[q]).decision_function(pool)
    raw = files[q].read_bytes()
    for _ in flipped_byte_copies(raw, tmp_path / "c.npz", 100, seed=5):
        try:
            model = load_concept(tmp_path / "c.npz")
        except ModelFileError as exc:
            _one_line(exc)
            continue
        np.testing.assert_array_equal(model.decision_function(pool), ref)


_CONCEPT = "hardneg.concept.CompressedConcept"


@pytest.mark.parametrize(
    "q, edit_arrays, edit_meta, message",
    [
        (20, None, lambda m: m.__setitem__("intercept", float("nan")), "intercept"),
        (20, None, lambda m: m.__setitem__("intercept", float("inf")), "intercept"),
        (20, None, lambda m: m.__setitem__("intercept", 1e300), "intercept"),
        (20, None, lambda m: m.__setitem__("intercept", "0.5"), "intercept"),
        (20, None, lambda m: m.__setitem__("error_bound", -1.0), "error bound"),
        (20, None, lambda m: m.__setitem__("table", "exact"), "table needs arrays"),
        (20, _nan_at("values", 4), None, "'values'"),
        (20, _nan_at("lo", 0, -np.inf), None, "'lo'"),
        (20, _nan_at("above", 1, 1e39), None, "'above'"),
        (20, lambda a: a.__setitem__("hi", a["lo"] - 1), None, "lo must be <= hi"),
        (20, lambda a: a.__setitem__("below", a["below"][:2]), None, "shape"),
        (None, _nan_at("prefix", 3), None, "'prefix'"),
        (None, lambda a: a.__setitem__("values", a["values"][:, ::-1].copy()), None, "not sorted"),
        (None, lambda a: a.__setitem__("suffix", a["suffix"][:, :2]), None, "inconsistent shapes"),
        (None, lambda a: a.__setitem__("lo", np.zeros(5)), None, "table needs arrays"),
    ],
)
def test_concept_impossible_values(concept_files, tmp_path, q, edit_arrays, edit_meta, message):
    from hardneg.concept import load_concept

    files, _ = concept_files
    _resave(files[q], _CONCEPT, edit_arrays, edit_meta, out=tmp_path / "c.npz")
    with pytest.raises(ModelFileError, match=message) as info:
        load_concept(tmp_path / "c.npz")
    _one_line(info.value)


@pytest.fixture(scope="module")
def codebook_file(tmp_path_factory):
    from hardneg.features import Codebook

    X = np.random.default_rng(0).normal(size=(200, 4)).astype(np.float32)
    return Codebook(n_words=8, random_state=0).fit(X).save(tmp_path_factory.mktemp("cb") / "cb.npz"), X


def test_codebook_flipped_bytes(codebook_file, tmp_path):
    from hardneg.features import Codebook

    path, X = codebook_file
    ref = Codebook.load(path).predict(X)
    raw = path.read_bytes()
    for _ in flipped_byte_copies(raw, tmp_path / "cb.npz", 100, seed=6):
        try:
            cb = Codebook.load(tmp_path / "cb.npz")
        except ModelFileError as exc:
            _one_line(exc)
            continue
        np.testing.assert_array_equal(cb.predict(X), ref)


@pytest.mark.parametrize(
    "edit_arrays, edit_meta, message",
    [
        (_nan_at("centroids", 3), None, "NaN"),
        (_nan_at("idf", 0, -1.0), None, "negative"),
        # finite in float64, infinite once cast to the float32 the codebook computes in
        (lambda a: a.__setitem__("centroids", a["centroids"].astype(np.float64) * 1e300), None, "infinite"),
        (lambda a: a.__setitem__("idf", a["idf"][:3]), None, "shapes"),
        (None, lambda m: m.__setitem__("n_words", 0), "parameters"),
        (None, lambda m: m.__setitem__("assign", "magic"), "parameters"),
        (None, lambda m: m.pop("n_iter"), "lacks"),
    ],
)
def test_codebook_impossible_values(codebook_file, tmp_path, edit_arrays, edit_meta, message):
    from hardneg.features import Codebook

    path, _ = codebook_file
    _resave(path, "hardneg.Codebook", edit_arrays, edit_meta, out=tmp_path / "cb.npz")
    with pytest.raises(ModelFileError, match=message) as info:
        Codebook.load(tmp_path / "cb.npz")
    _one_line(info.value)


# ---------------------------------------------------------------------- Hamming index
@pytest.fixture()
def store_and_index(digits, tmp_path):
    from hardneg.store import FeatureStore

    X, _ = digits
    with FeatureStore.create(tmp_path / "store", dim=X.shape[1]) as store:
        store.append(X, ids=[f"d{i}" for i in range(len(X))])
    hasher = LSHHasher(n_bits=16, random_state=0).fit(X)
    hasher.save(tmp_path / "lsh.npz")
    store = FeatureStore.open(tmp_path / "store")
    index = HammingIndex.from_store(store, hasher)
    store.close()
    index.save(tmp_path / "idx.bin")
    return tmp_path, hasher, X


def test_index_records_and_checks_its_hasher(store_and_index):
    folder, hasher, X = store_and_index
    index = HammingIndex.load(folder / "idx.bin")
    assert index.meta["hasher_fingerprint"] == hasher.fingerprint()
    index.check_hasher(load_hasher(folder / "lsh.npz"))
    other = LSHHasher(n_bits=16, random_state=1).fit(X)
    with pytest.raises(ValueError, match="another hasher"):
        index.check_hasher(other)
    with pytest.raises(ValueError, match="16-bit codes but the hasher makes 24-bit"):
        index.check_hasher(LSHHasher(n_bits=24, random_state=0).fit(X))


def test_index_built_by_hand_checks_code_length_only(caplog, digits):
    X, _ = digits
    hasher = LSHHasher(n_bits=16, random_state=0).fit(X)
    index = HammingIndex(16)
    index.add(hasher.transform(X))
    with caplog.at_level(logging.WARNING, logger="hardneg.index._hamming"):
        index.check_hasher(LSHHasher(n_bits=16, random_state=1).fit(X))
    assert "fingerprint" in caplog.text


def test_cli_search_refuses_another_hasher(store_and_index, capsys):
    from hardneg.cli.main import main

    folder, _, X = store_and_index
    np.save(folder / "q.npy", X[:2])
    LSHHasher(n_bits=16, random_state=1).fit(X).save(folder / "other.npz")
    base = ["hash", "search"]
    assert main([*base, str(folder / "lsh.npz"), str(folder / "idx.bin"), "--query-npy", str(folder / "q.npy"), "-k", "3"]) == 0
    capsys.readouterr()
    assert main([*base, str(folder / "other.npz"), str(folder / "idx.bin"), "--query-npy", str(folder / "q.npy"), "-k", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert "another hasher" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1 or "another hasher" in err.splitlines()[0]


def test_index_file_checksum(store_and_index):
    folder, _, _ = store_and_index
    path = folder / "idx.bin"
    raw = path.read_bytes()
    rng = np.random.default_rng(3)
    for pos in rng.integers(0, len(raw), 50):
        bad = bytearray(raw)
        bad[pos] ^= 0x41
        path.write_bytes(bytes(bad))
        with pytest.raises(ModelFileError, match="checksum") as info:
            HammingIndex.load(path)
        _one_line(info.value)


def test_index_sidecar_flipped_bytes(store_and_index):
    folder, _, _ = store_and_index
    ref = HammingIndex.load(folder / "idx.bin")
    sidecar = folder / "idx.bin.ids.npz"
    raw = sidecar.read_bytes()
    for _ in flipped_byte_copies(raw, sidecar, 100, seed=4):
        try:
            back = HammingIndex.load(folder / "idx.bin")
        except ModelFileError as exc:
            _one_line(exc)
            continue
        np.testing.assert_array_equal(back.codes(), ref.codes())
        np.testing.assert_array_equal(back.ids, ref.ids)
        assert back.meta == ref.meta


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: m.__setitem__("n_bits", 0), "n_bits=0"),
        (lambda m: m.__setitem__("n_bits", -5), "n_bits=-5"),
        (lambda m: m.__setitem__("n_bits", 24), "sidecar disagrees"),
        (lambda m: m.__setitem__("ntotal", 7), "sidecar disagrees"),
        (lambda m: m.__setitem__("ntotal", "300"), "ntotal"),
        (lambda m: m.__setitem__("index_blake2b", "0" * 32), "checksum"),
        (lambda m: m.__setitem__("meta", [1]), "not a JSON object"),
    ],
)
def test_index_sidecar_impossible_values(store_and_index, edit, message):
    folder, _, _ = store_and_index
    _resave(folder / "idx.bin.ids.npz", "hamming-index", edit_meta=edit)
    with pytest.raises(ModelFileError, match=message) as info:
        HammingIndex.load(folder / "idx.bin")
    _one_line(info.value)


def test_index_without_checksum_still_loads(store_and_index, caplog):
    folder, _, _ = store_and_index
    _resave(folder / "idx.bin.ids.npz", "hamming-index", edit_meta=lambda m: m.pop("index_blake2b"))
    with caplog.at_level(logging.WARNING, logger="hardneg.index._hamming"):
        assert len(HammingIndex.load(folder / "idx.bin")) == 300
    assert "checksum" in caplog.text


# ---------------------------------------------------------------------- TorchScript trust
def test_model_files_need_trust(tmp_path):
    from hardneg.features import TorchExtractor

    path = tmp_path / "model.pt"
    path.write_bytes(b"anything: it must not even be opened")
    for model in (path, str(path)):
        with pytest.raises(ValueError, match="trust_model=True"):
            TorchExtractor(model).net
    with pytest.raises(ValueError, match="trust_model=True"):
        TorchExtractor(path, trust_model="yes").net


def test_cli_model_needs_trust_flag(tmp_path, capsys):
    from hardneg.cli.main import main

    (tmp_path / "m.pt").write_bytes(b"x")
    (tmp_path / "img").mkdir()
    code = main(["extract", "images", str(tmp_path / "img"), "-o", str(tmp_path / "s"), "--model", str(tmp_path / "m.pt")])
    err = capsys.readouterr().err
    assert code == 2 and "--trust-model" in err and "Traceback" not in err
    assert not (tmp_path / "s").exists()
    assert main(["extract", "images", "--help"]) == 0
    assert "--trust-model" in capsys.readouterr().out


def test_metadata_json_is_what_the_loader_sees(tmp_path):
    # meta keys and tuples come back as JSON makes them, and the checksum agrees
    save_model(tmp_path / "m.npz", "toy", 1, {}, {"t": (1, 2), 3: "x", "f": 0.1})
    assert load_model(tmp_path / "m.npz", "toy", (1,))[1] == json.loads(json.dumps({"t": [1, 2], "3": "x", "f": 0.1}))
