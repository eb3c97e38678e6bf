"""Uncertainty/correlation-based negative pairs, [Bucher16] Eq. (9)-(10)."""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike
from ._pairs_uncertainty import UncertaintyPairSampler

__all__ = ["CorrelationPairSampler"]


class CorrelationPairSampler(UncertaintyPairSampler):
    """Negatives drawn with probability ∝ ``p_t(Y | X_i) = u_t(Y | X_i) q(Y)``, [Bucher16] Eq. (10).

    ``u_t`` is the uncertainty of [Bucher16] Eq. (8) (see :class:`UncertaintyPairSampler`);
    ``q(Y) = exp(-mean_{Y' ∈ 𝒴_k} ‖Y - Y'‖)`` ([Bucher16] Eq. (9)), ``𝒴_k`` the attribute
    vectors of the class ``k`` that ``Y`` belongs to: a vector typical of its
    class (close to the others) is drawn more than an outlying one, so noisy
    per-image annotations make fewer negative pairs. The mean runs over all of
    ``𝒴_k``, ``Y`` itself included.

    ``q`` is constant when every image of a class shares one vector, so this
    sampler needs per-image attribute vectors (``sample_attributes``);
    :meth:`prepare` raises ``ValueError`` otherwise (as the paper notes for AwA).
    Epoch 1, before any model exists to be uncertain about, draws uniformly among
    the other classes' vectors (random negatives), as [Bucher16] does; ``q``
    weighs the draws from epoch 2 on, together with ``u_t``.

    Examples
    --------
    >>> import numpy as np
    >>> vecs = np.array([[0.0], [1.0], [5.0], [5.0]])
    >>> s = CorrelationPairSampler().prepare(vecs, np.array([0, 0, 1, 1]))
    >>> np.round(s.q_, 4).tolist()  # class 0: mean distance 0.5; class 1: 0
    [0.6065, 0.6065, 1.0, 1.0]
    """

    name = "correlation"

    def prepare(self, vectors: np.ndarray, labels: np.ndarray) -> CorrelationPairSampler:
        """Precompute ``q(Y)`` of [Bucher16] Eq. (9) for every candidate.

        Parameters
        ----------
        vectors : ndarray of shape (K, a)
            The candidates' attribute vectors (per image: they must vary within a class).
        labels : ndarray of shape (K,)
            The candidates' class codes.

        Returns
        -------
        CorrelationPairSampler
            ``self``, with ``q_`` and ``log_q_`` of shape (K,) set.

        Raises
        ------
        ValueError
            If every class has one shared vector (``q`` would be constant).
        """
        super().prepare(vectors, labels)
        V = self.vectors_.astype(np.float64)
        mean_dist = np.empty(V.shape[0])
        varies = False
        for k in np.unique(self.labels_):
            idx = np.flatnonzero(self.labels_ == k)
            Vk = V[idx]
            d2 = (Vk**2).sum(1)[:, None] + (Vk**2).sum(1)[None, :] - 2.0 * Vk @ Vk.T
            mean_dist[idx] = np.sqrt(np.maximum(d2, 0.0)).mean(axis=1)
            varies |= bool(np.ptp(Vk, axis=0).max() > 0)
        if not varies:
            raise ValueError(
                "sampler='correlation' ([Bucher16] Eq. (9)-(10)) needs per-image attribute vectors: every class here has one "
                "shared vector, so q(Y) is constant; pass sample_attributes, or use sampler='uncertainty'"
            )
        self.log_q_ = -mean_dist
        self.q_ = np.exp(self.log_q_)
        return self

    def log_weights(self, S: np.ndarray | None, s_pos: ArrayLike, epoch: int) -> np.ndarray | None:
        """``log u_t + log q`` ([Bucher16] Eq. (8)-(10)): the uncertainty's weights plus ``log q``; None (uniform) in epoch 1.

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
            ``-(S - s_pos) + log q``, or None when ``S`` is None.
        """
        log_u = super().log_weights(S, s_pos, epoch)
        if log_u is None:  # epoch 1: random negatives
            return None
        return log_u + self.log_q_[None, :]
