"""Old module path of the triplet samplers; they live in :mod:`hardneg.negatives`
(``_triplets_concept.py``, ``_triplets_random.py``)."""

from hardneg.negatives._triplets_base import _labels_and_rows
from hardneg.negatives._triplets_concept import concept_protocol, concept_triplets
from hardneg.negatives._triplets_random import random_triplets

__all__ = ["_labels_and_rows", "concept_protocol", "concept_triplets", "random_triplets"]
