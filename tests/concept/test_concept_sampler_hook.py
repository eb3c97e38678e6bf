"""Concept learners take a pool sampler through one hook, ``_pool_sampler(n_neg)`` (issue 40).

A new sampler touches ``hardneg/negatives/`` and one learner: these tests write both here,
in a few lines, and check what the training loop does with them. The CLI's ``--method``
choices and help are the table ``CONCEPT_METHODS``.
"""

from __future__ import annotations

import numpy as np
import pytest

from hardneg.concept import CONCEPT_METHODS, AsymmetricBagging, HIKEnsembleConcept, NegativeBootstrap
from hardneg.negatives import BasePoolSampler, BootstrapPoolSampler, NegativeSample, RandomPoolSampler


def _data(seed=0):
    rng = np.random.default_rng(seed)
    pos = rng.random((12, 5)) + np.r_[0.8, np.zeros(4)]
    pool = rng.random((150, 5))
    return pos, pool


class _LowestRowsSampler(BasePoolSampler):
    """A toy strategy: the ``n`` allowed rows of lowest index (no scorer)."""

    def select(self, pool, n, rng, scorer, reference_scores=None):
        return NegativeSample(rows=np.sort(pool.allowed)[:n].astype(np.int64))


class _ScoredSampler(BasePoolSampler):
    """A toy scoring strategy: records whether it got a scorer and the spies' scores."""

    needs_scorer = True

    def __init__(self, log):
        self.log = log

    def select(self, pool, n, rng, scorer, reference_scores=None):
        self.log.append((scorer is not None, reference_scores is not None))
        rows = rng.choice(pool.allowed, size=n, replace=False).astype(np.int64)
        return NegativeSample(rows=rows, scores=np.asarray(scorer(pool.take(rows)), float), n_candidates=n)


class _Lowest(AsymmetricBagging):
    def _pool_sampler(self, n_neg):
        return _LowestRowsSampler()


class _Scored(AsymmetricBagging):
    log: list = []

    def _pool_sampler(self, n_neg):
        return _ScoredSampler(self.log)


def test_a_sampler_that_does_not_score_draws_every_iteration():
    pos, pool = _data()
    m = _Lowest(n_iter=3, random_state=0).fit(pos, pool)
    assert [rec["rows"] for rec in m.iterations_] == [list(range(12))] * 3
    assert m.skipped_fraction_ == 0.0


def test_a_scoring_sampler_gets_the_ensemble_from_iteration_two_on():
    pos, pool = _data()
    _Scored.log = []
    m = _Scored(n_iter=4, random_state=0).fit(pos, pool)
    assert _Scored.log == [(True, False)] * 3  # iterations 2-4; iteration 1 draws at random
    assert all(rec["scores"] is not None for rec in m.iterations_[1:]) and m.iterations_[0]["scores"] is None


def test_the_base_class_has_no_sampler_of_its_own():
    with pytest.raises(NotImplementedError):
        HIKEnsembleConcept()._pool_sampler(5)


def test_the_learners_samplers():
    assert isinstance(AsymmetricBagging()._pool_sampler(5), RandomPoolSampler)
    s = NegativeBootstrap(n_candidates=40, skip_top=0.25)._pool_sampler(5)
    assert isinstance(s, BootstrapPoolSampler) and (s.n_candidates, s.skip_top) == (40, 0.25)


def test_cv_folds_train_with_an_integer_m_and_no_back_channel(monkeypatch):
    """n_candidates="cv": each fold model is a clone with m = factor x its |B-| as a plain parameter."""
    pos, pool = _data(1)
    fitted = []
    real = NegativeBootstrap._fit

    def spy(self, P, pool_, progress):
        fitted.append(self.get_params()["n_candidates"])
        return real(self, P, pool_, progress)

    monkeypatch.setattr(NegativeBootstrap, "_fit", spy)
    m = NegativeBootstrap(n_iter=2, n_candidates="cv", random_state=0).fit(pos, pool)
    folds = fitted[1:]
    n_train = [len(pos) - len(f) for f in np.array_split(np.arange(len(pos)), 3)]
    assert fitted[0] == "cv" and len(folds) == 6 and all(isinstance(v, int) for v in folds)
    assert sorted({v // n for v, n in zip(folds, np.repeat(n_train, 2))}) == [3, 10]
    assert m.cv_results_["factor"] in (3, 10)


def test_the_cli_methods_are_the_table(capsys):
    from hardneg.cli import concept as cli_concept
    from hardneg.exceptions import CLIError
    from hardneg.cli.main import main

    for name, method in CONCEPT_METHODS.items():
        assert issubclass(method.cls, HIKEnsembleConcept)
        assert f"{name} ({method.summary})" in cli_concept._METHODS_HELP
    assert main(["concept", "train", "--help"]) == 0
    assert "bootstrap" in capsys.readouterr().out
    with pytest.raises(CLIError, match="--method must be one of bootstrap, bagging, random, positives, pooled"):
        cli_concept._estimator("foo", 3, None, 0, 0)
    pooled = cli_concept._estimator("pooled", 7, None, 0, 0)
    assert pooled.n_iter == 1 and not hasattr(pooled, "skip_top")
    with pytest.raises(CLIError, match="^--skip-top must be") as err:
        cli_concept._estimator("bootstrap", 3, None, 0, 0, "1.5")
    assert "skip_top" not in str(err.value)
