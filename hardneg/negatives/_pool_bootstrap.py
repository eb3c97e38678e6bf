"""Relevant pool negatives: the hardest of m random candidates, [Li13] Table I steps 5-7.

Li et al. (IEEE TMM 2013), Table I: sample m candidates at random from the
pool, score them with the current ensemble G_{t-1}, and keep the n with the
highest scores -- the negatives the ensemble misclassifies most.

Extra (not in the paper): a rank window. With social tags many positives lack
the concept's tag; they stay in the pool and the ensemble scores them highest,
so [Li13] Eq. (6)-(8) pick exactly them as the "most relevant negatives". ``skip_top``
skips the top of the ranking before taking n: a fixed fraction of the m
candidates, or ``"auto"``, which estimates how many candidates are untagged
positives from held-out positives: the pool items that *do* carry the concept's
tag, and the learner's spies (positives of B+ that the scoring members did not
train on; the spy technique of Liu, Lee, Yu & Li, ICML 2002), see
:meth:`BootstrapPoolSampler.n_skip`. ``skip_top=0`` is the paper's selection.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Real

import numpy as np

from hardneg._validation import check_positive_int

from ._pool import NegativePool
from ._pool_base import BasePoolSampler, NegativeSample

__all__ = ["BootstrapPoolSampler", "check_skip_top"]

#: ``skip_top="auto"``: the quantiles q of the held-out positives' scores whose thresholds tau_q
#: estimate the untagged positives among the candidates, as #{candidates >= tau_q} / (1 - q); the
#: estimate is the smallest (:meth:`BootstrapPoolSampler.n_skip`). q = 0.5 always counts; a higher q
#: only where at least ``AUTO_MIN_TAIL`` held-out positives and as many candidates score at or above
#: tau_q, and only for the pool's tagged items (see n_skip for why not for spies).
AUTO_QUANTILES = (0.5, 0.6, 0.7, 0.8, 0.9)
AUTO_MIN_TAIL = 10


def check_skip_top(skip_top):
    """Validate ``skip_top``: ``"auto"`` or a fraction in [0, 1)."""
    if isinstance(skip_top, str):
        if skip_top != "auto":
            raise ValueError(f"skip_top: expected 'auto' or a fraction in [0, 1), got {skip_top!r}")
        return skip_top
    if isinstance(skip_top, bool) or not isinstance(skip_top, Real) or not 0 <= float(skip_top) < 1:
        raise ValueError(f"skip_top: expected 'auto' or a fraction in [0, 1), got {skip_top!r}")
    return float(skip_top)


class BootstrapPoolSampler(BasePoolSampler):
    """Top-``n`` of ``n_candidates`` random pool rows by ensemble score.

    Parameters
    ----------
    n_candidates : int, optional
        m of Table I; default ``10 * n``. Capped at the allowed pool size.
    chunk_rows : int
        Candidates are read and scored in blocks of this many rows.
    skip_top : float or "auto", default 0.0
        Extra, not in the paper: skip this many top-ranked candidates before
        taking ``n`` (a rank window instead of the top). A float is a
        fraction of m; ``"auto"`` estimates the number of untagged positives
        among the candidates (:meth:`n_skip`). 0 is the paper's [Li13] Eq. (6)-(8).
        The window never runs past the end: at most ``m - n`` are skipped.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.negatives import NegativePool, BootstrapPoolSampler
    >>> X = np.arange(20, dtype=float).reshape(10, 2)
    >>> pool = NegativePool(X)
    >>> s = BootstrapPoolSampler(n_candidates=10).sample(pool, 2, 0, scorer=lambda B: B[:, 0])
    >>> sorted(s.rows.tolist())
    [8, 9]
    >>> s = BootstrapPoolSampler(n_candidates=10, skip_top=0.2).sample(pool, 2, 0, scorer=lambda B: B[:, 0])
    >>> sorted(s.rows.tolist()), s.n_skipped
    ([6, 7], 2)
    """

    needs_scorer = True

    def __init__(self, n_candidates: int | None = None, *, chunk_rows: int = 8192, skip_top: float | str = 0.0):
        self.n_candidates = n_candidates
        self.chunk_rows = chunk_rows
        self.skip_top = skip_top

    def _score(self, pool, rows, scorer) -> np.ndarray:
        chunk = check_positive_int(self.chunk_rows, "chunk_rows")
        scores = np.empty(rows.size, dtype=np.float64)
        for lo in range(0, rows.size, chunk):
            block = pool.take(rows[lo : lo + chunk])
            scores[lo : lo + chunk] = np.asarray(scorer(block), dtype=np.float64).ravel()
        return scores

    def n_skip(self, pool: NegativePool, scores: np.ndarray, n: int, rng: np.random.Generator,
               scorer: Callable[[np.ndarray], np.ndarray] | None, reference_scores: np.ndarray | None = None) -> int:
        """How many top-ranked candidates to skip (0 for the paper's selection).

        ``"auto"``: held-out positives -- the pool items carrying the concept's
        tag (``pool.tagged``, excluded from the negatives) and the learner's
        spies (``reference_scores``: positives scored by ensemble members that
        did not train on them) -- are a sample of positives the scorer has not
        trained on. If tags go missing independently of appearance (the
        "selected completely at random" assumption of PU learning), the
        untagged positives among the candidates score like them: a share
        1 - q of them scores at or above the held-out positives' q-quantile
        tau_q, so #{candidates >= tau_q} / (1 - q) estimates their number,
        counting too the true negatives that score above tau_q. The estimate
        is the smallest over q in :data:`AUTO_QUANTILES` (the mixture-proportion
        bound of Blanchard, Lee & Scott, 2010, on a grid): at q = 0.5 it is
        twice the candidates above the median positive; higher thresholds count fewer negatives, which
        matters where tags are complete and the top candidates are hard
        negatives, not untagged positives. A q > 0.5 is used only where at
        least :data:`AUTO_MIN_TAIL` held-out positives and as many candidates
        score at or above tau_q (a minimum over bounds resting on a few counts
        is biased low), and never with spies: a spy is scored by the average of the ~1/K of
        the members that did not train on it, which spreads wider than the
        full ensemble's scores of the candidates, so the spies' median is
        comparable with the candidates' scores but their upper tail is not.

        Parameters
        ----------
        pool : NegativePool
            The pool; ``"auto"`` scores its tagged rows (``pool.tagged``).
        scores : ndarray of float64, shape (m,)
            Ensemble scores of the m candidates.
        n : int
            Negatives to take after the skipped ones.
        rng : numpy.random.Generator
            Draws the subsample of tagged rows when there are more than m.
        scorer : callable or None
            Maps a ``(rows, d)`` float block of pool rows to their ``(rows,)`` scores
            (used by ``"auto"`` only).
        reference_scores : ndarray of float, optional
            Scores of further held-out positives (the spies), on the scale of ``scores``;
            ``"auto"`` only.

        Returns
        -------
        int
            Top-ranked candidates to skip, in ``[0, m - n]``.
        """
        m = scores.size
        skip = check_skip_top(self.skip_top)
        if isinstance(skip, float):
            k = int(round(skip * m))
        else:
            refs = [] if reference_scores is None else [np.asarray(reference_scores, dtype=np.float64).ravel()]
            spies = bool(refs and refs[0].size)
            if pool.tagged.size:
                ref = pool.tagged
                if ref.size > m:
                    ref = np.sort(rng.choice(ref, size=m, replace=False))
                refs.append(self._score(pool, ref.astype(np.int64), scorer))
            ref_scores = np.concatenate(refs) if refs else np.empty(0)
            if ref_scores.size == 0:
                k = 0  # no held-out positives: nothing to estimate from
            else:
                taus = np.quantile(ref_scores, AUTO_QUANTILES)
                above = [np.count_nonzero(scores >= tau) for tau in taus]
                k = int(round(min(c / (1 - q) for q, c in zip(AUTO_QUANTILES, above)
                                  if q == 0.5 or (not spies and (1 - q) * ref_scores.size >= AUTO_MIN_TAIL
                                                  and c >= AUTO_MIN_TAIL))))
        return max(0, min(k, m - n))

    def select(self, pool: NegativePool, n: int, rng: np.random.Generator,
               scorer: Callable[[np.ndarray], np.ndarray] | None,
               reference_scores: np.ndarray | None = None) -> NegativeSample:
        """Draw m candidates, score them, skip the top :meth:`n_skip`, keep the next ``n``.

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
            under the current ensemble; required (:meth:`sample` refuses None).
        reference_scores : ndarray of float, optional
            Held-out positives' scores for ``skip_top="auto"`` (:meth:`n_skip`).

        Returns
        -------
        NegativeSample
            The kept rows, shape ``(n,)``, highest score first, with their scores,
            ``n_candidates`` (m) and ``n_skipped``.
        """
        m = 10 * n if self.n_candidates is None else check_positive_int(self.n_candidates, "n_candidates")
        m = min(max(m, n), pool.n_allowed)
        candidates = rng.choice(pool.allowed, size=m, replace=False).astype(np.int64)
        scores = self._score(pool, candidates, scorer)
        k = self.n_skip(pool, scores, n, rng, scorer, reference_scores)
        # Highest score first; the stable sort breaks ties by candidate draw order,
        # so the selection is a pure function of the seed.
        top = np.argsort(-scores, kind="stable")[k : k + n]
        return NegativeSample(rows=candidates[top], scores=scores[top], n_candidates=m, n_skipped=k)
