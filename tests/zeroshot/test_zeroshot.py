"""Zero-shot metric learning with hard negative mining (hardneg.zeroshot)."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import zeroshot_toy as _toy
import scipy.io
from scipy import stats

from hardneg._persist import ModelFileError
from hardneg.zeroshot import (
    DAP, ESZSL, CorrelationSampler, RandomSampler, UncertaintySampler, ZeroShotClassifier, load_zero_shot,
    zero_shot_scores, zero_shot_search,
)

torch = pytest.importorskip("torch")


def _fast(**kw):
    return ZeroShotClassifier(**{"n_epochs": 8, "m": 8, "batch_size": 16, "random_state": 0, **kw})


# ---------------------------------------------------------------------- losses
def test_loss_terms_against_hand_computed_values():
    from hardneg.zeroshot._losses import attribute_loss, objective, pair_hinge, regularizer, squared_distance

    A = torch.tensor([[1.0, 2.0]])
    Y = torch.tensor([[0.0, 1.0]])
    W_A = torch.tensor([[2.0], [1.0]])
    # (A - Y) W_A = [1, 1] @ [2, 1] = 3 -> S^2 = 9
    assert float(squared_distance(A, Y, W_A)[0]) == 9.0
    tau = torch.tensor(5.0)
    # positive: max(0, 1 - (5 - 9)) = 5; negative: max(0, 1 + (5 - 9)) = 0
    assert float(pair_hinge(torch.tensor([9.0]), 1.0, tau)[0]) == 5.0
    assert float(pair_hinge(torch.tensor([9.0]), -1.0, tau)[0]) == 0.0
    assert float(pair_hinge(torch.tensor([3.0]), -1.0, tau)[0]) == 3.0  # 1 + (5 - 3)
    assert float(attribute_loss(A, Y)[0]) == 2.0
    W_X, b_X = torch.tensor([[1.0, -1.0]]), torch.tensor([0.5, 0.0])
    assert float(regularizer(W_X, b_X, W_A)) == pytest.approx(2.0 + 0.25 + 5.0)
    s2p, s2n = torch.tensor([9.0, 1.0]), torch.tensor([3.0, 8.0, 10.0, 2.0])
    Ap, Yp = torch.zeros(2, 2), torch.ones(2, 2)  # l_A = 2 each
    # hinges: pos [5, 0]; neg [3, 0, 0, 4]
    bal = objective(s2p, s2n, Ap, Yp, tau, W_X, b_X, W_A, lam=0.5, mu=0.1, balanced=True)
    assert float(bal) == pytest.approx((5 + 0 + 0.5 * 4) / 2 + (3 + 0 + 0 + 4) / 4 + 0.1 * 7.25)  # Eq. (11)
    unbal = objective(s2p, s2n, Ap, Yp, tau, W_X, b_X, W_A, lam=0.5, mu=0.1, balanced=False)
    assert float(unbal) == pytest.approx((5 + 7 + 0.5 * 4) / 6 + 0.1 * 7.25)  # Eq. (6)


def test_objective_gradient_matches_finite_differences():
    from hardneg.zeroshot._losses import embed, objective, squared_distance

    g = torch.Generator().manual_seed(0)
    X = torch.randn(5, 4, generator=g, dtype=torch.float64)
    Yp = torch.rand(5, 3, generator=g, dtype=torch.float64)
    Yn = torch.rand(5, 2, 3, generator=g, dtype=torch.float64)
    params = [torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True),
              torch.randn(3, generator=g, dtype=torch.float64).add(1.0).requires_grad_(),
              torch.randn(3, 2, generator=g, dtype=torch.float64, requires_grad=True),
              torch.tensor(1.3, dtype=torch.float64, requires_grad=True)]

    def f(W_X, b_X, W_A, tau):
        A = embed(X, W_X, b_X)
        s2p = squared_distance(A, Yp, W_A)
        s2n = squared_distance(A[:, None, :], Yn, W_A).reshape(-1)
        return objective(s2p, s2n, A, Yp, tau, W_X, b_X, W_A, lam=0.7, mu=0.01, balanced=True)

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-5)


# ---------------------------------------------------------------------- samplers
def _chi2_matches(sampler, E, P, pos, y, epoch, n_draws=20000, seed=0):
    probs = sampler.probabilities(E, P, pos, y, epoch)
    draws = sampler.sample(E, P, pos, y, n_draws, epoch, np.random.default_rng(seed))
    for i in range(len(y)):
        counts = np.bincount(draws[i], minlength=P.shape[0])
        ok = probs[i] > 0
        assert counts[~ok].sum() == 0  # never the image's own class
        _, p = stats.chisquare(counts[ok], probs[i][ok] * n_draws)
        assert p > 1e-3, (i, counts, probs[i])
    return probs


def _tiny_case():
    rng = np.random.default_rng(1)
    vectors = rng.random((6, 3))
    labels = np.array([0, 0, 1, 1, 2, 2])
    E, P = rng.normal(size=(3, 2)), rng.normal(size=(6, 2))
    pos, y = np.array([0, 2, 5]), np.array([0, 1, 2])
    return vectors, labels, E, P, pos, y


def test_random_sampler_is_uniform_over_other_classes():
    vectors, labels, E, P, pos, y = _tiny_case()
    s = RandomSampler().prepare(vectors, labels)
    probs = _chi2_matches(s, E, P, pos, y, epoch=3)
    assert np.allclose(probs[0], [0, 0, 0.25, 0.25, 0.25, 0.25])


def test_uncertainty_sampler_follows_eq8():
    vectors, labels, E, P, pos, y = _tiny_case()
    s = UncertaintySampler().prepare(vectors, labels)
    probs = _chi2_matches(s, E, P, pos, y, epoch=2)
    S = np.sqrt(((E[:, None, :] - P[None]) ** 2).sum(-1))
    for i in range(3):
        u = np.exp(-(S[i] - S[i, pos[i]]))  # Eq. (8)
        u[labels == y[i]] = 0
        assert np.allclose(probs[i], u / u.sum())
    # epoch 1: uniform, as the paper starts
    assert np.allclose(s.probabilities(E, P, pos, y, 1)[0], [0, 0, 0.25, 0.25, 0.25, 0.25])


def test_correlation_sampler_follows_eq9_eq10():
    vectors, labels, E, P, pos, y = _tiny_case()
    s = CorrelationSampler().prepare(vectors, labels)
    probs = _chi2_matches(s, E, P, pos, y, epoch=4)
    S = np.sqrt(((E[:, None, :] - P[None]) ** 2).sum(-1))
    q = np.array([np.exp(-np.mean([np.linalg.norm(vectors[j] - vectors[k]) for k in np.flatnonzero(labels == labels[j])]))
                  for j in range(6)])  # Eq. (10)
    for i in range(3):
        p = np.exp(-(S[i] - S[i, pos[i]])) * q  # Eq. (9)
        p[labels == y[i]] = 0
        assert np.allclose(probs[i], p / p.sum())


def test_correlation_sampler_refuses_shared_class_vectors():
    X, y, attrs = _toy()
    with pytest.raises(ValueError, match="per-image attribute vectors"):
        _fast(sampler="correlation").fit(X, y, attrs)
    with pytest.raises(ValueError, match="per-image"):
        CorrelationSampler().prepare(np.eye(3), np.arange(3))


# ---------------------------------------------------------------------- classifier
def test_prediction_is_argmin_of_S_and_zero_shot_works():
    X, y, attrs = _toy()
    seen = y < 6
    clf = _fast(n_epochs=25).fit(X[seen], y[seen], attrs[:6])
    unseen = {6: attrs[6], 7: attrs[7]}
    S = clf.decision_function(X[~seen], class_attributes=unseen)
    assert S.shape == (int((~seen).sum()), 2)
    pred = clf.predict(X[~seen], class_attributes=unseen)
    assert np.array_equal(pred, np.array([6, 7])[S.argmin(1)])
    manual = np.linalg.norm((clf.embed(X[~seen])[:, None, :] - attrs[None, 6:8]) @ clf.W_A_, axis=-1)  # Eq. (1)
    assert np.allclose(S, manual, atol=1e-4)
    assert (clf.predict(X[seen]) == y[seen]).mean() > 0.9  # the seen classes are learned
    scores = zero_shot_scores(clf, X, y, attrs, unseen_classes=[6, 7])
    assert set(scores) == {"zsl", "seen", "unseen", "harmonic"} and 0 <= scores["harmonic"] <= 1


@pytest.mark.parametrize("sampler", ["random", "uncertainty"])
def test_deterministic_under_a_seed(sampler):
    X, y, attrs = _toy()
    a = _fast(sampler=sampler, n_negatives=3).fit(X, y, attrs)
    b = _fast(sampler=sampler, n_negatives=3).fit(X, y, attrs)
    assert np.array_equal(a.W_A_, b.W_A_) and np.array_equal(a.W_X_, b.W_X_) and a.tau_ == b.tau_
    c = _fast(sampler=sampler, n_negatives=3, random_state=1).fit(X, y, attrs)
    assert not np.array_equal(a.W_A_, c.W_A_)


def test_per_image_attributes_and_correlation_sampler():
    X, y, attrs = _toy()
    rng = np.random.default_rng(3)
    A = attrs[y] + 0.05 * rng.normal(size=(y.size, attrs.shape[1]))
    seen = y < 6
    clf = _fast(sampler="correlation", n_negatives=4, n_epochs=15).fit(X[seen], y[seen], sample_attributes=A[seen])
    assert np.allclose(clf.prototypes_[0], A[y == 0].mean(0), atol=1e-5)
    assert clf.history_["sampler_seconds"][0] >= 0 and len(clf.history_["loss"]) == 15
    pred = clf.predict(X[~seen], class_attributes={6: attrs[6], 7: attrs[7]})
    assert set(pred) <= {6, 7}


def test_save_load_round_trip(tmp_path):
    X, y, attrs = _toy()
    clf = _fast().fit(X, y, attrs)
    path = clf.save(tmp_path / "zsl.npz")
    again = load_zero_shot(path)
    assert np.array_equal(again.decision_function(X), clf.decision_function(X))
    assert again.get_params() == clf.get_params()
    # string class labels survive too
    labels = np.array([f"class{k}" for k in range(8)])
    clf2 = _fast(n_epochs=2).fit(X, labels[y], (labels, attrs))
    again2 = load_zero_shot(clf2.save(tmp_path / "s.npz"))
    assert np.array_equal(again2.predict(X[:5]), clf2.predict(X[:5]))
    # what the caller recorded about the training data comes back; a new fit starts empty
    assert again.training_info_ == {}
    clf.training_info_["class_tags"] = ["cat", "dög"]
    assert load_zero_shot(clf.save(tmp_path / "t.npz")).training_info_ == {"class_tags": ["cat", "dög"]}
    assert clf.fit(X, y, attrs).training_info_ == {}


def test_corrupt_or_inconsistent_model_file(tmp_path):
    X, y, attrs = _toy()
    path = _fast(n_epochs=1).fit(X, y, attrs).save(tmp_path / "m.npz")
    raw = bytearray(path.read_bytes())
    # a byte of W_X's values (the file's middle byte may fall in zip header padding that nothing reads)
    import struct
    import zipfile

    info = zipfile.ZipFile(path).getinfo("W_X.npy")
    name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26 : info.header_offset + 30])
    raw[info.header_offset + 30 + name_len + extra_len + info.compress_size - 1] ^= 0xFF
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(raw))
    with pytest.raises(ModelFileError):
        load_zero_shot(bad)
    from hardneg._persist import load_model, save_model

    arrays, meta = load_model(path, "hardneg.zeroshot.ZeroShotClassifier", (1,))
    arrays["W_A"] = arrays["W_A"] * np.nan
    save_model(tmp_path / "nan.npz", "hardneg.zeroshot.ZeroShotClassifier", 1, arrays, meta)
    with pytest.raises(ModelFileError, match="NaN"):
        load_zero_shot(tmp_path / "nan.npz")
    arrays, meta = load_model(path, "hardneg.zeroshot.ZeroShotClassifier", (1,))
    arrays["b_X"] = arrays["b_X"][:-1]
    save_model(tmp_path / "shape.npz", "hardneg.zeroshot.ZeroShotClassifier", 1, arrays, meta)
    with pytest.raises(ModelFileError, match="shapes"):
        load_zero_shot(tmp_path / "shape.npz")


def test_bad_inputs_are_one_line_errors():
    X, y, attrs = _toy()
    bad_nan = attrs.copy()
    bad_nan[2, 1] = np.nan
    cases = [
        (lambda: _fast().fit(X, y, bad_nan), "NaN"),
        (lambda: _fast().fit(X, y, {k: attrs[k] for k in range(7)}), "no attribute vector"),
        (lambda: _fast().fit(X, y, {0: [1, 2], 1: [1, 2, 3]}), "different lengths"),
        (lambda: _fast().fit(X[y == 0], y[y == 0], attrs), "at least 2 seen classes"),
        (lambda: _fast().fit(X, y, attrs, sample_attributes=attrs[y]), "not both"),
    ]
    fitted = _fast(n_epochs=1).fit(X[y < 6], y[y < 6], attrs[:6])
    cases += [
        (lambda: fitted.predict(X, class_attributes=attrs[:, :3]), "length 3"),
        (lambda: zero_shot_scores(fitted, X, y, attrs, unseen_classes=[5, 6]), "overlap"),
        (lambda: zero_shot_search(fitted, X, attrs[0, :2]), "query"),
    ]
    for fn, match in cases:
        with pytest.raises((ValueError, TypeError), match=match) as info:
            fn()
        assert "\n" not in str(info.value)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        ZeroShotClassifier().predict(X)


def test_baselines_share_the_api():
    X, y, attrs = _toy(n_classes=10)
    seen = y < 8
    unseen = (np.array([8, 9]), attrs[8:])
    for clf in (ESZSL(), DAP()):
        clf.fit(X[seen], y[seen], attrs)
        pred = clf.predict(X[~seen], class_attributes=unseen)
        assert set(pred) <= {8, 9}
        assert clf.decision_function(X[:3], class_attributes=unseen).shape == (3, 2)
    assert (ESZSL().fit(X[seen], y[seen], attrs).predict(X[~seen], class_attributes=unseen) == y[~seen]).mean() > 0.8


def test_tune_holds_out_training_classes():
    X, y, attrs = _toy(n_classes=10)
    clf = ZeroShotClassifier.tune(X, y, attrs, param_grid={"lam": [0.1, 1.0]}, n_epochs=3, m=8, random_state=0)
    assert len(clf.tuning_results_) == 2 and clf.lam in (0.1, 1.0)
    assert hasattr(clf, "W_A_")


def test_tune_skips_a_diverging_candidate_and_refuses_when_all_diverge():
    from hardneg.zeroshot import TrainingDivergedError, class_holdout_search

    X, y, attrs = _toy(n_classes=10)
    X = X * 1e3  # unstandardized and large: lr = 1e6 overflows within an epoch
    est = ZeroShotClassifier(n_epochs=2, m=8, standardize=False, random_state=0)
    best, results = class_holdout_search(est, {"lr": [1e6, 1e-6]}, X, y, attrs, random_state=0)
    assert best == {"lr": 1e-6}
    assert results[0]["diverged"] and np.isnan(results[0]["accuracy"])
    with pytest.raises(TrainingDivergedError, match="all 1 candidates"):
        class_holdout_search(est, {"lr": [1e6]}, X, y, attrs, random_state=0)


def test_search_in_a_feature_store(tmp_path):
    from hardneg.store import FeatureStore

    X, y, attrs = _toy()
    clf = _fast(n_epochs=20).fit(X, y, attrs)
    store = FeatureStore.create(tmp_path / "s", dim=X.shape[1], chunk_rows=32)
    store.append(X, labels=y)
    res = zero_shot_search(clf, store, attrs[3], k=10)[0]  # a TopK; [0]: the one query's
    rows, dist = res.rows, res.distances
    S = clf.distances(X, attrs[3:4])[:, 0]
    assert np.array_equal(rows, np.lexsort((np.arange(len(S)), S))[:10]) and np.allclose(dist, np.sort(S)[:10])
    rows_arr = zero_shot_search(clf, X, attrs[3], k=10).rows[0]
    assert np.array_equal(rows, rows_arr)


# ---------------------------------------------------------------------- xlsa17
def test_xlsa17_loader_round_trip(tmp_path):
    from hardneg.datasets import load_xlsa17

    rng = np.random.default_rng(0)
    N, d, C, a = 30, 7, 5, 4
    F = rng.random((d, N))
    labels = rng.integers(1, C + 1, size=(N, 1))  # 1-based, as MATLAB writes them
    att = rng.random((a, C))
    trainval = np.flatnonzero(labels[:, 0] <= 3) + 1
    unseen = np.flatnonzero(labels[:, 0] > 3) + 1
    scipy.io.savemat(tmp_path / "res101.mat", {"features": F, "labels": labels,
                                                "image_files": np.array([[f"img{i}.jpg"] for i in range(N)], dtype=object)})
    names = np.empty((C, 1), dtype=object)
    for i in range(C):
        names[i, 0] = np.array([f"class_{i}"])
    scipy.io.savemat(tmp_path / "att_splits.mat", {
        "att": att, "original_att": att * 100, "allclasses_names": names,
        "trainval_loc": trainval[:, None], "train_loc": trainval[:-2, None], "val_loc": trainval[-2:, None],
        "test_seen_loc": trainval[:3, None], "test_unseen_loc": unseen[:, None]})
    ds = load_xlsa17(tmp_path)
    assert np.allclose(ds.X, F.T) and np.array_equal(ds.y, labels[:, 0] - 1)
    assert np.allclose(ds.class_attributes, att.T)
    assert ds.class_names == [f"class_{i}" for i in range(C)]
    assert np.array_equal(ds.splits["trainval"], trainval - 1) and np.array_equal(ds.splits["test_unseen"], unseen - 1)
    assert set(ds.splits) == {"trainval", "test_seen", "test_unseen", "train", "val"}
    assert ds.unseen_classes.tolist() == [3, 4]
    scipy.io.savemat(tmp_path / "att_splits.mat", {"att": att, "trainval_loc": np.array([[0]]),
                                                    "test_seen_loc": trainval[:1, None], "test_unseen_loc": unseen[:, None]})
    with pytest.raises(ValueError, match="1-based"):
        load_xlsa17(tmp_path)
    (tmp_path / "res101.mat").unlink()
    with pytest.raises(FileNotFoundError):
        load_xlsa17(tmp_path)


def test_pixel_attributes_deterministic_and_bounded():
    from hardneg.zeroshot._protocols import attribute_table, pixel_attributes

    rng = np.random.default_rng(0)
    imgs = (rng.random((5, 28, 28)) > 0.7) * 255.0
    a, b = pixel_attributes(imgs), pixel_attributes(imgs.copy())
    assert np.array_equal(a, b) and a.min() >= 0 and a.max() <= 1
    M, names, defs, classes = attribute_table("mnist")
    assert M.shape == (10, len(names)) == (10, len(defs)) and len({tuple(r) for r in M}) == 10


def test_class_holdout_keeps_at_least_two_validation_classes():
    from hardneg.zeroshot import class_holdout_split

    train, val = class_holdout_split(np.arange(7), 0.2, random_state=0)
    assert val.size == 2 and train.size == 5 and not np.intersect1d(train, val).size
    with pytest.raises(ValueError, match="at least 4 classes"):
        class_holdout_split(np.arange(3), 0.2)


@pytest.mark.parametrize("est", [ZeroShotClassifier(n_epochs=2), ESZSL(), DAP()])
def test_estimator_conventions(est):
    # not run through parametrize_with_checks: fit needs attribute vectors besides X and y
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    again = clone(est)
    assert again.get_params() == est.get_params()
    X, y, attrs = _toy()
    with pytest.raises(NotFittedError):
        again.predict(X)
    fitted = clone(est).fit(X, y, attrs)
    assert fitted.n_features_in_ == X.shape[1] and np.array_equal(fitted.classes_, np.arange(8))
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :3])
    bad = clone(est).set_params(**{next(iter(est._parameter_constraints)): -1.0})
    with pytest.raises((ValueError, TypeError)):
        bad.fit(X, y, attrs)


@pytest.mark.parametrize("est", [ZeroShotClassifier(n_epochs=2, random_state=0), ESZSL(), DAP()], ids=lambda e: type(e).__name__)
def test_class_attributes_at_construction_or_fit_or_one_hot(est):
    # before: class_attributes only in fit, so fit(X, y) (Pipeline, cross_val_score, the estimator checks) failed
    from sklearn.base import clone

    X, y, attrs = _toy()
    in_fit = clone(est).fit(X, y, attrs)
    in_init = clone(est).set_params(class_attributes=attrs).fit(X, y)
    np.testing.assert_array_equal(in_init.prototypes_, in_fit.prototypes_)
    np.testing.assert_array_equal(in_init.predict(X), in_fit.predict(X))
    overridden = clone(est).set_params(class_attributes=np.eye(8)).fit(X, y, attrs)  # fit's argument wins
    np.testing.assert_array_equal(overridden.prototypes_, in_fit.prototypes_)
    one_hot = clone(est).fit(X, y)  # none given anywhere: one attribute per seen class
    np.testing.assert_array_equal(one_hot.prototypes_, np.eye(8, dtype=np.float32))
    assert np.array_equal(one_hot.classes_, np.arange(8)) and set(one_hot.predict(X)) <= set(range(8))
    labels = np.array(list("abcdefgh"))[y]  # any labels: classes_ sorted, one-hot in that order
    assert clone(est).fit(X, labels).classes_.tolist() == list("abcdefgh")
    with pytest.raises(ValueError, match="at least 2 seen classes, got 1 class"):
        clone(est).fit(X[y == 0], y[y == 0])


# ----------------------------------------------------------------------------- issue 40: one predict, keyword-only, no old paths


def test_one_predict_for_the_zero_shot_estimators():
    from hardneg.zeroshot import DAP, ESZSL, ZeroShotClassifier
    from hardneg.zeroshot._common import ZeroShotPredictMixin

    assert DAP.predict is ESZSL.predict is ZeroShotClassifier.predict is ZeroShotPredictMixin.predict


@pytest.mark.parametrize("name, args", [("ZeroShotClassifier", ("random", 2)), ("ESZSL", (1.0, 1.0)), ("DAP", (1.0, True))])
def test_parameters_after_the_first_are_keyword_only(name, args):
    import hardneg.zeroshot

    cls = getattr(hardneg.zeroshot, name)
    cls(args[0])  # the first may be positional
    with pytest.raises(TypeError):
        cls(*args)


@pytest.mark.parametrize("module", ["_samplers", "_sampler_base", "_sampler_random", "_sampler_uncertainty",
                                    "_sampler_correlation"])
def test_old_private_sampler_modules_are_gone(module):
    import importlib

    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"hardneg.zeroshot.{module}")
