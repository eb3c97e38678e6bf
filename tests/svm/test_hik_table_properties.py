"""Property tests (hypothesis) of the compressed HIK model ([Li13] Eq. (13)-(16)): the exact
table equals the kernel expansion, and the q-bin table stays within its stated error bound
of it, for any support set, signed coefficients, q and input (inside or outside the grid),
up to float32 rounding (which the kernel's extrapolation beyond the grid amplifies: see
``_float32_extrapolation``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hardneg.svm import compress_hik, hik_gram


@st.composite
def models(draw):
    n_sv = draw(st.integers(1, 25))
    d = draw(st.integers(1, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([1e-3, 1.0, 50.0]))
    sv = rng.random((n_sv, d)) * scale
    sv[rng.random((n_sv, d)) < 0.3] = 0.0  # sparse histograms: many zero entries
    coef = rng.normal(size=n_sv)
    X = rng.random((draw(st.integers(1, 20)), d)) * scale * draw(st.sampled_from([0.5, 1.0, 2.0]))
    return sv, coef, float(rng.normal()), X


def _tol(model) -> float:
    """float32 arithmetic in the tables: a relative 1e-5 of the largest sum of terms (a few roundings of ~6e-8 each, times the number of terms)."""
    sv, coef, b, X = model
    return 1e-5 * (np.abs(coef).sum() * max(sv.max(), X.max()) + abs(b) + 1.0)


@settings(max_examples=40, deadline=None)
@given(models())
def test_exact_table_equals_the_kernel_expansion(model):
    sv, coef, b, X = model
    exact = hik_gram(X, sv) @ coef + b
    np.testing.assert_allclose(compress_hik(sv, coef, b, n_bins=None).decision_function(X), exact, rtol=0, atol=_tol(model))


def _float32_extrapolation(table, X) -> float:
    """What the float32 kernel adds outside the grid: it extends the table by one virtual
    node of the exact slope and extrapolates from there, so the rounding of the node
    values (half an ulp of the largest, ~6e-8 relative) grows with the distance in nodes
    (e.g. 8e-4 on scores of ~80 with an input 135 nodes below a flat grid). Zero inside."""
    lo, inv, V = table._pack()
    t = (np.asarray(X, np.float64) - lo) * inv
    nodes_out = np.maximum(np.maximum(-t, t - table.n_bins), 0.0).max(axis=0)
    return float(np.sum(2.0 ** -23 * np.abs(V).max(axis=1) * 2 * (nodes_out + 1)))


@settings(max_examples=40, deadline=None)
@given(models(), st.integers(1, 200))
def test_binned_table_is_within_its_error_bound(model, q):
    sv, coef, b, X = model
    exact = hik_gram(X, sv) @ coef + b
    table = compress_hik(sv, coef, b, n_bins=q)
    assert np.isfinite(table.error_bound)
    err = np.abs(table.decision_function(X) - exact).max()
    assert err <= table.error_bound + _tol(model) + _float32_extrapolation(table, X)
