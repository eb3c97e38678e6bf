"""Hashing with robust transductive SVMs on binary hierarchical trees (TSVMH-BHT).

Cevikalp, Elmas & Ozkan, "Large-scale image retrieval using transductive
support vector machines", CVIU 2017, Section 2.3.

Each tree is a binary class hierarchy (Section 2.2, :mod:`._hierarchy`)
built on a random subset of the classes (``class_subset``) and a random
subset of their labeled samples (``subsample``), so the trees differ as in a
random forest. At each of its m - 1
internal nodes (m classes in the tree's subset) an RTSVM
(:class:`hardneg.svm.RampTSVM`) separates the node's two class groups,
trained on the labeled samples of those classes plus randomly chosen
unlabeled samples. [Cevikalp17] Eq. (12): bit k of a code is sign(w_k . x + b_k), so a
tree gives m - 1 bits and ``ceil(n_bits / (m - 1))`` trees give the code (the
last tree's surplus bits are dropped).

``mode="itq"`` is the paper's embedding mode: the real-valued outputs of
every node of 15 to 40 trees (20 by default) form an embedding, and PCA-ITQ
turns it into ``n_bits`` bits. Defaults, departures chosen by measurement
(docs/methods/hashing.md, "Class subsets and the embedding mode"):
``class_subset=1`` (every tree on all classes) and ``mode="bits"``.
"""

from __future__ import annotations

import logging
import math
from numbers import Integral, Real

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from hardneg._persist import ArraySpec
from hardneg._typing import ArrayLike
from hardneg._validation import (
    RANDOM_STATE,
    Interval,
    StrOptions,
    check_matrix,
    check_random_state,
    check_target_present,
)
from hardneg.hashing._base import MAX_BITS, N_BITS, BaseHasher, check_finite_array
from hardneg.hashing._hierarchy import _indicator, build_hierarchy, class_similarity, convex_hull_distances
from hardneg.hashing._itq import PCAITQHasher
from hardneg.svm._ramp_tsvm import SGD_MAX_EPOCHS, SGD_TOL, RampTSVM

__all__ = ["TSVMHashing"]

logger = logging.getLogger(__name__)

_MODES = ("bits", "itq")
#: candidates of ``C="auto"`` (the values the retrieval benchmark chooses between)
C_GRID = (1.0, 10.0)
#: default ``class_subset`` (fraction of the classes in one tree), chosen in benchmarks/hashing_retrieval.py
CLASS_SUBSET = 1.0
#: default ``C_star / C`` (``C_star=None``): [Cevikalp17] Section 3 sets C* below C, C = 20, C* = 5
#: (Fisher vectors) and C = 10, C* = 2 (CNN features); 1/4 is the first of the two ratios
C_STAR_RATIO = 0.25
#: trees of the ``mode="itq"`` embedding when ``n_trees`` is not given (the paper uses 15 to 40)
EMBEDDING_TREES = 20


def classes_per_tree(class_subset: float, n_classes: int) -> int:
    """Classes in one tree's random subset: ``round(class_subset * n_classes)``, at least 2."""
    return min(n_classes, max(2, int(round(class_subset * n_classes))))


class TSVMHashing(BaseHasher):
    """Binary codes from RTSVM hyperplanes on binary hierarchical trees.

    Parameters
    ----------
    n_bits : int
        Code length; with ``mode="bits"`` it chooses the number of trees,
        ``ceil(n_bits / (m - 1))`` for m classes per tree.
    mode : {"bits", "itq"}
        ``"bits"``: the hyperplanes' signs are the bits ([Cevikalp17] Eq. (12)).
        ``"itq"``: the paper's embedding mode: the outputs of every node of
        ``n_trees`` trees (default ``EMBEDDING_TREES`` = 20, or more when
        ``n_bits`` needs them) form an embedding of n_trees * (m - 1)
        dimensions, and PCA-ITQ turns it into ``n_bits`` bits.
    n_trees : int, optional
        Number of trees; default ``ceil(n_bits / (m - 1))`` for
        ``mode="bits"`` and ``max(EMBEDDING_TREES, ceil(n_bits / (m - 1)))``
        for ``mode="itq"``. It must give at least ``n_bits`` hyperplanes.
    class_subset : float in (0, 1]
        Fraction of the classes each tree is built on: every tree draws its
        own random subset of m = ``round(class_subset * n_classes)`` classes
        (at least 2), as in the paper, and its hierarchy, nodes and labeled
        samples cover those classes only; 1 gives every tree all classes.
        Default 1, a departure from the paper chosen by measurement (see
        "Parameter choices" in docs/methods/hashing.md).
    subsample : float in (0, 1]
        Fraction of each class's labeled samples a tree draws (at least one).
    n_unlabeled : int, optional
        Unlabeled samples drawn at random for each node; default as many as
        the node's labeled samples.
    C : float or "auto"
        Cost of the labelled samples at every node. ``"auto"`` (default)
        picks it from ``C_GRID`` = (1, 10) on the labelled data alone: a
        fifth of every class's labelled samples become validation queries
        against the rest, a hasher of ``min(n_bits, 64)`` bits is fitted for
        every candidate on the rest (the same unlabelled data), and the C with
        the best validation mAP@100 wins (an extra, not in the paper, which
        reports C per data set; it costs two more fits of up to 64 bits).
        If a float, that C at every node.
    C_star : float, optional
        Cost of each unlabeled copy at every node. Default ``None``:
        ``C_STAR_RATIO * C_`` = C / 4, following the paper, which weights
        the unlabeled samples below the labeled ones (C = 20, C* = 5 for
        Fisher vectors; C = 10, C* = 2 for CNN features). If a float, that C*
        at every node.
    s, loss, n_epochs, max_iter, sgd_tol
        Passed to :class:`hardneg.svm.RampTSVM` at every node, which solves
        each CCCP iteration's convex problem by dual coordinate descent
        (``solver="dcd"``): ``n_epochs`` caps its epochs, which otherwise stop
        at its tolerance (``sgd_tol`` is the SGD solver's rule, unused here);
        ``max_iter`` caps the CCCP iterations.
    balance : bool
        The RTSVM balancing constraint ([Cevikalp17] Eq. (6)) at every node. Off by
        default, a departure from the paper: a node's unlabeled samples are
        drawn from the whole pool, so their mean output need not equal the
        mean label of the node's two class groups (measured in "Parameter
        choices", docs/methods/hashing.md).
    hull_method : {"svm", "qp"}
        Convex-hull distance for the hierarchy ([Cevikalp17] Eq. (9)).
    hull_C : float
        C of the hard-margin SVM (unregularized bias) for ``hull_method="svm"``.
    max_per_class : int
        Samples per class used to measure hull distances.
    normalize : bool
        Center the features and scale them to unit mean row norm before
        learning (the folded affine map is part of every hyperplane).
    random_state : None, int or Generator

    Attributes
    ----------
    coef_ : ndarray of float32, shape (n_hyperplanes, n_features)
        Every tree's node hyperplanes, in the original feature space.
    intercept_ : ndarray of float32, shape (n_hyperplanes,)
    trees_ : ndarray of int8, shape (n_trees, m - 1, n_classes)
        Node membership of every tree (see :func:`build_hierarchy`), over all
        classes: a tree's columns outside its class subset are 0.
    classes_ : ndarray of the class labels (column indices for multi-hot y)
    n_iter_ : int
        The most CCCP iterations any node's RTSVM ran.
    C_ : float
        The C used (chosen on validation data when ``C="auto"``).
    C_star_ : float
        The C* every node's RTSVM used (``C_STAR_RATIO * C_`` by default;
        set by ``fit``, not saved with the model).
    C_scores_ : dict
        ``C="auto"`` only: validation mAP@100 of every candidate C (not saved
        with the model).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from hardneg.hashing import TSVMHashing
    >>> X, y = load_digits(return_X_y=True)
    >>> h = TSVMHashing(n_bits=18, random_state=0).fit(X[:600], y[:600], X_unlabeled=X[600:1200])
    >>> h.transform(X[:4]).shape, h.trees_.shape
    ((4, 3), (2, 9, 10))
    """

    _kind = "hash-tsvm-bht"
    _fitted_attr = "coef_"
    _parameter_constraints = {
        "n_bits": [N_BITS],
        "mode": [StrOptions(set(_MODES))],
        "n_trees": [Interval(Integral, 1, MAX_BITS, closed="both"), None],
        "class_subset": [Interval(Real, 0, 1, closed="right")],
        "subsample": [Interval(Real, 0, 1, closed="right")],
        "n_unlabeled": [Interval(Integral, 0, None, closed="left"), None],
        "C": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "C_star": [Interval(Real, 0, None, closed="left"), None],
        "s": [Interval(Real, -1, 0, closed="right")],
        "loss": [StrOptions({"ramp", "hinge"})],
        "balance": ["boolean"],
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "sgd_tol": [Interval(Real, 0, None, closed="left")],
        "hull_method": [StrOptions({"svm", "qp"})],
        "hull_C": [Interval(Real, 0, None, closed="neither")],
        "max_per_class": [Interval(Integral, 1, None, closed="left"), None],
        "normalize": ["boolean"],
        "random_state": RANDOM_STATE,
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True  # the class hierarchy is built from the labels
        return tags

    def __init__(
        self, n_bits: int = 64, *, mode: str = "bits", n_trees: int | None = None, class_subset: float = CLASS_SUBSET,
        subsample: float = 0.5, n_unlabeled: int | None = None, C: float | str = "auto", C_star: float | None = None,
        s: float = -0.2, loss: str = "ramp", balance: bool = False, n_epochs: int = SGD_MAX_EPOCHS, max_iter: int = 10,
        hull_method: str = "svm", hull_C: float = 1e6, max_per_class: int = 200, normalize: bool = True,
        random_state: int | np.random.Generator | None = None, sgd_tol: float = SGD_TOL,
    ):
        self.n_bits = n_bits
        self.mode = mode
        self.n_trees = n_trees
        self.class_subset = class_subset
        self.subsample = subsample
        self.n_unlabeled = n_unlabeled
        self.C = C
        self.C_star = C_star
        self.s = s
        self.loss = loss
        self.balance = balance
        self.n_epochs = n_epochs
        self.max_iter = max_iter
        self.hull_method = hull_method
        self.hull_C = hull_C
        self.max_per_class = max_per_class
        self.normalize = normalize
        self.random_state = random_state
        self.sgd_tol = sgd_tol

    def _plan(self, n_classes):
        """``(n_bits, n_trees, m)``: code length, trees and classes per tree."""
        n_bits = int(self.n_bits)
        m = classes_per_tree(float(self.class_subset), n_classes)
        per_tree = m - 1
        if self.n_trees is None:
            n_trees = math.ceil(n_bits / per_tree)
            if self.mode == "itq":
                n_trees = max(n_trees, EMBEDDING_TREES)
        else:
            n_trees = int(self.n_trees)
            if n_trees * per_tree < n_bits:
                raise ValueError(
                    f"n_trees={n_trees}: {n_trees} trees of {per_tree} bits ({m} of {n_classes} classes each, "
                    f"class_subset={self.class_subset}) cannot give n_bits={n_bits}"
                )
        return n_bits, n_trees, m

    def progress_total(self, n_classes: int) -> int:
        """The units ``fit(progress=...)`` reports for ``n_classes`` classes.

        Parameters
        ----------
        n_classes : int
            Classes of the labels ``fit`` will get.

        Returns
        -------
        int
            One unit per tree node trained, the nodes of the ``C="auto"`` candidates included.
        """
        total = self._n_nodes(int(n_classes))
        if self.C == "auto":
            total += len(C_GRID) * self._candidate(0, C_GRID[0])._n_nodes(int(n_classes))
        return total

    def _n_nodes(self, n_classes: int) -> int:
        """Tree nodes one fit trains: ``n_trees * (m - 1)``."""
        _, n_trees, m = self._plan(n_classes)
        return n_trees * (m - 1)

    def _candidate(self, seed, C):
        """The hasher ``C="auto"`` fits for candidate ``C`` (at most 64 bits, plain codes)."""
        params = {**self.get_params(), "n_bits": min(int(self.n_bits), 64), "n_trees": None, "mode": "bits",
                  "random_state": seed}
        return type(self)(**{**params, "C": C})

    def fit(self, X, y, X_unlabeled=None, progress=None):
        """Learn the trees from labeled ``(X, y)`` and optional unlabeled data.

        ``y`` holds one label per row, or a multi-hot (n_samples, n_classes)
        matrix for multi-label data. ``progress(n)`` is called after every node,
        the ``C="auto"`` candidates' nodes first (:meth:`progress_total` in all).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Labeled training rows.
        y : array-like of shape (n_samples,) or (n_samples, n_classes)
            Class labels, or a multi-hot matrix (at least 2 classes).
        X_unlabeled : array-like of shape (n_unlabeled, n_features), or None, default=None
            Unlabeled rows for the transductive SVMs of the nodes.
        progress : callable or None, default=None
            Called with 1 after every node trained (candidates of ``C="auto"`` included:
            :meth:`progress_total` units in all).

        Returns
        -------
        TSVMHashing
            Fitted hasher.
        """
        self._check_n_bits()
        X = self._check_X(X, fitting=True)
        check_target_present(self, y)
        check_classification_targets(y)  # "Unknown label type: continuous" for a regression target
        classes, Y = _indicator(y, X.shape[0])
        if classes.size < 2:
            raise ValueError(f"y: needs at least 2 classes, got {classes.size}")
        if (Y.sum(axis=0) == 0).any():
            raise ValueError("y: every class of the multi-hot matrix needs at least one sample")
        n_bits, n_trees, m = self._plan(classes.size)
        d = X.shape[1]
        XU = None
        if X_unlabeled is not None:
            XU = check_matrix(X_unlabeled, "X_unlabeled", min_rows=0, n_features=d, estimator=self)
        self._check_fit_memory(X, n_trees * (m - 1))
        rng = check_random_state(self.random_state)
        if self.C == "auto":
            self.C_, self.C_scores_ = self._select_C(X, y, Y, XU, int(rng.integers(0, 2**31 - 1)), progress)
        else:
            self.C_ = float(self.C)
        self.C_star_ = C_STAR_RATIO * self.C_ if self.C_star is None else float(self.C_star)

        # the affine normalization, folded into the hyperplanes at the end
        pool = X if XU is None or XU.shape[0] == 0 else np.vstack([X, XU[: 4 * X.shape[0]]])
        if self.normalize:
            mean = pool.mean(axis=0, dtype=np.float64)
            scale = 1.0 / max(float(np.linalg.norm(pool - mean, axis=1).mean()), 1e-12)
        else:
            mean, scale = np.zeros(d), 1.0
        Xn = ((X - mean) * scale).astype(np.float32)
        XUn = None if XU is None or XU.shape[0] == 0 else ((XU - mean) * scale).astype(np.float32)

        # per-tree seeds spawned from one draw: a longer code extends a shorter one
        tree_seeds = np.random.SeedSequence(int(rng.integers(0, 2**63 - 1))).spawn(n_trees)
        planes, biases, trees = [], [], []
        self.n_iter_ = 0
        for seed in tree_seeds:
            w, b, nodes = self._fit_tree(Xn, Y, XUn, m, np.random.default_rng(seed), progress)
            planes.append(w)
            biases.append(b)
            trees.append(nodes)
        W = np.vstack(planes)
        bias = np.concatenate(biases)
        # f(x) = w . ((x - mean) * scale) + b = (scale w) . x + (b - scale w . mean)
        self.coef_ = np.ascontiguousarray(W * scale, dtype=np.float32)
        self.intercept_ = (bias - scale * (W @ mean)).astype(np.float32)
        self.trees_ = np.stack(trees)
        self.classes_ = classes
        if self.mode == "itq":
            embedded = self._project(X if XUn is None else np.vstack([X, XU]))
            self.itq_ = PCAITQHasher(n_bits=n_bits, random_state=int(rng.integers(0, 2**31 - 1))).fit(embedded)
        self.n_bits_ = n_bits
        return self

    def _fit_tree(self, X, Y, XU, m, rng, progress):
        """One tree on ``m`` random classes; returns its hyperplanes and its
        nodes as (m - 1, n_classes) rows over all classes (0 outside the subset)."""
        n_classes = Y.shape[1]
        # the trees' diversity: a random subset of the classes (all when m = n_classes, with no draw,
        # so that class_subset=1 gives the trees it gave before class subsets existed) ...
        subset = np.arange(n_classes) if m == n_classes else np.sort(rng.choice(n_classes, m, replace=False))
        # ... and a random subset of each of their labeled samples
        rows = []
        for c in subset:
            members = np.flatnonzero(Y[:, c])
            take = max(1, int(round(self.subsample * members.size)))
            rows.append(rng.choice(members, take, replace=False))
        rows = np.unique(np.concatenate(rows))
        Xs, Ys = X[rows], Y[rows]
        # the hierarchy over the tree's classes (multi-label: a sample keeps only its labels among them)
        D = convex_hull_distances(
            Xs, Ys[:, subset], method=self.hull_method, C=self.hull_C, max_per_class=self.max_per_class,
            random_state=rng,
        )
        nodes = np.zeros((m - 1, n_classes), dtype=np.int8)
        nodes[:, subset] = build_hierarchy(class_similarity(D))
        W = np.zeros((nodes.shape[0], X.shape[1]))
        b = np.zeros(nodes.shape[0])
        for k, row in enumerate(nodes):
            pos = Ys[:, row > 0].any(axis=1)
            neg = Ys[:, row < 0].any(axis=1)
            # samples tagged on both sides of a multi-label split are ambiguous: leave them out
            keep = pos ^ neg
            Xk = Xs[keep]
            yk = np.where(pos[keep], 1, -1)
            XUk = None
            if XU is not None:
                n_u = min(XU.shape[0], self.n_unlabeled if self.n_unlabeled is not None else Xk.shape[0])
                XUk = XU[np.sort(rng.choice(XU.shape[0], n_u, replace=False))] if n_u > 0 else None
            svm = RampTSVM(
                C=self.C_, C_star=self.C_star_, s=self.s, loss=self.loss, n_epochs=self.n_epochs,
                max_iter=self.max_iter, balance=self.balance, sgd_tol=self.sgd_tol, random_state=rng, solver="dcd",
            ).fit(Xk, yk, X_unlabeled=XUk)
            W[k], b[k] = svm.coef_, svm.intercept_
            self.n_iter_ = max(self.n_iter_, svm.n_iter_)  # the most CCCP iterations any node ran
            if progress is not None:
                progress(1)
        return W, b, nodes

    def _select_C(self, X, y, Y, XU, seed, progress=None):
        """``C="auto"``: validation mAP@100 on a fifth of the labelled samples (see the class docstring)."""
        from hardneg.eval import hamming_rank, mean_average_precision_at_k, relevance_from_labels

        rng = np.random.default_rng(seed)
        y = np.asarray(y)
        if y.ndim == 1:
            val = np.concatenate([
                rng.permutation(members)[: members.size // 5]
                for members in (np.flatnonzero(Y[:, c]) for c in range(Y.shape[1]))
            ])
        else:
            val = rng.permutation(X.shape[0])[: X.shape[0] // 5]
        fit_rows = np.setdiff1d(np.arange(X.shape[0]), val)
        fit_classes = np.unique(y[fit_rows]) if y.ndim == 1 else np.flatnonzero(Y[fit_rows].any(axis=0))
        if val.size == 0 or fit_classes.size < Y.shape[1]:
            logger.info("C='auto': too few labelled samples per class to validate; using C=%g", C_GRID[0])
            if progress is not None:  # the candidates' share of progress_total, skipped
                progress(len(C_GRID) * self._candidate(seed, C_GRID[0])._n_nodes(Y.shape[1]))
            return C_GRID[0], {}
        y_fit = y[fit_rows] if y.ndim == 1 else y[fit_rows][:, fit_classes]
        rel_val = y[val] if y.ndim == 1 else Y[val][:, fit_classes].astype(np.int8)
        rel_db = y[fit_rows] if y.ndim == 1 else Y[fit_rows][:, fit_classes].astype(np.int8)
        k = min(100, fit_rows.size)
        scores = {}
        for C in C_GRID:
            h = self._candidate(seed, C).fit(X[fit_rows], y_fit, X_unlabeled=XU, progress=progress)
            codes_val, codes_db = h.transform(X[val]), h.transform(X[fit_rows])
            idx, _ = hamming_rank(codes_val, codes_db, k=k, ties="random", random_state=0)
            scores[C] = float(mean_average_precision_at_k(relevance_from_labels(rel_val, rel_db[idx])))
        best = max(C_GRID, key=lambda C: scores[C])  # the first (smaller) C wins a tie
        logger.info("C='auto': validation mAP@%d %s -> C=%g", k, scores, best)
        return best, scores

    def _project(self, X):
        return X @ self.coef_.T + self.intercept_

    def embed(self, X: ArrayLike) -> np.ndarray:
        """Real-valued projections: the hyperplanes' outputs (``mode="bits"``,
        the first ``n_bits`` of them) or the ITQ-rotated embedding (``mode="itq"``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to encode.

        Returns
        -------
        ndarray of shape (n_samples, n_bits)
            The projections; their signs are the bits.
        """
        X = self._check_X(X)
        if self.mode == "itq":
            return self.itq_.embed(self._project(X))
        return X @ self.coef_[: self.n_bits_].T + self.intercept_[: self.n_bits_]

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Packed binary codes: the signs of the hyperplanes (``mode="bits"``) or of the
        ITQ-rotated embedding (``mode="itq"``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to encode.

        Returns
        -------
        ndarray of uint8, shape (n_samples, ceil(n_bits / 8))
            The codes, ``np.packbits`` order.
        """
        X = self._check_X(X)
        if self.mode == "itq":
            return self.itq_.transform(self._project(X))
        return np.packbits(X @ self.coef_[: self.n_bits_].T > -self.intercept_[: self.n_bits_], axis=1)

    def _to_arrays(self):
        arrays = {"coef": self.coef_, "intercept": self.intercept_, "trees": self.trees_, "classes": self.classes_}
        if self.mode == "itq":
            arrays["itq_index"] = self.itq_._to_arrays()["faiss_index"]
        return arrays

    def _meta(self):
        meta = {"itq_features": int(self.coef_.shape[0])} if self.mode == "itq" else {}
        meta["classes_per_tree"] = int(self.trees_.shape[1]) + 1
        if self.C == "auto":
            meta["C_chosen"] = float(self.C_)
        return meta

    _schema = {
        "coef": ArraySpec("f", 2),
        "intercept": ArraySpec("f", 1),
        "trees": ArraySpec("iu", 3),
        "classes": ArraySpec("biufUS", 1),
        "itq_index": ArraySpec("u", 1, optional=True),
    }

    def _from_arrays(self, arrays, meta):
        if self.C == "auto":
            chosen = meta.get("C_chosen")
            if isinstance(chosen, bool) or not isinstance(chosen, (int, float)) or not np.isfinite(chosen) or chosen <= 0:
                raise ValueError(f"C='auto' but the chosen C is {chosen!r}")
            self.C_ = float(chosen)
        else:
            self.C_ = float(self.C)
        trees = arrays["trees"]
        classes = arrays["classes"]
        n_trees, n_nodes, n_classes = trees.shape
        if (n_classes < 2 or not 1 <= n_nodes <= n_classes - 1 or classes.shape != (n_classes,)
                or np.unique(classes).size != n_classes):
            raise ValueError(f"trees of shape {trees.shape} do not fit {classes.shape[0]} distinct classes")
        if not np.isin(trees, (-1, 0, 1)).all():
            raise ValueError("trees hold values other than -1, 0 and 1")
        m = n_nodes + 1
        # every tree's root splits exactly its m classes, and no node reaches outside them
        roots = trees[:, 0, :] != 0
        if (roots.sum(axis=1) != m).any() or ((trees != 0) & ~roots[:, None, :]).any():
            raise ValueError(f"trees of shape {trees.shape} are not hierarchies over {m} classes each")
        if "classes_per_tree" in meta:
            if meta["classes_per_tree"] != m:
                raise ValueError(f"classes_per_tree={meta['classes_per_tree']!r}, but the trees cover {m} classes")
            expected = classes_per_tree(float(self.class_subset), n_classes)
            if expected != m:
                raise ValueError(f"class_subset={self.class_subset} gives {expected} classes per tree, the trees have {m}")
        elif m == n_classes:
            self.class_subset = 1.0  # a file from before class subsets: every tree had all classes
        else:
            raise ValueError("classes_per_tree is missing but the trees cover a subset of the classes")
        n_planes = n_trees * n_nodes
        self.coef_ = check_finite_array(arrays["coef"], "coef", (n_planes, self.n_features_in_))
        self.intercept_ = check_finite_array(arrays["intercept"], "intercept", (n_planes,))
        self.trees_ = trees.astype(np.int8)
        self.classes_ = classes
        if (self.mode == "itq") != ("itq_index" in arrays):
            raise ValueError(f"mode={self.mode!r} but the file {'lacks' if self.mode == 'itq' else 'has'} an ITQ index")
        if self.mode == "itq":
            if meta.get("itq_features") != n_planes:
                raise ValueError(f"itq_features={meta.get('itq_features')!r}, expected {n_planes}")
            itq = PCAITQHasher(n_bits=self.n_bits_)
            itq.n_bits_, itq.n_features_in_ = self.n_bits_, n_planes
            itq._from_arrays({"faiss_index": arrays["itq_index"]}, {})
            self.itq_ = itq
        elif n_planes < self.n_bits_:
            raise ValueError(f"{n_planes} hyperplanes cannot give {self.n_bits_} bits")
