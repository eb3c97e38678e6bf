"""Concept search and related tags: behaviours found unchecked by the seed-12 mutation sample.

* ``_related.x__lemma__mutmut_11`` (spaces no longer turned into underscores): multi-word tags
  and concepts match WordNet lemmas whether written with spaces, hyphens or underscores, in
  any case (the documented contract of :func:`wordnet_hyponym_tags`).
* ``_search.x_search__mutmut_134`` (``sp.issparse(None)``: sparse chunks passed on as they
  are): a sparse feature store is searched like the same features held densely, by a model
  that scores dense rows only.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from hardneg.concept import NegativeBootstrap, search
from hardneg.concept._related import wordnet_hyponym_tags
from hardneg.store import FeatureStore


class _Synset:
    def __init__(self, names, below=()):
        self._names, self._below = list(names), list(below)

    def lemma_names(self):
        return self._names

    def closure(self, relation):
        return iter(self._below)


class _WordNet:
    """Just enough of nltk's reader: one noun sense of "outer_garment" with two hyponyms."""

    def __init__(self):
        self.asked = []

    def synsets(self, lemma, pos=None):
        self.asked.append(lemma)
        if lemma == "outer_garment" and pos == "n":
            return [_Synset(["outer_garment"], [_Synset(["overcoat"]), _Synset(["rain_coat", "raincoat"])])]
        return []


def test_multi_word_tags_match_lemmas_with_spaces_hyphens_or_underscores():
    wn = _WordNet()
    vocabulary = ["rain coat", "Rain-Coat", "rain_coat", "overcoat", "Outer Garment", "shirt", "coat"]
    found = wordnet_hyponym_tags("Outer Garment", vocabulary, wordnet=wn)
    assert wn.asked == ["outer_garment"]
    assert found == sorted(["rain coat", "Rain-Coat", "rain_coat", "overcoat"])


def test_a_sparse_store_is_searched_like_the_dense_features(tmp_path):
    rng = np.random.default_rng(0)
    pos = (rng.random((8, 5)) * 0.5 + np.r_[1.0, np.zeros(4)]).astype(np.float32)
    pool = rng.random((120, 5)).astype(np.float32)
    model = NegativeBootstrap(n_iter=2, random_state=0).fit(pos, pool).compress()
    data = np.where(rng.random((50, 5)) < 0.5, 0.0, rng.random((50, 5)) * 1.5).astype(np.float32)
    with FeatureStore.create(tmp_path / "s", dim=5, sparse=True, chunk_rows=16) as store:
        store.append(sp.csr_matrix(data))
    store = FeatureStore.open(tmp_path / "s")
    assert store.is_sparse
    dense = search(model, data, k=7)
    scanned = search(model, store, k=7, chunk_rows=16)
    np.testing.assert_array_equal(scanned.rows, dense.rows)
    np.testing.assert_allclose(scanned.scores, dense.scores, rtol=1e-6)
    subset = search(model, store, k=3, rows=[4, 9, 33, 40, 41])
    np.testing.assert_array_equal(subset.rows, search(model, data, k=3, rows=[4, 9, 33, 40, 41]).rows)
