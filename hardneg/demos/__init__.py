"""The demos, in one place: what ``make demo`` and ``make serve-demo`` run.

* :mod:`hardneg.demos.digits` -- ``hardneg demo``: concept search and query by
  example on sklearn digits (no download), console tables and an HTML report
  (:func:`~hardneg.demos.digits.run_demo`).
* :mod:`hardneg.demos.concept` -- its concept-search part: Negative Bootstrap
  against its baselines on noisily tagged digits
  (:func:`~hardneg.demos.concept.run_concept_demo`).
* :mod:`hardneg.demos.service` -- ``hardneg serve-demo``: a small store, a TSVM
  hasher and its Hamming index for the search service
  (:func:`~hardneg.demos.service.build_demo_store`).

Nothing is imported here: each demo loads what it needs when it runs.
"""
