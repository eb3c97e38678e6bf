"""Training to convergence and model selection of ZeroShotClassifier (issue 38 item 1)."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import zeroshot_toy as _toy

from hardneg._progress import ProgressCounter
from hardneg.eval import mean_per_class_accuracy
from hardneg.zeroshot import ZeroShotClassifier, class_holdout_split
from hardneg.zeroshot._classifier import AUTO_LR_SCALE, loss_plateau, top_eigenvalue

torch = pytest.importorskip("torch")


def _halves(y):
    """Every other image of each class: a training half and a held-out half."""
    return np.arange(y.size) % 2 == 0


# ---------------------------------------------------------------------- convergence with the defaults
def test_defaults_reach_high_seen_accuracy_on_a_separable_toy():
    X, y, attrs = _toy()
    seen = y < 6
    tr = _halves(y) & seen
    te = ~_halves(y) & seen
    clf = ZeroShotClassifier(random_state=0).fit(X[tr], y[tr], attrs[:6])  # defaults only
    acc = mean_per_class_accuracy(y[te], clf.predict(X[te]))
    assert acc >= 0.95  # held-out images of the seen classes
    assert clf.n_epochs_ < clf.n_epochs  # the stopping rule ended it, not the cap


def test_the_old_five_epoch_setting_is_short_of_convergence():
    """The issue's symptom, on the toy: 5 epochs stop far above the loss that training to the plateau reaches."""
    X, y, attrs = _toy()
    old = ZeroShotClassifier(n_epochs=5, tol=None, lr=0.01, mu=1e-4, m=16, random_state=0).fit(X, y, attrs)
    new = ZeroShotClassifier(lr=0.01, mu=1e-4, m=16, random_state=0).fit(X, y, attrs)
    assert len(old.history_["loss"]) == 5 and new.n_epochs_ > 5
    assert old.history_["loss"][-1] > 1.5 * new.history_["loss"][-1]
    assert not loss_plateau(old.history_["loss"], 1e-3, 5)


# ---------------------------------------------------------------------- the stopping rule
def test_loss_plateau_against_hand_worked_sequences():
    # best before epoch 3 is 2.0: 1.999 is not below 0.999 * 2.0 = 1.998, nor is 1.998 below 0.999 * 1.999
    assert loss_plateau([4.0, 2.0, 1.999, 1.998], tol=1e-3, n_iter_no_change=2)
    assert not loss_plateau([4.0, 2.0, 1.999, 1.99], tol=1e-3, n_iter_no_change=2)  # 1.99 < 1.997
    assert not loss_plateau([4.0, 2.0, 1.999, 1.998], tol=1e-3, n_iter_no_change=3)  # only 2 epochs since 2.0
    assert loss_plateau([1.0, 1.5, 1.2], tol=0.0, n_iter_no_change=2)  # a rising loss is no improvement
    assert not loss_plateau([1.0], tol=0.0, n_iter_no_change=1)  # nothing to compare with yet


def test_stopping_rule_stops_early_on_an_easy_problem_and_counts_progress_to_the_cap():
    X, y, attrs = _toy()
    c = ProgressCounter()
    clf = ZeroShotClassifier(n_epochs=300, random_state=0).fit(X, y, attrs, progress=c)
    assert clf.n_epochs_ < 100
    assert len(clf.history_["loss"]) == clf.n_epochs_
    assert loss_plateau(clf.history_["loss"], clf.tol, clf.n_iter_no_change)
    assert not loss_plateau(clf.history_["loss"][:-1], clf.tol, clf.n_iter_no_change)  # it stopped at the first plateau
    assert c.total == 300 and len(c.calls) == clf.n_epochs_ and c.calls[-1] == 300 - clf.n_epochs_ + 1


def test_stopping_rule_runs_to_the_cap_on_a_hard_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 64)).astype(np.float32)
    y = rng.integers(0, 20, 400)  # random labels: memorized slowly, the loss keeps falling
    clf = ZeroShotClassifier(n_epochs=12, m=8, random_state=0).fit(X, y)
    assert clf.n_epochs_ == 12 and len(clf.history_["loss"]) == 12


def test_tol_none_runs_exactly_n_epochs():
    X, y, attrs = _toy()
    assert ZeroShotClassifier(n_epochs=40, tol=None, random_state=0).fit(X, y, attrs).n_epochs_ == 40


# ---------------------------------------------------------------------- the step size
def test_top_eigenvalue_matches_numpy():
    X, _, _ = _toy(d=24)
    Xs = (X - X.mean(0)) / X.std(0)
    assert top_eigenvalue(Xs) == pytest.approx(np.linalg.eigvalsh(Xs.T.astype(np.float64) @ Xs / len(Xs))[-1], rel=1e-6)


def test_auto_step_is_scaled_by_the_inputs_and_trains_where_a_fixed_step_diverges():
    X, y, attrs = _toy(d=1024)  # 1024 standardized, strongly correlated features
    seen = y < 6
    tr, te = _halves(y) & seen, ~_halves(y) & seen
    clf = ZeroShotClassifier(m=8, random_state=0).fit(X[tr], y[tr], attrs[:6])
    Xs = (X[tr] - X[tr].mean(0, dtype=np.float64)) / X[tr].std(0, dtype=np.float64)
    L = np.linalg.eigvalsh(Xs.T @ Xs / len(Xs))[-1]
    assert clf.lr_["W_X"] == pytest.approx(AUTO_LR_SCALE / L, rel=1e-3)
    assert clf.lr_["W_A"] == clf.lr_["b_X"] == clf.lr_["tau"] == 0.01
    assert mean_per_class_accuracy(y[te], clf.predict(X[te])) >= 0.5  # chance is 1/6
    from hardneg.zeroshot import TrainingDivergedError

    with pytest.raises(TrainingDivergedError):
        ZeroShotClassifier(m=8, lr=0.01, random_state=0).fit(X[tr], y[tr], attrs[:6])
    fixed = ZeroShotClassifier(n_epochs=2, lr=1e-3, random_state=0).fit(X[tr], y[tr], attrs[:6])
    assert fixed.lr_ == dict.fromkeys(("W_X", "b_X", "W_A", "tau"), 1e-3)


# ---------------------------------------------------------------------- model selection
def test_tune_picks_mu_on_held_out_seen_classes():
    X, y, attrs = _toy(n_classes=10)
    grid = {"mu": [1e-3, 30.0]}  # mu = 30 shrinks every weight to ~0: chance on the held-out classes
    clf = ZeroShotClassifier.tune(X, y, attrs, param_grid=grid, m=8, n_epochs=40, random_state=0)
    assert clf.best_params_ == {"mu": 1e-3} and clf.mu == 1e-3
    scores = {r["params"]["mu"]: r["accuracy"] for r in clf.tuning_results_}
    assert scores[1e-3] > scores[30.0] + 0.3
    # the score is zero-shot accuracy on the held-out classes (reference: the same fit and split done by hand)
    train_c, val_c = class_holdout_split(np.unique(y), 0.2, 0)
    tr, va = np.isin(y, train_c), np.isin(y, val_c)
    ref = ZeroShotClassifier(m=8, mu=1e-3, n_epochs=40, random_state=0).fit(X[tr], y[tr], (np.arange(10), attrs))
    pred = ref.predict(X[va], class_attributes=(val_c, attrs[val_c]))
    assert scores[1e-3] == pytest.approx(mean_per_class_accuracy(y[va], pred))
    assert set(clf.classes_) == set(range(10))  # refitted on every training class


def test_default_grid_puts_mu_on_the_per_pair_scale():
    from hardneg.zeroshot._classifier import DEFAULT_GRID

    assert max(DEFAULT_GRID["mu"]) >= 1e-2 and min(DEFAULT_GRID["mu"]) <= 1e-4


# ---------------------------------------------------------------------- scores follow the class description
def test_scores_and_ranking_follow_the_class_description():
    X, y, attrs = _toy()
    seen = y < 6
    clf = ZeroShotClassifier(random_state=0).fit(X[seen], y[seen], attrs[:6])
    Xs, ys = X[seen], y[seen]
    table = np.stack([attrs[2], attrs[0]])
    S = clf.decision_function(Xs, class_attributes=table)
    changed = table.copy()
    changed[0] = attrs[4]  # the first description replaced by another class's
    S2 = clf.decision_function(Xs, class_attributes=changed)
    assert np.array_equal(S[:, 1], S2[:, 1])  # the untouched description's scores do not move
    assert not np.allclose(S[:, 0], S2[:, 0])
    top = np.argsort(S[:, 0], kind="stable")[:25]
    top2 = np.argsort(S2[:, 0], kind="stable")[:25]
    assert (ys[top] == 2).mean() >= 0.8  # ranked by description 2: mostly images of class 2
    assert (ys[top2] == 4).mean() >= 0.8  # by description 4: images of class 4
    # a description's column is the distance of [Bucher16] Eq. (1) to that description alone
    assert np.allclose(S2[:, 0], clf.distances(Xs, attrs[4][None])[:, 0])


# ---------------------------------------------------------------------- persistence of the new parameters
def test_save_load_keeps_the_stopping_rule_and_steps(tmp_path):
    X, y, attrs = _toy()
    clf = ZeroShotClassifier(n_epochs=30, random_state=0).fit(X, y, attrs)
    back = ZeroShotClassifier.load(clf.save(tmp_path / "m.npz"))
    assert back.get_params()["tol"] == clf.tol and back.lr == "auto"
    assert back.lr_ == pytest.approx(clf.lr_) and back.n_epochs_ == clf.n_epochs_
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))


def test_a_model_file_from_before_issue_38_loads_with_fixed_epochs(tmp_path):
    from hardneg._persist import load_model, save_model

    X, y, attrs = _toy()
    path = ZeroShotClassifier(n_epochs=3, tol=None, lr=0.01, random_state=0).fit(X, y, attrs).save(tmp_path / "m.npz")
    arrays, meta = load_model(path, "hardneg.zeroshot.ZeroShotClassifier", (1,))
    for k in ("tol", "n_iter_no_change"):
        del meta["params"][k]
    del meta["lr_steps"]
    save_model(tmp_path / "old.npz", "hardneg.zeroshot.ZeroShotClassifier", 1, arrays, meta)
    old = ZeroShotClassifier.load(tmp_path / "old.npz")
    assert old.tol is None and old.n_epochs_ == 3
    assert old.lr_ == dict.fromkeys(("W_X", "b_X", "W_A", "tau"), 0.01)


# ----------------------------------------------------------------------------- early stopping on held-out seen classes


def test_early_stopping_keeps_the_best_epoch_on_held_out_seen_classes():
    X, y, attrs = _toy(n_classes=10, per_class=20)
    seen = y < 8
    clf = ZeroShotClassifier(sampler="uncertainty", n_negatives=2, n_epochs=30, n_iter_no_change=10, lr=0.01,
                             early_stopping=True, m=8, random_state=0).fit(X[seen], y[seen], attrs[:8])
    val = clf.validation_classes_
    assert val.size == 2 and set(val) <= set(range(8))
    acc = clf.history_["val_accuracy"]
    assert len(acc) == clf.n_epochs_ <= 30 and clf.best_epoch_ == int(np.argmax(acc)) + 1
    # the model holds the best epoch's parameters: the held-out classes score as they did then
    rows = np.isin(y, val)
    pred = clf.predict(X[rows], class_attributes={int(c): attrs[c] for c in val})
    assert mean_per_class_accuracy(y[rows], pred) == pytest.approx(max(acc))
    assert max(acc) > 0.5  # above chance between the two held-out classes
    # every seen class stays a class of the model
    assert clf.classes_.tolist() == list(range(8))


def test_early_stopping_stops_when_validation_stalls():
    X, y, attrs = _toy(n_classes=6)
    clf = ZeroShotClassifier(n_epochs=200, n_iter_no_change=2, tol=0.5, early_stopping=True, random_state=0)
    clf.fit(X, y, attrs)
    # no epoch can beat the best by half the accuracy: training stops n_iter_no_change epochs after the first
    assert clf.n_epochs_ == 3 and clf.best_epoch_ == 1


def test_early_stopping_needs_four_classes_and_is_off_by_default():
    X, y, attrs = _toy(n_classes=3)
    with pytest.raises(ValueError, match="at least 4 classes"):
        ZeroShotClassifier(early_stopping=True, random_state=0).fit(X, y, attrs)
    clf = ZeroShotClassifier(n_epochs=3, random_state=0).fit(X, y, attrs)
    assert "val_accuracy" not in clf.history_ and clf.validation_classes_.size == 0 and clf.best_epoch_ == clf.n_epochs_


def test_early_stopping_with_per_image_attributes():
    X, y, attrs = _toy(n_classes=6)
    A = attrs[y] + 0.01 * np.random.default_rng(1).normal(size=(y.size, attrs.shape[1]))
    clf = ZeroShotClassifier(sampler="correlation", n_epochs=5, early_stopping=True, random_state=0)
    clf.fit(X, y, sample_attributes=A)
    assert clf.classes_.tolist() == list(range(6)) and len(clf.history_["val_accuracy"]) == clf.n_epochs_


def test_save_load_keeps_early_stopping(tmp_path):
    X, y, attrs = _toy(n_classes=6)
    clf = ZeroShotClassifier(n_epochs=3, early_stopping=True, validation_fraction=0.4, random_state=0).fit(X, y, attrs)
    clf.save(tmp_path / "m.npz")
    back = ZeroShotClassifier.load(tmp_path / "m.npz")
    assert back.early_stopping and back.validation_fraction == 0.4
    np.testing.assert_allclose(back.decision_function(X), clf.decision_function(X), rtol=1e-5)
