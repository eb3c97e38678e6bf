"""Uncertainty-based negative pairs, [Bucher16] Eq. (8)."""

from __future__ import annotations

from ._pairs_base import BasePairSampler

__all__ = ["UncertaintyPairSampler"]


class UncertaintyPairSampler(BasePairSampler):
    """From epoch 2 on, negatives for image ``X_i`` drawn with probability ∝ ``u_t(Y | X_i)``.

    Formerly ``hardneg.zeroshot.UncertaintySampler`` (still importable, the same class).

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

    def uses_scores(self, epoch):
        return epoch >= 2

    def log_weights(self, S, s_pos, epoch):
        if S is None:
            return None
        return -(S - s_pos[:, None])
