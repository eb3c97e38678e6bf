"""Concept search from a few positives: Negative Bootstrap + Model Compression.

Li, Snoek, Worring, Koelma & Smeulders, "Bootstrapping Visual Categorization
with Relevant Negatives", IEEE Trans. Multimedia 15(4), 2013, with the
baselines it is compared against and a chunked top-k search.

Examples
--------
>>> import numpy as np
>>> from hardneg.concept import NegativeBootstrap, search
>>> rng = np.random.default_rng(0)
>>> pos = rng.random((20, 8)) + np.r_[1.0, np.zeros(7)]
>>> pool = rng.random((300, 8))
>>> model = NegativeBootstrap(n_iter=4, random_state=0).fit(pos, pool).compress(n_bins=50)
>>> hits = search(model, np.vstack([pool, pos]), k=5)
>>> bool((hits.rows >= 300).all())
True

The estimators are also scikit-learn binary rankers: ``fit(X, y)`` with y = 1
for positives and 0 for the unlabeled pool, ``score`` = average precision, so
they work in ``GridSearchCV``:

>>> from sklearn.model_selection import cross_val_score
>>> X, y = np.vstack([pos, pool]), np.r_[np.ones(20), np.zeros(300)]
>>> ap = cross_val_score(NegativeBootstrap(n_iter=2, random_state=0), X, y, cv=3)
>>> bool((ap > 0.9).all())
True
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._lazy_exports import attach

if TYPE_CHECKING:  # what the lazy exports below resolve to, for type checkers and the API docs
    from ._baselines import AsymmetricBagging, PooledClassifier, PositiveSampling, RandomSampling
    from ._compressed import CompressedConcept, load_concept
    from ._ensemble import HIKEnsembleConcept
    from ._negative_bootstrap import NegativeBootstrap
    from ._related import WordNetUnavailable, load_wordnet, ngd, ngd_related_tags, related_tags, wordnet_hyponym_tags
    from ._search import SearchResult, search

#: Meta classifiers T of concept training by default, in the CLI (`hardneg concept train`,
#: `hardneg serve -T`) and the service alike: the paper's 50 (see the README's concept section).
DEFAULT_N_ITER = 50


@dataclass(frozen=True)
class ConceptMethod:
    """One row of :data:`CONCEPT_METHODS`.

    Parameters
    ----------
    estimator : str
        The estimator's class name in :mod:`hardneg.concept` (imported on first use, :attr:`cls`).
    summary : str
        One line on what the method does (the CLI's ``--method`` help).
    """

    estimator: str
    summary: str

    @property
    def cls(self) -> "type[HIKEnsembleConcept]":
        """The estimator class (imported on first use)."""
        return __getattr__(self.estimator)


#: The concept methods by the name ``hardneg concept train --method`` takes: the CLI's
#: choices and help are this table. A new method is an estimator file and one row here.
CONCEPT_METHODS: dict[str, ConceptMethod] = {
    "bootstrap": ConceptMethod("NegativeBootstrap", "Negative Bootstrap [Li13], the hardest of m random candidates"),
    "bagging": ConceptMethod("AsymmetricBagging", "random negatives per iteration, averaged"),
    "random": ConceptMethod("RandomSampling", "random negatives per iteration, the last classifier"),
    "positives": ConceptMethod("PositiveSampling", "bagging that samples the positives too"),
    "pooled": ConceptMethod("PooledClassifier", "one SVM on the pooled negatives"),
}

# resolved on first use: the CLI reads CONCEPT_METHODS and DEFAULT_N_ITER to answer --help
# without importing scikit-learn
__getattr__, __dir__ = attach(__name__, {
    **dict.fromkeys(("AsymmetricBagging", "PooledClassifier", "PositiveSampling", "RandomSampling"), "._baselines"),
    "CompressedConcept": "._compressed", "load_concept": "._compressed",
    "HIKEnsembleConcept": "._ensemble",
    "NegativeBootstrap": "._negative_bootstrap",
    **dict.fromkeys(("WordNetUnavailable", "load_wordnet", "ngd", "ngd_related_tags", "related_tags",
                     "wordnet_hyponym_tags"), "._related"),
    "SearchResult": "._search", "search": "._search",
})

__all__ = [
    "CONCEPT_METHODS",
    "DEFAULT_N_ITER",
    "AsymmetricBagging",
    "CompressedConcept",
    "ConceptMethod",
    "HIKEnsembleConcept",
    "NegativeBootstrap",
    "PooledClassifier",
    "PositiveSampling",
    "RandomSampling",
    "SearchResult",
    "WordNetUnavailable",
    "load_concept",
    "load_wordnet",
    "ngd",
    "ngd_related_tags",
    "related_tags",
    "search",
    "wordnet_hyponym_tags",
]
