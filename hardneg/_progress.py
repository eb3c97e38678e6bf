"""One progress protocol for every long-running fit, transform, scan and job.

A method that can take long accepts ``progress=None``: a callable that the
library calls as ``progress(n)``, where ``n`` is the number of units of work
**just completed** (an ``int`` >= 0; never a level index, an epoch number or a
running total). Over one call of the method, the ``n`` add up to the total
that its docstring documents; the unit and the total are listed once below.
The library never prints progress; the CLI passes the ``advance`` of a Rich
bar (:func:`hardneg.cli._console.task_progress`, whose total it computes from
this table before the call), the service passes ``Job.advance``. No
``start(total)`` call is part of the protocol: every total is known from the
arguments before the work starts.

==========================================================  =====================  =======================================
method                                                      unit                   total of the ``n``
==========================================================  =====================  =======================================
``HIKEnsembleConcept.fit`` (NegativeBootstrap, baselines)   meta classifier        ``n_iter``
``NegativeBootstrap.refine``                                meta classifier        1
``hardneg.serve._concept.train_concept``                    meta classifier        ``n_iter`` (+1 with marked negatives)
``hardneg.concept.search``, ``score_rows``                  row scored             rows scanned
``TSVMHashing.fit`` (``C="auto"``: its candidates too)      tree node trained      ``TSVMHashing.progress_total``
``hardneg.index.HammingIndex.from_store``                   row encoded            rows of the store
``hardneg.index.InvertedIndex.from_store``                  row indexed            rows of the store
``hardneg.index.build_ivf_index``                           row assigned a list    rows of the source
``hardneg.index.knn_topk``                                  row indexed            database rows
``ESVMEncoder.fit``                                         pool row encoded       ``n_pool * (n_recursions - 1)``
``ESVMEncoder.transform``                                   row encoded            rows of ``X``
``hardneg.encoding.encode_store``                           row encoded            rows of the store
``hardneg.encoding.esvm_search``                            row scored             rows scanned
``hardneg.svm.fit_exemplar_svms_batch`` (``_sgd``,          exemplar SVM trained   exemplars
``_liblinear``: fit_exemplar_svms_sgd,
fit_exemplar_svms_liblinear)
``VocabularyTree.fit``                                      tree level learned     ``depth``
``hardneg.features.extract_to_store``                       image                  images (found done ones first)
``hardneg.features.build_fashion_mnist_store``              image                  images
``hardneg.store.rebuild_store``, ``quantize_store``         row read               rows of the store
``hardneg.store.import_embeddings``                         row imported           rows
``hardneg.datasets.import_xlsa17``                          row imported           rows
``ZeroShotClassifier.fit``                                  epoch                  ``n_epochs``
``hardneg.zeroshot.text_search``                            row scored             rows scanned
``hardneg.zeroshot.build_text_index`` (and                  row mapped             rows of the store
``open_text_index``)
``hardneg.demos.concept.run_concept_demo``                  method trained         methods compared
==========================================================  =====================  =======================================

``tests/core/test_progress_protocol.py`` finds every public function of the
package with a ``progress`` parameter and checks that the calls add up to the
total above (or names why one is not run there).

Examples
--------
>>> from hardneg._progress import ProgressCounter
>>> counter = ProgressCounter()
>>> for _ in range(3):
...     counter(2)
>>> counter.total, counter.calls
(6, [2, 2, 2])
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Progress", "ProgressCounter", "check_progress"]


@runtime_checkable
class Progress(Protocol):
    """``progress(n)``: ``n`` more units of work are done."""

    def __call__(self, n: int, /) -> None: ...


def check_progress(progress, name: str = "progress"):
    """``progress`` itself when it is None or callable; else a TypeError naming ``name``."""
    if progress is None or callable(progress):
        return progress
    raise TypeError(f"{name}: expected a callable progress(n) or None, got {type(progress).__name__}")


class ProgressCounter:
    """A ``progress`` that records its calls: ``calls`` (the ``n`` in order) and ``total``."""

    def __init__(self):
        self.calls: list[int] = []

    def __call__(self, n: int, /) -> None:
        self.calls.append(n)

    @property
    def total(self) -> int:
        return int(sum(self.calls))
