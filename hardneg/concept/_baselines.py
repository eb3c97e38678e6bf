"""The baselines Negative Bootstrap is compared with (Li et al. 2013, Section V).

All share the HIK meta classifier, the pool handling and the estimator API
of :class:`~hardneg.concept.NegativeBootstrap` (both ``fit(positives, pool)``
and scikit-learn's ``fit(X, y)``), so a benchmark or a ``GridSearchCV`` swaps
one for another and nothing else changes.
"""

from __future__ import annotations

from hardneg._typing import ArrayLike, RandomState
from hardneg.negatives import RandomPoolSampler

from ._ensemble import HIKEnsembleConcept, _constraints

__all__ = ["AsymmetricBagging", "PooledClassifier", "PositiveSampling", "RandomSampling"]


class RandomSampling(HIKEnsembleConcept):
    """A fresh random negative set each iteration, no ensemble: G_t = g_t.

    Parameters
    ----------
    n_iter : int
        Iterations; the model is the last one's classifier.
    n_bins : int
        Bins per dimension of the compressed table.
    C : float
        SVM cost.
    n_negatives : int, optional
        Random negatives per iteration; default as many as positives.
    random_state : int, Generator or None
        Seed of the negative draws.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.concept import RandomSampling
    >>> rng = np.random.default_rng(0)
    >>> m = RandomSampling(n_iter=3, random_state=0).fit(rng.random((10, 4)) + 0.5, rng.random((100, 4)))
    >>> len(m.member_support_)
    3
    """

    _average = False
    _parameter_constraints = _constraints("n_iter", "n_bins", "C", "n_negatives", "random_state")

    def __init__(self, n_iter: int = 50, *, n_bins: int = 100, C: float = 1.0, n_negatives: int | None = None, random_state: RandomState = None):
        self.n_iter = n_iter
        self.n_bins = n_bins
        self.C = C
        self.n_negatives = n_negatives
        self.random_state = random_state

    def _pool_sampler(self, n_neg: int) -> RandomPoolSampler:
        """Fresh random negatives each iteration."""
        return RandomPoolSampler()


class AsymmetricBagging(HIKEnsembleConcept):
    """Random negatives per iteration, all positives, uniform ensemble (Tao et al. 2006).

    Parameters
    ----------
    n_iter : int
        Meta classifiers in the ensemble.
    n_bins : int
        Bins per dimension of the compressed table.
    C : float
        SVM cost.
    weights : "uniform" or array of n_iter floats, optional
        Ensemble weights lambda_t ([Li13] Eq. (10)); uniform by default.
    n_negatives : int, optional
        Random negatives per iteration; default as many as positives.
    random_state : int, Generator or None
        Seed of the negative draws.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.concept import AsymmetricBagging
    >>> rng = np.random.default_rng(0)
    >>> m = AsymmetricBagging(n_iter=3, random_state=0).fit(rng.random((10, 4)) + 0.5, rng.random((100, 4)))
    >>> m.weights_.tolist()
    [0.3333333333333333, 0.3333333333333333, 0.3333333333333333]
    """

    _parameter_constraints = _constraints("n_iter", "n_bins", "C", "weights", "n_negatives", "random_state")

    def __init__(self, n_iter: int = 50, *, n_bins: int = 100, C: float = 1.0, weights: str | ArrayLike | None = None,
                 n_negatives: int | None = None, random_state: RandomState = None):
        self.n_iter = n_iter
        self.n_bins = n_bins
        self.C = C
        self.weights = weights
        self.n_negatives = n_negatives
        self.random_state = random_state

    def _pool_sampler(self, n_neg: int) -> RandomPoolSampler:
        """Fresh random negatives each iteration."""
        return RandomPoolSampler()


class PositiveSampling(HIKEnsembleConcept):
    """Bagging that samples the positives too: a random ``positive_fraction``
    of B+ and as many random negatives per iteration, uniform ensemble.

    Parameters
    ----------
    n_iter : int
        Meta classifiers in the ensemble.
    positive_fraction : float
        Fraction of the positives sampled per iteration.
    n_bins : int
        Bins per dimension of the compressed table.
    C : float
        SVM cost.
    random_state : int, Generator or None
        Seed of the draws.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.concept import PositiveSampling
    >>> rng = np.random.default_rng(0)
    >>> m = PositiveSampling(n_iter=3, random_state=0).fit(rng.random((10, 4)) + 0.5, rng.random((100, 4)))
    >>> m.n_negatives_
    5
    """

    _parameter_constraints = _constraints("n_iter", "positive_fraction", "n_bins", "C", "random_state")

    def __init__(self, n_iter: int = 50, *, positive_fraction: float = 0.5, n_bins: int = 100, C: float = 1.0, random_state: RandomState = None):
        self.n_iter = n_iter
        self.positive_fraction = positive_fraction
        self.n_bins = n_bins
        self.C = C
        self.random_state = random_state

    def _pool_sampler(self, n_neg: int) -> RandomPoolSampler:
        """Fresh random negatives each iteration, as many as the sampled positives."""
        return RandomPoolSampler()


class PooledClassifier(HIKEnsembleConcept):
    """One HIK SVM on B+ and all pooled negatives, with class-weighted costs.

    Kernel SVM training is quadratic in the number of rows, so at most
    ``max_negatives`` pool rows (a uniform random subset when the pool is
    larger) are used; costs are weighted by inverse class frequency.

    Parameters
    ----------
    C : float
        SVM cost.
    class_weight : "balanced", dict or None
        Class-weighted costs (scikit-learn's ``SVC`` convention).
    max_negatives : int
        Most pool rows used as negatives.
    n_bins : int
        Bins per dimension of the compressed table.
    random_state : int, Generator or None
        Seed of the negative subset.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.concept import PooledClassifier
    >>> rng = np.random.default_rng(0)
    >>> m = PooledClassifier(random_state=0).fit(rng.random((10, 4)) + 0.5, rng.random((100, 4)))
    >>> m.n_negatives_
    100
    """

    _parameter_constraints = _constraints("C", "class_weight", "max_negatives", "n_bins", "random_state")

    def __init__(self, C: float = 1.0, *, class_weight: str | dict | None = "balanced", max_negatives: int = 5000, n_bins: int = 100,
                 random_state: RandomState = None):
        self.C = C
        self.class_weight = class_weight
        self.max_negatives = max_negatives
        self.n_bins = n_bins
        self.random_state = random_state

    def _n_negatives(self) -> int:
        return self.max_negatives

    def _pool_sampler(self, n_neg: int) -> RandomPoolSampler:
        """One random subset of at most ``max_negatives`` pool rows."""
        return RandomPoolSampler()
