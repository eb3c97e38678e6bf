"""A compressed concept classifier: the portable product of concept training.

Holds one lookup-table scorer ([Li13] Eq. (13)-(16)) whatever the ensemble size,
and saves to / loads from a ``.npz`` + JSON model file (no pickle).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hardneg._persist import ArraySpec, ModelFileError, load_model, save_model
from hardneg._typing import ArrayLike
from hardneg._validation import check_matrix
from hardneg.svm import HIKBinTable, HIKExactTable

if TYPE_CHECKING:
    from hardneg.store import BinGrid

__all__ = ["CompressedConcept", "load_concept"]

_KIND = "hardneg.concept.CompressedConcept"
_VERSION = 1
_ARRAYS = {"exact": ("values", "prefix", "suffix"), "bins": ("lo", "hi", "values", "below", "above")}
_SCHEMA = {
    "values": ArraySpec("f", 2),
    "prefix": ArraySpec("f", 2, optional=True),
    "suffix": ArraySpec("f", 2, optional=True),
    "lo": ArraySpec("f", 1, optional=True),
    "hi": ArraySpec("f", 1, optional=True),
    "below": ArraySpec("f", 1, optional=True),
    "above": ArraySpec("f", 1, optional=True),
}
# Largest magnitude a stored value may have: well inside float32, where scoring runs,
# so sums and differences of a few values stay finite.
_MAX_VALUE = 1e30


class CompressedConcept:
    """Score images with a compressed HIK ensemble in O(d) per image.

    Parameters
    ----------
    table : HIKBinTable or HIKExactTable
    meta : dict, optional
        JSON-serializable description (estimator, parameters, concept name).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from hardneg.concept import NegativeBootstrap, load_concept
    >>> rng = np.random.default_rng(0)
    >>> pos, pool = rng.random((10, 5)) + 0.5, rng.random((200, 5))
    >>> model = NegativeBootstrap(n_iter=3, random_state=0).fit(pos, pool).compress(n_bins=50)
    >>> path = os.path.join(tempfile.mkdtemp(), "concept.npz")
    >>> _ = model.save(path)
    >>> again = load_concept(path)
    >>> bool(np.allclose(again.decision_function(pool), model.decision_function(pool)))
    True
    """

    def __init__(self, table: HIKBinTable | HIKExactTable, meta: dict | None = None):
        if not isinstance(table, (HIKBinTable, HIKExactTable)):
            raise TypeError(f"table: expected an HIKBinTable or HIKExactTable, got {type(table).__name__}")
        self.table = table
        self.meta = dict(meta or {})

    @property
    def n_features_in_(self) -> int:
        """Number of features the model scores."""
        return self.table.n_features

    @property
    def exact(self) -> bool:
        """True for the exact table (binary search), False for the q-bin table."""
        return isinstance(self.table, HIKExactTable)

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Scores G(x), [Li13] Eq. (13). A uint8 block of codes with a grid (a block of a
        :class:`~hardneg.store.BinnedStore`) is scored by look-up: :meth:`decision_function_bins`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Non-negative features, or a uint8 :class:`~hardneg.store.CodeBlock`.

        Returns
        -------
        ndarray of shape (n_samples,)
            The score of every row.
        """
        if isinstance(X, np.ndarray) and X.dtype == np.uint8:
            return self.decision_function_bins(X)
        X = check_matrix(X, "X", non_negative=True, min_rows=0, n_features=self.n_features_in_)
        return self.table.decision_function(X, check=False)

    def decision_function_bins(self, codes: ArrayLike, grid: BinGrid | None = None) -> np.ndarray:
        """Score uint8 codes on a grid (a binned store's block) by look-up + sum, no float conversion.

        The model's H_i ([Li13] Eq. (14), tabulated as in [Li13] Eq. (16)) is evaluated once at
        the grid's q + 1 nodes per dimension (a d x (q + 1) table, cached for
        the grid), then a row's score is the sum of one entry per dimension.
        For a q-bin model the result equals :meth:`decision_function` of the
        node values (``grid.dequantize(codes)``) bit for bit; the node values
        sit within half a bin of the original features (see :meth:`bins_error_bound`).

        Parameters
        ----------
        codes : ndarray (n, d) of uint8
            Node indices 0..q; a :class:`~hardneg.store.CodeBlock` carries its grid.
        grid : BinGrid, optional
            The codes' grid, when ``codes`` is a plain array.

        Returns
        -------
        ndarray of float64, shape (n,)
            The score of every row.
        """
        from hardneg.svm._hik_tables import score_codes

        grid = grid if grid is not None else getattr(codes, "grid", None)
        if grid is None:
            raise TypeError("codes: a uint8 array needs its grid: pass grid=, or score blocks of a BinnedStore "
                            "(they carry it)")
        codes = np.asarray(codes)  # drops the CodeBlock subclass: the kernel sees a plain array
        if codes.ndim != 2 or codes.shape[1] != self.n_features_in_:
            raise ValueError(f"codes: expected shape (n, {self.n_features_in_}), got {codes.shape}")
        if grid.dim != self.n_features_in_:
            raise ValueError(f"grid: has {grid.dim} dimensions, the model {self.n_features_in_}")
        return score_codes(codes, self._bins_table(grid)) + self.table.intercept

    def _bins_table(self, grid) -> np.ndarray:
        key = grid.key()
        cached = getattr(self, "_bins_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        nodes = grid.nodes()
        # q-bin model: float32 terms, the same arithmetic as its float scan (bit-exact);
        # exact model: H_i in float64.
        table = self.table.H(nodes)
        self._bins_cache = (key, table)
        return table

    def bins_error_bound(self, grid: BinGrid) -> float:
        """Bound on |score of codes - score of the original features| for features inside the grid.

        Rounding to the nearest node moves a value by at most half a bin
        (delta_i / 2); H_i is Lipschitz with constant max|H_i'| (the largest
        slope of its piecewise-linear table, [Li13] Eq. (15)), so the bound is
        sum_i delta_i / 2 * max|H_i'|. Add the table's own ``error_bound``
        for the distance to the exact ensemble.

        Parameters
        ----------
        grid : BinGrid
            The grid the codes were quantized on.

        Returns
        -------
        float
            The bound, for any row whose features lie in ``[grid.lo, grid.hi]``.
        """
        t = self.table
        if isinstance(t, HIKExactTable):
            # slopes of [Li13] Eq. (15): suffix sums of a
            slope = np.abs(t.suffix).max(axis=1)
        else:
            width = t.hi - t.lo
            with np.errstate(divide="ignore", invalid="ignore"):
                inner = np.where(width > 0, np.abs(np.diff(t.values, axis=1)).max(axis=1) * t.n_bins / np.where(width > 0, width, 1.0), 0.0)
            slope = np.maximum(inner, np.maximum(np.abs(t.below), np.abs(t.above)))
        delta = (grid.hi - grid.lo) / grid.n_bins
        return float(np.sum(delta / 2.0 * slope))

    def __repr__(self) -> str:
        t = self.table
        kind = "exact" if isinstance(t, HIKExactTable) else f"{t.n_bins} bins"
        return f"CompressedConcept(d={self.n_features_in_}, {kind}, concept={self.meta.get('concept')!r})"

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> Path:
        """Write the model to a portable ``.npz`` + JSON file (no pickle), atomically.

        Parameters
        ----------
        path : str or path-like
            The file to write.

        Returns
        -------
        Path
            The path written.
        """
        t = self.table
        if isinstance(t, HIKExactTable):
            arrays = {"values": t.values, "prefix": t.prefix, "suffix": t.suffix}
            kind, bound = "exact", None
        else:
            arrays = {"lo": t.lo, "hi": t.hi, "values": t.values, "below": t.below, "above": t.above}
            kind, bound = "bins", None if np.isnan(t.error_bound) else t.error_bound
        meta = dict(self.meta)
        meta.update(table=kind, intercept=t.intercept, error_bound=bound)
        return save_model(path, _KIND, _VERSION, arrays, meta)

    @classmethod
    def load(cls, path: str | os.PathLike) -> CompressedConcept:
        """Read a model written by :meth:`save`; :class:`ModelFileError` (one line) if it is damaged,
        edited or impossible (NaN or infinite values, unsorted support values, inconsistent shapes).

        Parameters
        ----------
        path : str or path-like
            A file written by :meth:`save`.

        Returns
        -------
        CompressedConcept
            The model.
        """
        arrays, meta = load_model(path, _KIND, (_VERSION,), schema=_SCHEMA)
        kind = meta.pop("table", None)
        intercept = meta.pop("intercept", None)
        bound = meta.pop("error_bound", None)
        try:
            if (isinstance(intercept, bool) or not isinstance(intercept, (int, float)) or not math.isfinite(intercept)
                    or abs(intercept) > _MAX_VALUE):
                raise ValueError(f"intercept {intercept!r} is not a finite number")
            if kind not in _ARRAYS:
                raise ValueError(f"unknown table kind {kind!r}")
            if set(arrays) != set(_ARRAYS[kind]):
                raise ValueError(f"a {kind!r} table needs arrays {', '.join(_ARRAYS[kind])}, "
                                 f"the file has {', '.join(sorted(arrays))}")
            for name, arr in arrays.items():
                # scoring runs in float32: values beyond its range would become inf there
                if not np.isfinite(arr).all() or np.abs(arr).max(initial=0.0) > _MAX_VALUE:
                    raise ValueError(f"array {name!r} holds NaN, infinite or out-of-range values")
            table: HIKExactTable | HIKBinTable
            if kind == "exact":
                table = HIKExactTable(arrays["values"], arrays["prefix"], arrays["suffix"], intercept)
                if (np.diff(table.values, axis=1) < 0).any():
                    raise ValueError("the support values are not sorted per dimension")
            else:
                if bound is not None and (isinstance(bound, bool) or not isinstance(bound, (int, float))
                                          or not math.isfinite(bound) or bound < 0):
                    raise ValueError(f"error bound {bound!r} is not a non-negative number")
                table = HIKBinTable(arrays["lo"], arrays["hi"], arrays["values"], arrays["below"], arrays["above"],
                                    intercept, error_bound=float("nan") if bound is None else bound)
            if table.n_features < 1:
                raise ValueError("the table has no dimensions")
        except (KeyError, ValueError) as exc:
            raise ModelFileError(f"{path}: inconsistent concept model ({str(exc).splitlines()[0]})") from None
        return cls(table, meta=meta)


def load_concept(path: str | os.PathLike) -> CompressedConcept:
    """Load a concept model saved by ``NegativeBootstrap.save`` / ``CompressedConcept.save``.

    Parameters
    ----------
    path : str or path-like
        The model file.

    Returns
    -------
    CompressedConcept
        The compressed model, ready to score.

    Raises
    ------
    ModelFileError
        If the file is not a valid concept model.
    """
    return CompressedConcept.load(path)
