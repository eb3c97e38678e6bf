"""The model and the objective of [Bucher16] Eq. (1)-(6) and (11).

[Bucher16] Bucher, Herbin & Jurie, "Hard Negative Mining for Metric Learning
Based Zero-Shot Classification", ECCV 2016 workshops.

Functions of torch tensors (torch is imported by the caller, never at import
of :mod:`hardneg`). Notation: ``A = Â_X(X)`` the image embedded into
attribute space, ``Y`` an attribute vector, ``Z = +1`` for a positive pair
(image, its own class's vector) and ``-1`` for a negative pair.

The pair hinge, [Bucher16] Eq. (3)
-----------------------
The workshop paper prints ``l_H = max(0, 1 - Z (τ - S)²)``. That form does not
depend on the sign of ``τ - S``: for a negative pair (Z = -1) it is
``1 + (τ - S)²``, never zero and smallest at ``S = τ``, so it pulls negative
pairs *towards* the threshold instead of beyond it; for a positive pair it
rewards any ``S`` far from ``τ``, on either side. ``Z`` then cannot separate
positive from negative pairs. Bucher et al. (ECCV 2016, the method this paper
extends) compare the *squared* distance with the threshold,

    l_H = max(0, 1 - Z (τ - S²)),

which asks ``S² <= τ - 1`` for positive pairs and ``S² >= τ + 1`` for negative
ones. :func:`pair_hinge` implements that form (and departs from the print).
"""

from __future__ import annotations

__all__ = ["embed", "squared_distance", "pair_hinge", "attribute_loss", "regularizer", "objective"]


def embed(X, W_X, b_X):
    """[Bucher16] Eq. (2): ``Â_X(X) = max(0, Xᵀ W_X + b_X)``, row-wise for a batch ``X`` (n, d)."""
    import torch

    return torch.relu(X @ W_X + b_X)


def squared_distance(A, Y, W_A):
    """[Bucher16] Eq. (1) squared: ``S² = ‖(A - Y)ᵀ W_A‖²`` for rows of ``A`` and ``Y`` (broadcasting)."""
    return (((A - Y) @ W_A) ** 2).sum(-1)


def pair_hinge(s2, z, tau):
    """[Bucher16] Eq. (3) in the form of Bucher et al. 2016: ``max(0, 1 - Z (τ - S²))`` (see the module notes)."""
    import torch

    return torch.relu(1.0 - z * (tau - s2))


def attribute_loss(A_pos, Y_pos):
    """[Bucher16] Eq. (4): ``l_A = ‖Â_X(X) - Y‖²`` on positive pairs only."""
    return ((A_pos - Y_pos) ** 2).sum(-1)


def regularizer(W_X, b_X, W_A):
    """[Bucher16] Eq. (5): ``R = ‖W_X‖²_F + ‖b_X‖² + ‖W_A‖²_F``."""
    return (W_X**2).sum() + (b_X**2).sum() + (W_A**2).sum()


def objective(s2_pos, s2_neg, A_pos, Y_pos, tau, W_X, b_X, W_A, *, lam: float, mu: float, balanced: bool):
    """The training objective on one mini-batch of pairs.

    ``balanced=False``, [Bucher16] Eq. (6)::

        L = [Σ_{P∪N} l_H + λ Σ_P l_A] / (|P| + |N|) + μ R

    Departure from the paper: [Bucher16] Eq. (6) sums the pair terms without
    dividing them. Here the sums are divided by the number of pairs in the
    mini-batch, so that the step size ``lr`` and the weight μ of the
    regularizer keep their meaning whatever the batch size, the number of
    negatives per image ``n`` and the size of the growing negative set: with
    a plain sum, every extra pair would scale the data term's gradient (and
    shrink μ's relative weight), and a learning rate tuned for ``n = 1`` would
    diverge for ``n = 50``. The minimizer of a full-batch objective is the
    same up to that rescaling of μ.

    ``balanced=True``, [Bucher16] Eq. (11): positive and negative terms each divided by
    the size of their own set::

        L = (1/|P|) Σ_P (l_H + λ l_A) + (1/|N|) Σ_N l_H + μ R

    Parameters
    ----------
    s2_pos : tensor (n_pos,)
        Squared distances of the positive pairs.
    s2_neg : tensor (n_neg,)
        Squared distances of the negative pairs.
    A_pos, Y_pos : tensors (n_pos, n_attributes)
        Embedded images and their own attribute vectors ([Bucher16] Eq. (4)).
    tau : tensor ()
        The learned threshold.
    W_X, b_X, W_A : tensors
        The parameters, for [Bucher16] Eq. (5).
    lam, mu : float
        λ and μ of [Bucher16] Eq. (6).
    balanced : bool
        [Bucher16] Eq. (11) rather than [Bucher16] Eq. (6).
    """
    h_pos = pair_hinge(s2_pos, 1.0, tau)
    h_neg = pair_hinge(s2_neg, -1.0, tau)
    l_a = attribute_loss(A_pos, Y_pos)
    if balanced:
        data = (h_pos + lam * l_a).mean() + (h_neg.mean() if h_neg.numel() else 0.0)
    else:
        data = (h_pos.sum() + h_neg.sum() + lam * l_a.sum()) / (h_pos.numel() + h_neg.numel())
    return data + mu * regularizer(W_X, b_X, W_A)
