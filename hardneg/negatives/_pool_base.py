"""Base pool sampler: shared checks, then the strategy's ``select``.

Shaped after pytorch-metric-learning's miners: ``sample`` validates the
request and the pool, then calls the subclass's one method, ``select``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hardneg._typing import RandomState
from hardneg._validation import check_positive_int, check_random_state

from ._pool import NegativePool

__all__ = ["BasePoolSampler", "NegativeSample"]


@dataclass
class NegativeSample:
    """Selected pool rows; ``scores`` are the ensemble's scores of them (None if random).

    Parameters
    ----------
    rows : ndarray of int
        The selected pool rows.
    scores : ndarray, optional
        Their scores (None for a random selection).
    n_candidates : int
        Candidates scored.
    n_skipped : int
        Top-ranked candidates passed over (the rank-window extra).
    """

    rows: np.ndarray
    scores: np.ndarray | None = None
    n_candidates: int = 0
    n_skipped: int = 0  # top-ranked candidates passed over (the rank-window extra)


class BasePoolSampler:
    """Choose ``n`` negatives from the allowed rows of a :class:`NegativePool`.

    A strategy subclasses it and implements :meth:`select`; one that scores
    candidates with the learner's current ensemble sets ``needs_scorer = True``.
    A concept learner uses a sampler through its ``_pool_sampler`` hook (see
    ``docs/contributing.md``, "Adding a pool sampler").
    """

    needs_scorer = False

    def sample(self, pool: NegativePool, n: int, random_state: RandomState = None,
               scorer: Callable[[np.ndarray], np.ndarray] | None = None, *,
               reference_scores: np.ndarray | None = None) -> NegativeSample:
        """Check the request and the pool, then choose ``n`` negatives with :meth:`select`.

        Parameters
        ----------
        pool : NegativePool
            The pool to choose from.
        n : int
            Negatives to choose, at most ``pool.n_allowed``.
        random_state : int, numpy.random.Generator or None, default=None
            Seed or generator of the draws.
        scorer : callable or None, default=None
            Maps a ``(rows, d)`` float block of pool rows to their ``(rows,)`` scores
            under the current ensemble; required by samplers with ``needs_scorer``.
        reference_scores : ndarray of float, optional
            Scores of held-out positives under the same scorer (the learner's spies), passed
            on to samplers that estimate how many candidates are untagged positives.

        Returns
        -------
        NegativeSample
            ``n`` distinct allowed pool rows (``rows`` of shape ``(n,)``), with their
            scores when the sampler scored them.

        Raises
        ------
        ValueError
            If ``n`` exceeds the allowed rows, or a scorer is needed and missing.
        """
        if not isinstance(pool, NegativePool):
            raise TypeError(f"pool: expected a NegativePool, got {type(pool).__name__}")
        n = check_positive_int(n, "n")
        if n > pool.n_allowed:
            raise ValueError(f"n={n} negatives requested but only {pool.n_allowed} pool rows are left after exclusions")
        if self.needs_scorer and scorer is None:
            raise ValueError(f"{type(self).__name__}: needs a scorer (the current ensemble)")
        rng = check_random_state(random_state)
        # passed only when given: a subclass written before reference_scores existed keeps working
        result = (self.select(pool, n, rng, scorer) if reference_scores is None
                  else self.select(pool, n, rng, scorer, reference_scores=reference_scores))
        if result.rows.shape != (n,):
            raise RuntimeError(f"{type(self).__name__}.select returned {result.rows.shape} rows, expected ({n},)")
        return result

    def select(self, pool: NegativePool, n: int, rng: np.random.Generator,
               scorer: Callable[[np.ndarray], np.ndarray] | None,
               reference_scores: np.ndarray | None = None) -> NegativeSample:
        """The strategy: choose ``n`` distinct allowed rows (subclasses implement it).

        Parameters
        ----------
        pool : NegativePool
            The pool; only its allowed rows (``pool.allowed``) may be chosen.
        n : int
            Negatives to choose, at most ``pool.n_allowed`` (checked by :meth:`sample`).
        rng : numpy.random.Generator
            Source of the random draws.
        scorer : callable or None
            Maps a ``(rows, d)`` float block of pool rows to their ``(rows,)`` scores
            under the current ensemble; None for samplers that do not score.
        reference_scores : ndarray of float, optional
            Held-out positives' scores (see :meth:`sample`).

        Returns
        -------
        NegativeSample
            The chosen rows, shape ``(n,)``.
        """
        raise NotImplementedError
