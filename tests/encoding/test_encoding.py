"""ESVMEncoder: E-SVM / RE-SVM encodings, LDA mode, persistence, store encoding, CLI."""

import numpy as np
import pytest
import typer
from sklearn.neighbors import KNeighborsClassifier, NearestCentroid
from sklearn.pipeline import make_pipeline
from typer.testing import CliRunner

import hardneg.encoding._esvm as esvm_module
from hardneg._persist import ModelFileError
from hardneg.cli.esvm import app as esvm_app
from hardneg.encoding import ESVMEncoder, asymmetric_scores, encode_store, load_esvm_encoder, symmetric_scores
from hardneg.encoding._lda import lda_statistics
from hardneg.store import FeatureStore

KW = dict(lam=0.01, alpha_pos=1.0, alpha_neg=0.01, min_negatives=20, random_state=0)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    negatives = rng.normal(size=(60, 80)).astype(np.float32)
    X = rng.normal(size=(8, 80)).astype(np.float32)
    return negatives, X


@pytest.mark.parametrize("solver", ["batch", "sgd", "liblinear", "lda"])
def test_each_encoding_scores_its_own_exemplar_above_every_negative(data, solver):
    negatives, X = data  # 60 points in 80 dimensions: separable
    enc = ESVMEncoder(solver=solver, **KW).fit(negatives)
    W = enc.transform(X)
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0, atol=1e-5)  # Eq. (2)
    assert np.all(np.einsum("ij,ij->i", W, X) > (negatives @ W.T).max(axis=0))


def test_transform_is_eq2_of_the_solver_output(data):
    from hardneg.svm import fit_exemplar_svms_batch

    negatives, X = data
    enc = ESVMEncoder(**KW).fit(negatives)
    W = fit_exemplar_svms_batch(X, negatives, lam=0.01, alpha_pos=1.0, alpha_neg=0.01)
    np.testing.assert_allclose(enc.transform(X), W / np.linalg.norm(W, axis=1, keepdims=True), atol=1e-6)


def test_lda_mode_matches_the_direct_formula(data):
    negatives, X = data
    enc = ESVMEncoder(solver="lda", lda_reg=0.3, **KW).fit(negatives)
    Z = negatives.astype(np.float64)
    S = np.cov(Z, rowvar=False) + 0.3 * np.trace(np.cov(Z, rowvar=False)) / Z.shape[1] * np.eye(Z.shape[1])
    w = np.linalg.solve(S, (X.astype(np.float64) - Z.mean(axis=0)).T).T
    np.testing.assert_allclose(enc.transform(X), w / np.linalg.norm(w, axis=1, keepdims=True), atol=1e-4)
    with pytest.raises(ValueError, match="lda_reg"):
        lda_statistics(Z, reg=0.0)


def test_resvm2_reuses_the_cached_pool(data, monkeypatch):
    negatives, X = data
    calls = []
    real = esvm_module.fit_exemplar_svms

    def counting(Xs, Z, **kw):
        calls.append((Xs.shape[0], Z.shape[0], kw.get("exclude") is not None))
        return real(Xs, Z, **kw)

    monkeypatch.setattr(esvm_module, "fit_exemplar_svms", counting)
    enc = ESVMEncoder(**KW).fit(negatives)
    assert calls == [] and len(enc.pools_) == 1
    enc.grow(2)
    assert calls == [(60, 60, True)]  # N^1: the pool encoded once, each negative without itself (Eq. (4))
    pool1 = enc.pools_[1]
    calls.clear()
    W2 = enc.transform(X)
    assert calls == [(8, 60, False), (8, 60, False)]  # w^1 against N^0, w^2 against the cached N^1
    assert enc.pools_[1] is pool1
    # the same as fitting RE-SVM-2 from scratch
    calls.clear()
    np.testing.assert_allclose(ESVMEncoder(n_recursions=2, **KW).fit(negatives).transform(X), W2, atol=1e-6)
    # leave-self-out: each encoded negative equals its encoding against the pool without it
    from hardneg.svm import fit_exemplar_svms_batch

    w = fit_exemplar_svms_batch(negatives[3:4], np.delete(negatives, 3, axis=0), lam=0.01, alpha_pos=1.0, alpha_neg=0.01)
    np.testing.assert_allclose(pool1[3], w[0] / np.linalg.norm(w[0]), atol=1e-5)
    # level 1 from a level-2 encoder is E-SVM
    np.testing.assert_allclose(enc.transform(X, n_recursions=1), ESVMEncoder(**KW).fit(negatives).transform(X), atol=1e-6)


def test_encoding_is_deterministic_under_a_seed():
    rng = np.random.default_rng(1)
    pool = rng.normal(size=(300, 20))
    X = rng.normal(size=(4, 20))
    for solver in ("batch", "sgd"):
        kw = dict(KW, n_negatives=40, solver=solver, n_recursions=2, random_state=7)
        a = ESVMEncoder(**kw).fit(pool).transform(X)
        b = ESVMEncoder(**kw).fit(pool).transform(X)
        np.testing.assert_array_equal(a, b)
    c = ESVMEncoder(**dict(KW, n_negatives=100, random_state=8)).fit(pool)
    assert not np.array_equal(c.pools_[0], ESVMEncoder(**dict(KW, n_negatives=100, random_state=7)).fit(pool).pools_[0])


def test_scoring_helpers(data):
    negatives, X = data
    enc = ESVMEncoder(**KW).fit(negatives)
    db = np.vstack([X, negatives[:5]])
    codes = enc.transform(db)
    np.testing.assert_allclose(enc.retrieval_scores(X, db), symmetric_scores(codes[:8], codes), atol=1e-6)
    np.testing.assert_allclose(enc.retrieval_scores(X, db, symmetric=False), asymmetric_scores(codes[:8], db), atol=1e-5)
    # asymmetric: against the negatives, each query's exemplar SVM ranks the query itself first
    own = enc.retrieval_scores(X, np.vstack([X[:1], negatives]), symmetric=False)[0]
    assert own.argmax() == 0
    with pytest.raises(ValueError, match="dimensions"):
        symmetric_scores(codes, codes[:, :3])


def test_pipeline_before_knn_and_ncm():
    from sklearn.frozen import FrozenEstimator

    rng = np.random.default_rng(2)
    centers = rng.normal(size=(23, 30)) * 3
    # a generic pool (20 other classes) as the paper's disjoint negatives; 3 classes to recognize
    pool = centers[rng.integers(3, 23, size=300)] + rng.normal(size=(300, 30))
    y = np.repeat(np.arange(3), 30)
    X = centers[y] + rng.normal(size=(90, 30))
    y_test = np.repeat(np.arange(3), 10)
    X_test = centers[y_test] + rng.normal(size=(30, 30))
    enc = ESVMEncoder(**dict(KW, lam=1.0, alpha_neg=1e-4, n_negatives=300)).fit(pool)
    for clf in (KNeighborsClassifier(3), NearestCentroid()):
        pipe = make_pipeline(FrozenEstimator(enc), clf).fit(X, y)
        assert pipe.score(X_test, y_test) > 0.9
    # a plain Pipeline fit takes the pool from the training rows
    pipe = make_pipeline(ESVMEncoder(**dict(KW, n_negatives=90)), NearestCentroid()).fit(X, y)
    assert pipe.named_steps["esvmencoder"].pools_[0].shape == (90, 30)
    assert pipe.predict(X_test).shape == (30,)


def test_save_load_round_trip(tmp_path, data):
    negatives, X = data
    for kw in (dict(KW, n_recursions=2), dict(KW, solver="lda", n_recursions=2)):
        enc = ESVMEncoder(**kw).fit(negatives)
        path = enc.save(tmp_path / "enc.npz")
        again = load_esvm_encoder(path)
        assert again.get_params() == enc.get_params()
        for a, b in zip(again.pools_, enc.pools_):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(again.transform(X), enc.transform(X), atol=1e-6)
        assert again.fingerprint() == enc.fingerprint()


def test_corrupt_or_edited_encoder_file_is_one_clear_error(tmp_path, data):
    import json
    import zipfile

    negatives, _ = data
    path = ESVMEncoder(**KW).fit(negatives).save(tmp_path / "enc.npz")
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    bad = tmp_path / "flipped.npz"
    bad.write_bytes(bytes(raw))
    with pytest.raises(ModelFileError):
        load_esvm_encoder(bad)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ModelFileError, match="junk.npz"):
        load_esvm_encoder(tmp_path / "junk.npz")
    with pytest.raises(ModelFileError, match="does not exist"):
        load_esvm_encoder(tmp_path / "missing.npz")
    # a file whose checksums were recomputed after putting NaN in the pool: caught by the value checks
    from hardneg._persist import load_model, save_model

    arrays, meta = load_model(path, "esvm_encoder", (1,))
    arrays["pool_0"][0, 0] = np.nan
    save_model(tmp_path / "nan.npz", "esvm_encoder", 1, arrays, meta)
    with pytest.raises(ModelFileError, match="NaN"):
        load_esvm_encoder(tmp_path / "nan.npz")
    meta["params"]["n_recursions"] = 3
    arrays["pool_0"][0, 0] = 0.0
    save_model(tmp_path / "rec.npz", "esvm_encoder", 1, arrays, meta)
    with pytest.raises(ModelFileError, match="needs 3 pools"):
        load_esvm_encoder(tmp_path / "rec.npz")
    assert zipfile.is_zipfile(path) and json  # the good file is untouched


def test_bad_input(data):
    negatives, X = data
    with pytest.raises(ValueError, match="fewer than min_negatives=200"):
        ESVMEncoder().fit(negatives)
    with pytest.raises(ValueError, match="all zeros"):
        ESVMEncoder(**KW).fit(np.vstack([negatives, np.zeros((1, 80))]))
    with pytest.raises(ValueError, match="NaN"):
        ESVMEncoder(**KW).fit(np.where(np.eye(60, 80) > 0, np.nan, negatives))
    enc = ESVMEncoder(**KW).fit(negatives)
    with pytest.raises(ValueError, match="all zeros"):
        enc.transform(np.zeros((2, 80)))
    with pytest.raises(ValueError, match="80 features"):
        enc.transform(X[:, :10])
    with pytest.raises(ValueError, match="n_recursions"):
        enc.transform(X, n_recursions=2)
    # an exemplar identical to a negative is left out of its own negative set (documented), not an error
    w = enc.transform(negatives[:2])
    assert np.all(np.einsum("ij,ij->i", w, negatives[:2]) > 0)


def test_encode_store_is_resumable_with_progress(tmp_path, data):
    negatives, X = data
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(25, 80)).astype(np.float32)
    with FeatureStore.create(tmp_path / "base", dim=80) as src:
        src.append(rows, ids=[f"i{k}" for k in range(25)], labels=np.arange(25) % 5, split="test", tags=[["t"]] * 25)
    enc = ESVMEncoder(**KW).fit(negatives)
    seen = []
    out = encode_store(enc, tmp_path / "base", tmp_path / "codes", batch_rows=10, progress=seen.append)
    assert seen == [10, 10, 5] and len(out) == 25
    np.testing.assert_allclose(out.to_numpy(), enc.transform(rows), atol=1e-6)
    assert out.ids().tolist() == [f"i{k}" for k in range(25)] and out.labels().tolist() == (np.arange(25) % 5).tolist()
    # an interrupted run (only the first batch written) resumes where it stopped
    calls = []
    real = enc.transform
    first = encode_store(enc, tmp_path / "base", tmp_path / "part", batch_rows=10, progress=lambda n: None)
    first.close()
    import shutil

    shutil.rmtree(tmp_path / "part")
    with FeatureStore.create(tmp_path / "part", dim=80, attrs={"esvm": FeatureStore.open(tmp_path / "codes").attrs["esvm"]}) as part:
        part.append(enc.transform(rows[:10]), ids=[f"i{k}" for k in range(10)], labels=np.arange(10) % 5, split="test", tags=[["t"]] * 10)
    enc.transform = lambda Xb, **kw: calls.append(Xb.shape[0]) or real(Xb, **kw)
    resumed = encode_store(enc, tmp_path / "base", tmp_path / "part", batch_rows=10)
    assert calls == [10, 5] and len(resumed) == 25
    np.testing.assert_allclose(resumed.to_numpy(), out.to_numpy(), atol=1e-6)
    del enc.transform
    other = ESVMEncoder(**dict(KW, alpha_neg=0.02)).fit(negatives)
    with pytest.raises(ValueError, match="not written by this encoder"):
        encode_store(other, tmp_path / "base", tmp_path / "codes")


def test_cli_fit_encode_search(tmp_path):
    rng = np.random.default_rng(4)
    centers = rng.normal(size=(4, 24)) * 2
    y = np.repeat(np.arange(4), 60)
    X = (centers[y] + rng.normal(size=(240, 24))).astype(np.float32)
    with FeatureStore.create(tmp_path / "s", dim=24) as s:
        s.append(X, ids=[f"x{i}" for i in range(240)], labels=y, split=np.where(np.arange(240) % 2, "train", "test").tolist())
    app = typer.Typer()
    app.add_typer(esvm_app, name="esvm")
    runner = CliRunner()
    r = runner.invoke(app, ["esvm", "train", str(tmp_path / "s"), "-o", str(tmp_path / "e.npz"), "--split", "train",
                            "--min-negatives", "100", "--alpha-neg", "0.01", "--recursions", "2"])
    assert r.exit_code == 0, r.output
    assert len(load_esvm_encoder(tmp_path / "e.npz").pools_) == 2
    r = runner.invoke(app, ["esvm", "encode", str(tmp_path / "e.npz"), str(tmp_path / "s"), "-o", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    for mode in ("symmetric", "asymmetric"):
        r = runner.invoke(app, ["esvm", "search", str(tmp_path / "e.npz"), str(tmp_path / "s"), "-q", "x0", "-q", "x5",
                                "--codes", str(tmp_path / "c"), "--mode", mode, "-k", "3"])
        assert r.exit_code == 0, r.output
        lines = [ln for ln in r.output.splitlines() if " x0 " in ln or " x5 " in ln]
        assert lines and "x0" in r.output
    r = runner.invoke(app, ["esvm", "search", str(tmp_path / "e.npz"), str(tmp_path / "s"), "-q", "nope"])
    assert r.exit_code != 0


def test_auto_alpha_neg_keeps_the_negatives_total_weight_at_two(tmp_path, data):
    negatives, X = data
    kw = dict(lam=0.05, min_negatives=20, random_state=0)
    auto = ESVMEncoder(**kw).fit(negatives)
    # in units of the pool's mean squared norm (Eq. (1) is not scale-invariant; tests/encoding/test_esvm_separation.py)
    msq = lambda Z: float((Z.astype(np.float64) ** 2).sum(1).mean())  # noqa: E731
    assert auto.alpha_neg == "auto" and auto.alpha_neg_ == pytest.approx(2 * 0.05 / (60 * msq(negatives)))
    fixed = ESVMEncoder(alpha_neg=auto.alpha_neg_, **kw).fit(negatives)
    np.testing.assert_array_equal(auto.transform(X), fixed.transform(X))
    # the pool halves: alpha_neg doubles, the total weight stays 2
    assert ESVMEncoder(**kw).fit(negatives[:30]).alpha_neg_ == pytest.approx(2 * 0.05 / (30 * msq(negatives[:30])))
    auto.save(tmp_path / "auto.npz")
    back = load_esvm_encoder(tmp_path / "auto.npz")
    assert back.alpha_neg == "auto" and back.alpha_neg_ == auto.alpha_neg_
    np.testing.assert_array_equal(back.transform(X), auto.transform(X))
    with pytest.raises(ValueError, match="alpha_neg"):
        ESVMEncoder(alpha_neg="big", **kw).fit(negatives)


def test_cli_fit_defaults_to_auto_alpha_neg(tmp_path):
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(150, 12)).astype(np.float32)
    with FeatureStore.create(tmp_path / "s", dim=12) as s:
        s.append(rows, ids=[f"x{i}" for i in range(150)])
    app = typer.Typer()
    app.add_typer(esvm_app, name="esvm")
    r = CliRunner().invoke(app, ["esvm", "train", str(tmp_path / "s"), "-o", str(tmp_path / "e.npz"), "--min-negatives", "100"])
    assert r.exit_code == 0, r.output
    enc = load_esvm_encoder(tmp_path / "e.npz")
    msq = float((rows.astype(np.float64) ** 2).sum(1).mean())
    assert enc.alpha_neg == "auto" and enc.alpha_neg_ == pytest.approx(2 * 0.1 / (150 * msq))
