"""Property tests (hypothesis): store round trips, the finite-check kernel, top-k merges.

Each property is checked on many generated cases instead of a few hand-picked
ones; the slow, obvious reference is NumPy.
"""

import tempfile

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from hardneg import TopK
from hardneg.store import FeatureStore
from hardneg.store._finite import all_finite

floats = st.floats(allow_nan=False, allow_infinity=False, width=32)


@settings(max_examples=40, deadline=None)
@given(arrays(np.float32, st.tuples(st.integers(0, 300)), elements=st.floats(width=32)))
def test_all_finite_equals_numpy(x):
    """Both paths: NumPy (a process's first values) and the compiled kernel (after the budget)."""
    from hardneg.store import _finite

    assert all_finite(x) == bool(np.isfinite(x).all())
    budget = _finite.NUMPY_BUDGET
    _finite.NUMPY_BUDGET = -1  # the compiled kernel
    try:
        assert all_finite(x) == bool(np.isfinite(x).all())
    finally:
        _finite.NUMPY_BUDGET = budget


@settings(max_examples=15, deadline=None)
@given(
    st.lists(arrays(np.float32, st.tuples(st.integers(1, 9), st.just(3)), elements=floats), min_size=1, max_size=4),
    st.integers(1, 5),
)
def test_dense_store_round_trip(batches, chunk_rows):
    with tempfile.TemporaryDirectory() as tmp:
        with FeatureStore.create(tmp + "/s", dim=3, chunk_rows=chunk_rows) as store:
            for b in batches:
                store.append(b)
        store = FeatureStore.open(tmp + "/s")
        want = np.concatenate(batches)
        np.testing.assert_array_equal(store.to_numpy(), want)
        rows = np.arange(len(want))[::-1]
        np.testing.assert_array_equal(store.take(rows), want[rows])
        assert store.verify().ok


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 40)), elements=st.integers(-3, 3).map(float)), st.integers(1, 10), st.integers(1, 39))
def test_topk_merge_is_split_invariant(scores, k, cut):
    """The k best of a union do not depend on how it is split (ties broken by row)."""
    from hardneg._topk import merge_topk, topk_of

    rows = np.arange(scores.size)
    cut = min(cut, scores.size)
    whole = topk_of(rows, scores, k)
    merged = merge_topk(topk_of(rows[:cut], scores[:cut], k), topk_of(rows[cut:], scores[cut:], k))
    assert whole.rows.tolist() == merged.rows.tolist()
    order = np.lexsort((rows, -scores))[:k]
    assert whole.rows[0].tolist() == order.tolist()
    assert isinstance(whole, TopK)
