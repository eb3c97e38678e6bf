"""Hierarchical k-means vocabulary tree (Nistér & Stewénius, CVPR 2006).

A vocabulary of ``branching ** depth`` visual words learned by recursive
k-means: k-means with ``k = branching`` (FAISS) on all training descriptors
gives the first level; each cluster is split again by k-means on its own
descriptors, ``depth`` times. The leaves are the words. A descriptor is
quantized by greedy descent: at every level, the nearest of the current
node's ``branching`` children, so assigning one descriptor costs
``branching * depth`` distances instead of ``branching ** depth`` for a flat
codebook (60 instead of 1M for ``10 ** 6`` words). The price is a larger
quantization error than flat k-means with the same number of words (greedy
descent does not always reach the nearest leaf, and each split sees only its
parent's descriptors); :meth:`VocabularyTree.quantization_error` measures it.

The tree is kept complete: every internal node has exactly ``branching``
children, so the structure is implicit (children of node ``i`` at level
``l`` are ``i * b .. i * b + b - 1`` at level ``l + 1``) and only the centres
are stored. A node with fewer than ``branching`` descriptors (possible deep
in a 1M-word tree) keeps one child per distinct descriptor and fills the
remaining children with copies of the first centre; a copy is never the
strict nearest child (ties go to the lower index), so such words stay empty.
"""

from __future__ import annotations

import logging
from numbers import Integral

import numba
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._typing import RandomState
from .._validation import RANDOM_STATE, Interval, check_matrix, check_random_state, validate_params, validate_X

logger = logging.getLogger(__name__)

__all__ = ["VocabularyTree", "tree_depth"]

MAX_LEAVES = 2**24  # 16M words: far beyond what the stores here hold


def tree_depth(n_words: int, branching: int) -> int:
    """``L`` with ``branching ** L == n_words``; ValueError if there is none."""
    depth, size = 0, 1
    while size < n_words:
        size *= branching
        depth += 1
    if size != n_words or depth == 0:
        raise ValueError(f"n_words: a vocabulary tree with branching {branching} has {branching}**L words; {n_words} is not such a power")
    return depth


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})  # reassoc: a SIMD dot product
def _descend(X, centers, sq_norms, offsets, branching, depth, start_level, nodes):
    """Greedy descent from ``nodes`` (the node of each row at ``start_level``) to
    level ``depth - 1``; ``nodes`` is overwritten with the node reached.
    Distances as ``||c||² - 2 x·c`` (the ``||x||²`` term is common to all children)."""
    d = X.shape[1]
    for i in range(X.shape[0]):
        node = nodes[i]
        for level in range(start_level, depth):
            first = offsets[level] + node * branching
            best = -1
            best_d = 0.0
            for c in range(branching):
                row = first + c
                dot = 0.0
                for k in range(d):
                    dot += X[i, k] * centers[row, k]
                dist = sq_norms[row] - 2.0 * dot
                if best < 0 or dist < best_d:
                    best_d = dist
                    best = c
            node = node * branching + best
        nodes[i] = node


class VocabularyTree(BaseEstimator):
    """Visual words as the leaves of a hierarchical k-means tree.

    Parameters
    ----------
    branching : int in [2, 1024]
        Children per node ``b`` (k of each k-means).
    depth : int >= 1
        Levels ``L``; the tree has ``b ** L`` leaves (words), at most 2**24.
    n_iter : int
        k-means iterations per split.
    random_state : int, Generator or None

    Attributes
    ----------
    centers_ : ndarray (b + b² + ... + b^L, d) float32
        Centres of every node, level by level (level ``l`` starts at
        ``offsets_[l]``); the last ``b^L`` rows are the words.
    offsets_ : ndarray (L + 1,) int64
    n_words_ : int
        ``b ** L``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.features._vocab_tree import VocabularyTree
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(c, 0.05, (40, 2)) for c in ((0, 0), (0, 1), (5, 0), (5, 1))]).astype(np.float32)
    >>> tree = VocabularyTree(branching=2, depth=2, random_state=0).fit(X)
    >>> words = tree.predict(X)
    >>> tree.n_words_, len(set(words[:40])), len(set(words))   # each blob is one word
    (4, 1, 4)
    """

    _parameter_constraints = {
        "branching": [Interval(Integral, 2, 1024, closed="both")],
        "depth": [Interval(Integral, 1, 24, closed="both")],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, branching: int = 10, *, depth: int = 3, n_iter: int = 10, random_state: RandomState = None):
        self.branching = branching
        self.depth = depth
        self.n_iter = n_iter
        self.random_state = random_state

    def _offsets(self) -> np.ndarray:
        b, L = int(self.branching), int(self.depth)
        sizes = [b ** (level + 1) for level in range(L)]
        if sizes[-1] > MAX_LEAVES:
            raise ValueError(f"branching={b}, depth={L}: {sizes[-1]:,} words, more than the {MAX_LEAVES:,} allowed")
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def fit(self, X, y=None, *, progress=None) -> VocabularyTree:
        """Learn the tree from descriptors ``X`` ``(n, d)`` (at least ``branching`` of them).

        ``progress(1)`` is called after each level is learned (unit: tree levels; the calls add
        up to ``depth``; the protocol of :mod:`hardneg._progress`). ``y`` is ignored.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Descriptors, at least ``branching`` of them.
        y : None
            Ignored.
        progress : callable, optional
            Called as ``progress(1)`` after each level.

        Returns
        -------
        self : object
            Fitted tree (``centers_``, ``offsets_``, ``n_words_``).
        """
        validate_params(self)
        import faiss

        offsets = self._offsets()
        X = validate_X(self, X, reset=True, min_rows=1)
        X = np.ascontiguousarray(X, np.float32)
        b, L, d = int(self.branching), int(self.depth), X.shape[1]
        if X.shape[0] < b:
            raise ValueError(f"X: {X.shape[0]} sample(s) (descriptors) cannot make the {b} first-level words")
        seed = int(check_random_state(self.random_state).integers(0, 2**31 - 1 - offsets[-1]))
        centers = np.empty((int(offsets[-1]), d), np.float32)
        nodes = np.zeros(X.shape[0], np.int64)  # every descriptor starts at the root
        parent_centers = X.mean(axis=0, keepdims=True)
        for level in range(L):
            n_nodes = b**level
            order = np.argsort(nodes, kind="stable")
            bounds = np.concatenate([[0], np.cumsum(np.bincount(nodes, minlength=n_nodes))])
            block = centers[offsets[level] : offsets[level + 1]]
            for node in range(n_nodes):
                pts = X[order[bounds[node] : bounds[node + 1]]]
                block[node * b : (node + 1) * b] = self._split(faiss, pts, parent_centers[node], b, seed + int(offsets[level]) + node)
            sq = np.einsum("ij,ij->i", centers[: offsets[level + 1]], centers[: offsets[level + 1]])
            _descend(X, centers, sq, offsets, b, level + 1, level, nodes)
            parent_centers = block
            if progress is not None:
                progress(1)
            logger.info("vocabulary tree: level %d of %d (%d nodes)", level + 1, L, b ** (level + 1))
        self.centers_, self.offsets_ = centers, offsets
        self._sq_norms = np.einsum("ij,ij->i", centers, centers)
        self.n_words_ = b**L
        return self

    def _split(self, faiss, pts, parent, b, seed) -> np.ndarray:
        """``b`` child centres of one node from its descriptors ``pts``."""
        distinct = np.unique(pts, axis=0) if pts.shape[0] <= 4 * b else pts
        if distinct.shape[0] > b:
            km = faiss.Kmeans(pts.shape[1], b, niter=int(self.n_iter), seed=seed, min_points_per_centroid=1, verbose=False)
            km.train(np.ascontiguousarray(pts))
            return km.centroids
        # too few descriptors to split b ways: one child each, then copies (empty words)
        out = np.empty((b, pts.shape[1]), np.float32)
        n = distinct.shape[0]
        out[:n] = distinct
        out[n:] = distinct[0] if n else parent
        return out

    @property
    def words_(self) -> np.ndarray:
        """The leaf centres ``(b ** L, d)``: the visual words."""
        check_is_fitted(self, "centers_")
        return self.centers_[self.offsets_[-2] :]

    def predict(self, X) -> np.ndarray:
        """Word (leaf reached by greedy descent) of each row of ``X``: int64 ``(n,)``.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Descriptors of the tree's dimension.

        Returns
        -------
        ndarray of shape (n,), dtype int64
            The word of each row, in ``0 .. n_words_ - 1``.
        """
        check_is_fitted(self, "centers_")
        if hasattr(self, "n_features_in_"):
            X = validate_X(self, X, reset=False, min_rows=0)
        else:
            X = check_matrix(X, "X", min_rows=0, n_features=self.centers_.shape[1], estimator=self)
        X = np.ascontiguousarray(X, np.float32)
        nodes = np.zeros(X.shape[0], np.int64)
        if X.shape[0]:
            _descend(X, self.centers_, self._sq_norms, self.offsets_, int(self.branching), int(self.depth), 0, nodes)
        return nodes

    def quantization_error(self, X) -> float:
        """Mean squared distance of the rows of ``X`` to their word's centre.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Descriptors of the tree's dimension.

        Returns
        -------
        float
            The mean over rows of ``||x - word centre||²``.
        """
        X = np.asarray(X, np.float32)
        words = self.predict(X)
        return float(np.mean(np.sum((X - self.words_[words]) ** 2, axis=1)))

    @classmethod
    def from_centers(cls, branching: int, depth: int, centers: np.ndarray) -> VocabularyTree:
        """A fitted tree from its stored centres (what a codebook file holds); ValueError if they do not fit.

        Parameters
        ----------
        branching : int
            Children per node ``b``.
        depth : int
            Levels ``L``.
        centers : array-like of shape (b + b² + ... + b^L, d)
            Centres of every node, level by level (as ``centers_``).

        Returns
        -------
        VocabularyTree
            The fitted tree.
        """
        tree = cls(branching=branching, depth=depth)
        validate_params(tree)
        offsets = tree._offsets()
        centers = np.ascontiguousarray(centers, np.float32)
        if centers.ndim != 2 or centers.shape[0] != offsets[-1] or centers.shape[1] < 1:
            raise ValueError(f"tree centres of shape {centers.shape} do not fit branching={branching}, depth={depth} ({offsets[-1]} nodes)")
        if not np.isfinite(centers).all():
            raise ValueError("tree centres hold NaN or infinite values")
        tree.centers_, tree.offsets_, tree.n_words_ = centers, offsets, int(branching) ** int(depth)
        tree._sq_norms = np.einsum("ij,ij->i", centers, centers)
        tree.n_features_in_ = centers.shape[1]
        return tree
