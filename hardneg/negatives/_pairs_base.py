"""The shared base of the negative-pair samplers (one strategy per file).

Shape after pytorch-metric-learning's miners: the base does the checks, builds
one distance matrix (chunk by chunk) and the masks, and draws; a subclass says
only how a candidate is weighted (:meth:`BasePairSampler.log_weights`).

Terms: the *candidates* are the attribute vectors a negative pair can use
(the seen classes' vectors, or every training image's own vector when
attributes are given per image); ``pos[i]`` is the candidate that forms image
``i``'s positive pair, ``Y*``. A negative for image ``i`` is a candidate of
another class, drawn with replacement, ``n_negatives`` per positive pair.
"""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike

__all__ = ["BasePairSampler"]

_CHUNK = 512  # image rows per block of the distance matrix (512 x K float64)


class BasePairSampler:
    """Base class: draw negative pairs for every image, once per epoch.

    Subclasses implement :meth:`log_weights`; the probability of candidate
    ``j`` for image ``i`` is ``exp(log_weights[i, j])`` normalized over the
    candidates of other classes (same-class candidates get 0).
    """

    #: short name used by ZeroShotClassifier(sampler=...)
    name = "base"

    def prepare(self, vectors: np.ndarray, labels: np.ndarray) -> "BasePairSampler":
        """Precompute what depends on the candidates only. ``vectors`` (K, a); ``labels`` (K,) class codes.

        Parameters
        ----------
        vectors : ndarray of shape (K, a)
            The candidates' attribute vectors.
        labels : ndarray of shape (K,)
            The candidates' class codes (at least 2 classes).

        Returns
        -------
        BasePairSampler
            ``self``, with ``vectors_`` (float32) and ``labels_`` set.
        """
        self.vectors_ = np.asarray(vectors, dtype=np.float32)
        self.labels_ = np.asarray(labels)
        if np.unique(self.labels_).size < 2:
            raise ValueError("negative sampling needs candidates from at least 2 classes")
        return self

    def uses_scores(self, epoch: int) -> bool:
        """Whether epoch ``epoch`` (1-based) needs the current distances S_t.

        Parameters
        ----------
        epoch : int
            1-based epoch number.

        Returns
        -------
        bool
            False here: the base draws without the model's distances.
        """
        return False

    def log_weights(self, S: np.ndarray | None, s_pos: ArrayLike, epoch: int) -> np.ndarray | None:
        """Unnormalized log-probabilities (rows, K), or None for uniform; ``S`` the distances
        of a block of images to every candidate, ``s_pos`` their distance to their own Y*.

        Parameters
        ----------
        S : ndarray of shape (rows, K), or None
            Distances ([Bucher16] Eq. (1)) of a block of images to every candidate; None when
            :meth:`uses_scores` is False for this epoch.
        s_pos : ndarray of shape (rows,), or None
            Distance of each image to its own candidate Y*; None with ``S``.
        epoch : int
            1-based epoch number.

        Returns
        -------
        ndarray of shape (rows, K) or broadcastable to it, or None
            Log-weights of the candidates (same-class ones are zeroed later), or None
            for uniform draws.
        """
        raise NotImplementedError

    # ------------------------------------------------------------------ shared machinery
    @staticmethod
    def distances(E: ArrayLike, P: ArrayLike) -> np.ndarray:
        """S ([Bucher16] Eq. (1)) between projected images ``E = Â_X(X) W_A`` (r, m) and projected candidates ``P = Y W_A`` (K, m).

        Parameters
        ----------
        E : array-like of shape (r, m)
            Projected images.
        P : array-like of shape (K, m)
            Projected candidates.

        Returns
        -------
        ndarray of float64, shape (r, K)
            Euclidean distance of every image to every candidate.
        """
        E = np.asarray(E, dtype=np.float64)
        P = np.asarray(P, dtype=np.float64)
        s2 = (E**2).sum(1)[:, None] + (P**2).sum(1)[None, :] - 2.0 * (E @ P.T)
        return np.sqrt(np.maximum(s2, 0.0))

    def _block(self, E, P, pos, y, rows, epoch):
        """Normalized probabilities of one block of images (len(rows), K)."""
        same = self.labels_[None, :] == y[rows][:, None]
        if self.uses_scores(epoch):
            S = self.distances(E[rows], P)
            s_pos = S[np.arange(rows.size), pos[rows]]
            logw = self.log_weights(S, s_pos, epoch)
        else:
            logw = self.log_weights(None, None, epoch)
        if logw is None:
            logw = np.zeros(same.shape)
        else:
            logw = np.array(np.broadcast_to(logw, same.shape), dtype=np.float64)
        logw[same] = -np.inf
        # shift by the row maximum: the same distribution, without overflow in exp
        logw -= logw.max(axis=1, keepdims=True)
        w = np.exp(logw)
        return w / w.sum(axis=1, keepdims=True)

    def probabilities(self, E: ArrayLike | None, P: ArrayLike | None, pos: ArrayLike, y: ArrayLike, epoch: int) -> np.ndarray:
        """The full (n, K) matrix of sampling probabilities (for tests and small data).

        Parameters
        ----------
        E : ndarray of shape (n, m), or None
            Projected images (None when :meth:`uses_scores` is False).
        P : ndarray of shape (K, m), or None
            Projected candidates.
        pos : array-like of int, shape (n,)
            Index of each image's own candidate Y*.
        y : array-like of shape (n,)
            Class code of each image.
        epoch : int
            1-based epoch number.

        Returns
        -------
        ndarray of float64, shape (n, K)
            Row-normalized probabilities; 0 for candidates of the image's own class.
        """
        pos, y = np.asarray(pos), np.asarray(y)
        n = y.shape[0]
        return np.vstack([self._block(E, P, pos, y, np.arange(s, min(s + _CHUNK, n)), epoch) for s in range(0, n, _CHUNK)])

    def sample(self, E, P, pos, y, n_negatives: int, epoch: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n_negatives`` negative candidates for every image: (n, n_negatives) indices.

        Parameters
        ----------
        E : ndarray (n, m) or None
            Projected embedded images ``Â_X(X) W_A`` at the start of the epoch (None when
            :meth:`uses_scores` is False).
        P : ndarray (K, m) or None
            Projected candidates ``Y W_A``.
        pos : ndarray (n,)
            Index of each image's own candidate Y*.
        y : ndarray (n,)
            Class code of each image (compared with the candidates' codes).
        n_negatives : int
            Negatives drawn per image, with replacement.
        epoch : int
            1-based epoch number.
        rng : numpy Generator
            Source of the draws.

        Returns
        -------
        ndarray of int64, shape (n, n_negatives)
            Candidate indices, each of a class other than the image's.
        """
        pos, y = np.asarray(pos), np.asarray(y)
        n = y.shape[0]
        if not self.uses_scores(epoch) and self.log_weights(None, None, epoch) is None:
            return self._uniform(y, n_negatives, rng)
        out = np.empty((n, n_negatives), dtype=np.int64)
        for s in range(0, n, _CHUNK):
            rows = np.arange(s, min(s + _CHUNK, n))
            out[rows] = self._draw(self._block(E, P, pos, y, rows, epoch), n_negatives, rng)
        return out

    @staticmethod
    def _draw(prob: np.ndarray, k: int, rng) -> np.ndarray:
        """``k`` draws with replacement from each row's categorical distribution, vectorized:
        one sorted array of row CDFs (row r offset by 2r), one searchsorted."""
        r, K = prob.shape
        cdf = np.cumsum(prob, axis=1)
        cdf /= cdf[:, -1:]
        offsets = 2.0 * np.arange(r)[:, None]
        # u < 1 - 1e-9 keeps every draw inside its own row and off zero-probability entries
        u = np.minimum(rng.random((r, k)), 1.0 - 1e-9) + offsets
        idx = np.searchsorted((cdf + offsets).ravel(), u.ravel(), side="right").reshape(r, k)
        return np.minimum(idx - (np.arange(r) * K)[:, None], K - 1)

    def _uniform(self, y, k: int, rng) -> np.ndarray:
        """Uniform draws over other-class candidates, by rejection (exact, no n x K matrix)."""
        K = self.labels_.shape[0]
        out = rng.integers(0, K, size=(y.shape[0], k))
        bad = self.labels_[out] == y[:, None]
        while bad.any():
            out[bad] = rng.integers(0, K, size=int(bad.sum()))
            bad = self.labels_[out] == y[:, None]
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
