"""Zero-shot classification by metric learning with hard negative pair mining.

[Bucher16] Bucher, Herbin & Jurie, "Hard Negative Mining for Metric Learning
Based Zero-Shot Classification", ECCV 2016 workshops (TASK-CV), extending
Bucher, Herbin & Jurie, "Improving semantic embedding consistency by metric
learning for zero-shot classification", ECCV 2016 ([1]).
"""

from __future__ import annotations

import logging
import math
import os
import time
import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from hardneg._persist import ArraySpec, ModelFileError, load_model, save_model
from hardneg._progress import check_progress
from hardneg._validation import RANDOM_STATE, Interval, StrOptions, check_random_state, validate_params, validate_X

from ._attributes import as_attribute_table
from ._common import ZeroShotPredictMixin, candidate_table, training_targets
from hardneg.negatives import PAIR_SAMPLERS as SAMPLERS
from hardneg.negatives import BasePairSampler as NegativeSampler
from hardneg.negatives import make_pair_sampler as make_sampler
from hardneg.exceptions import TrainingDivergedError  # defined there, re-exported here
from hardneg._extras import install_hint

__all__ = ["TrainingDivergedError", "ZeroShotClassifier", "grow_negatives", "load_zero_shot", "loss_plateau",
           "top_eigenvalue"]


logger = logging.getLogger(__name__)

_KIND = "hardneg.zeroshot.ZeroShotClassifier"
_VERSION = 1
_SCHEMA = {
    "W_X": ArraySpec("f", 2), "b_X": ArraySpec("f", 1), "W_A": ArraySpec("f", 2), "tau": ArraySpec("f", 1),
    "mean": ArraySpec("f", 1), "scale": ArraySpec("f", 1), "classes": ArraySpec("iuU", 1),
    "prototypes": ArraySpec("f", 2),
    # the class descriptions it was trained with (record_descriptions), seen and unseen; optional
    "description_labels": ArraySpec("iuU", 1, optional=True), "description_names": ArraySpec("U", 1, optional=True),
    "descriptions": ArraySpec("f", 2, optional=True),
}
_PARAMS = ("sampler", "n_negatives", "negative_set", "max_negatives", "m", "lam", "mu", "balanced", "n_epochs", "tol",
           "n_iter_no_change", "early_stopping", "validation_fraction", "lr", "momentum", "batch_size", "standardize",
           "random_state")
# parameters added after version 1 files were first written, with the value those files were trained with
# (tol=None: they ran exactly n_epochs epochs)
_PARAMS_ADDED = {"negative_set": "redraw", "max_negatives": 100, "tol": None, "n_iter_no_change": 5, "early_stopping": False,
                 "validation_fraction": 0.2}
# lr="auto": the step of W_X is AUTO_LR_SCALE / L, L the largest eigenvalue of the inputs' second moment XᵀX/n
# (the inputs of [Bucher16] Eq. (2), after standardize); why this bound and this scale: docs/methods/zeroshot.md
AUTO_LR_SCALE = 0.02
# tune()'s grid ([Bucher16] Section 3); mu on the per-pair scale of _losses.objective
DEFAULT_GRID = {"lam": [0.1, 1.0, 10.0], "mu": [1e-4, 1e-3, 1e-2, 1e-1], "m": [16, 64]}
# lr="auto": the step of b_X, W_A and tau, whose gradients do not grow with the input dimension
AUTO_LR_OTHER = 0.01
_MAX_VALUE = 1e30


def grow_negatives(current, drawn, cap):
    """D₋ after one epoch's draws ([Bucher16] Section 2.2): ``drawn`` (n, k_new) appended to ``current``
    (n, k) or None, the oldest columns dropped past ``cap`` pairs per image; ``cap=None`` replaces it."""
    if current is None or cap is None:
        return np.ascontiguousarray(drawn)
    grown = np.concatenate([current, drawn], axis=1)
    return np.ascontiguousarray(grown[:, -cap:] if grown.shape[1] > cap else grown)


def loss_plateau(losses, tol: float, n_iter_no_change: int) -> bool:
    """The stopping rule of :meth:`ZeroShotClassifier.fit`: True when each of the last ``n_iter_no_change``
    epoch losses failed to fall below ``(1 - tol)`` times the lowest loss of the epochs before it.

    >>> loss_plateau([4.0, 2.0, 1.999, 1.998], tol=1e-3, n_iter_no_change=2)
    True
    >>> loss_plateau([4.0, 2.0, 1.9, 1.899], tol=1e-3, n_iter_no_change=2)
    False
    """
    losses = list(losses)
    if len(losses) <= n_iter_no_change:
        return False
    for j in range(len(losses) - n_iter_no_change, len(losses)):
        if losses[j] < (1.0 - tol) * min(losses[:j]):
            return False
    return True


def top_eigenvalue(X, n_iter: int = 50) -> float:
    """Largest eigenvalue of ``XᵀX / n`` (the squared spectral norm of ``X / √n``), by power iteration
    from a fixed start: the Lipschitz constant, in ``W_X``, of a least-squares loss on ``X W_X``."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if n == 0 or d == 0:
        return 0.0
    v = np.random.default_rng(0).standard_normal(d)
    lam = 0.0
    for _ in range(n_iter):
        w = X.T @ (X @ v) / n
        lam = float(np.linalg.norm(w))
        if lam == 0.0:
            return 0.0
        v = w / lam
    return lam


def _torch():
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is installed with the cnn extra
        raise ImportError(f"ZeroShotClassifier.fit needs PyTorch: {install_hint('cnn')}") from None
    return torch


class ZeroShotClassifier(ZeroShotPredictMixin, BaseEstimator):
    """Metric-learning zero-shot classifier with hard negative pair mining ([Bucher16]).

    An image ``X`` is embedded into attribute space, ``Â_X(X) = max(0, XᵀW_X + b_X)``
    ([Bucher16] Eq. (2)), and compared with an attribute vector ``Y`` through a learned
    metric, ``S(X, Y) = ‖(Â_X(X) - Y)ᵀ W_A‖₂`` ([Bucher16] Eq. (1)), ``W_A`` of size
    (attributes × m). A test image goes to the candidate class of smallest ``S``
    ([Bucher16] Eq. (7)). Training minimizes, by stochastic gradient descent on
    mini-batches of pairs, the pair hinge with a learned threshold τ ([Bucher16] Eq. (3),
    in the form ``max(0, 1 - Z(τ - S²))`` of [1]: see :mod:`hardneg.zeroshot._losses`
    for why it departs from the print), plus λ times the attribute regression on
    positive pairs ([Bucher16] Eq. (4)), plus μ times the squared norms of the parameters
    ([Bucher16] Eq. (5)): [Bucher16] Eq. (6) (divided by the number of pairs, a declared
    departure: see :func:`hardneg.zeroshot._losses.objective`), or with
    ``balanced=True`` the imbalance-weighted [Bucher16] Eq. (11). Training runs until the
    epoch loss stops falling (``tol``, ``n_iter_no_change``; at most ``n_epochs`` epochs),
    with a step for ``W_X`` scaled to the inputs (``lr="auto"``); the paper says neither
    when SGD stops nor which step it takes.

    The negative set D₋ ([Bucher16] Section 2.2). With ``negative_set="grow"``
    (the default, as the paper: "iteratively increasing the set" of negative
    pairs), every epoch adds ``n_negatives`` pairs per image, drawn by the
    ``sampler`` under the current model, to the pairs kept from earlier epochs,
    and the epoch trains on all of them: image ``i`` has ``min(t · n_negatives,
    max_negatives)`` negative pairs at epoch ``t``. Past ``max_negatives`` the
    oldest pairs are dropped first (those drawn under the oldest, least trained
    model), so memory stays ``n_samples × max_negatives`` indices. D₋ is a
    multiset: a candidate drawn again is kept again, so a negative that stays
    hard weighs more. [Bucher16] Eq. (11) (``balanced=True``) is what keeps the growing
    negative side from swamping the positive pairs. ``negative_set="redraw"``
    draws a fresh D₋ of ``n_negatives`` pairs per image every epoch instead
    (the behaviour before issue 28; cheaper, and a baseline for the growth).
    Epoch 1 always draws random negatives: there is no model yet to be
    uncertain about.

    Parameters
    ----------
    sampler : {"random", "uncertainty", "correlation"} or NegativeSampler
        How negative pairs are drawn: uniformly among other seen classes; by
        uncertainty, [Bucher16] Eq. (8); by uncertainty and correlation,
        [Bucher16] Eq. (9)-(10), which needs ``sample_attributes``.
        ``sampler="random", n_negatives=1, balanced=False, negative_set="redraw"``
        is Bucher et al. [1].
    n_negatives : int
        Negative pairs drawn per positive pair and epoch (``n`` of [Bucher16] Table 2).
    negative_set : {"grow", "redraw"}
        ``"grow"``: the drawn pairs join D₋, which grows epoch after epoch up to
        ``max_negatives`` per image ([Bucher16] Section 2.2); ``"redraw"``: D₋ is
        replaced every epoch.
    max_negatives : int
        Cap on the negative pairs kept per image with ``negative_set="grow"``
        (the oldest are dropped past it); at least ``n_negatives``. Ignored by
        ``"redraw"``. Memory: 4 bytes × n_samples × max_negatives; time per
        epoch grows with the set, up to ``1 + max_negatives`` pairs per image.
    m : int
        Columns of the metric ``W_A``.
    lam : float
        λ, weight of the attribute regression ([Bucher16] Eq. (6)).
    mu : float
        μ, weight of the regularizer ([Bucher16] Eq. (6)), on the per-pair scale: the
        pair terms are averaged over the pairs of a mini-batch instead of summed (a
        declared departure, :func:`hardneg.zeroshot._losses.objective`), so this μ is
        the paper's μ divided by the number of pairs of an epoch, and useful values
        are far larger than the paper's would be on its own scale.
        :meth:`tune`'s default grid spans 1e-4 to 1e-1.
    balanced : bool
        Divide positive and negative terms by the sizes of their sets ([Bucher16] Eq. (11)).
    n_epochs : int
        Maximum number of passes over the training images (negatives are drawn before
        each): the cap of the stopping rule; with ``tol=None``, exactly this many.
    tol : float or None
        Stopping rule: training stops when the epoch's mean training loss has not
        fallen below ``(1 - tol)`` times the best one so far for ``n_iter_no_change``
        consecutive epochs (the loss plateau; the paper does not say when it stops).
        None: no stopping rule, always ``n_epochs`` epochs (the behaviour before
        issue 38, and that of model files written before it).
    n_iter_no_change : int
        Epochs without that improvement before training stops.
    early_stopping : bool
        If True, the stopping rule watches held-out seen classes instead of the training loss
        (as scikit-learn's ``early_stopping``): ``validation_fraction`` of the seen classes
        (at least 2, their images and attribute vectors) are set aside, training stops when
        the zero-shot accuracy among them ([Bucher16] Eq. (7), mean per class) has not risen
        by more than ``tol`` (0 when None) for ``n_iter_no_change`` epochs, and the model keeps
        the parameters of its best epoch. The held-out classes stay in ``classes_``. Needs at
        least 4 seen classes. If False, the loss plateau above.
    validation_fraction : float
        Fraction of the seen classes held out when ``early_stopping`` is True.
    lr : float or "auto"
        SGD step size. A float: the step of every parameter. ``"auto"``: the step of
        ``W_X`` is ``0.02 / L``, ``L`` the largest eigenvalue of ``XᵀX / n`` for the
        training images as [Bucher16] Eq. (2) sees them (after ``standardize``), the
        Lipschitz constant in ``W_X`` of a squared loss on ``X W_X``: the step shrinks
        with the input's dimension and correlation (0.02 for whitened features);
        ``b_X``, ``W_A`` and ``τ``, whose gradients do not grow with the input, step
        by 0.01. The steps used are in ``lr_``; why this rule and its measurement:
        docs/methods/zeroshot.md.
    momentum : float
        SGD momentum (the paper says only "stochastic gradient descent"; 0 is plain SGD).
    batch_size : int
        Training images per mini-batch (each with its positive pair and its negative pairs).
    standardize : bool
        Centre and scale the features to unit variance before [Bucher16] Eq. (2) (an input
        convention, not part of the paper's model).
    random_state : None, int or numpy Generator
    class_attributes : dict, 2-D array, (labels, matrix) or None
        The seen classes' attribute vectors, given once here instead of to
        every ``fit`` (``fit(X, y)`` then works in ``Pipeline``,
        ``cross_val_score`` and ``GridSearchCV``). ``fit``'s own
        ``class_attributes`` or ``sample_attributes`` take precedence. When
        none is given anywhere, each seen class gets a one-hot vector (one
        attribute per class): the model is then an ordinary classifier among
        the seen classes, with no attributes to carry to unseen ones. Not saved
        by :meth:`save` (the fitted ``prototypes_`` are).

    Attributes
    ----------
    classes_ : ndarray (n_classes,)
        Seen classes.
    prototypes_ : ndarray (n_classes, n_attributes)
        Their attribute vectors (class means of ``sample_attributes`` where given).
    W_X_, b_X_, W_A_ : ndarrays
        The learned parameters of [Bucher16] Eq. (1)-(2); ``tau_`` the threshold of [Bucher16] Eq. (3).
    n_epochs_ : int
        Epochs run (at most ``n_epochs``; fewer when the stopping rule ended training).
    best_epoch_ : int
        The epoch whose parameters the model holds: ``n_epochs_``, or with ``early_stopping``
        the one of best validation accuracy (``history_["val_accuracy"]``).
    validation_classes_ : ndarray
        With ``early_stopping``: the seen classes held out (empty otherwise).
    lr_ : dict
        The SGD step of each parameter, ``{"W_X": ..., "b_X": ..., "W_A": ..., "tau": ...}``.
    negatives_ : ndarray (n_samples, k) int32
        D₋ after the last epoch: row ``i`` the candidates of image ``i``'s negative
        pairs (indices into the training candidates), oldest first.
    history_ : dict of lists
        Per epoch: ``loss``, ``pairs`` (positive + negative pairs trained on),
        ``negatives`` (size of D₋), ``seconds``, ``sampler_seconds`` and, with
        ``eval_set``, ``eval_accuracy`` (mean per-class accuracy).
    training_info_ : dict
        What the caller records about the training data, saved with the model
        (JSON values; empty after ``fit``). ``hardneg zsl train --tags`` keeps the
        store tags that defined the classes under ``"class_tags"``, and ``zsl eval``
        reads them back.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.zeroshot import ZeroShotClassifier
    >>> rng = np.random.default_rng(0)
    >>> attrs = 3 * rng.random((6, 5))                  # 6 classes, 5 attributes
    >>> W = rng.normal(size=(5, 20))
    >>> y = np.repeat(np.arange(6), 30)
    >>> X = attrs[y] @ W + 0.05 * rng.normal(size=(180, 20))
    >>> seen, unseen = y < 4, y >= 4
    >>> clf = ZeroShotClassifier(sampler="uncertainty", n_negatives=3, m=8, batch_size=16, n_epochs=20, random_state=0)
    >>> clf = clf.fit(X[seen], y[seen], attrs[:4])
    >>> float((clf.predict(X[seen]) == y[seen]).mean())  # [Bucher16] Eq. (7) among the seen classes
    1.0
    >>> S = clf.decision_function(X[unseen], class_attributes={4: attrs[4], 5: attrs[5]})
    >>> pred = clf.predict(X[unseen], class_attributes={4: attrs[4], 5: attrs[5]})
    >>> S.shape, bool((pred == np.array([4, 5])[S.argmin(axis=1)]).all())
    ((60, 2), True)
    """

    _smaller_is_closer = True  # decision_function is S of [Bucher16] Eq. (1); predict is [Bucher16] Eq. (7)

    _parameter_constraints = {
        "sampler": [StrOptions(set(SAMPLERS)), NegativeSampler],
        "n_negatives": [Interval(Integral, 1, 100_000, closed="both")],
        "negative_set": [StrOptions({"grow", "redraw"})],
        "max_negatives": [Interval(Integral, 1, 100_000, closed="both")],
        "m": [Interval(Integral, 1, 65_536, closed="both")],
        "lam": [Interval(Real, 0, None, closed="left")],
        "mu": [Interval(Real, 0, None, closed="left")],
        "balanced": ["boolean"],
        "n_epochs": [Interval(Integral, 1, 1_000_000, closed="both")],
        "tol": [None, Interval(Real, 0, 1, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, 1_000_000, closed="both")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "lr": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "batch_size": [Interval(Integral, 1, 10_000_000, closed="both")],
        "standardize": ["boolean"],
        "random_state": RANDOM_STATE,
        "class_attributes": [None, dict, "array-like"],  # the table's contents: checked by fit, with the other attribute inputs
    }

    def __init__(self, sampler: Any = "random", *, n_negatives: int = 1, negative_set: str = "grow", max_negatives: int = 100,
                 m: int = 16, lam: float = 0.1, mu: float = 1e-2, balanced: bool = True, n_epochs: int = 200,
                 tol: float | None = 1e-3, n_iter_no_change: int = 5, early_stopping: bool = False,
                 validation_fraction: float = 0.2, lr: float | str = "auto", momentum: float = 0.9,
                 batch_size: int = 64, standardize: bool = True,
                 random_state: int | np.random.Generator | None = None, class_attributes: Any = None):
        self.sampler = sampler
        self.n_negatives = n_negatives
        self.negative_set = negative_set
        self.max_negatives = max_negatives
        self.m = m
        self.lam = lam
        self.mu = mu
        self.balanced = balanced
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.lr = lr
        self.momentum = momentum
        self.batch_size = batch_size
        self.standardize = standardize
        self.random_state = random_state
        self.class_attributes = class_attributes

    # ------------------------------------------------------------------ training
    def fit(self, X, y, class_attributes=None, *, sample_attributes=None, eval_set=None, progress=None, callback=None):
        """Learn ``W_X, b_X, W_A, τ`` from images of the seen classes.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        y : array-like (n_samples,)
            Seen class of each image.
        class_attributes : dict, 2-D array or (labels, matrix), optional
            One attribute vector per class (a dict ``{class: vector}``, or a matrix whose
            row ``c`` is class ``c``); every class in ``y`` needs one. Default: the
            ``class_attributes`` parameter, else one-hot vectors per seen class.
        sample_attributes : array-like (n_samples, n_attributes), optional
            Per-image attribute vectors instead (each image's own positive pair;
            class prototypes are their class means). Needed by ``sampler="correlation"``.
        eval_set : (X_val, y_val, class_attributes_val), optional
            Scored after every epoch into ``history_["eval_accuracy"]`` (mean per-class
            accuracy among the classes of ``class_attributes_val``; Fig. 1).
        progress : callable, optional
            ``progress(1)`` after every epoch (unit: epochs; the calls add up to
            ``n_epochs``: when the stopping rule ends training, the last call also
            counts the epochs it saved), the protocol of :mod:`hardneg._progress`. The fitted
            state after each epoch is in ``history_`` (and ``eval_set``'s scores).
        callback : callable(epoch, estimator), optional
            Deprecated (FutureWarning), kept for one release: use ``progress``, and
            ``history_`` / ``eval_set`` for per-epoch state. Still called after
            every epoch with the 1-based epoch and the estimator.

        Returns
        -------
        self
        """
        validate_params(self)
        if callback is not None:
            warnings.warn("ZeroShotClassifier.fit(callback=) is deprecated and will be removed in the next release: "
                          "use progress= (called with 1 per epoch) and history_ / eval_set", FutureWarning, stacklevel=2)
        check_progress(progress)
        if self.negative_set == "grow" and self.max_negatives < self.n_negatives:
            raise ValueError(f"max_negatives: must be at least n_negatives ({self.n_negatives}) with negative_set='grow', "
                             f"got {self.max_negatives}")
        X = validate_X(self, X, reset=True)
        t = training_targets(y, X.shape[0], class_attributes, sample_attributes, default=self.class_attributes)
        rng = check_random_state(self.random_state)
        all_classes, all_prototypes = t.classes, t.prototypes
        val = None
        self.validation_classes_ = all_classes[:0]
        if self.early_stopping:
            from ._tune import class_holdout_split  # as tune(): model selection's module loads when it is used

            # held-out seen classes: their images and vectors leave training, as unseen classes would
            codes = t.codes
            _, val_codes = class_holdout_split(np.arange(all_classes.size), self.validation_fraction, rng)
            held = np.isin(codes, val_codes)
            val = (X[held], codes[held], {int(c): all_prototypes[c] for c in val_codes})
            self.validation_classes_ = all_classes[val_codes]
            keep = np.nonzero(~held)[0]
            X = X[keep]
            if t.per_image:
                t = training_targets(codes[keep], keep.size, sample_attributes=np.asarray(t.candidates)[keep])
            else:
                train_codes = np.setdiff1d(np.arange(all_classes.size), val_codes)
                t = training_targets(codes[keep], keep.size, (train_codes, all_prototypes[train_codes]))
        sampler = make_sampler(self.sampler).prepare(t.candidates, t.candidate_codes)
        torch = _torch()

        if self.standardize:
            mean = X.mean(axis=0, dtype=np.float64)
            scale = X.std(axis=0, dtype=np.float64)
            scale[scale < 1e-12] = 1.0
        else:
            mean, scale = np.zeros(X.shape[1]), np.ones(X.shape[1])
        self.mean_, self.scale_ = mean.astype(np.float32), scale.astype(np.float32)
        Xs = torch.from_numpy(self._scaled(X))
        C = torch.from_numpy(np.ascontiguousarray(t.candidates, dtype=np.float32))
        n, d = Xs.shape
        a = C.shape[1]
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        # random normal initialization (Section 3), scaled by fan-in so S starts at O(1)
        W_X = (torch.randn(d, a, generator=gen) / math.sqrt(d)).requires_grad_()
        b_X = torch.zeros(a, requires_grad=True)
        W_A = (torch.randn(a, self.m, generator=gen) / math.sqrt(a)).requires_grad_()
        pos = torch.from_numpy(t.pos.astype(np.int64))
        neg0 = sampler._uniform(t.codes, 1, rng)
        with torch.no_grad():
            A = torch.relu(Xs @ W_X + b_X)
            s2p = (((A - C[pos]) @ W_A) ** 2).sum(1)
            s2n = (((A - C[torch.from_numpy(neg0[:, 0])]) @ W_A) ** 2).sum(1)
        # the paper does not say how τ starts: between the positive and negative pairs' S²
        tau = torch.tensor(float(0.5 * (s2p.mean() + s2n.mean())), requires_grad=True)
        self.lr_ = self._step_sizes(Xs)
        opt = torch.optim.SGD([{"params": [W_X], "lr": self.lr_["W_X"]}, {"params": [b_X], "lr": self.lr_["b_X"]},
                               {"params": [W_A], "lr": self.lr_["W_A"]}, {"params": [tau], "lr": self.lr_["tau"]}],
                              lr=self.lr_["W_X"], momentum=self.momentum)

        from ._losses import objective

        self.classes_, self.prototypes_ = t.classes, t.prototypes
        self.history_ = {"loss": [], "pairs": [], "negatives": [], "seconds": [], "sampler_seconds": []}
        if val is not None:
            self.history_["val_accuracy"] = []
            best: tuple = (-np.inf, 0, None)  # (accuracy, epoch, parameters)
            since_best = 0
        self.training_info_: dict = {}
        if eval_set is not None:
            self.history_["eval_accuracy"] = []
        self.sampler_ = sampler
        bs = int(self.batch_size)
        negatives = None
        self.n_epochs_ = 0
        for epoch in range(1, self.n_epochs + 1):
            t0 = time.perf_counter()
            E = P = None
            if sampler.uses_scores(epoch):
                with torch.no_grad():
                    E = (torch.relu(Xs @ W_X + b_X) @ W_A).numpy()
                    P = (C @ W_A).numpy()
            drawn = sampler.sample(E, P, t.pos, t.codes, self.n_negatives, epoch, rng).astype(np.int32)
            negatives = grow_negatives(negatives if epoch > 1 else None, drawn, self._negative_cap())
            neg = torch.from_numpy(negatives.astype(np.int64))
            k = negatives.shape[1]
            t_sampler = time.perf_counter() - t0
            perm = torch.from_numpy(rng.permutation(n))
            total = 0.0
            for start in range(0, n, bs):
                b = perm[start : start + bs]
                A = torch.relu(Xs[b] @ W_X + b_X)
                AW = A @ W_A
                Ypos = C[pos[b]]
                s2_pos = ((AW - Ypos @ W_A) ** 2).sum(1)
                PW = C @ W_A if C.shape[0] <= 4 * b.shape[0] * k else None
                negb = neg[b]
                if PW is not None:
                    s2_neg = ((AW[:, None, :] - PW[negb]) ** 2).sum(-1).reshape(-1)
                else:
                    s2_neg = ((AW[:, None, :] - C[negb] @ W_A) ** 2).sum(-1).reshape(-1)
                loss = objective(s2_pos, s2_neg, A, Ypos, tau, W_X, b_X, W_A, lam=self.lam, mu=self.mu,
                                 balanced=self.balanced)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss.detach()) * b.shape[0]
            if not math.isfinite(total):
                raise TrainingDivergedError(f"training diverged at epoch {epoch} (loss is not finite); lower lr "
                                            f"(now {self.lr}: W_X steps by {self.lr_['W_X']:.3g})")
            self._store(W_X, b_X, W_A, tau)
            self.negatives_ = negatives
            h = self.history_
            h["loss"].append(total / n)
            h["pairs"].append(int(n * (1 + k)))
            h["negatives"].append(int(n * k))
            h["seconds"].append(time.perf_counter() - t0)
            h["sampler_seconds"].append(t_sampler)
            if eval_set is not None:
                from hardneg.eval import mean_per_class_accuracy

                Xv, yv, cav = eval_set
                h["eval_accuracy"].append(mean_per_class_accuracy(yv, self.predict(Xv, class_attributes=cav)))
            logger.debug("epoch %d: loss %.4f (%.2fs, sampler %.2fs)", epoch, h["loss"][-1], h["seconds"][-1], t_sampler)
            self.n_epochs_ = epoch
            if val is not None:
                from hardneg.eval import mean_per_class_accuracy

                acc = mean_per_class_accuracy(val[1], self.predict(val[0], class_attributes=val[2]))
                h["val_accuracy"].append(acc)
                since_best = 0 if acc > best[0] + (self.tol or 0.0) else since_best + 1
                if acc > best[0]:
                    best = (acc, epoch, (self.W_X_, self.b_X_, self.W_A_, self.tau_))
                stop = epoch < self.n_epochs and since_best >= self.n_iter_no_change
            else:
                stop = (self.tol is not None and epoch < self.n_epochs
                        and loss_plateau(h["loss"], self.tol, self.n_iter_no_change))
            if progress is not None:
                # the units add up to n_epochs: a stop counts the epochs it saves as done
                progress(1 + (self.n_epochs - epoch if stop else 0))
            if callback is not None:
                callback(epoch, self)
            if stop:
                logger.debug("stopped after epoch %d: no improvement by %g for %d epochs", epoch, self.tol or 0.0,
                             self.n_iter_no_change)
                break
        self.best_epoch_ = self.n_epochs_
        if val is not None:
            self.best_epoch_ = best[1]
            self.W_X_, self.b_X_, self.W_A_, self.tau_ = best[2]
            self.classes_, self.prototypes_ = all_classes, all_prototypes
        return self

    def _step_sizes(self, Xs) -> dict[str, float]:
        """The SGD step of each parameter (``lr_``): ``lr`` itself, or with ``lr="auto"`` the normalized step of W_X."""
        if self.lr != "auto":
            return dict.fromkeys(("W_X", "b_X", "W_A", "tau"), float(self.lr))
        L = top_eigenvalue(Xs.numpy())
        return {"W_X": AUTO_LR_SCALE / max(L, 1e-12), "b_X": AUTO_LR_OTHER, "W_A": AUTO_LR_OTHER, "tau": AUTO_LR_OTHER}

    def _negative_cap(self) -> int | None:
        """Pairs kept per image: None (replace every epoch) with ``negative_set="redraw"``."""
        return int(self.max_negatives) if self.negative_set == "grow" else None

    def _store(self, W_X, b_X, W_A, tau):
        self.W_X_ = W_X.detach().numpy().copy()
        self.b_X_ = b_X.detach().numpy().copy()
        self.W_A_ = W_A.detach().numpy().copy()
        self.tau_ = float(tau.detach())

    def _scaled(self, X) -> np.ndarray:
        return np.ascontiguousarray((X - self.mean_) / self.scale_, dtype=np.float32)

    # ------------------------------------------------------------------ prediction
    def _embed64(self, X) -> np.ndarray:
        # float64 products: a float32 BLAS product of a row can change with the batch it comes in,
        # so an image's scores would depend on which other images are scored with it
        X = validate_X(self, X, reset=False, min_rows=0)
        return np.maximum(self._scaled(X).astype(np.float64) @ self.W_X_.astype(np.float64) + self.b_X_, 0.0)

    def embed(self, X) -> np.ndarray:
        """[Bucher16] Eq. (2): the images in attribute space, ``Â_X(X)`` (n_samples, n_attributes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Images' features.

        Returns
        -------
        ndarray of shape (n_samples, n_attributes), dtype float32
            ``max(0, x W_X + b_X)`` of the standardized features.
        """
        return self._embed64(X).astype(np.float32)

    def distances(self, X, vectors) -> np.ndarray:
        """[Bucher16] Eq. (1): ``S(X, Y)`` between every image and every attribute vector (rows of ``vectors``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Images' features.
        vectors : array-like of shape (n_vectors, n_attributes)
            Attribute vectors (e.g. class descriptions), one per row.

        Returns
        -------
        ndarray of shape (n_samples, n_vectors), dtype float64
            The distance of every image to every vector in the metric space
            ``W_A`` (smaller is closer).
        """
        E = self._embed64(X) @ self.W_A_.astype(np.float64)
        return NegativeSampler.distances(E, np.asarray(vectors, dtype=np.float64) @ self.W_A_.astype(np.float64))

    def decision_function(self, X, class_attributes=None) -> np.ndarray:
        """``S(X, Y_k)`` ([Bucher16] Eq. (1)) for every image and every candidate class — smaller is closer.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        class_attributes : dict, 2-D array or (labels, matrix), optional
            The candidate classes (e.g. the unseen ones); default the seen classes.
            Columns follow its order (its keys, or row numbers).

        Returns
        -------
        ndarray of shape (n_samples, n_candidates), dtype float64
            The distance of every image to every candidate class (smaller is closer).
        """
        check_is_fitted(self)
        _, vectors = candidate_table(self, class_attributes)
        return self.distances(X, vectors)

    def record_descriptions(self, labels, names, vectors) -> "ZeroShotClassifier":
        """Keep the descriptions of every class (seen and unseen) the model was trained with, saved with it.

        ``labels`` are the classes as ``fit`` saw them, ``names`` their names,
        ``vectors`` their description vectors (rows); sets ``class_descriptions_``
        (labels, vectors) and ``class_names_``. ``hardneg zsl eval`` takes the unseen
        classes' descriptions from here when no CSV is given.

        Parameters
        ----------
        labels : array-like of shape (n_classes,)
            The classes, as ``fit`` saw them; every seen class must be among them.
        names : iterable of str, length n_classes
            Distinct class names, one per label.
        vectors : array-like of shape (n_classes, n_attributes)
            The classes' description vectors, one row per label.

        Returns
        -------
        self : object
            The estimator, with ``class_descriptions_`` and ``class_names_`` set.

        Raises
        ------
        ValueError
            If the names are not distinct and one per class, or a seen class has no description.
        """
        check_is_fitted(self)
        labels, vectors = as_attribute_table((np.asarray(labels), vectors), "vectors", self.prototypes_.shape[1])
        names = np.asarray([str(n) for n in names])
        if names.shape != labels.shape or np.unique(names).size != names.size:
            raise ValueError(f"names: expected {labels.size} distinct names, one per class, got {names.size}")
        if np.setdiff1d(self.classes_, labels).size:
            raise ValueError("labels: every seen class needs a description")
        self.class_descriptions_, self.class_names_ = (labels, vectors), names
        return self

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike):
        """Write the fitted model to ``path`` (.npz + JSON, no pickle).

        Parameters
        ----------
        path : str or path-like
            The file to write (atomically: a temporary file, then renamed).

        Returns
        -------
        Path
            The path written.
        """
        check_is_fitted(self)
        params = {k: getattr(self, k) for k in _PARAMS}
        params["sampler"] = self.sampler if isinstance(self.sampler, str) else type(self.sampler).name
        params["random_state"] = self.random_state if isinstance(self.random_state, (int, type(None))) else None
        arrays = {"W_X": self.W_X_, "b_X": self.b_X_, "W_A": self.W_A_, "tau": np.array([self.tau_], np.float64),
                  "mean": self.mean_, "scale": self.scale_, "classes": np.asarray(self.classes_),
                  "prototypes": self.prototypes_}
        if getattr(self, "class_names_", None) is not None:
            arrays.update(description_labels=np.asarray(self.class_descriptions_[0]), description_names=self.class_names_,
                          descriptions=self.class_descriptions_[1])
        return save_model(path, _KIND, _VERSION, arrays, {"params": params, "history": self.history_,
                                                          "training_info": getattr(self, "training_info_", {}),
                                                          "lr_steps": getattr(self, "lr_", None)})

    @classmethod
    def load(cls, path: str | os.PathLike) -> "ZeroShotClassifier":
        """Read a model written by :meth:`save`; :class:`~hardneg._persist.ModelFileError`
        (one line) if the file is damaged, edited or inconsistent.

        Parameters
        ----------
        path : str or path-like
            A model file written by :meth:`save`.

        Returns
        -------
        ZeroShotClassifier
            The fitted model.
        """
        arrays, meta = load_model(path, _KIND, (_VERSION,), schema=_SCHEMA)
        try:
            params = meta.get("params")
            if isinstance(params, dict):
                params = {**{k: v for k, v in _PARAMS_ADDED.items() if k not in params}, **params}
            if not isinstance(params, dict) or set(params) != set(_PARAMS):
                raise ValueError("missing or unknown parameters")
            model = cls(**params)
            validate_params(model)
            for name in ("W_X", "b_X", "W_A", "tau", "mean", "scale", "prototypes"):
                v = arrays[name]
                if not np.isfinite(v).all() or np.abs(v).max(initial=0.0) > _MAX_VALUE:
                    raise ValueError(f"array {name!r} holds NaN, infinite or out-of-range values")
            d, a = arrays["W_X"].shape
            C = arrays["classes"].shape[0]
            checks = [(arrays["b_X"].shape, (a,)), (arrays["W_A"].shape, (a, params["m"])), (arrays["tau"].shape, (1,)),
                      (arrays["mean"].shape, (d,)), (arrays["scale"].shape, (d,)), (arrays["prototypes"].shape, (C, a))]
            for got, want in checks:
                if got != want:
                    raise ValueError(f"array shapes do not fit together ({got} where {want} is expected)")
            if C < 2 or np.unique(arrays["classes"]).size != C:
                raise ValueError("the class list needs at least 2 distinct classes")
            if (arrays["scale"] <= 0).any():
                raise ValueError("feature scales must be positive")
            steps = meta.get("lr_steps")
            if steps is None:  # written before issue 38: one step for every parameter
                steps = dict.fromkeys(("W_X", "b_X", "W_A", "tau"), params["lr"])
            if (not isinstance(steps, dict) or set(steps) != {"W_X", "b_X", "W_A", "tau"}
                    or not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in steps.values())):
                raise ValueError("lr_steps must map W_X, b_X, W_A and tau to positive step sizes")
            record = [n for n in ("description_labels", "description_names", "descriptions") if n in arrays]
            if record:
                if len(record) != 3:
                    raise ValueError(f"class descriptions are incomplete (only {record})")
                n_desc = arrays["description_labels"].shape[0]
                if arrays["description_names"].shape != (n_desc,) or arrays["descriptions"].shape != (n_desc, a):
                    raise ValueError("class descriptions' shapes do not fit together")
                if not np.isfinite(arrays["descriptions"]).all():
                    raise ValueError("array 'descriptions' holds NaN or infinite values")
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"{path}: inconsistent zero-shot model ({str(exc).splitlines()[0]})") from None
        model.W_X_ = arrays["W_X"].astype(np.float32)
        model.b_X_ = arrays["b_X"].astype(np.float32)
        model.W_A_ = arrays["W_A"].astype(np.float32)
        model.tau_ = float(arrays["tau"][0])
        model.mean_, model.scale_ = arrays["mean"].astype(np.float32), arrays["scale"].astype(np.float32)
        model.classes_, model.prototypes_ = arrays["classes"], arrays["prototypes"].astype(np.float32)
        model.n_features_in_ = d
        model.history_ = meta.get("history", {})
        model.lr_ = {k: float(v) for k, v in steps.items()}
        losses = model.history_.get("loss") if isinstance(model.history_, dict) else None
        model.n_epochs_ = len(losses) if isinstance(losses, list) else int(params["n_epochs"])
        info = meta.get("training_info", {})
        if not isinstance(info, dict):
            raise ModelFileError(f"{path}: inconsistent zero-shot model (training_info is not a mapping)")
        model.training_info_ = info
        if "descriptions" in arrays:
            model.class_descriptions_ = (arrays["description_labels"], arrays["descriptions"].astype(np.float32))
            model.class_names_ = arrays["description_names"]
        return model

    # ------------------------------------------------------------------ model selection
    @classmethod
    def tune(cls, X, y, class_attributes=None, *, param_grid=None, sample_attributes=None, holdout: float = 0.2,
             random_state=None, **params):
        """[Bucher16]'s model selection (Section 3): grid-search (λ, μ, m) holding out 20% of the
        training classes, then refit on all.

        Every grid point is fitted on the images of the other 80% of the classes (with
        the stopping rule of :meth:`fit`) and scored by zero-shot mean per-class
        accuracy on the held-out classes' images, predicted among those classes only.
        ``params`` are fixed parameters; ``param_grid`` maps names to lists (default
        ``DEFAULT_GRID``: ``lam`` ∈ {0.1, 1, 10}, ``mu`` ∈ {1e-4, 1e-3, 1e-2, 1e-1},
        ``m`` ∈ {16, 64}; μ on the per-pair scale of :func:`~hardneg.zeroshot._losses.objective`,
        the paper's μ divided by the pairs of an epoch). Returns the refitted estimator,
        with the grid's scores in ``tuning_results_`` and the chosen point in ``best_params_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training images' features.
        y : array-like of shape (n_samples,)
            Seen class of each image.
        class_attributes : dict, 2-D array or (labels, matrix), optional
            One attribute vector per class, as in :meth:`fit`.
        param_grid : dict or list of dict, optional
            Parameter names to lists of values to try; default the grid above.
        sample_attributes : array-like of shape (n_samples, n_attributes), optional
            Per-image attribute vectors instead, as in :meth:`fit`.
        holdout : float, default=0.2
            Fraction of the training classes held out to score each grid point.
        random_state : int, Generator or None, optional
            Seed of the class split and of every fit.
        **params
            Fixed parameters of every candidate and of the refitted model.

        Returns
        -------
        ZeroShotClassifier
            The model refitted on all of ``X`` with the best grid point, its grid
            scores in ``tuning_results_``.
        """
        from ._tune import class_holdout_search

        grid = param_grid if param_grid is not None else DEFAULT_GRID
        base = cls(random_state=random_state, **params)
        best, results = class_holdout_search(base, grid, X, y, class_attributes, sample_attributes=sample_attributes,
                                             holdout=holdout, random_state=random_state)
        model = cls(random_state=random_state, **{**params, **best})
        model.fit(X, y, class_attributes, sample_attributes=sample_attributes)
        model.tuning_results_ = results
        model.best_params_ = best
        return model

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


def load_zero_shot(path: str | os.PathLike) -> ZeroShotClassifier:
    """Load a model saved by :meth:`ZeroShotClassifier.save`.

    Parameters
    ----------
    path : str or path-like
        The model file.

    Returns
    -------
    ZeroShotClassifier
        The fitted model.

    Raises
    ------
    ModelFileError
        If the file is not a valid zero-shot model.
    """
    return ZeroShotClassifier.load(path)
