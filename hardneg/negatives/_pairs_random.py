"""Random negative pairs (Bucher et al. 2016 [1] with n = 1)."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike
from ._pairs_base import BasePairSampler

__all__ = ["RandomPairSampler"]


class RandomPairSampler(BasePairSampler):
    """Negatives drawn uniformly among the attribute vectors of the other seen classes.

    With one negative per positive and no imbalance weighting this is the
    training of Bucher et al. (ECCV 2016), the baseline [1] of the workshop paper.

    Examples
    --------
    >>> import numpy as np
    >>> s = RandomPairSampler().prepare(np.eye(3), np.array([0, 1, 2]))
    >>> neg = s.sample(None, None, np.array([0, 1]), np.array([0, 1]), 4, 1, np.random.default_rng(0))
    >>> neg.shape, bool((neg[0] != 0).all() and (neg[1] != 1).all())
    ((2, 4), True)
    """

    name = "random"

    def log_weights(self, S: np.ndarray | None, s_pos: ArrayLike, epoch: int) -> None:
        """Uniform draws in every epoch.

        Parameters
        ----------
        S : ndarray of shape (rows, K), or None
            Unused.
        s_pos : ndarray of shape (rows,), or None
            Unused.
        epoch : int
            Unused.

        Returns
        -------
        None
            Always: uniform over the other classes' candidates.
        """
        return None
