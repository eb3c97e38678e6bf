"""ConSE: zero-shot search by description with no training ([Norouzi14]).

[Norouzi14] Norouzi, Mikolov, Bengio, Singer, Shlens, Frome, Corrado & Dean,
"Zero-shot learning by convex combination of semantic embeddings", ICLR 2014.

An n-way classifier trained on a set of seen classes ``Y0`` gives ``p(y | x)``
([Norouzi14] Eq. (1)). An image is mapped into the semantic space of the class
labels as the probability-weighted mean of the embeddings ``s(y)`` of its
``T`` most probable seen classes ([Norouzi14] Eq. (2)):

    f(x) = 1/Z Σ_{t=1..T} p(ŷ(x, t) | x) · s(ŷ(x, t)),   Z = Σ_{t=1..T} p(ŷ(x, t) | x)

where ``ŷ(x, t)`` is the ``t``-th most probable seen class. An unseen class
(here: any text) ``y'`` with embedding ``s(y')`` scores ``cos(f(x), s(y'))``
([Norouzi14] Eq. (3)); the paper predicts the unseen class of largest cosine,
search ranks the images by it.

In hardneg the seen classes are the 1,000 ImageNet classes of EfficientNet-Lite0's own
classifier head (``_fc``, applied to the pooled features a CNN store keeps), the class
embeddings ``s(y)`` are all-MiniLM-L6-v2 sentence embeddings of each class's WordNet text
(the paper uses a skip-gram word embedding of the label) and a query is the same model's
embedding of the query text.

Departures from [Norouzi14], declared: the label embedding is a sentence embedding of
``"lemmas: definition"`` (``class_text="lemma_definition"``; the paper's word vector of the
label name corresponds to ``class_text="lemma"``; docs/methods/zeroshot.md compares the two);
the classifier is EfficientNet-Lite0's ImageNet head, not the paper's ImageNet CNN.

Extra, not in [Norouzi14] (``prior_power``, default 0: [Norouzi14] Eq. (2) as printed): the class
probabilities are divided by the collection's mean probability of each class to the power
``a`` before the top ``T`` are taken, ``p̃(y | x) ∝ p(y | x) / p̄(y)^a`` with
``p̄(y) = mean_x p(y | x)`` over the data given to :meth:`fit`. A collection unlike ImageNet
(clip art) puts most of its mass on a few classes for every item ("comic book",
"envelope"); dividing by the prior ranks the classes that set an item apart from the rest of
its collection. Measured beside the paper's version in docs/methods/zeroshot.md.

Examples
--------
A 3-class head on 2-d features, class embeddings in 2-d, T = 2 (no package needed):

>>> import numpy as np
>>> from hardneg.zeroshot import ConSE
>>> head = (np.eye(3, 2) * 10.0, np.zeros(3))       # class 0 fires on x0, class 1 on x1
>>> S = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
>>> model = ConSE(n_top=2, head=head, class_embeddings=S).fit()
>>> model.transform([[1.0, 0.0]]).round(3)           # mostly class 0
array([[1., 0.]], dtype=float32)
>>> model.decision_function([[1.0, 0.0], [0.0, 1.0]], class_attributes=[[0.0, 1.0]]).round(2).ravel().tolist()
[0.0, 1.0]
"""

from __future__ import annotations

import functools
import logging
import os
from importlib import resources
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from hardneg._persist import ArraySpec, ModelFileError, load_model, save_model
from hardneg._validation import Interval, StrOptions, validate_params

__all__ = ["ConSE", "CLASS_TEXTS", "imagenet_classes", "imagenet_head", "check_conse_store", "CONSE_EXTRACTOR"]

logger = logging.getLogger(__name__)

_KIND = "hardneg.zeroshot.ConSE"
_VERSION = 1
#: ways to write an ImageNet class as text before it is embedded
CLASS_TEXTS = ("lemma", "lemma_definition")
#: the extractor whose features the ImageNet head applies to (the store's ``attrs["extractor"]["model"]``)
CONSE_EXTRACTOR = "efficientnet-lite0-imagenet"
#: the 1,000 ImageNet classes in the classifier's order: WordNet id, lemmas, definition (from timm's class files)
_CLASS_TABLE = "data/imagenet_classes.tsv"


@functools.lru_cache(maxsize=1)
def _class_table() -> tuple[tuple[str, str, str], ...]:
    """``(wnid, lemmas, definition)`` per ImageNet class, read from the table shipped with hardneg."""
    text = resources.files(__package__).joinpath(_CLASS_TABLE).read_text(encoding="utf-8")
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")][1:]
    if len(rows) != 1000 or any(len(r) != 3 for r in rows):
        raise RuntimeError(f"hardneg's ImageNet class table ({_CLASS_TABLE}) is damaged; reinstall hardneg")
    return tuple((w, lem, d) for w, lem, d in rows)


def imagenet_classes(class_text: str = "lemma_definition") -> tuple[list[str], list[str]]:
    """The 1,000 ImageNet classes in the classifier's order: ``(wnids, texts)``.

    Parameters
    ----------
    class_text : {"lemma", "lemma_definition"}
        ``"lemma"``: the synset's lemmas (``"tabby, tabby cat"``); ``"lemma_definition"``:
        ``"tabby, tabby cat: a cat with a grey or tawny coat mottled with black"``.

    Returns
    -------
    wnids : list of str
        WordNet ids (``n02123045``), in the order of the classifier's outputs.
    texts : list of str
        One text per class, to embed.
    """
    if class_text not in CLASS_TEXTS:
        raise ValueError(f"class_text: expected one of {', '.join(CLASS_TEXTS)}, got {class_text!r}")
    table = _class_table()
    wnids = [w for w, _, _ in table]
    if class_text == "lemma":
        return wnids, [lem for _, lem, _ in table]
    return wnids, [f"{lem}: {d}" if d else lem for _, lem, d in table]


def imagenet_head() -> tuple[np.ndarray, np.ndarray]:
    """EfficientNet-Lite0's ImageNet classifier ``(W (1000, 1280), b (1000,))``, float32.

    Read from the weights file of the ``cnn`` extra (``torch.load(weights_only=True)``: tensors
    only, no code). The logits of pooled features ``x`` are ``x Wᵀ + b``, as the network's own
    ``_fc`` layer (dropout is inactive at inference).
    """
    from hardneg.features._cnn import EfficientNetLite0, _require_torch

    torch = _require_torch()
    state = torch.load(EfficientNetLite0._weights_path(), map_location="cpu", weights_only=True)
    W = state["_fc.weight"].numpy().astype(np.float32)
    b = state["_fc.bias"].numpy().astype(np.float32)
    return np.ascontiguousarray(W), np.ascontiguousarray(b)


def check_conse_store(store) -> None:
    """Raise a one-line ``ValueError`` unless ConSE can read the store's vectors.

    ConSE applies EfficientNet-Lite0's ImageNet head to the stored vectors, so they must be
    that network's pooled features, not normalised (``l2_normalize`` off), dense, 1280-d.
    """
    ext = (store.attrs or {}).get("extractor") or {}
    how = "re-extract it with the default CNN features: hardneg extract images IMAGES -o STORE --features cnn"
    if store.is_sparse or ext.get("model") != CONSE_EXTRACTOR:
        kind = "bag-of-words" if store.is_sparse else (ext.get("model") or ext.get("extractor") or "imported vectors")
        raise ValueError(f"{store.path}: search by description with no training (ConSE) needs EfficientNet-Lite0 "
                         f"features, this store holds {kind}; {how}")
    if ext.get("l2_normalize"):
        raise ValueError(f"{store.path}: ConSE needs the pooled EfficientNet-Lite0 features before normalisation "
                         f"(the store was extracted with l2_normalize); {how}")
    if store.dim != 1280:
        raise ValueError(f"{store.path}: ConSE needs 1280-d EfficientNet-Lite0 features, the store has {store.dim}-d; {how}")


def _softmax(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=1, keepdims=True)
    np.exp(Z, out=Z)
    Z /= Z.sum(axis=1, keepdims=True)
    return Z


def _unit_rows(A: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(A, axis=1, keepdims=True)
    return A / np.maximum(n, np.finfo(A.dtype).tiny)


class ConSE(BaseEstimator):
    """Convex combination of semantic embeddings ([Norouzi14] Eq. (1)-(3)): zero-shot with no training.

    Parameters
    ----------
    n_top : int, default 10
        ``T`` of [Norouzi14] Eq. (2): the most probable seen classes whose embeddings are
        averaged (the paper reports T = 10 as its best).
    class_text : {"lemma", "lemma_definition"}, default "lemma_definition"
        How an ImageNet class is written before it is embedded (see :func:`imagenet_classes`).
        Only used when ``class_embeddings`` is None.
    head : (W, b) or None
        The seen-class classifier: logits ``x Wᵀ + b`` give ``p(y | x)`` by softmax
        ([Norouzi14] Eq. (1)). None: EfficientNet-Lite0's ImageNet head (the ``cnn`` extra).
    class_embeddings : array (n_classes, n_dims) or None
        ``s(y)`` for each seen class, in the head's order. None: the all-MiniLM-L6-v2
        embeddings of the ImageNet class texts (the ``conse`` extra).
    prior_power : float, default 0.0
        ``a`` of the prior correction (an extra, see the module docstring): 0 is
        [Norouzi14] Eq. (2); above 0, :meth:`fit` needs the collection ``X`` to estimate ``p̄(y)``.

    Attributes
    ----------
    coef_ : ndarray (n_classes, n_features) float32
    intercept_ : ndarray (n_classes,) float32
    class_embeddings_ : ndarray (n_classes, n_dims) float32
        Unit-norm ``s(y)``.
    prototypes_ : ndarray
        Same as ``class_embeddings_`` (the seen classes' vectors, as other zero-shot models name them).
    classes_ : ndarray (n_classes,) of str
        ImageNet WordNet ids, or row numbers for a given head.
    class_prior_ : ndarray (n_classes,) float32 or None
        ``p̄(y)``, the mean ``p(y | x)`` over the ``X`` given to :meth:`fit` (None when none was given).
    n_features_in_ : int
    """

    _parameter_constraints = {
        "n_top": [Interval(Integral, 1, None, closed="left")],
        "class_text": [StrOptions(set(CLASS_TEXTS))],
        "head": [None, tuple, list],
        "class_embeddings": [None, "array-like"],
        "prior_power": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, n_top: int = 10, *, class_text: str = "lemma_definition", head: Any = None, class_embeddings: Any = None,
                 prior_power: float = 0.0):
        self.n_top = n_top
        self.class_text = class_text
        self.head = head
        self.class_embeddings = class_embeddings
        self.prior_power = prior_power

    def fit(self, X=None, y=None):
        """Set up the head and the class embeddings; with ``X``, estimate the class prior ``p̄(y)``.

        Parameters
        ----------
        X : array-like (n_samples, n_features), optional
            The collection to search: ``class_prior_`` is its mean ``p(y | x)``. Needed when
            ``prior_power > 0``; nothing else is learned.
        y : ignored
            Accepted for the scikit-learn API.

        Returns
        -------
        self : object
        """
        validate_params(self)
        if self.head is None:
            W, b = imagenet_head()
            classes = None
        else:
            if len(self.head) != 2:
                raise ValueError("head: expected a pair (W, b)")
            W = np.asarray(self.head[0], dtype=np.float32)
            b = np.asarray(self.head[1], dtype=np.float32)
            if W.ndim != 2 or b.shape != (W.shape[0],):
                raise ValueError(f"head: expected W (n_classes, n_features) and b (n_classes,), got {W.shape} and {b.shape}")
            classes = np.arange(W.shape[0]).astype(str)
        if self.class_embeddings is None:
            from ._descriptions import embed_texts

            wnids, texts = imagenet_classes(self.class_text)
            S = embed_texts(texts)
            classes = np.asarray(wnids) if classes is None else classes
        else:
            S = np.asarray(self.class_embeddings, dtype=np.float32)
            if classes is None:
                classes = imagenet_classes("lemma")[0]
        if S.ndim != 2 or S.shape[0] != W.shape[0]:
            raise ValueError(f"class_embeddings: expected one row per class of the head ({W.shape[0]}), got shape {S.shape}")
        if not (np.isfinite(W).all() and np.isfinite(b).all() and np.isfinite(S).all()):
            raise ValueError("head / class_embeddings: must be finite")
        self.coef_ = np.ascontiguousarray(W)
        self.intercept_ = np.ascontiguousarray(b)
        self.class_embeddings_ = np.ascontiguousarray(_unit_rows(S.astype(np.float32)))
        self.prototypes_ = self.class_embeddings_
        self.classes_ = np.asarray(classes).astype(str)
        self.n_features_in_ = int(W.shape[1])
        self.class_prior_ = None
        if X is not None:
            P = self.predict_proba(X)
            self.class_prior_ = P.mean(axis=0).astype(np.float32)
        elif self.prior_power > 0:
            raise ValueError("X: prior_power > 0 divides by the collection's class prior; pass the collection to fit(X)")
        return self

    def add_prior(self, P_sum: np.ndarray, n: int) -> "ConSE":
        """Set ``class_prior_`` from a sum of ``p(y | x)`` over ``n`` rows (a collection read chunk by chunk).

        Parameters
        ----------
        P_sum : array (n_classes,)
            ``Σ_x p(y | x)``.
        n : int
            The number of rows summed.

        Returns
        -------
        self : object
        """
        check_is_fitted(self)
        P_sum = np.asarray(P_sum, dtype=np.float64).ravel()
        if P_sum.shape != (self.coef_.shape[0],) or n < 1 or not np.isfinite(P_sum).all():
            raise ValueError(f"P_sum: expected {self.coef_.shape[0]} finite sums over n >= 1 rows, got {P_sum.shape} over {n}")
        self.class_prior_ = (P_sum / n).astype(np.float32)
        return self

    def _check_X(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X: expected shape (n, {self.n_features_in_}) (the head's input), got {X.shape}")
        if not np.isfinite(X).all():
            raise ValueError("X: contains NaN or infinity")
        return X

    def predict_proba(self, X) -> np.ndarray:
        """``p(y | x)`` over the seen classes ([Norouzi14] Eq. (1)): softmax of the head's logits.

        Parameters
        ----------
        X : array-like (n_samples, n_features)

        Returns
        -------
        ndarray (n_samples, n_classes) float32
        """
        X = self._check_X(X)
        return _softmax(X @ self.coef_.T + self.intercept_)

    def transform(self, X) -> np.ndarray:
        """The semantic vector ``f(x)`` of each image ([Norouzi14] Eq. (2)).

        Parameters
        ----------
        X : array-like (n_samples, n_features)

        Returns
        -------
        ndarray (n_samples, n_dims) float32
            ``1/Z Σ_t p(ŷ(x,t)|x) s(ŷ(x,t))`` over the ``T = n_top`` most probable classes
            (with ``prior_power``, of ``p / p̄^a``).
        """
        P = self.predict_proba(X)
        if self.prior_power > 0:
            if getattr(self, "class_prior_", None) is None:
                raise ValueError("prior_power > 0: the class prior is unknown; fit(X) on the collection first")
            P /= np.maximum(self.class_prior_, np.float32(1e-12)) ** np.float32(self.prior_power)  # the extra: p / p̄^a
        T = min(int(self.n_top), P.shape[1])
        top = np.argpartition(-P, T - 1, axis=1)[:, :T]  # the T most probable classes (their order does not matter to the sum)
        p = np.take_along_axis(P, top, axis=1)
        p /= p.sum(axis=1, keepdims=True)  # 1/Z
        return np.einsum("nt,ntd->nd", p, self.class_embeddings_[top]).astype(np.float32)

    def decision_function(self, X, class_attributes=None) -> np.ndarray:
        """``cos(f(x), s(y'))`` for every image and candidate ([Norouzi14] Eq. (3)); larger is closer.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        class_attributes : array (n_candidates, n_dims), dict ``{class: vector}`` or None
            The candidates' embeddings (e.g. the embedding of a text query); default the seen classes.

        Returns
        -------
        ndarray (n_samples, n_candidates) float64
        """
        _, V = self._candidates(class_attributes)
        F = _unit_rows(self.transform(X).astype(np.float64))
        return F @ _unit_rows(V.astype(np.float64)).T

    def predict(self, X, class_attributes=None) -> np.ndarray:
        """The candidate of largest ``cos(f(x), s(y'))`` ([Norouzi14] Eq. (3)).

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        class_attributes : as for :meth:`decision_function`

        Returns
        -------
        ndarray (n_samples,)
        """
        labels, _ = self._candidates(class_attributes)
        return labels[np.argmax(self.decision_function(X, class_attributes), axis=1)]

    def _candidates(self, class_attributes):
        check_is_fitted(self)
        if class_attributes is None:
            return self.classes_, self.class_embeddings_
        if isinstance(class_attributes, dict):
            labels = np.asarray(list(class_attributes))
            V = np.asarray([np.asarray(v, dtype=np.float32).ravel() for v in class_attributes.values()], dtype=np.float32)
        else:
            V = np.asarray(class_attributes, dtype=np.float32)
            V = V.reshape(1, -1) if V.ndim == 1 else V
            labels = np.arange(V.shape[0])
        d = self.class_embeddings_.shape[1]
        if V.ndim != 2 or V.shape[1] != d or not np.isfinite(V).all():
            raise ValueError(f"class_attributes: expected finite vectors of length {d} (the class embeddings'), got shape {V.shape}")
        return labels, V

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> Path:
        """Write the head and the class embeddings to a portable ``.npz`` model file (no pickle).

        Parameters
        ----------
        path : str or Path
            The file to write (atomically).

        Returns
        -------
        Path
            ``path``; :func:`hardneg.load` reads it back.
        """
        check_is_fitted(self)
        arrays = {"coef": self.coef_, "intercept": self.intercept_, "class_embeddings": self.class_embeddings_,
                  "classes": self.classes_.astype(str)}
        if getattr(self, "class_prior_", None) is not None:
            arrays["class_prior"] = self.class_prior_
        return save_model(path, _KIND, _VERSION, arrays,
                          {"n_top": int(self.n_top), "class_text": self.class_text, "prior_power": float(self.prior_power)})

    @classmethod
    def load(cls, path: str | os.PathLike) -> "ConSE":
        """Read a model written by :meth:`save` (checked: kind, version, shapes).

        Parameters
        ----------
        path : str or Path
            A file written by :meth:`save`.

        Returns
        -------
        ConSE
            The fitted model.
        """
        arrays, meta = load_model(path, _KIND, {_VERSION}, schema={
            "coef": ArraySpec("f", 2), "intercept": ArraySpec("f", 1), "class_embeddings": ArraySpec("f", 2),
            "classes": ArraySpec("U", 1), "class_prior": ArraySpec("f", 1, optional=True)})
        W, b, S, c = arrays["coef"], arrays["intercept"], arrays["class_embeddings"], arrays["classes"]
        prior = arrays.get("class_prior")
        try:
            model = cls(n_top=int(meta["n_top"]), class_text=str(meta["class_text"]), head=(W, b), class_embeddings=S)
            if c.shape != (W.shape[0],):
                raise ValueError("one class name per row of the head")
            model.fit()
            model.prior_power = float(meta.get("prior_power", 0.0))
            if model.prior_power < 0 or (model.prior_power > 0 and prior is None):
                raise ValueError("prior_power > 0 needs the class prior")
            if prior is not None:
                model.add_prior(prior, 1)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"{path}: ConSE file is inconsistent ({str(exc).splitlines()[0]})") from None
        model.classes_ = c.astype(str)
        model.class_embeddings_ = model.prototypes_ = np.ascontiguousarray(S, dtype=np.float32)  # as saved (unit norm already)
        return model
