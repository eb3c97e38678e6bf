"""Hard-negative mining in one home: pool, pair and triplet samplers.

Naming scheme: ``<Strategy><Kind>Sampler``, with ``Kind`` what one draw
gives and one file per strategy (``_<kind>_<strategy>.py``):

======================  ===============================================  ==========================
kind                    draws                                            samplers
======================  ===============================================  ==========================
``Pool``                negative rows of a :class:`NegativePool`         :class:`RandomPoolSampler`,
                        (concept search, [Li13] Table I)                 :class:`BootstrapPoolSampler`
``Pair``                negative (image, attribute vector) pairs         :class:`RandomPairSampler`,
                        (zero-shot, [Bucher16] Eq. (8)-(10))             :class:`UncertaintyPairSampler`,
                                                                         :class:`CorrelationPairSampler`
``Triplet``             (anchor, positive, negative) row triplets        :class:`RandomTripletSampler`,
                        (similarity learning, [Gao17] Section 5.3-5.4)   :class:`ConceptTripletSampler`
======================  ===============================================  ==========================

Each kind has a base class (``BasePoolSampler``, ``BasePairSampler``,
``BaseTripletSampler``) that does the shared checks and calls the
strategy's one method. The triplet protocols are also plain functions
(:func:`random_triplets`, :func:`concept_triplets`, :func:`concept_protocol`).
``PAIR_SAMPLERS`` maps the short names a zero-shot model file records
(``"random"``, ``"uncertainty"``, ``"correlation"``) to the pair samplers.

``hardneg.concept.RandomSampling`` is not a sampler but the concept estimator of [Li13]'s random-sampling baseline (it
draws with :class:`RandomPoolSampler`).

This package imports no estimator: the learners import it, never the reverse.

Examples
--------
>>> import numpy as np
>>> from hardneg.negatives import NegativePool, RandomPoolSampler, BootstrapPoolSampler
>>> pool = NegativePool(np.random.default_rng(0).random((50, 4)), tags=[["a"]] * 10 + [["b"]] * 40, exclude_tags=["a"])
>>> rows = RandomPoolSampler().sample(pool, 5, random_state=0).rows
>>> bool((rows >= 10).all())
True
"""

from hardneg.negatives._pairs import PAIR_SAMPLERS, make_pair_sampler
from hardneg.negatives._pairs_base import BasePairSampler
from hardneg.negatives._pairs_correlation import CorrelationPairSampler
from hardneg.negatives._pairs_random import RandomPairSampler
from hardneg.negatives._pairs_uncertainty import UncertaintyPairSampler
from hardneg.negatives._pool import NegativePool
from hardneg.negatives._pool_base import BasePoolSampler, NegativeSample
from hardneg.negatives._pool_bootstrap import BootstrapPoolSampler
from hardneg.negatives._pool_random import RandomPoolSampler
from hardneg.negatives._triplets_base import BaseTripletSampler
from hardneg.negatives._triplets_concept import ConceptTripletSampler, concept_protocol, concept_triplets
from hardneg.negatives._triplets_random import RandomTripletSampler, random_triplets

__all__ = [
    "PAIR_SAMPLERS",
    "BasePairSampler",
    "BasePoolSampler",
    "BaseTripletSampler",
    "BootstrapPoolSampler",
    "ConceptTripletSampler",
    "CorrelationPairSampler",
    "NegativePool",
    "NegativeSample",
    "RandomPairSampler",
    "RandomPoolSampler",
    "RandomTripletSampler",
    "UncertaintyPairSampler",
    "concept_protocol",
    "concept_triplets",
    "make_pair_sampler",
    "random_triplets",
]
