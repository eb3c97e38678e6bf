"""Hashers: behaviours found unchecked by the seed-12 mutation sample (mutmut 3.8.1 names, current tree).

* ``_base.x__meta_int__mutmut_17`` (message replaced by None): an impossible code length or
  input dimension in a model file is named with its value.
* ``_base.xǁBaseHasherǁ_fit_memory_bytes__mutmut_2`` and ``_tsvm_hashing.xǁTSVMHashingǁfit__mutmut_54``
  (wrong peak-memory estimates): the memory guard refuses a fit only when its documented
  estimate does not fit.
* ``_base.xǁBaseHasherǁfingerprint__mutmut_15`` (``sort_keys=False``): the fingerprint digests
  what the hasher computes, not the order its metadata was built in.
* ``_faiss_base.x_check_chain__mutmut_69`` / ``_74`` (the ITQ mean's name lost or lower-cased):
  a forged ITQ mean is named in the load error.
* ``_faiss_base.xǁFaissChainHasherǁfit__mutmut_10`` (``np.vstack(None)``): unlabeled rows are
  training rows of an unsupervised hasher.
* ``_sklsh.xǁSKLSHHasherǁfit__mutmut_29`` (one random row instead of 2000 random pairs): the
  default bandwidth is 1 / the median squared distance between random pairs.
* ``_tsvm_hashing.xǁTSVMHashingǁ_select_C__mutmut_27`` (rows counted by the feature count):
  ``C="auto"`` works with more features than rows.
* ``_tsvm_hashing.xǁTSVMHashingǁfit__mutmut_119`` (``np.zeros(None)``): ``normalize=False``.
* ``_tsvm_hashing.xǁTSVMHashingǁ_from_arrays__mutmut_152`` (ITQ stage loaded with
  ``n_bits=None``): the loaded ITQ stage is a PCA-ITQ hasher of the model's code length.
"""

from __future__ import annotations

import faiss
import numpy as np
import pytest

import hardneg._validation as validation
from hardneg._persist import ModelFileError, load_model, save_model
from hardneg.hashing import PCAITQHasher, PCARRHasher, SKLSHHasher, TSVMHashing


def _resave(path, kind, out, edit_arrays=None, edit_meta=None):
    arrays, meta = load_model(path, kind, (1,))
    if edit_arrays:
        edit_arrays(arrays)
    if edit_meta:
        edit_meta(meta)
    return save_model(out, kind, 1, arrays, meta)


def _classes(n_per=20, d=6, k=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d)) * 4
    X = np.vstack([c + rng.normal(size=(n_per, d)) for c in centres]).astype(np.float32)
    return X, np.repeat(np.arange(k), n_per)


@pytest.fixture(scope="module")
def sklsh_file(tmp_path_factory):
    X = np.random.default_rng(0).random((50, 8)).astype(np.float32)
    h = SKLSHHasher(n_bits=16, random_state=0).fit(X)
    return h.save(tmp_path_factory.mktemp("sklsh") / "h.npz")


@pytest.mark.parametrize("key, value, limit", [("n_bits", 0, "1.."), ("n_bits", "16", "1.."),
                                               ("n_features", -3, "a positive integer")])
def test_an_impossible_size_in_a_model_file_is_named(sklsh_file, tmp_path, key, value, limit):
    def edit(meta):
        meta[key] = value  # the recorded size only: the parameters still say n_bits=16

    _resave(sklsh_file, "hash-sklsh", tmp_path / "m.npz", edit_meta=edit)
    with pytest.raises(ModelFileError, match=f"{key}={value!r} is not {limit}"):
        SKLSHHasher.load(tmp_path / "m.npz")


def _fit_with_memory(monkeypatch, available, make):
    monkeypatch.setattr(validation, "available_memory", lambda: available)
    return make()


def test_base_memory_guard_uses_the_documented_estimate(monkeypatch):
    # SKLSH keeps the base estimate: 8 bytes x (n_samples + n_features) x n_bits
    X = np.random.default_rng(1).random((100, 16)).astype(np.float32)
    need = 8.0 * 100 * 32 + 8.0 * 16 * 32
    h = _fit_with_memory(monkeypatch, int(need), lambda: SKLSHHasher(n_bits=32, random_state=0).fit(X))
    assert h.n_bits_ == 32
    with pytest.raises(ValueError, match=r"SKLSHHasher\(n_bits=32\)\.fit on X of shape \(100, 16\) needs about"):
        _fit_with_memory(monkeypatch, int(need) - 1, lambda: SKLSHHasher(n_bits=32, random_state=0).fit(X))


def test_tsvm_memory_guard_counts_one_hyperplane_per_tree_node(monkeypatch):
    # 3 classes: each tree has 2 nodes, one hyperplane each; the guard sizes the fit for those
    X, y = _classes()

    def make():
        return TSVMHashing(n_bits=4, C=1.0, n_epochs=1, max_iter=1, random_state=0).fit(X, y)

    planes = make().coef_.shape[0]
    assert planes % 2 == 0 and planes >= 4
    need = 8.0 * X.shape[0] * planes + 8.0 * X.shape[1] * planes
    assert _fit_with_memory(monkeypatch, int(need), make).coef_.shape[0] == planes
    with pytest.raises(ValueError, match="needs about"):
        _fit_with_memory(monkeypatch, int(need) - 1, make)


def test_fingerprint_does_not_depend_on_metadata_order(monkeypatch):
    X, y = _classes(seed=2)
    model = TSVMHashing(n_bits=4, C=1.0, mode="itq", n_epochs=1, max_iter=1, random_state=0).fit(X, y)
    meta = model._meta()
    before = model.fingerprint()
    monkeypatch.setattr(model, "_meta", lambda: {"zz_extra": 1, **meta})
    forward = model.fingerprint()
    monkeypatch.setattr(model, "_meta", lambda: {**meta, "zz_extra": 1})
    assert model.fingerprint() == forward != before


def test_a_forged_itq_mean_is_named(tmp_path):
    X = np.random.default_rng(3).normal(size=(80, 12)).astype(np.float32)
    h = PCAITQHasher(n_bits=8, random_state=0).fit(X)
    path = h.save(tmp_path / "itq.npz")

    def forge(arrays):
        index = faiss.deserialize_index(np.asarray(arrays["faiss_index"]))
        itq = faiss.downcast_VectorTransform(index.chain.at(0))
        assert isinstance(itq, faiss.ITQTransform)
        mean = faiss.vector_to_array(itq.mean).copy()
        mean[3] = np.nan
        faiss.copy_array_to_vector(mean, itq.mean)
        arrays["faiss_index"] = faiss.serialize_index(index)

    _resave(path, h._kind, tmp_path / "forged.npz", edit_arrays=forge)
    with pytest.raises(ModelFileError, match="the stored FAISS ITQ mean holds NaN or infinite values"):
        PCAITQHasher.load(tmp_path / "forged.npz")


@pytest.mark.parametrize("cls", [PCAITQHasher, PCARRHasher])
def test_unlabeled_rows_are_training_rows(cls):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 10)).astype(np.float32)
    U = (rng.normal(size=(60, 10)) * np.r_[5.0, np.ones(9)]).astype(np.float32)  # U changes the principal axes
    with_u = cls(n_bits=6, random_state=0).fit(X, X_unlabeled=U)
    stacked = cls(n_bits=6, random_state=0).fit(np.vstack([X, U]))
    alone = cls(n_bits=6, random_state=0).fit(X)
    Q = rng.normal(size=(40, 10)).astype(np.float32)
    np.testing.assert_array_equal(with_u.transform(Q), stacked.transform(Q))
    assert not np.array_equal(with_u.transform(Q), alone.transform(Q))


@pytest.mark.parametrize("seed", range(4))
def test_default_gamma_is_one_over_the_median_squared_pair_distance(seed):
    # groups of 240, 180 and 180 rows at 0, 1 and 3 on a line: distinct pairs are at squared
    # distance 1, 4 or 9 with odds 12 : 9 : 12, so the median over random pairs is 4 (cumulative
    # odds 0.36, then 0.64); the squared distances from any single row have median 1, 5 or 9
    X = np.repeat([[0.0], [1.0], [3.0]], [240, 180, 180], axis=0).astype(np.float32)
    h = SKLSHHasher(n_bits=8, random_state=seed).fit(X)
    assert h.gamma_ == pytest.approx(1 / 4)


def test_auto_C_with_more_features_than_rows():
    X, y = _classes(n_per=10, d=40, k=2, seed=5)  # 20 rows, 40 features
    model = TSVMHashing(n_bits=1, C="auto", n_epochs=1, max_iter=1, random_state=0).fit(X, y)
    assert model.C_ in model.C_scores_
    assert model.transform(X).shape == (20, 1)


def test_without_normalization_the_hyperplanes_are_in_input_space():
    X, y = _classes(seed=6)
    model = TSVMHashing(n_bits=4, C=1.0, normalize=False, n_epochs=1, max_iter=1, random_state=0).fit(X, y)
    bits = X @ model.coef_[:4].T > -model.intercept_[:4]
    np.testing.assert_array_equal(model.transform(X), np.packbits(bits, axis=1))
    assert (bits != bits[0]).any(axis=0).all()  # every bit splits the data


def test_loaded_itq_stage_is_a_pca_itq_hasher_of_the_code_length(tmp_path):
    X, y = _classes(seed=7)
    model = TSVMHashing(n_bits=4, mode="itq", C=1.0, n_epochs=1, max_iter=1, random_state=0).fit(X, y)
    again = TSVMHashing.load(model.save(tmp_path / "t.npz"))
    assert again.itq_.get_params()["n_bits"] == model.itq_.get_params()["n_bits"] == 4
    # the stage is a complete model of its own: it saves and loads
    stage = PCAITQHasher.load(again.itq_.save(tmp_path / "stage.npz"))
    E = again.transform(X)
    np.testing.assert_array_equal(E, model.transform(X))
    assert stage.fingerprint() == model.itq_.fingerprint()
