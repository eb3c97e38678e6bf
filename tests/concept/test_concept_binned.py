"""Concept scans over binned (uint8) stores: look-up scoring, the quantize command, accuracy."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from hardneg.cli.main import main
from hardneg.concept import CompressedConcept, NegativeBootstrap
from hardneg._parallel._partition import dense
from hardneg.store import (
    BinGrid,
    BinnedStore,
    CodeBlock,
    FeatureStore,
    StoreError,
    quantize_store,
)
from hardneg.svm import compress_hik
from hardneg.svm._hik_tables import HIKBinTable, score_codes


def _model(rng, d, q, n_sv=40, flat_dims=()):
    sv = rng.random((n_sv, d)) * 2.0
    for i in flat_dims:
        sv[:, i] = 0.7  # zero-width grid in this dimension
    return CompressedConcept(compress_hik(sv, rng.normal(size=n_sv), 0.3, n_bins=q))


def _slow_table_score(table: HIKBinTable, X):
    """Eq. (13)/(16) written out: interpolate H_i between grid nodes, exact lines outside the grid."""
    out = np.full(X.shape[0], table.intercept)
    q = table.n_bins
    for r in range(X.shape[0]):
        for i in range(X.shape[1]):
            z, lo, hi = float(X[r, i]), table.lo[i], table.hi[i]
            if z <= lo:
                h = table.values[i, 0] + (z - lo) * table.below[i]
            elif z >= hi:
                h = table.values[i, q] + (z - hi) * table.above[i]
            else:
                t = (z - lo) / (hi - lo) * q
                k = min(int(t), q - 1)
                h = table.values[i, k] + (t - k) * (table.values[i, k + 1] - table.values[i, k])
            out[r] += h
    return out


@pytest.mark.parametrize("d", [7, 8])
def test_table_kernel_matches_slow_reference_inside_and_outside_the_grid(d):
    rng = np.random.default_rng(d)
    model = _model(rng, d, 20, flat_dims=(2,))
    X = (rng.random((60, d)) * 3.0).astype(np.float32)  # beyond the support range too
    X[:5] = 0.0
    X[5, 2] = 0.7
    got = model.decision_function(X)
    want = _slow_table_score(model.table, X)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_score_codes_matches_slow_reference_and_refuses_codes_off_the_table():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 12, size=(50, 9), dtype=np.uint8)
    table = rng.normal(size=(9, 12)).astype(np.float32)
    want = np.array([sum(float(table[i, c[i]]) for i in range(9)) for c in codes])
    np.testing.assert_allclose(score_codes(codes, table), want, rtol=1e-12, atol=1e-12)
    codes[3, 4] = 12
    with pytest.raises(ValueError, match="codes: value 12"):
        score_codes(codes, table)
    with pytest.raises(TypeError, match="uint8"):
        score_codes(codes.astype(np.int32), table)


@pytest.mark.parametrize("q_model, q_grid, d", [(100, 100, 16), (50, 255, 9), (7, 3, 5)])
def test_codes_scan_equals_table_scan_of_the_node_values_exactly(q_model, q_grid, d):
    rng = np.random.default_rng(q_grid)
    model = _model(rng, d, q_model, flat_dims=(1,))
    X = (rng.gamma(0.5, size=(300, d)) * 1.5).astype(np.float32)
    grid = BinGrid(np.zeros(d), X.max(axis=0), q_grid)
    codes = grid.quantize(X)
    by_codes = model.decision_function(CodeBlock(codes, grid))
    by_floats = model.decision_function(grid.dequantize(codes))
    assert np.array_equal(by_codes, by_floats)  # same terms, same order: same bits
    assert np.array_equal(model.decision_function_bins(codes, grid), by_codes)
    # and near the original features: within half a bin times the largest slope
    assert np.abs(by_codes - model.decision_function(X)).max() <= model.bins_error_bound(grid) + 1e-4


def test_codes_need_their_grid_and_a_matching_dimension():
    rng = np.random.default_rng(2)
    model = _model(rng, 4, 10)
    codes = np.zeros((3, 4), np.uint8)
    with pytest.raises(TypeError, match="needs its grid"):
        model.decision_function(codes)
    with pytest.raises(ValueError, match="grid: has 5"):
        model.decision_function_bins(np.zeros((3, 5), np.uint8)[:, :4], BinGrid(np.zeros(5), np.ones(5), 10))
    with pytest.raises(ValueError, match="beyond|no table entry"):
        model.decision_function(CodeBlock(np.full((2, 4), 11, np.uint8), BinGrid(np.zeros(4), np.ones(4), 10)))


def test_exact_model_scores_codes_like_its_node_values():
    rng = np.random.default_rng(3)
    sv = rng.random((30, 6))
    model = CompressedConcept(compress_hik(sv, rng.normal(size=30), -0.2, n_bins=None))
    X = rng.random((40, 6)).astype(np.float32)
    grid = BinGrid(np.zeros(6), X.max(axis=0), 64)
    codes = CodeBlock(grid.quantize(X), grid)
    np.testing.assert_allclose(model.decision_function(codes), model.decision_function(grid.dequantize(codes)), rtol=1e-12, atol=1e-12)


def _problem(rng, n_pos=40, n_neg=400, d=24):
    centre = rng.random(d) * 2
    pos = np.abs(centre + 0.35 * rng.normal(size=(n_pos, d)))
    neg = rng.random((n_neg, d)) * 2
    X = np.vstack([pos, neg]).astype(np.float32)
    y = np.r_[np.ones(n_pos), np.zeros(n_neg)]
    return pos, neg, X, y


def test_binned_scan_ap_within_the_compression_bound(tmp_path):
    rng = np.random.default_rng(0)
    pos, neg, X, y = _problem(rng)
    nb = NegativeBootstrap(n_iter=5, random_state=0).fit(pos[:20], neg[:200])
    exact = nb.compress(None)
    model = nb.compress(100)
    with FeatureStore.create(tmp_path / "s", dim=X.shape[1], chunk_rows=64) as st:
        st.append(X)
    binned = quantize_store(tmp_path / "s", tmp_path / "q", n_bins=100)
    scores = np.concatenate([model.decision_function(dense(b)) for _, b in binned.iter_chunks(100)])
    bound = model.table.error_bound + model.bins_error_bound(binned.grid)
    assert np.abs(scores - exact.decision_function(X)).max() <= bound + 1e-4
    ap_exact = average_precision_score(y, exact.decision_function(X))
    ap_binned = average_precision_score(y, scores)
    assert ap_exact > 0.9  # a problem with a known, easy answer
    assert abs(ap_binned - ap_exact) <= 0.02


def test_quantize_cli_round_trip(tmp_path, capsys):
    rng = np.random.default_rng(4)
    X = (rng.gamma(0.4, size=(150, 10))).astype(np.float32)
    X[:, 3] = 0.0  # an all-zero dimension
    with FeatureStore.create(tmp_path / "s", dim=10, chunk_rows=32) as st:
        st.append(X, ids=[f"img/{i}.jpg" for i in range(150)], tags=[["a"] if i % 3 else [] for i in range(150)])
    out = tmp_path / "s.q16"
    assert main(["store", "quantize", str(tmp_path / "s"), "--bins", "16", "-o", str(out)]) in (0, None)
    assert "150 rows x 10 dims" in capsys.readouterr().out
    b = BinnedStore.open(out)
    assert (len(b), b.dim, b.n_bins) == (150, 10, 16)
    np.testing.assert_array_equal(b.grid.hi, X.max(axis=0))
    codes = np.concatenate([np.asarray(c) for _, c in b.iter_chunks(40)])
    np.testing.assert_array_equal(codes, b.grid.quantize(X))
    delta = (b.grid.hi - b.grid.lo) / 16
    assert np.all(np.abs(b.dequantized() - X) <= delta / 2 + 1e-6)
    assert np.all(b.dequantized()[:, 3] == 0.0)
    assert b.items.column("id").to_pylist() == [f"img/{i}.jpg" for i in range(150)]
    block = b.take(np.array([5, 2]))
    assert isinstance(block, CodeBlock) and block.grid == b.grid and isinstance(dense(block), CodeBlock)
    np.testing.assert_array_equal(np.asarray(block), codes[[5, 2]])
    # an existing output is refused without --overwrite, replaced with it; a foreign folder never
    assert main(["store", "quantize", str(tmp_path / "s"), "--bins", "8", "-o", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["store", "quantize", str(tmp_path / "s"), "--bins", "8", "-o", str(out), "--overwrite"]) in (0, None)
    assert BinnedStore.open(out).n_bins == 8
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(StoreError, match="not a binned store"):
        quantize_store(tmp_path / "s", tmp_path / "mine", n_bins=8, overwrite=True)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".old"))]


def test_binned_store_refuses_a_damaged_copy(tmp_path):
    rng = np.random.default_rng(5)
    with FeatureStore.create(tmp_path / "s", dim=4) as st:
        st.append(rng.random((20, 4)).astype(np.float32))
    quantize_store(tmp_path / "s", tmp_path / "q", n_bins=10)
    np.save(tmp_path / "q" / "codes.npy", np.zeros((19, 4), np.uint8))
    with pytest.raises(StoreError, match="inconsistent binned store"):
        BinnedStore.open(tmp_path / "q")
    with pytest.raises(StoreError, match="not a binned store"):
        BinnedStore.open(tmp_path / "s")
    with pytest.raises(ValueError, match="n_bins: at most 255"):
        quantize_store(tmp_path / "s", tmp_path / "q2", n_bins=256)


def test_concept_search_picks_up_a_binned_copy_by_path(tmp_path):
    """A search handed the folder of a binned copy scans its uint8 codes, in process and per partition."""
    from hardneg.concept import search
    from hardneg.distributed import get_runner

    rng = np.random.default_rng(1)
    pos, neg, X, y = _problem(rng)
    model = NegativeBootstrap(n_iter=5, random_state=0).fit(pos[:20], neg[:200]).compress(100)
    with FeatureStore.create(tmp_path / "s", dim=X.shape[1], chunk_rows=64) as st:
        st.append(X)
    binned = quantize_store(tmp_path / "s", tmp_path / "q", n_bins=100)
    scores = np.concatenate([model.decision_function(dense(b)) for _, b in binned.iter_chunks(100)])
    want = np.lexsort((np.arange(scores.size), -scores))[:10]
    got = search(model, str(tmp_path / "q"), k=10)
    assert got.rows.tolist() == want.tolist()
    np.testing.assert_allclose(got.scores, scores[want], rtol=1e-6)
    with get_runner() as runner:
        assert search(model, str(tmp_path / "q"), k=10, runner=runner).rows.tolist() == want.tolist()
