"""Uncertainty-based negative pairs, [Bucher16] Eq. (8)."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike
from ._pairs_base import BasePairSampler

__all__ = ["UncertaintyPairSampler"]


class UncertaintyPairSampler(BasePairSampler):
    """From epoch 2 on, negatives for image ``X_i`` drawn with probability ∝ ``u_t(Y | X_i)``.

    [Bucher16] Eq. (8): ``u_t(Y | X_i) = exp(-(S_t(X_i, Y) - S_t(X_i, Y*)))`` over the
    attribute vectors ``Y`` of the other seen classes, ``S_t`` the distance of
    [Bucher16] Eq. (1) under the model at the start of epoch ``t`` and ``Y*`` the image's
    own vector. Candidates that the model places close to the image (confusable
    ones) are drawn most. Epoch 1 draws uniformly, as the paper does.

    Examples
    --------
    >>> import numpy as np
    >>> s = UncertaintyPairSampler().prepare(np.eye(3), np.array([0, 1, 2]))
    >>> E, P = np.array([[0.0, 0.0]]), np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    >>> p = s.probabilities(E, P, np.array([0]), np.array([0]), epoch=2)[0]
    >>> bool(np.isclose(p[1] / p[2], np.exp(2.0)))  # exp(-(1 - 0)) / exp(-(3 - 0))
    True
    """

    name = "uncertainty"

    def uses_scores(self, epoch: int) -> bool:
        """Whether epoch ``epoch`` needs the model's distances: from epoch 2 on.

        Parameters
        ----------
        epoch : int
            1-based epoch number.

        Returns
        -------
        bool
            ``epoch >= 2``.
        """
        return epoch >= 2

    def log_weights(self, S: np.ndarray | None, s_pos: ArrayLike, epoch: int) -> np.ndarray | None:
        """``log u_t(Y | X_i) = -(S_t(X_i, Y) - S_t(X_i, Y*))`` ([Bucher16] Eq. (8)); None (uniform) in epoch 1.

        Parameters
        ----------
        S : ndarray of shape (rows, K), or None
            Distances of a block of images to every candidate (None in epoch 1).
        s_pos : ndarray of shape (rows,), or None
            Distance of each image to its own candidate Y*.
        epoch : int
            1-based epoch number.

        Returns
        -------
        ndarray of shape (rows, K), or None
            ``-(S - s_pos)``, or None when ``S`` is None.
        """
        if S is None:
            return None
        return -(S - s_pos[:, None])
