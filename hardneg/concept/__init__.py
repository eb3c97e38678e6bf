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

#: Meta classifiers T of concept training by default, in the CLI (`hardneg concept train`,
#: `hardneg serve -T`) and the service alike: the paper's 50 (see the README's concept section).
DEFAULT_N_ITER = 50

from hardneg.concept._baselines import AsymmetricBagging, PooledClassifier, PositiveSampling, RandomSampling
from hardneg.concept._compressed import CompressedConcept, load_concept
from hardneg.concept._ensemble import HIKEnsembleConcept
from hardneg.concept._negative_bootstrap import NegativeBootstrap
from hardneg.concept._related import WordNetUnavailable, load_wordnet, ngd, ngd_related_tags, related_tags, wordnet_hyponym_tags
from hardneg.concept._search import SearchResult, search

__all__ = [
    "DEFAULT_N_ITER",
    "AsymmetricBagging",
    "CompressedConcept",
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
