"""Zero-shot classification by metric learning with hard negative pair mining.

[Bucher16] Bucher, Herbin & Jurie, "Hard Negative Mining for Metric Learning
Based Zero-Shot Classification", ECCV 2016 workshops: an image embedding into
attribute space and a metric learned together from positive and negative
(image, attribute vector) pairs, with negatives drawn at random, by
uncertainty ([Bucher16] Eq. (8)) or by uncertainty and correlation
([Bucher16] Eq. (9)-(10)), added epoch after epoch to a growing negative set
(``negative_set="grow"``, Section 2.2). Baselines ESZSL and DAP share the API.
:func:`zero_shot_scores` also gives generalized zero-shot (GZSL) scores, an
extra not in [Bucher16]. PyTorch is imported only when a model is trained.

Examples
--------
>>> import numpy as np
>>> from hardneg.zeroshot import ZeroShotClassifier, zero_shot_scores
>>> rng = np.random.default_rng(0)
>>> attrs = rng.random((8, 6)); y = np.repeat(np.arange(8), 25)
>>> X = attrs[y] @ rng.normal(size=(6, 16)) + 0.05 * rng.normal(size=(200, 16))
>>> seen = y < 6
>>> clf = ZeroShotClassifier(sampler="uncertainty", n_negatives=5, n_epochs=20, m=8, random_state=0)
>>> clf = clf.fit(X[seen], y[seen], attrs[:6])
>>> scores = zero_shot_scores(clf, X, y, attrs, unseen_classes=[6, 7])
>>> sorted(scores)
['harmonic', 'seen', 'unseen', 'zsl']
"""

from typing import TYPE_CHECKING

from hardneg._lazy_exports import attach

if TYPE_CHECKING:  # the same names, seen by type checkers and the API docs (griffe reads this statically)
    from hardneg.negatives import PAIR_SAMPLERS as SAMPLERS
    from hardneg.negatives import BasePairSampler as NegativeSampler
    from hardneg.negatives import CorrelationPairSampler as CorrelationSampler
    from hardneg.negatives import RandomPairSampler as RandomSampler
    from hardneg.negatives import UncertaintyPairSampler as UncertaintySampler
    from hardneg.zeroshot._attributes import as_attribute_table
    from hardneg.zeroshot._classifier import TrainingDivergedError, ZeroShotClassifier, load_zero_shot
    from hardneg.zeroshot._conse import ConSE
    from hardneg.zeroshot._dap import DAP
    from hardneg.zeroshot._descriptions import class_descriptions, embed_query_text, read_descriptions_csv
    from hardneg.zeroshot._eszsl import ESZSL
    from hardneg.zeroshot._evaluate import zero_shot_scores
    from hardneg.zeroshot._search import zero_shot_search
    from hardneg.zeroshot._text_index import TextIndex, open_text_index
    from hardneg.zeroshot._text_search import fit_text_search, text_search
    from hardneg.zeroshot._tune import class_holdout_search, class_holdout_split

# resolved on first use: a search by description with a cached text index needs neither
# scikit-learn nor torch (issue 38: its second query answers in well under a second)
_lazy_getattr, _lazy_dir = attach(__name__, {
    "as_attribute_table": "._attributes",
    **dict.fromkeys(("TrainingDivergedError", "ZeroShotClassifier", "load_zero_shot"), "._classifier"),
    "ConSE": "._conse", "DAP": "._dap", "ESZSL": "._eszsl", "zero_shot_scores": "._evaluate",
    **dict.fromkeys(("class_descriptions", "embed_query_text", "read_descriptions_csv"), "._descriptions"),
    "zero_shot_search": "._search",
    **dict.fromkeys(("TextIndex", "open_text_index"), "._text_index"),
    **dict.fromkeys(("fit_text_search", "text_search"), "._text_search"),
    **dict.fromkeys(("class_holdout_search", "class_holdout_split"), "._tune"),
})
_ALIASES = {"NegativeSampler": "BasePairSampler", "CorrelationSampler": "CorrelationPairSampler", "SAMPLERS": "PAIR_SAMPLERS",
            "RandomSampler": "RandomPairSampler", "UncertaintySampler": "UncertaintyPairSampler"}


def __getattr__(name: str):  # the pair samplers' old names are aliases of hardneg.negatives' (PEP 562)
    if name in _ALIASES:
        import hardneg.negatives

        return getattr(hardneg.negatives, _ALIASES[name])
    return _lazy_getattr(name)


def __dir__():
    return sorted(set(_lazy_dir()) | set(_ALIASES))


__all__ = [
    "ConSE",
    "DAP",
    "ESZSL",
    "SAMPLERS",
    "TextIndex",
    "TrainingDivergedError",
    "CorrelationSampler",
    "NegativeSampler",
    "RandomSampler",
    "UncertaintySampler",
    "ZeroShotClassifier",
    "as_attribute_table",
    "class_descriptions",
    "class_holdout_search",
    "class_holdout_split",
    "embed_query_text",
    "fit_text_search",
    "load_zero_shot",
    "open_text_index",
    "read_descriptions_csv",
    "text_search",
    "zero_shot_scores",
    "zero_shot_search",
]
