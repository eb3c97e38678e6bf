"""Search modes for query by example: one small class each, behind one interface.

A mode ranks the store's items for one query vector (a stored item's row or an
uploaded image's features). Modes register themselves in :data:`MODES`; the app
opens every mode that is available for its store, so a new method plugs in by
adding a class here (or calling :func:`register_mode`) without touching the
routers or the other modes.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np

from hardneg._topk import TopK
from hardneg._validation import check_finite_scores

logger = logging.getLogger(__name__)

__all__ = ["MODES", "CosineMode", "HammingMode", "InvertedMode", "SearchMode", "register_mode"]



class SearchMode:
    """Interface: ``open`` (classmethod) returns an instance or None; ``rank`` scores.

    ``open(store, models_dir, *, matrix=None)`` gets the store, its models
    folder and, when the service holds one, the store's rows as one dense
    in-memory float32 array (shared by every mode and by concept search).

    ``rank(x, k)`` takes one dense float32 query vector of the store's
    dimension and returns a :class:`hardneg.TopK` of that query (``(k,)``
    arrays): ``rows``, store row positions, best first, and ``scores``, where
    larger means more similar (a Hamming mode reports the negated distance,
    ``metric="neg_hamming"``, and its ``score_label`` says so). A mode written
    before hardneg 0.2 may still return the tuple ``(rows, scores)``.
    """

    name = ""
    title = ""
    score_label = "score"
    batched = False  # True: ``search(X, k, exact=, nprobe=)`` ranks many queries at once (micro-batching)

    @classmethod
    def open(cls, store, models_dir: Path, *, matrix: np.ndarray | None = None) -> SearchMode | None:  # pragma: no cover - interface
        """The mode for this store, or None when its model files are missing.

        Parameters
        ----------
        store : FeatureStore
            The store the service searches.
        models_dir : Path
            The store's models folder, where the mode looks for its files.
        matrix : ndarray of shape (n_items, dim), dtype float32, optional
            The store's rows in memory, when the service holds them (shared by every mode).

        Returns
        -------
        mode : SearchMode or None
            An instance ready to rank, or None when the mode is not available for this store.
        """
        raise NotImplementedError

    def rank(self, x: np.ndarray, k: int) -> TopK:  # pragma: no cover - interface
        """The ``k`` store items most similar to one query vector.

        Parameters
        ----------
        x : ndarray of shape (dim,), dtype float32
            One dense query vector of the store's dimension.
        k : int
            Number of items to return.

        Returns
        -------
        TopK
            The query's ``(k,)`` arrays: ``rows`` (store row positions, best
            first) and ``scores`` (larger is more similar).
        """
        raise NotImplementedError

    def search(self, X: np.ndarray, k: int, *, exact: bool = False, nprobe: int | None = None) -> TopK:  # pragma: no cover - interface
        """The ``k`` store items most similar to each of many queries (modes with ``batched = True``).

        Parameters
        ----------
        X : ndarray of shape (n_queries, dim), dtype float32
            Dense query vectors of the store's dimension.
        k : int
            Number of items per query.
        exact : bool, default=False
            Search exhaustively even where the mode has an approximate index.
        nprobe : int, optional
            Lists an approximate search scans.

        Returns
        -------
        TopK
            ``(n_queries, k)`` arrays; ``queries()`` gives each query's.
        """
        raise NotImplementedError

    def describe(self) -> dict:
        """The mode as the service lists it.

        Returns
        -------
        dict
            ``{"name": ..., "title": ..., "score": ...}``: the mode's name, its
            human-readable title and what its scores mean (``score_label``).
        """
        return {"name": self.name, "title": self.title, "score": self.score_label}

    def search_label(self, exact: bool = False, nprobe: int | None = None) -> str:
        """Which search served a query (reported in the response): exhaustive unless a mode says otherwise.

        Parameters
        ----------
        exact : bool, default=False
            The query asked for an exhaustive search.
        nprobe : int, optional
            Lists the query asked an approximate search to scan.

        Returns
        -------
        str
            ``"exact"`` here; an approximate mode names its search (e.g. with its ``nprobe``).
        """
        return "exact"

    def probes(self, exact: bool = False, nprobe: int | None = None) -> int | None:
        """Lists an approximate search scans for a query with these settings; None for an exhaustive one.

        Parameters
        ----------
        exact : bool, default=False
            The query asked for an exhaustive search.
        nprobe : int, optional
            Lists the query asked an approximate search to scan.

        Returns
        -------
        int or None
            None here (the search is exhaustive); an approximate mode returns its lists scanned.
        """
        return None


MODES: dict[str, type[SearchMode]] = {}


def register_mode(cls: type[SearchMode]) -> type[SearchMode]:
    """Add a mode class ``cls`` to :data:`MODES` under its ``name`` (usable as a decorator).

    Returns
    -------
    type of SearchMode
        ``cls`` itself.

    Raises
    ------
    ValueError
        If the name is not letters, digits and '-'.
    """
    if not cls.name or not cls.name.replace("-", "").isalnum():
        raise ValueError(f"mode name {cls.name!r}: expected letters, digits and '-'")
    MODES[cls.name] = cls
    return cls


def _id_rows(store, ids) -> np.ndarray:
    """Store rows of an index's ids (an index built from another store is refused)."""
    pos = {v: i for i, v in enumerate(store.ids())}
    try:
        rows = np.fromiter((pos[str(i)] for i in ids), dtype=np.int64, count=len(ids))
    except KeyError as exc:
        raise ValueError(f"the index holds id {exc.args[0]!r}, which is not in the store (removed since the index "
                         "was built?); rebuild the index from the store") from None
    if rows.size < len(pos):  # items added since: the index would never find them
        raise ValueError(f"the store has {len(pos) - rows.size:,} items the index lacks (added since it was built); "
                         "rebuild the index from the store")
    return rows


@register_mode
class HammingMode(SearchMode):
    """Hamming ranking of hash codes (TSVM hashing or any hasher): ``hasher.npz`` + ``hamming.index``.

    The index is exhaustive (FAISS ``IndexBinaryFlat``) or approximate (an IVF
    index saved by ``hardneg hash index --nlist``): an approximate one scans
    ``nprobe`` lists per query (the index's, the service's ``--nprobe``, or the
    query's), and an exhaustive scan of the same codes stays available per
    query (``exact``; its flat index is built from the IVF codes on first use).
    :meth:`search` takes many queries at once, which is what the service's
    micro-batching calls.
    """

    name = "hamming"
    title = "Hamming (hash codes)"
    score_label = "-hamming distance"
    HASHER, INDEX = "hasher.npz", "hamming.index"
    batched = True

    def __init__(self, hasher, index, rows):
        # rows: the store row of each index row, or None when they are the same (a row-id index)
        self.hasher, self.index, self.rows = hasher, index, rows
        self.nprobe = index.nprobe if index.approximate else None
        self._exact = None if index.approximate else index
        self._exact_lock = threading.Lock()
        self._planes = None  # the codes as uint64 word planes for the multi-query exact scan

    @classmethod
    def open(cls, store, models_dir: Path, *, matrix=None):
        from hardneg.hashing import load_hasher
        from hardneg.index import HammingIndex

        hp, ip = models_dir / cls.HASHER, models_dir / cls.INDEX
        if not (hp.is_file() and ip.is_file()):
            return None
        hasher = load_hasher(hp)
        index = HammingIndex.load(ip)
        index.check_hasher(hasher)
        if hasher.n_features_in_ != store.dim:
            raise ValueError(f"{hp}: expects {hasher.n_features_in_}-d input, the store has {store.dim}")
        if index.row_ids:  # ids are the store's rows (an index built by build_ivf_index): no id table in memory
            try:
                index.check_store(store)
            except ValueError as exc:
                raise ValueError(f"{ip}: {exc}; rebuild the index from the store") from None
            rows = None
        else:
            rows = _id_rows(store, index.ids)
        hasher.transform(np.zeros((1, store.dim), np.float32))  # warm up (lazy imports) before serving
        out = cls(hasher, index, rows)
        ivf = f", IVF {index.nlist} lists" if index.approximate else ""
        out.title = f"Hamming ({type(hasher).__name__}, {index.n_bits} bits{ivf})"
        return out

    @property
    def approximate(self) -> bool:
        return self.index.approximate

    def set_nprobe(self, nprobe: int) -> None:
        """The service's default lists scanned per query (approximate index only)."""
        if not self.approximate:
            raise ValueError("nprobe: the Hamming index is exhaustive (build one with --nlist for approximate search)")
        if isinstance(nprobe, bool) or not isinstance(nprobe, (int, np.integer)) or nprobe < 1:
            raise ValueError(f"nprobe: expected a positive integer, got {nprobe!r}")
        self.nprobe = int(min(nprobe, self.index.nlist))

    def exact_index(self):
        """The exhaustive index (for an approximate one: a flat copy of its codes, built once)."""
        if self._exact is None:
            with self._exact_lock:
                if self._exact is None:
                    from hardneg.index import HammingIndex

                    flat = HammingIndex(self.index.n_bits, meta=self.index.meta, row_ids=self.index.row_ids)
                    flat.add(self.index.codes(), None if self.index.row_ids else self.index.ids)
                    self._exact = flat
        return self._exact

    def exact_planes(self):
        """The codes as uint64 word planes (:func:`~hardneg.serve._exact_scan.code_planes`), made
        once: one pass over them answers a whole batch of exact queries."""
        if self._planes is None:
            flat = self.exact_index()  # before the lock: it takes the same one
            with self._exact_lock:
                if self._planes is None:
                    from hardneg.serve._exact_scan import code_planes

                    self._planes = code_planes(flat.codes())
        return self._planes

    def probes(self, exact: bool = False, nprobe: int | None = None) -> int | None:
        """Lists scanned for a query with these settings (the query's, else the service's, at most
        all of them); None when the query gets the exhaustive scan."""
        if exact or not self.approximate:
            return None
        return min(nprobe or self.nprobe, self.index.nlist)

    def search_label(self, exact: bool = False, nprobe: int | None = None) -> str:
        """Which search a query with these settings gets: ``exact`` or ``ivf nprobe=P/NLIST``."""
        p = self.probes(exact, nprobe)
        return "exact" if p is None else f"ivf nprobe={p}/{self.index.nlist}"

    def search(self, X, k: int, *, exact: bool = False, nprobe: int | None = None):
        """Many queries at once: a :class:`hardneg.TopK` with ``rows`` (n, k) and ``scores``
        (negated Hamming distances), store rows best first; places an approximate search left
        empty hold row -1."""
        codes = self.hasher.transform(np.atleast_2d(X))
        p = self.probes(exact, nprobe)
        if p is None:
            from hardneg.serve._exact_scan import hamming_topk

            # one pass over the codes for every query of the batch (FAISS's flat scan reads them once
            # per query); the same rows as FAISS's, ties by row (tests/serve/test_serve_exact_batch.py)
            planes = self.exact_planes()
            r, d = hamming_topk(planes, codes, min(k, planes.shape[1]))
        else:
            r, d = self.index.rank(codes, min(k, len(self.index)), nprobe=p)
        rows = r if self.rows is None else np.where(r >= 0, self.rows[np.maximum(r, 0)], -1)
        return TopK(rows, -d.astype(np.float64), r.shape[1], metric="neg_hamming", higher_is_better=True)

    def rank(self, x, k):
        res = self.search(x[None, :], k)[0]
        keep = res.rows >= 0
        return TopK(res.rows[keep], res.scores[keep], res.k, metric=res.metric, higher_is_better=True)


@register_mode
class CosineMode(SearchMode):
    """Exact cosine similarity over every stored vector (always available)."""

    name = "cosine"
    title = "exact cosine"
    score_label = "cosine"

    def __init__(self, store, matrix=None):
        self.store = store
        self._X = matrix
        self._inv = None
        if matrix is not None:
            n = np.linalg.norm(matrix, axis=1)
            self._inv = (1.0 / np.where(n > 0, n, 1.0)).astype(np.float32)

    @classmethod
    def open(cls, store, models_dir: Path, *, matrix=None):
        return cls(store, matrix)

    def _scores(self, q):
        if self._X is not None:
            return (self._X @ q) * self._inv
        out = np.empty(len(self.store), np.float32)  # chunked scan: memory bounded by one chunk
        for lo, block in self.store.iter_chunks(16384):
            s = np.asarray(block @ q).ravel()
            sq = np.asarray(block.multiply(block).sum(axis=1)).ravel() if hasattr(block, "multiply") else np.einsum("ij,ij->i", block, block)
            out[lo : lo + s.size] = s / np.where(sq > 0, np.sqrt(sq), 1.0)
        return out

    def rank(self, x, k):
        nq = float(np.linalg.norm(x))
        s = self._scores(np.asarray(x, np.float32) / (nq if nq > 0 else 1.0))
        check_finite_scores(s)
        k = min(k, s.size)
        top = np.argpartition(-s, k - 1)[:k]
        top = top[np.lexsort((top, -s[top]))]  # best first, ties by row
        return TopK(top.astype(np.int64), s[top].astype(np.float64), k, s.size, metric="cosine")


@register_mode
class InvertedMode(SearchMode):
    """SOLIS (or TF-IDF) inverted index over a sparse bag-of-words store: ``inverted.npz``."""

    name = "solis"
    title = "SOLIS inverted index"
    FILE = "inverted.npz"

    def __init__(self, index, rows):
        self.index, self.rows = index, rows

    @classmethod
    def open(cls, store, models_dir: Path, *, matrix=None):
        from hardneg.index import InvertedIndex

        p = models_dir / cls.FILE
        if not p.is_file():
            return None
        index = InvertedIndex.load(p)
        if index.n_words != store.dim:
            raise ValueError(f"{p}: indexes {index.n_words} words, the store has {store.dim}")
        return cls(index, _id_rows(store, index.ids))

    def rank(self, x, k):
        import scipy.sparse as sp

        r, s = self.index.rank(sp.csr_matrix(x[None, :]), min(k, len(self.index)))
        return TopK(self.rows[r[0]], s[0], r.shape[1], len(self.index), metric="similarity")


def open_modes(store, models_dir: Path, matrix=None) -> dict[str, SearchMode]:
    """Every registered mode available for this store (a broken one is logged and left out)."""
    out = {}
    for name, cls in MODES.items():
        try:
            mode = cls.open(store, models_dir, matrix=matrix)
        except Exception as exc:  # noqa: BLE001 - one damaged index must not take the service down
            logger.error("search mode %s not available: %s", name, exc)
            continue
        if mode is not None:
            out[name] = mode
    return out
