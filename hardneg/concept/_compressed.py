"""A compressed concept classifier: the portable product of concept training.

Holds one lookup-table scorer (Eq. (13)-(16)) whatever the ensemble size,
and saves to / loads from a ``.npz`` + JSON model file (no pickle).
"""

from __future__ import annotations

import math

import numpy as np

from hardneg._persist import ArraySpec, ModelFileError, load_model, save_model
from hardneg._validation import check_matrix
from hardneg.svm import HIKBinTable, HIKExactTable

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

    def __init__(self, table, meta: dict | None = None):
        if not isinstance(table, (HIKBinTable, HIKExactTable)):
            raise TypeError(f"table: expected an HIKBinTable or HIKExactTable, got {type(table).__name__}")
        self.table = table
        self.meta = dict(meta or {})

    @property
    def n_features_in_(self) -> int:
        return self.table.n_features

    @property
    def exact(self) -> bool:
        return isinstance(self.table, HIKExactTable)

    def decision_function(self, X) -> np.ndarray:
        X = check_matrix(X, "X", non_negative=True, min_rows=0, n_features=self.n_features_in_)
        return self.table.decision_function(X, check=False)

    def __repr__(self) -> str:
        kind = "exact" if self.exact else f"{self.table.n_bins} bins"
        return f"CompressedConcept(d={self.n_features_in_}, {kind}, concept={self.meta.get('concept')!r})"

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        t = self.table
        if self.exact:
            arrays = {"values": t.values, "prefix": t.prefix, "suffix": t.suffix}
        else:
            arrays = {"lo": t.lo, "hi": t.hi, "values": t.values, "below": t.below, "above": t.above}
        meta = dict(self.meta)
        meta.update(table="exact" if self.exact else "bins", intercept=t.intercept,
                    error_bound=None if self.exact else (None if np.isnan(t.error_bound) else t.error_bound))
        return save_model(path, _KIND, _VERSION, arrays, meta)

    @classmethod
    def load(cls, path) -> CompressedConcept:
        """Read a model written by :meth:`save`; :class:`ModelFileError` (one line) if it is damaged,
        edited or impossible (NaN or infinite values, unsorted support values, inconsistent shapes)."""
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


def load_concept(path) -> CompressedConcept:
    """Load a concept model saved by ``NegativeBootstrap.save`` / ``CompressedConcept.save``."""
    return CompressedConcept.load(path)
