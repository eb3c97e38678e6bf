"""Visual-word codebooks (FAISS k-means) and bag-of-visual-words histograms.

A codebook is ``K`` centroids learned by k-means on a sample of local
descriptors; an image becomes the histogram of its descriptors' nearest
centroids. The Negative Bootstrap paper uses ``K = 1024`` with
l1-normalized dense histograms (the histogram-intersection kernel wants
them); SOLIS uses 10K-1M words as sparse vectors, optionally weighted by
TF-IDF, ``w_j = tf_j * idf_j`` with ``idf_j = log((1 + N) / (1 + df_j)) + 1``
(the smoothed form, so a word seen in every sample image keeps weight 1).
Document frequencies are counted on the images the codebook was learned
from, so a single pass over the collection suffices.
"""

from __future__ import annotations

import logging
import warnings
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._persist import ArraySpec, ModelFileError, load_model, save_model
from .._typing import RandomState
from .._validation import (
    RANDOM_STATE,
    Interval,
    StrOptions,
    check_matrix,
    check_memory,
    check_random_state,
    validate_params,
    validate_X,
)

from ._vocab_tree import VocabularyTree, tree_depth

logger = logging.getLogger(__name__)

__all__ = ["Codebook", "BagOfWords"]

_KIND = "hardneg.Codebook"
_VERSION = 1
CODEBOOK_FILE = "codebook.npz"
_HNSW_FROM = 16384  # beyond this many words exact assignment costs too much per descriptor
MAX_WORDS = 2**21  # SOLIS uses up to 1M words; k-means past that runs for days


def _require_faiss():
    import faiss

    return faiss


class Codebook(BaseEstimator):
    """Visual words: FAISS k-means centroids and nearest-centroid assignment.

    A scikit-learn estimator: ``fit(X)`` learns the words, ``predict(X)``
    gives each descriptor's nearest word.

    Parameters
    ----------
    n_words : int in [1, 2**21]
        Number of visual words ``K`` (1,024 dense; 10K / 100K sparse).
    n_iter : int
        k-means iterations.
    max_descriptors : int or None
        Descriptors sampled for k-means (at most; all if fewer). Default:
        ``100 * n_words``, at least 100,000 and at most 2,000,000 (k-means
        costs ``O(max_descriptors * n_words)`` per iteration).
    assign : {"auto", "exact", "hnsw"}
        Nearest-centroid search: exact (``IndexFlatL2``) or approximate
        (HNSW graph, 32 links); ``"auto"`` is exact up to 16,384 words.
        Ignored with ``tree_branching``.
    tree_branching : int or None
        If set, learn the words as the leaves of a hierarchical k-means
        vocabulary tree with this branching factor
        (:class:`~hardneg.features._vocab_tree.VocabularyTree`, Nistér &
        Stewénius 2006) and assign by greedy descent; ``n_words`` must then
        be a power of it (10K, 100K, 1M with 10). For 100K-1M words, where
        flat k-means is out of reach. None: flat k-means (the default).
    random_state : int, Generator or None

    Attributes
    ----------
    centroids_ : ndarray (n_words, d) float32
    idf_ : ndarray (n_words,) float32
        Inverse document frequencies from the fitting images (ones if
        fitted on a plain descriptor matrix).
    n_features_in_ : int
        Descriptor dimension ``d``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> desc = np.vstack([rng.normal(c, 0.1, (50, 2)) for c in (0.0, 5.0)]).astype(np.float32)
    >>> cb = Codebook(n_words=2, random_state=0).fit(desc)
    >>> h = cb.histograms([desc[:50], desc[50:60]])
    >>> np.allclose(h.sum(axis=1), 1.0), sorted(h[0].tolist())
    (True, [0.0, 1.0])
    """

    _parameter_constraints = {
        "n_words": [Interval(Integral, 1, MAX_WORDS, closed="both")],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "max_descriptors": [Interval(Integral, 1, None, closed="left"), None],
        "assign": [StrOptions({"auto", "exact", "hnsw"})],
        "tree_branching": [Interval(Integral, 2, 1024, closed="both"), None],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, n_words: int = 1024, *, n_iter: int = 20, max_descriptors: int | None = None, assign: str = "auto",
                 tree_branching: int | None = None, random_state: RandomState = None):
        self.n_words = n_words
        self.n_iter = n_iter
        self.max_descriptors = max_descriptors
        self.assign = assign
        self.tree_branching = tree_branching
        self.random_state = random_state

    def _check_params(self) -> None:
        validate_params(self)
        if self.tree_branching is not None:
            tree_depth(int(self.n_words), int(self.tree_branching))

    def fit(self, X, y=None, *, random_state=None) -> Codebook:
        """Learn the words from descriptors ``X``: one ``(n, d)`` array, or a list of per-image ``(m, d)`` arrays.

        A list also gives document frequencies for TF-IDF. ``y`` is ignored.
        ``random_state`` here is deprecated: set it in the constructor.

        Parameters
        ----------
        X : array-like of shape (n_descriptors, d), or list of arrays of shape (m_i, d)
            The descriptors (at least ``n_words`` of them); a list gives one array per image.
        y : None
            Ignored.
        random_state : int, Generator or None, optional
            Deprecated (FutureWarning): pass ``random_state`` to the constructor.

        Returns
        -------
        self : object
            Fitted codebook (``centroids_``, ``idf_``).
        """
        self._check_params()
        if random_state is not None:
            warnings.warn(
                "Codebook.fit(..., random_state=) is deprecated; pass random_state to Codebook(...) instead",
                FutureWarning,
                stacklevel=2,
            )
        faiss = _require_faiss()
        rng = check_random_state(self.random_state if random_state is None else random_state)
        # a list of per-image (m, d) arrays, not a plain matrix written as a list of rows
        per_image = isinstance(X, (list, tuple)) and any(np.ndim(s) == 2 for s in X)
        if per_image:
            n_images = len(X)
            sets = [s for s in (np.asarray(d, np.float32) for d in X) if s.ndim == 2 and s.shape[0] > 0]
            if not sets:
                raise ValueError("X: every image has zero descriptors")
            X = validate_X(self, np.vstack(sets), reset=True)
        else:
            X = validate_X(self, X, reset=True, min_rows=1)
        n_words = int(self.n_words)
        if X.shape[0] < n_words:
            raise ValueError(
                f"X: {X.shape[0]} sample(s) (descriptors) cannot make {n_words} words; k-means needs at least as many descriptors as words"
            )
        cap = self.max_descriptors if self.max_descriptors is not None else min(max(100 * n_words, 100_000), 2_000_000)
        n_train = min(X.shape[0], cap)
        # the training sample, the centroids and k-means' assignment buffers; an HNSW graph past 16K words
        check_memory(
            4.0 * X.shape[1] * (n_train + 3 * n_words) + 8.0 * n_train + 300.0 * n_words,
            f"Codebook(n_words={n_words}).fit on {n_train} descriptors of dimension {X.shape[1]}",
            hint="lower n_words or max_descriptors",
        )
        if X.shape[0] > cap:
            X = X[np.sort(rng.choice(X.shape[0], size=cap, replace=False))]
        seed = int(rng.integers(0, 2**31 - 1))
        self.tree_: VocabularyTree | None = None
        if self.tree_branching is not None:
            return self._fit_tree(X, int(self.tree_branching), seed, sets if per_image else None, n_images if per_image else 0)
        km = faiss.Kmeans(
            X.shape[1], n_words, niter=int(self.n_iter), seed=seed,
            max_points_per_centroid=max(1, X.shape[0] // n_words + 1), min_points_per_centroid=1, verbose=False,
        )
        km.train(np.ascontiguousarray(X, np.float32))
        self.centroids_ = np.ascontiguousarray(km.centroids, np.float32)
        self._index = None
        self._search_index()  # built here, so predict never changes the estimator's state
        if per_image:
            df = np.zeros(n_words, np.int64)
            for s in sets:
                df[np.unique(self.predict(s))] += 1
            n_docs = n_images
        else:
            df, n_docs = np.zeros(n_words, np.int64), 0
        self.idf_ = (np.log((1.0 + n_docs) / (1.0 + df)) + 1.0).astype(np.float32)
        return self

    def _fit_tree(self, X, b: int, seed, sets, n_images) -> Codebook:
        tree = VocabularyTree(b, depth=tree_depth(int(self.n_words), b), n_iter=int(self.n_iter), random_state=seed).fit(X)
        self.tree_, self.centroids_, self._index = tree, np.ascontiguousarray(tree.words_), None
        df = np.zeros(int(self.n_words), np.int64)
        for s in sets or ():
            df[np.unique(self.predict(s))] += 1
        self.idf_ = (np.log((1.0 + n_images) / (1.0 + df)) + 1.0).astype(np.float32)
        return self

    # ------------------------------------------------------------------ assignment
    def _check_fitted(self) -> None:
        check_is_fitted(self, "centroids_", msg="this Codebook is not fitted yet: call fit() or Codebook.load()")

    def _search_index(self):
        if getattr(self, "_index", None) is None:
            faiss = _require_faiss()
            k, d = self.centroids_.shape
            use_hnsw = self.assign == "hnsw" or (self.assign == "auto" and k > _HNSW_FROM)
            if use_hnsw:
                index = faiss.IndexHNSWFlat(d, 32)
                index.hnsw.efSearch = 64
            else:
                index = faiss.IndexFlatL2(d)
            index.add(self.centroids_)
            self._index = index
        return self._index

    def predict(self, X) -> np.ndarray:
        """Nearest word of each descriptor in ``X`` (n, d), int64 ``(n,)``.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Descriptors of the codebook's dimension.

        Returns
        -------
        ndarray of shape (n,), dtype int64
            The word (row of ``centroids_``) of each descriptor: the nearest
            centroid, or the leaf reached by the vocabulary tree's greedy descent.
        """
        self._check_fitted()
        if hasattr(self, "n_features_in_"):
            X = validate_X(self, X, reset=False, min_rows=0)
        else:  # a codebook read by load()
            X = check_matrix(X, "X", min_rows=0, n_features=self.centroids_.shape[1], estimator=self)
        if X.shape[0] == 0:
            return np.empty(0, np.int64)
        tree = getattr(self, "tree_", None)
        if tree is not None:  # greedy descent of the vocabulary tree
            return tree.predict(X)
        _, idx = self._search_index().search(X, 1)
        return idx[:, 0].astype(np.int64)

    def counts(self, descriptor_sets) -> sp.csr_matrix:
        """Word counts per image: CSR ``(n_images, n_words)`` float32 (one batched search).

        Parameters
        ----------
        descriptor_sets : iterable of array-like of shape (m_i, d)
            Each image's descriptors (``m_i`` may be 0).

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_images, n_words), dtype float32
            How many of each image's descriptors fall in each word.
        """
        self._check_fitted()
        sets = list(descriptor_sets)
        sets = [np.asarray(s, np.float32) for s in sets]
        lengths = np.array([s.shape[0] if s.ndim == 2 else 0 for s in sets], np.int64)
        nonempty = [s for s, n in zip(sets, lengths) if n]
        words = self.predict(np.vstack(nonempty)) if nonempty else np.empty(0, np.int64)
        rows = np.repeat(np.arange(len(sets)), lengths)
        C = sp.csr_matrix((np.ones(words.size, np.float32), (rows, words)), shape=(len(sets), self.centroids_.shape[0]), dtype=np.float32)
        C.sum_duplicates()
        return C

    def histograms(self, descriptor_sets, *, weighting: str = "tf", normalize: str | None = "l1", sparse: bool = False):
        """Bag-of-words vectors per image.

        Parameters
        ----------
        descriptor_sets : iterable of array-like of shape (m_i, d)
            Each image's descriptors (``m_i`` may be 0).
        weighting : {"tf", "tfidf"}
            Raw counts, or counts times ``idf_``.
        normalize : {"l1", "l2", None}
            Row normalization; an image without descriptors stays all-zero.
        sparse : bool
            Return CSR (for 10K+ words) instead of a dense float32 array.

        Returns
        -------
        ndarray or scipy.sparse.csr_matrix of shape (n_images, n_words), dtype float32
            One bag-of-words vector per image.
        """
        if weighting not in ("tf", "tfidf"):
            raise ValueError(f"weighting: expected 'tf' or 'tfidf', got {weighting!r}")
        if normalize not in ("l1", "l2", None):
            raise ValueError(f"normalize: expected 'l1', 'l2' or None, got {normalize!r}")
        H = self.counts(descriptor_sets)
        if weighting == "tfidf":
            H = sp.csr_matrix(H.multiply(self.idf_[None, :]), dtype=np.float32)
        if normalize is not None:
            if normalize == "l1":
                norms = np.asarray(abs(H).sum(axis=1)).ravel()
            else:
                norms = np.sqrt(np.asarray(H.multiply(H).sum(axis=1)).ravel())
            scale = np.divide(1.0, norms, out=np.zeros_like(norms, dtype=np.float64), where=norms > 0)
            H = sp.csr_matrix(sp.diags(scale.astype(np.float32)) @ H, dtype=np.float32)
        return H if sparse else np.ascontiguousarray(H.toarray(), np.float32)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> Path:
        """Write the codebook to a portable ``.npz`` file (no pickle).

        Parameters
        ----------
        path : str or Path
            The file to write (atomically: a temporary file, then renamed).

        Returns
        -------
        Path
            The path written.
        """
        self._check_fitted()
        meta = {"n_words": int(self.n_words), "n_iter": int(self.n_iter), "max_descriptors": self.max_descriptors, "assign": self.assign}
        arrays = {"centroids": self.centroids_, "idf": self.idf_}
        tree = getattr(self, "tree_", None)
        if tree is not None:  # the inner levels; the leaves are the centroids
            meta["tree_branching"] = int(tree.branching)  # the tree's, even after set_params(tree_branching=...)
            arrays["tree_inner"] = tree.centers_[: tree.offsets_[-2]]
        return save_model(path, _KIND, _VERSION, arrays, meta)

    @classmethod
    def load(cls, path: str | Path) -> Codebook:
        """Read a codebook written by :meth:`save`.

        Parameters
        ----------
        path : str or Path
            A codebook file written by :meth:`save`.

        Returns
        -------
        Codebook
            The fitted codebook.

        Raises
        ------
        ModelFileError
            If the file is damaged or its parameters or arrays are inconsistent.
        """
        arrays, meta = load_model(path, _KIND, {_VERSION}, schema={
            "centroids": ArraySpec("f", 2), "idf": ArraySpec("f", 1), "tree_inner": ArraySpec("f", 2, optional=True)})
        try:
            cb = cls(n_words=meta["n_words"], n_iter=meta["n_iter"], max_descriptors=meta["max_descriptors"], assign=meta["assign"],
                     tree_branching=meta.get("tree_branching"))
            cb._check_params()
            if ("tree_inner" in arrays) != (cb.tree_branching is not None):
                raise ValueError("tree_branching and the tree_inner array go together")
        except (KeyError, TypeError, ValueError) as exc:
            reason = f"lacks {exc}" if isinstance(exc, KeyError) else f"has bad parameters ({str(exc).splitlines()[0]})"
            raise ModelFileError(f"{path}: codebook file {reason}") from None
        with np.errstate(over="ignore"):  # an overflow becomes inf, refused below
            centroids = np.ascontiguousarray(arrays["centroids"], np.float32)
            idf = np.ascontiguousarray(arrays["idf"], np.float32)
        if centroids.shape[0] != cb.n_words or centroids.shape[1] < 1 or idf.shape != (cb.n_words,):
            raise ModelFileError(f"{path}: codebook arrays have inconsistent shapes {centroids.shape}, {idf.shape} for {cb.n_words} words")
        # float32 casts too: a finite float64 beyond float32's range would become inf
        if not (np.isfinite(centroids).all() and np.isfinite(idf).all() and (idf >= 0).all()):
            raise ModelFileError(f"{path}: codebook arrays hold NaN, infinite or negative values")
        cb.centroids_, cb.idf_ = centroids, idf
        cb.n_features_in_ = centroids.shape[1]
        cb.tree_ = None
        if cb.tree_branching is not None:
            b = int(cb.tree_branching)
            try:
                inner = np.asarray(arrays["tree_inner"], np.float32)
                cb.tree_ = VocabularyTree.from_centers(b, tree_depth(cb.n_words, b), np.vstack([inner, centroids]) if inner.size else centroids)
            except ValueError as exc:
                raise ModelFileError(f"{path}: codebook tree {str(exc).splitlines()[0]}") from None
        return cb


class BagOfWords:
    """An extractor: local descriptors -> codebook -> one histogram per image.

    Parameters
    ----------
    descriptor : object with ``describe(images) -> list of (m, d) arrays`` and ``config()``
        e.g. :class:`DenseSift`, or a CNN (:class:`EfficientNetLite0`), whose
        ``describe`` gives the ``h x w`` grid of local feature vectors.
    n_words : int
        Codebook size.
    weighting : {"tf", "tfidf"}
    normalize : {"l1", "l2", None}
    sparse : bool or None
        Store CSR rows; default: sparse above 4,096 words.
    n_iter, max_descriptors, assign, tree_branching, random_state
        Passed to :class:`Codebook` (``tree_branching``: a vocabulary tree).
    codebook : Codebook, optional
        A fitted codebook to use instead of learning one.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.features import DenseSift
    >>> imgs = list(np.random.default_rng(0).integers(0, 255, (4, 48, 48), dtype=np.uint8))
    >>> bow = BagOfWords(DenseSift(step=8, bin_sizes=(4,)), n_words=8, random_state=0).fit_images(imgs)
    >>> bow.transform(imgs).sum(axis=1).round(6).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """

    def __init__(self, descriptor: Any, *, n_words: int = 1024, weighting: str = "tf", normalize: str | None = "l1", sparse: bool | None = None,
                 n_iter: int = 20, max_descriptors: int | None = None, assign: str = "auto", random_state: RandomState = None,
                 codebook: Codebook | None = None,
                 tree_branching: int | None = None):
        self.descriptor = descriptor
        self.n_words = n_words
        self.weighting = weighting
        self.normalize = normalize
        self.sparse = (n_words > 4096) if sparse is None else bool(sparse)
        self.n_iter = n_iter
        self.max_descriptors = max_descriptors
        self.assign = assign
        self.tree_branching = tree_branching
        self.random_state = random_state
        self.codebook = codebook

    @property
    def sift(self) -> Any:
        """The local descriptor (an alias of ``descriptor``, from when it was always dense SIFT)."""
        return self.descriptor

    @property
    def dim(self) -> int:
        """Length of a histogram: ``n_words``."""
        return int(self.n_words)

    def config(self) -> dict:
        """JSON description of the settings, saved in the store's ``attrs``.

        Returns
        -------
        dict
            The extractor kind, the descriptor's own config, ``n_words``,
            ``weighting``, ``normalize``, ``sparse`` (and ``tree_branching`` for a tree).
        """
        cfg = {
            "extractor": "bow",
            "descriptor": self.descriptor.config(),
            "n_words": int(self.n_words),
            "weighting": self.weighting,
            "normalize": self.normalize,
            "sparse": bool(self.sparse),
        }
        if self.tree_branching is not None:  # recorded only for trees: flat stores keep the settings they were made with
            cfg["tree_branching"] = int(self.tree_branching)
        return cfg

    def is_fitted(self) -> bool:
        """Whether a fitted codebook is set.

        Returns
        -------
        bool
            True once :meth:`fit_images` ran, a fitted ``codebook`` was given, or
            :meth:`load_state` read one.
        """
        return self.codebook is not None and hasattr(self.codebook, "centroids_")

    def fit_images(self, images, random_state: RandomState = None) -> BagOfWords:
        """Learn the codebook (and document frequencies) from these images' descriptors.

        Parameters
        ----------
        images : sequence
            The training images, in the form the descriptor's ``describe`` takes
            (e.g. arrays for :class:`DenseSift`).
        random_state : int, Generator or None, optional
            The codebook's seed when the constructor's ``random_state`` is None.

        Returns
        -------
        self : object
            The extractor, with a fitted ``codebook``.
        """
        return self.fit_descriptors(self.descriptor.describe(images), random_state=random_state)

    def fit_descriptors(self, sets, random_state: RandomState = None) -> BagOfWords:
        """Learn the codebook from descriptors already computed (``descriptor.describe``'s
        list of ``(m_i, d)`` arrays): :meth:`fit_images` without the describing, so a caller
        can describe in pieces and say how far it is.

        Parameters
        ----------
        sets : list of ndarray of shape (m_i, d)
            The descriptors of each training image.
        random_state : int, Generator or None, optional
            The codebook's seed when the constructor's ``random_state`` is None.

        Returns
        -------
        self : object
            The extractor, with a fitted ``codebook``.
        """
        seed = self.random_state if self.random_state is not None else random_state
        cb = Codebook(self.n_words, n_iter=self.n_iter, max_descriptors=self.max_descriptors, assign=self.assign,
                      tree_branching=self.tree_branching, random_state=seed)
        self.codebook = cb.fit(sets)
        if self.codebook.n_words != self.n_words:
            raise ValueError("codebook: size mismatch")
        return self

    def _fitted_codebook(self) -> Codebook:
        """The codebook, checked: fitted, and of ``n_words`` words."""
        codebook = self.codebook
        if codebook is None or not self.is_fitted():
            raise ValueError(f"{type(self).__name__} has no codebook: call fit_images() or pass codebook=")
        if codebook.centroids_.shape[0] != self.n_words:
            raise ValueError(f"codebook: has {codebook.centroids_.shape[0]} words, expected n_words={self.n_words}")
        return codebook

    def transform(self, images):
        """Histograms ``(n, n_words)``: dense float32, or CSR when ``sparse``.

        Parameters
        ----------
        images : sequence
            The images, in the form the descriptor's ``describe`` takes.

        Returns
        -------
        ndarray or scipy.sparse.csr_matrix of shape (n, n_words), dtype float32
            One histogram per image, weighted and normalized as set.
        """
        return self._fitted_codebook().histograms(self.descriptor.describe(images), weighting=self.weighting, normalize=self.normalize,
                                                  sparse=self.sparse)

    def save_state(self, folder: str | Path) -> None:
        """Save the codebook inside the store folder, next to the vectors.

        Parameters
        ----------
        folder : str or Path
            The store folder; the codebook is written to its ``codebook.npz``.
        """
        if self.codebook is None:  # was AttributeError on None
            raise ValueError(f"{type(self).__name__} has no codebook: call fit_images() or pass codebook=")
        self.codebook.save(Path(folder) / CODEBOOK_FILE)

    def load_state(self, folder: str | Path) -> None:
        """Read the codebook saved by :meth:`save_state` from the store folder.

        Parameters
        ----------
        folder : str or Path
            The store folder.
        """
        self.codebook = Codebook.load(Path(folder) / CODEBOOK_FILE)
