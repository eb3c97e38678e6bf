"""Property tests (hypothesis) of the SOLIS solvers: the lazy sparse updates equal the dense
eager reference ([Gao17] Algorithms 1-4) on any small stream of triplets, for both clocks,
any λ and any initial weight. The hand-worked and fixed-seed cases are in test_similarity.py."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_similarity import eager_fit

from hardneg.similarity import SolisADA, SolisAFB, SolisDA, SolisTG


@st.composite
def problems(draw):
    """A small non-negative sparse matrix (some rows empty) and a stream of triplets over it."""
    n = draw(st.integers(3, 12))
    m = draw(st.integers(1, 15))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    density = draw(st.sampled_from([0.1, 0.3, 0.7]))
    D = (rng.random((n, m)) * (rng.random((n, m)) < density)).astype(np.float32)
    n_triplets = draw(st.integers(1, 60))
    triplets = rng.integers(0, n, size=(n_triplets, 3))
    return sp.csr_matrix(D), triplets


SOLVER = st.sampled_from([
    lambda lam, w0, clock: SolisTG(lam=lam, eta=0.5, w_init=w0),
    lambda lam, w0, clock: SolisDA(lam=lam, gamma=2.0, w_init=w0, clock=clock),
    lambda lam, w0, clock: SolisAFB(lam=lam, eta=0.5, w_init=w0),
    lambda lam, w0, clock: SolisADA(lam=lam, eta=0.5, w_init=w0, clock=clock),
])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), SOLVER, st.sampled_from([0.0, 1e-3, 0.05, 0.5]), st.sampled_from([0.0, 1.0]),
       st.sampled_from(["triplets", "updates"]))
def test_lazy_updates_equal_the_eager_reference(problem, make, lam, w0, clock):
    X, triplets = problem
    model = make(lam, w0, clock).fit(X, triplets=triplets)
    np.testing.assert_allclose(model.w_, eager_fit(model, X, triplets), atol=1e-6, rtol=1e-6)
