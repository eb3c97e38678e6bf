"""Model Compression for HIK SVM ensembles: per-dimension lookup tables.

Li et al. (IEEE TMM 2013), Section IV, [Li13] Eq. (11)-(16). An ensemble of HIK
SVMs averaged with weights lambda_t ([Li13] Eq. (9)/(10)) is itself one kernel
expansion over the union of the support vectors x̄_1..x̄_M, [Li13] Eq. (11)-(12):

    G(x) = b0 + sum_j a_j K(x, x̄_j) = b0 + sum_i H_i(x(i)),            [Li13] Eq. (13)
    H_i(z) = sum_j a_j min(z, x̄_j(i)),                                  [Li13] Eq. (14)

so scoring costs d one-dimensional functions, whatever the number of meta
classifiers. With the values of dimension i sorted, x̄_(1)(i) <= ... <=
x̄_(M)(i), H_i is piecewise linear, [Li13] Eq. (15):

    H_i(z) = sum_{l: x̄_(l)(i) < z} a_l x̄_(l)(i) + z * sum_{l: x̄_(l)(i) >= z} a_l

``HIKExactTable`` stores the two cumulative sums and finds the segment by
binary search (exact, O(d log M) per image). ``HIKBinTable`` samples H_i at
q + 1 uniformly spaced points of [x̄_(1)(i), x̄_(M)(i)] (a d x (q+1) table,
[Li13] Eq. (16)) and interpolates linearly between them: O(d) per image,
independent of M and of the ensemble size. Outside that range H_i is
linear, as in the paper: below x̄_(1)(i) every min picks z, so
H_i(z) = z * sum_l a_l; above x̄_(M)(i) every min picks the support value, so
H_i is the constant H_i(x̄_(M)(i)). Both cases are exact.

Interpolating a piecewise-linear function whose slope changes by a_l at each
support value errs by at most delta / 4 * (sum of |a_l| inside the bin) in
that bin (delta = bin width); ``error_bound`` is the sum over dimensions of
the worst bin, a bound on |approximate - exact| for any input.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

from hardneg._typing import ArrayLike
from hardneg._validation import check_matrix

__all__ = ["HIKBinTable", "HIKExactTable", "compress_hik", "merge_hik_ensemble", "score_codes"]


# --------------------------------------------------------------------------- kernels
@numba.njit(parallel=True, cache=True)
def _score_exact(X, V, A, B, intercept, out):  # pragma: no cover, no mutate block - compiled
    n, d = X.shape
    M = V.shape[1]
    for r in numba.prange(n):
        s = 0.0
        for i in range(d):
            z = X[r, i]
            lo = 0
            hi = M
            while lo < hi:  # lo = number of sorted support values < z
                mid = (lo + hi) >> 1
                if V[i, mid] < z:
                    lo = mid + 1
                else:
                    hi = mid
            s += A[i, lo] + z * B[i, lo]  # [Li13] Eq. (15)
        out[r] = s + intercept


# Scoring runs single-threaded: the machines this serves are shared, and a scan
# parallelizes over blocks (hardneg.distributed), not inside one.
# Flags: fastmath without reassociation or contraction, so the quantization pass
# vectorizes while every sum keeps one fixed order (the uint8 scan below then
# reproduces the float scan bit for bit).
_FAST = {"nnan", "ninf", "nsz", "arcp", "afn"}


@numba.njit(fastmath=_FAST, cache=True)
def _score_bins(X, lo, inv, P, off, q, out):  # pragma: no cover, no mutate block - compiled
    """[Li13] Eq. (13) with H_i interpolated in the extended table (see ``HIKBinTable._pack``).

    Two passes per row: the quantization (value -> bin, fraction) is branch-free
    and vectorizes; the look-up + sum then reads one (value, slope) pair per
    dimension from ``P`` (complex64: real ``V[i, k]``, imaginary
    ``float32(V[i, k + 1] - V[i, k])``, see ``HIKBinTable._pack_pairs``), one
    8-byte load instead of two 4-byte ones. ``a + f * s`` with that ``s`` is
    the float32 arithmetic of ``a + f * (b - a)``: the same terms, bit for bit, as
    ``_eval_bins`` (and the previous two-read kernel, kept in ``benchmarks/concept_speed.py``). Node k of dimension i sits at
    ``P[i, k + 1]``; the virtual nodes -1 and q + 1 carry the exact linear
    pieces below ``lo`` and above ``hi``, so no per-value test is needed
    outside the grid.
    """
    n, d = X.shape
    flat = P.ravel()
    # unsigned: no negative-index wraparound code in the gather; d * (q + 3) < 2**31 (HIKBinTable._pack)
    idx = np.empty(d, dtype=np.uint32)
    frac = np.empty(d, dtype=np.float32)
    lowest = np.float32(-1.0)
    top = np.float32(q)
    one = np.float32(1.0)
    for r in range(n):
        for i in range(d):
            t = (X[r, i] - lo[i]) * inv[i]
            # clamp before the conversion: a float beyond int range has no defined int;
            # int32 (not int64) so that the conversion vectorizes (AVX2 has no float -> int64)
            k = np.int32(min(max(t, lowest), top) + one)  # 0 .. q + 1
            idx[i] = off[i] + np.uint32(k)
            # float32(k) - 1, not float32(k - 1): int32 - int32 is int64 in Numba, and an
            # int64 -> float conversion does not vectorize (3x slower pass); equal for k < 2**24
            frac[i] = t - (np.float32(k) - one)
        # four chains, dimension i into chain i % 4, then (s0 + s1) + (s2 + s3): the order of
        # _score_codes. With two chains the loop waited on the float64 add latency.
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for j in range(d >> 2):
            b = 4 * j
            p = flat[idx[b]]
            s0 += p.real + frac[b] * p.imag
            p = flat[idx[b + 1]]
            s1 += p.real + frac[b + 1] * p.imag
            p = flat[idx[b + 2]]
            s2 += p.real + frac[b + 2] * p.imag
            p = flat[idx[b + 3]]
            s3 += p.real + frac[b + 3] * p.imag
        b = d - (d & 3)
        if b < d:
            p = flat[idx[b]]
            s0 += p.real + frac[b] * p.imag
        if b + 1 < d:
            p = flat[idx[b + 1]]
            s1 += p.real + frac[b + 1] * p.imag
        if b + 2 < d:
            p = flat[idx[b + 2]]
            s2 += p.real + frac[b + 2] * p.imag
        out[r] = (s0 + s1) + (s2 + s3)


@numba.njit(fastmath=_FAST, cache=True)
def _eval_bins(Z, lo, inv, V, q, out):  # pragma: no cover, no mutate block - compiled
    """H_i at points ``Z[i, :]`` with exactly the arithmetic of ``_score_bins`` (float32 terms).

    Reads the two nodes (``a + f * (b - a)``), not the packed pairs: the equality of
    the codes scan with the float scan checks the pairs too.
    """
    d, m = Z.shape
    lowest = np.float32(-1.0)
    top = np.float32(q)
    one = np.float32(1.0)
    for i in range(d):
        for c in range(m):
            t = (Z[i, c] - lo[i]) * inv[i]
            k = np.int64(min(max(t, lowest), top) + one)
            f = t - np.float32(k - 1)
            a = V[i, k]
            out[i, c] = a + f * (V[i, k + 1] - a)


@numba.njit(fastmath=_FAST, cache=True)
def _score_codes(B, T, out):  # pragma: no cover, no mutate block - compiled
    """Sum of per-dimension table entries ``T[i, B[r, i]]`` for uint8 codes (no float conversion).

    The caller checks every code against ``T.shape[1]`` first (one vectorized
    ``max`` per block): no read outside the table. Summed in the order of
    ``_score_bins`` (four chains, dimension i into chain i % 4), so equal terms give equal scores.
    """
    n, d = B.shape
    for r in range(n):
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for j in range(d >> 2):
            b = 4 * j
            s0 += T[b, B[r, b]]
            s1 += T[b + 1, B[r, b + 1]]
            s2 += T[b + 2, B[r, b + 2]]
            s3 += T[b + 3, B[r, b + 3]]
        b = d - (d & 3)
        if b < d:
            s0 += T[b, B[r, b]]
        if b + 1 < d:
            s1 += T[b + 1, B[r, b + 1]]
        if b + 2 < d:
            s2 += T[b + 2, B[r, b + 2]]
        out[r] = (s0 + s1) + (s2 + s3)


@numba.njit(cache=True)
def _eval_sorted(V, A, B, Z, out):  # pragma: no cover, no mutate block - compiled
    """H_i at points Z[i, :] from the sorted tables (exact, [Li13] Eq. (15))."""
    d, M = V.shape
    for i in range(d):
        for c in range(Z.shape[1]):
            z = Z[i, c]
            lo = 0
            hi = M
            while lo < hi:
                mid = (lo + hi) >> 1
                if V[i, mid] < z:
                    lo = mid + 1
                else:
                    hi = mid
            out[i, c] = A[i, lo] + z * B[i, lo]


def _grid_values_py(sv, coef, lo, hi, q, values, below, above):  # pragma: no cover, no mutate block - compiled
    """H_i at the q + 1 nodes of a fixed grid without sorting: O(M d + q d).

    A support value v adds a * node to the nodes at or below v and a * v to
    the nodes above it ([Li13] Eq. (14)), so two histograms over the node index and
    a prefix / suffix sum give every node's value exactly.
    """
    M, d = sv.shape
    for i in numba.prange(d):
        slope = np.zeros(q + 2)
        const = np.zeros(q + 2)
        width = hi[i] - lo[i]
        b_sum = 0.0
        a_sum = 0.0
        for j in range(M):
            v = sv[j, i]
            a = coef[j]
            if v >= lo[i]:
                b_sum += a
            if v > hi[i]:
                a_sum += a
            # c = number of nodes lo + k * width / q that are <= v
            if v < lo[i]:
                c = 0
            elif v >= hi[i]:
                c = q + 1
            else:
                c = int((v - lo[i]) / width * q) + 1 if width > 0 else q + 1
                if c > q:
                    c = q
            slope[c] += a
            const[c] += a * v
        s_suffix = 0.0
        for c in range(q + 1, -1, -1):
            s_suffix += slope[c]
            slope[c] = s_suffix  # now: sum of a with node-count >= c
        c_prefix = 0.0
        for k in range(q + 1):
            c_prefix += const[k]  # supports whose node-count <= k lie below node k
            node = lo[i] + width * k / q if k < q else hi[i]
            values[i, k] = c_prefix + node * slope[k + 1]
        below[i] = b_sum
        above[i] = a_sum


_grid_values = numba.njit(cache=True)(_grid_values_py)


def _sorted_tables(sv: np.ndarray, coef: np.ndarray):
    """Per dimension: sorted support values V, prefix sums A of a*v and suffix sums B of a."""
    M, d = sv.shape
    # one dimension per contiguous row: sorting along rows reads memory in order (faster than sorting
    # the columns of sv), with the same stable order and the same sequential sums
    svT = np.ascontiguousarray(sv.T)
    order = np.argsort(svT, axis=1, kind="stable")
    Vs = np.take_along_axis(svT, order, axis=1).astype(np.float64)  # (d, M)
    As = coef[order]  # (d, M)
    A = np.zeros((d, M + 1))
    A[:, 1:] = np.cumsum(As * Vs, axis=1)
    B = np.zeros((d, M + 1))
    B[:, :M] = np.cumsum(As[:, ::-1], axis=1)[:, ::-1]
    return Vs, A, B


def _check_model(sv, coef, intercept):
    sv = check_matrix(sv, "support_vectors", non_negative=True)
    coef = np.asarray(coef, dtype=np.float64).ravel()
    if coef.shape[0] != sv.shape[0]:
        raise ValueError(f"dual_coef: has {coef.shape[0]} entries for {sv.shape[0]} support vectors")
    if not np.isfinite(coef).all() or not np.isfinite(intercept):
        raise ValueError("dual_coef / intercept: contain NaN or infinity")
    return sv, coef, float(intercept)


def merge_hik_ensemble(
    members: Sequence[tuple[ArrayLike, ArrayLike, float]], weights: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Merge meta classifiers into one kernel expansion, [Li13] Eq. (9)-(12).

    Parameters
    ----------
    members : sequence of (support_vectors, dual_coef, intercept)
    weights : sequence of float, optional
        lambda_t of [Li13] Eq. (10); uniform ([Li13] Eq. (9)) by default. Normalized to sum 1.

    Returns
    -------
    support_vectors, dual_coef, intercept
        G(x) = intercept + sum_j dual_coef[j] K(x, support_vectors[j]).

    Raises
    ------
    ValueError
        If ``members`` is empty or ``weights`` are not non-negative with a positive sum.
    """
    members = list(members)
    if not members:
        raise ValueError("members: need at least one meta classifier")
    w = np.ones(len(members)) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (len(members),) or not np.all(w >= 0) or not w.sum() > 0:
        raise ValueError(f"weights: need {len(members)} non-negative weights with a positive sum")
    w = w / w.sum()
    sv = np.concatenate([np.asarray(m[0], dtype=np.float32) for m in members])
    coef = np.concatenate([wt * np.asarray(m[1], dtype=np.float64) for wt, m in zip(w, members)])
    b = float(sum(wt * m[2] for wt, m in zip(w, members)))
    return sv, coef, b


# --------------------------------------------------------------------------- exact tables
class HIKExactTable:
    """Exact compressed HIK model: sorted support values + binary search, [Li13] Eq. (15).

    Build it with :meth:`from_support_vectors` (or :func:`compress_hik` with ``n_bins=None``).

    Parameters
    ----------
    values : ndarray of shape (d, M)
        Per dimension, the M support values x̄_j(i), sorted.
    prefix : ndarray of shape (d, M + 1)
        Prefix sums of a_j x̄_j(i) in that order (``prefix[:, 0] = 0``).
    suffix : ndarray of shape (d, M + 1)
        Suffix sums of a_j in that order (``suffix[:, M] = 0``).
    intercept : float
        b0 of [Li13] Eq. (13).

    Raises
    ------
    ValueError
        If the three tables' shapes disagree.

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.svm import HIKExactTable, hik_gram
    >>> sv = np.array([[1.0, 0.0], [0.5, 2.0]]); a = np.array([1.0, -0.5])
    >>> t = HIKExactTable.from_support_vectors(sv, a, 0.1)
    >>> X = np.array([[0.7, 1.0]])
    >>> bool(np.isclose(t.decision_function(X)[0], hik_gram(X, sv)[0] @ a + 0.1))
    True
    """

    def __init__(self, values: ArrayLike, prefix: ArrayLike, suffix: ArrayLike, intercept: float):
        self.values = np.ascontiguousarray(values, dtype=np.float64)
        self.prefix = np.ascontiguousarray(prefix, dtype=np.float64)
        self.suffix = np.ascontiguousarray(suffix, dtype=np.float64)
        self.intercept = float(intercept)
        d, M = self.values.shape
        if self.prefix.shape != (d, M + 1) or self.suffix.shape != (d, M + 1):
            raise ValueError(f"exact HIK table: inconsistent shapes {self.values.shape}, {self.prefix.shape}, {self.suffix.shape}")

    @classmethod
    def from_support_vectors(cls, support_vectors: ArrayLike, dual_coef: ArrayLike, intercept: float) -> HIKExactTable:
        """Sort a kernel expansion's support values per dimension and tabulate its prefix/suffix sums.

        Parameters
        ----------
        support_vectors : array-like of shape (M, d)
            Non-negative support vectors x̄_j.
        dual_coef : array-like of shape (M,)
            Their coefficients a_j (``alpha_j * y_j``).
        intercept : float
            b0 of [Li13] Eq. (13).

        Returns
        -------
        HIKExactTable
            The exact table of ``f(x) = Σ_j a_j HIK(x, x̄_j) + b0``.
        """
        sv, coef, b = _check_model(support_vectors, dual_coef, intercept)
        V, A, B = _sorted_tables(sv, coef)
        return cls(V, A, B, b)

    @property
    def n_features(self) -> int:
        """Number of input dimensions d."""
        return self.values.shape[0]

    def H(self, Z: ArrayLike) -> np.ndarray:
        """H_i evaluated at points ``Z[i, :]`` per dimension, [Li13] Eq. (14).

        Parameters
        ----------
        Z : array-like of shape (d, m)
            Row ``i`` holds the m points at which to evaluate dimension i's H_i.

        Returns
        -------
        ndarray of shape (d, m), dtype float64
            ``H_i(Z[i, k])``.
        """
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        out = np.empty_like(Z)
        _eval_sorted(self.values, self.prefix, self.suffix, Z, out)
        return out

    def decision_function(self, X: ArrayLike, *, check: bool = True) -> np.ndarray:
        """Exact scores of the rows of ``X``, [Li13] Eq. (13) with H_i by binary search ([Li13] Eq. (15)).

        Parameters
        ----------
        X : array-like of shape (n_samples, d)
            Non-negative rows to score.
        check : bool, default=True
            Validate ``X``; False skips it for a float64 C-contiguous array already checked.

        Returns
        -------
        ndarray of shape (n_samples,), dtype float64
            ``Σ_j a_j HIK(x, x̄_j) + b0`` for every row.
        """
        if check:
            X = check_matrix(X, "X", non_negative=True, min_rows=0, n_features=self.n_features)
        out = np.empty(X.shape[0], dtype=np.float64)
        if X.shape[0]:
            _score_exact(X, self.values, self.prefix, self.suffix, self.intercept, out)
        return out

    def to_bins(self, n_bins: int = 100, lo: ArrayLike | None = None, hi: ArrayLike | None = None) -> HIKBinTable:
        """Approximate with q uniform bins per dimension, [Li13] Eq. (16).

        The grid spans [x̄_(1)(i), x̄_(M)(i)] unless ``lo``/``hi`` (per-dimension
        arrays) fix it, which lets tables of different models be added.

        Parameters
        ----------
        n_bins : int, default=100
            q, the number of bins per dimension (at least 1).
        lo, hi : array-like of shape (d,), optional
            Grid range per dimension (``lo <= hi``); default the smallest and
            largest support value of each dimension.

        Returns
        -------
        HIKBinTable
            The tabulated model, with the bound on its error in ``error_bound``.
        """
        q = _check_bins(n_bins)
        d, M = self.values.shape
        lo = self.values[:, 0].copy() if lo is None else np.asarray(lo, dtype=np.float64).copy()
        hi = self.values[:, M - 1].copy() if hi is None else np.asarray(hi, dtype=np.float64).copy()
        if lo.shape != (d,) or hi.shape != (d,) or np.any(hi < lo):
            raise ValueError(f"lo/hi: need two arrays of shape ({d},) with lo <= hi")
        grid = lo[:, None] + (hi - lo)[:, None] * (np.arange(q + 1) / q)[None, :]
        grid[:, q] = hi  # no rounding at the top node
        values = self.H(grid)
        # Slopes just outside the grid: sum of a over support values >= z ([Li13] Eq. (15)).
        n_below = (self.values < lo[:, None]).sum(axis=1)
        n_above = (self.values <= hi[:, None]).sum(axis=1)
        below = self.suffix[np.arange(d), n_below]
        above = self.suffix[np.arange(d), n_above]
        abs_a = np.abs(self.suffix[:, :M] - self.suffix[:, 1:])  # |a| of the l-th sorted value
        bound = _bin_error_bound(self.values, abs_a, lo, hi, q)
        return HIKBinTable(lo, hi, values, below, above, self.intercept, error_bound=bound)


def _check_bins(n_bins) -> int:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins: expected an integer >= 1, got {n_bins!r}")
    return int(n_bins)


def _bin_error_bound(values: np.ndarray, abs_a: np.ndarray, lo: np.ndarray, hi: np.ndarray, q: int) -> float:
    """The interpolation bound of a q-bin table: per dimension, delta / 4 times the largest |a| mass of the
    support values strictly inside one bin, summed over dimensions. ``values`` (d, M) are the support values
    of each dimension, ``abs_a`` their |a| (broadcast to ``values``' shape)."""
    d = values.shape[0]
    width = hi - lo
    inside = (values > lo[:, None]) & (values < hi[:, None])
    safe = np.where(width > 0, width, 1.0)
    k = np.clip(((values - lo[:, None]) / safe[:, None] * q).astype(np.int64), 0, q - 1)
    cell = np.arange(d)[:, None] * q + k  # (dimension, bin) as one index
    mass = np.bincount(cell[inside], weights=np.broadcast_to(abs_a, values.shape)[inside], minlength=d * q)
    return float(np.sum(width / q / 4.0 * mass.reshape(d, q).max(axis=1)))


# --------------------------------------------------------------------------- q-bin tables
class HIKBinTable:
    """Approximate compressed HIK model: a d x (q+1) table, O(d) per image, [Li13] Eq. (16).

    Parameters
    ----------
    lo, hi : ndarray (d,)
        Grid range per dimension.
    values : ndarray (d, q + 1)
        H_i at the q + 1 grid nodes.
    below, above : ndarray (d,)
        Slopes of H_i below ``lo`` and above ``hi`` (exact linear pieces).
    intercept : float
        b0 of [Li13] Eq. (13).
    error_bound : float
        Bound on |table - exact| for any input in exact arithmetic (NaN when unknown); the float32
        kernel adds its rounding, which grows with how many bin widths an input lies outside
        the grid (relative ~1e-5 of the score 100 bins out; tests/svm/test_hik_table_properties.py).

    Examples
    --------
    >>> import numpy as np
    >>> from hardneg.svm import compress_hik, hik_gram
    >>> rng = np.random.default_rng(0)
    >>> sv = rng.random((30, 8)); a = rng.normal(size=30)
    >>> table = compress_hik(sv, a, 0.0, n_bins=50)
    >>> X = rng.random((5, 8))
    >>> err = np.abs(table.decision_function(X) - hik_gram(X, sv) @ a).max()
    >>> bool(err <= table.error_bound + 1e-4)
    True
    """

    def __init__(self, lo: ArrayLike, hi: ArrayLike, values: ArrayLike, below: ArrayLike, above: ArrayLike, intercept: float,
                 error_bound: float = float("nan")):
        self.values = np.ascontiguousarray(values, dtype=np.float64)
        d, q1 = self.values.shape
        if q1 < 2:
            raise ValueError(f"values: need at least 2 grid nodes per dimension, got shape {self.values.shape}")
        self.lo = np.ascontiguousarray(lo, dtype=np.float64)
        self.hi = np.ascontiguousarray(hi, dtype=np.float64)
        self.below = np.ascontiguousarray(below, dtype=np.float64)
        self.above = np.ascontiguousarray(above, dtype=np.float64)
        for name, arr in (("lo", self.lo), ("hi", self.hi), ("below", self.below), ("above", self.above)):
            if arr.shape != (d,):
                raise ValueError(f"{name}: expected shape ({d},), got {arr.shape}")
        if np.any(self.hi < self.lo):
            raise ValueError("lo/hi: every lo must be <= hi")
        self.intercept = float(intercept)
        self.error_bound = float(error_bound)
        self._packed = None
        self._pairs = None

    @classmethod
    def from_support_vectors(cls, support_vectors: ArrayLike, dual_coef: ArrayLike, intercept: float, n_bins: int = 100,
                             lo: ArrayLike | None = None, hi: ArrayLike | None = None) -> HIKBinTable:
        """The q-bin table of a kernel expansion, [Li13] Eq. (16), without sorting the support values.

        The same table as ``HIKExactTable.from_support_vectors(...).to_bins(n_bins, lo, hi)`` (node values equal to
        rounding, the same ``error_bound``) in O(M d + q d) instead of a sort per dimension.

        Parameters
        ----------
        support_vectors : array-like of shape (M, d)
            Non-negative support vectors x̄_j (at least one).
        dual_coef : array-like of shape (M,)
            Their coefficients a_j.
        intercept : float
            b0 of [Li13] Eq. (13).
        n_bins : int, default=100
            q, the number of bins per dimension (at least 1).
        lo, hi : array-like of shape (d,), optional
            Grid range per dimension; default the smallest and largest support value of each dimension.

        Returns
        -------
        HIKBinTable
            The tabulated model, with the bound on its error in ``error_bound``.
        """
        sv, coef, b = _check_model(support_vectors, dual_coef, intercept)
        q = _check_bins(n_bins)
        lo = sv.min(axis=0).astype(np.float64) if lo is None else lo
        hi = sv.max(axis=0).astype(np.float64) if hi is None else hi
        table = cls._tabulate(sv, coef, b, lo, hi, q)
        table.error_bound = _bin_error_bound(sv.T, np.abs(coef)[None, :], table.lo, table.hi, q)
        return table

    @classmethod
    def on_grid(cls, support_vectors: ArrayLike, dual_coef: ArrayLike, intercept: float, lo: ArrayLike, hi: ArrayLike,
                n_bins: int) -> HIKBinTable:
        """Tabulate a kernel expansion on a given grid directly (no sorting).

        Tables on one grid add up, so an ensemble's table is the weighted
        sum of its members' tables ([Li13] Eq. (9)). Used to score candidates
        during Negative Bootstrap training. ``error_bound`` is not computed.

        Parameters
        ----------
        support_vectors : array-like of shape (M, d)
            Non-negative support vectors x̄_j.
        dual_coef : array-like of shape (M,)
            Their coefficients a_j.
        intercept : float
            b0 of [Li13] Eq. (13).
        lo, hi : array-like of shape (d,)
            Grid range per dimension (``lo <= hi``).
        n_bins : int
            q, the number of bins per dimension.

        Returns
        -------
        HIKBinTable
            The table on that grid (``error_bound`` NaN).
        """
        sv, coef, b = _check_model(support_vectors, dual_coef, intercept)
        return cls._tabulate(sv, coef, b, lo, hi, int(n_bins))

    @classmethod
    def _tabulate(cls, sv: np.ndarray, coef: np.ndarray, b: float, lo: ArrayLike, hi: ArrayLike, q: int) -> HIKBinTable:
        """:meth:`on_grid` on a model :func:`_check_model` has already checked."""
        d = sv.shape[1]
        lo = np.ascontiguousarray(lo, dtype=np.float64)
        hi = np.ascontiguousarray(hi, dtype=np.float64)
        if lo.shape != (d,) or hi.shape != (d,) or np.any(hi < lo):
            raise ValueError(f"lo/hi: need two arrays of shape ({d},) with lo <= hi")
        values = np.empty((d, q + 1))
        below = np.empty(d)
        above = np.empty(d)
        _grid_values(sv, coef, lo, hi, q, values, below, above)
        return cls(lo, hi, values, below, above, b)

    @property
    def n_features(self) -> int:
        """Number of input dimensions d."""
        return self.values.shape[0]

    @property
    def n_bins(self) -> int:
        """Number of bins q per dimension (the table has q + 1 nodes)."""
        return self.values.shape[1] - 1

    def _pack(self):
        """Float32 copies for the kernel: lo, q / width, and the extended node table.

        ``V[i, k + 1]`` is H_i at node k (k = 0..q); the virtual nodes -1 and
        q + 1 continue the exact linear pieces below ``lo`` (slope ``below``) and
        above ``hi`` (slope ``above``), [Li13] Eq. (15), so interpolating between nodes
        -1 and 0, or q and q + 1, is exact outside the grid. A dimension whose
        grid has zero width gets a pseudo-grid of width 1 on which H_i is the
        same linear function (all its support values equal ``lo``).
        """
        if self._packed is None:
            q = self.n_bins
            if self.n_features * (q + 3) >= 2**31:  # the kernel indexes the flat table with int32
                raise ValueError(f"table: {self.n_features} dimensions x {q} bins is too large to score (fewer bins)")
            width = self.hi - self.lo
            flat = width <= 0
            delta = np.where(flat, 1.0 / q, width / q)
            V = np.empty((self.n_features, q + 3))
            V[:, 1:q + 2] = np.where(flat[:, None], self.values[:, :1] + self.above[:, None] * delta[:, None] * np.arange(q + 1),
                                     self.values)
            V[:, 0] = V[:, 1] - self.below * delta
            V[:, q + 2] = V[:, q + 1] + self.above * delta
            self._packed = (self.lo.astype(np.float32), (1.0 / delta).astype(np.float32), V.astype(np.float32))
        return self._packed

    def _pack_pairs(self):
        """The extended table as (value, slope) pairs for ``_score_bins``, and each dimension's row offset.

        ``P[i, k] = V[i, k] + 1j * float32(V[i, k + 1] - V[i, k])`` (complex64, so one
        8-byte load gives both); the slope is rounded to float32 exactly as the
        kernel's ``b - a`` would be. The last column's slope is never read (k <= q + 1).
        """
        if self._pairs is None:
            V = self._pack()[2]
            P = np.zeros(V.shape, dtype=np.complex64)
            P.real = V
            P.imag[:, :-1] = V[:, 1:] - V[:, :-1]  # float32 - float32: rounded once, as in the kernel
            off = (np.arange(V.shape[0], dtype=np.uint32) * np.uint32(V.shape[1])).astype(np.uint32)
            self._pairs = (P, off)
        return self._pairs

    def decision_function(self, X: ArrayLike, *, check: bool = True) -> np.ndarray:
        """Score rows of ``X`` in O(d) each, [Li13] Eq. (13) with tabulated H_i ([Li13] Eq. (16)).

        Parameters
        ----------
        X : array-like of shape (n_samples, d)
            Non-negative rows to score.
        check : bool, default=True
            Validate ``X``; False skips it for an array already checked.

        Returns
        -------
        ndarray of shape (n_samples,), dtype float64
            The approximate score of every row (linear interpolation between
            grid nodes, exact outside the grid).
        """
        if check:
            X = check_matrix(X, "X", non_negative=True, min_rows=0, n_features=self.n_features)
        out = np.empty(X.shape[0], dtype=np.float64)
        if X.shape[0]:
            lo, inv, _ = self._pack()
            P, off = self._pack_pairs()
            _score_bins(X, lo, inv, P, off, self.n_bins, out)
            out += self.intercept
        return out

    def H(self, Z: ArrayLike) -> np.ndarray:
        """H_i at points ``Z[i, :]`` per dimension, with the arithmetic of :meth:`decision_function`.

        Float32 terms: summing ``H(Z)`` over dimensions in the kernel's order
        gives the kernel's score bit for bit (what the uint8 scan relies on).

        Parameters
        ----------
        Z : array-like of shape (d, m)
            Row ``i`` holds the m points at which to evaluate dimension i's H_i.

        Returns
        -------
        ndarray of shape (d, m), dtype float32
            ``H_i(Z[i, k])`` from the table.

        Raises
        ------
        ValueError
            If ``Z`` is not 2-D with d rows.
        """
        Z = np.ascontiguousarray(Z, dtype=np.float32)
        if Z.ndim != 2 or Z.shape[0] != self.n_features:
            raise ValueError(f"Z: expected shape ({self.n_features}, m), got {Z.shape}")
        out = np.empty(Z.shape, dtype=np.float32)
        lo, inv, V = self._pack()
        _eval_bins(Z, lo, inv, V, self.n_bins, out)
        return out

    def same_grid(self, other: HIKBinTable) -> bool:
        """Whether ``other`` is tabulated on the same grid (so the two can be combined).

        Parameters
        ----------
        other : HIKBinTable
            Another table.

        Returns
        -------
        bool
            True when both have the same shape and the same ``lo`` and ``hi``.
        """
        return (self.values.shape == other.values.shape and np.array_equal(self.lo, other.lo)
                and np.array_equal(self.hi, other.hi))

    @staticmethod
    def combine(tables, weights: ArrayLike | None = None) -> HIKBinTable:
        """Weighted average of tables on one grid, [Li13] Eq. (9)/(10): H_i is linear in the a_j.

        Parameters
        ----------
        tables : iterable of HIKBinTable
            At least one table, all on the same grid.
        weights : array-like of shape (n_tables,), optional
            Non-negative weights with a positive sum (normalized to sum 1);
            default equal weights.

        Returns
        -------
        HIKBinTable
            The table of the weighted average of the models; its ``error_bound``
            is the weighted mean of theirs.

        Raises
        ------
        ValueError
            If ``tables`` is empty, the weights are invalid, or the grids differ.
        """
        tables = list(tables)
        if not tables:
            raise ValueError("tables: need at least one table")
        w = np.ones(len(tables)) if weights is None else np.asarray(weights, dtype=np.float64)
        # non-negative as [Li13] Eq. (10)'s lambda_t: the combined error bound is then the weighted mean
        if w.shape != (len(tables),) or not np.all(w >= 0) or not w.sum() > 0:
            raise ValueError(f"weights: need {len(tables)} non-negative weights with a positive sum")
        w = w / w.sum()
        first = tables[0]
        for t in tables[1:]:
            if not first.same_grid(t):
                raise ValueError("tables: can only combine tables built on the same grid (pass lo/hi)")
        return HIKBinTable(
            first.lo, first.hi,
            sum(wt * t.values for wt, t in zip(w, tables)),
            sum(wt * t.below for wt, t in zip(w, tables)),
            sum(wt * t.above for wt, t in zip(w, tables)),
            float(sum(wt * t.intercept for wt, t in zip(w, tables))),
            error_bound=float(sum(wt * t.error_bound for wt, t in zip(w, tables))),
        )


def score_codes(codes, table) -> np.ndarray:
    """Sum of ``table[i, codes[r, i]]`` over dimensions: scoring uint8 codes by look-up only.

    Parameters
    ----------
    codes : ndarray (n, d) of uint8
    table : ndarray (d, m)
        One row of values per dimension; every code must be < m.

    Returns
    -------
    ndarray (n,) of float64
    """
    codes = np.ascontiguousarray(codes)
    if codes.dtype != np.uint8 or codes.ndim != 2:
        raise TypeError(f"codes: expected a 2-D uint8 array, got {codes.dtype} with shape {codes.shape}")
    table = np.ascontiguousarray(table)
    if table.dtype not in (np.float32, np.float64):
        table = table.astype(np.float64)
    if table.ndim != 2 or table.shape[0] != codes.shape[1]:
        raise ValueError(f"table: expected shape ({codes.shape[1]}, m), got {table.shape}")
    out = np.empty(codes.shape[0], dtype=np.float64)
    if codes.size:
        top = int(codes.max())
        if top >= table.shape[1]:
            raise ValueError(f"codes: value {top} has no table entry (the grid has {table.shape[1]} levels); "
                             "the codes were made for another grid, or are damaged")
        _score_codes(codes, table, out)
    else:
        out[:] = 0.0
    return out


def compress_hik(
    support_vectors: ArrayLike,
    dual_coef: ArrayLike,
    intercept: float,
    n_bins: int | None = 100,
    *,
    lo: ArrayLike | None = None,
    hi: ArrayLike | None = None,
) -> HIKExactTable | HIKBinTable:
    """Compress a (merged) HIK SVM into lookup tables, [Li13] Eq. (13)-(16).

    ``n_bins=None`` gives the exact table (:class:`HIKExactTable`); an integer
    q gives the d x (q+1) approximation (:class:`HIKBinTable`).

    Parameters
    ----------
    support_vectors : array-like of shape (n_sv, n_features)
        Non-negative support vectors x̄_j.
    dual_coef : array-like of shape (n_sv,)
        Their coefficients a_j (signed: alpha_j y_j).
    intercept : float
        b0 of [Li13] Eq. (13).
    n_bins : int or None
        Bins q per dimension; None for the exact table.
    lo, hi : array-like of shape (n_features,), optional
        Per-dimension grid ends (binned table only); default the support values' range.

    Returns
    -------
    HIKExactTable or HIKBinTable
        A scorer with ``decision_function(X)``.
    """
    if n_bins is None:
        return HIKExactTable.from_support_vectors(support_vectors, dual_coef, intercept)
    return HIKBinTable.from_support_vectors(support_vectors, dual_coef, intercept, n_bins, lo=lo, hi=hi)
