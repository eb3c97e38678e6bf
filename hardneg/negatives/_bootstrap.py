"""Relevant negatives: the hardest of m random candidates, Table I steps 5-7.

Li et al. (IEEE TMM 2013), Table I: sample m candidates at random from the
pool, score them with the current ensemble G_{t-1}, and keep the n with the
highest scores -- the negatives the ensemble misclassifies most.
"""

from __future__ import annotations

import numpy as np

from hardneg._validation import check_positive_int

from ._base import BaseNegativeSampler, NegativeSample

__all__ = ["BootstrapNegativeSampler"]


class BootstrapNegativeSampler(BaseNegativeSampler):
    """Top-``n`` of ``n_candidates`` random pool rows by ensemble score.

    Parameters
    ----------
    n_candidates : int, optional
        m of Table I; default ``10 * n``. Capped at the allowed pool size.
    chunk_rows : int
        Candidates are read and scored in blocks of this many rows.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.negatives import NegativePool, BootstrapNegativeSampler
    >>> X = np.arange(20, dtype=float).reshape(10, 2)
    >>> pool = NegativePool(X)
    >>> s = BootstrapNegativeSampler(n_candidates=10).sample(pool, 2, 0, scorer=lambda B: B[:, 0])
    >>> sorted(s.rows.tolist())
    [8, 9]
    """

    needs_scorer = True

    def __init__(self, n_candidates: int | None = None, chunk_rows: int = 8192):
        self.n_candidates = n_candidates
        self.chunk_rows = chunk_rows

    def select(self, pool, n, rng: np.random.Generator, scorer) -> NegativeSample:
        m = 10 * n if self.n_candidates is None else check_positive_int(self.n_candidates, "n_candidates")
        m = min(max(m, n), pool.n_allowed)
        candidates = rng.choice(pool.allowed, size=m, replace=False).astype(np.int64)
        chunk = check_positive_int(self.chunk_rows, "chunk_rows")
        scores = np.empty(m, dtype=np.float64)
        for lo in range(0, m, chunk):
            block = pool.take(candidates[lo : lo + chunk])
            scores[lo : lo + chunk] = np.asarray(scorer(block), dtype=np.float64).ravel()
        # Highest score first; the stable sort breaks ties by candidate draw order,
        # so the selection is a pure function of the seed.
        top = np.argsort(-scores, kind="stable")[:n]
        return NegativeSample(rows=candidates[top], scores=scores[top], n_candidates=m)
