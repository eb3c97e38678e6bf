"""heldout_map: the held-out retrieval criterion for choosing SOLIS parameters."""

import numpy as np
import pytest
import scipy.sparse as sp

from hardneg.similarity import SolisADA, TfidfCosine, concept_triplets, heldout_map


def _slow_heldout_map(model, X, t):
    """Obvious reference: per anchor, sort candidates by score (relevant last among ties), AP."""
    aps = []
    for a in np.unique(t[:, 0]):
        pos = set(t[t[:, 0] == a, 1].tolist())
        neg = set(t[t[:, 0] == a, 2].tolist()) - pos
        cands = sorted(pos) + sorted(neg)
        scores = model.score_pairs(X, np.array([[a, c] for c in cands]))
        rel = np.array([c in pos for c in cands])
        order = np.lexsort((rel, -scores))  # by score descending, ties: irrelevant (False) first
        hits, precisions = 0, []
        for rank, i in enumerate(order, 1):
            if rel[i]:
                hits += 1
                precisions.append(hits / rank)
        aps.append(np.mean(precisions))
    return float(np.mean(aps))


def test_hand_worked_example():
    # both words occur in 3 of 5 rows: equal idf, the rows are unit already -> plain cosine
    X = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [0.0, 1.0]]))
    model = TfidfCosine().fit(X)
    # anchor 0: positive 1 (1.0) above negatives 2 (0.6), 3 (0.0): AP 1
    assert heldout_map(model, X, [[0, 1, 2], [0, 1, 3]]) == pytest.approx(1.0)
    # anchor 3: positive 1 (0.0) below negative 2 (0.8): rank 2, AP 1/2; mean (1 + 1/2) / 2
    assert heldout_map(model, X, [[0, 1, 2], [0, 1, 3], [3, 1, 2]]) == pytest.approx(0.75)
    # anchor 3, positives 4 (1.0) and 1 (0.0), negative 2 (0.8): ranks 1 and 3 -> (1 + 2/3) / 2
    assert heldout_map(model, X, [[3, 4, 2], [3, 1, 2]]) == pytest.approx((1 + 2 / 3) / 2)


def test_ties_count_against_the_relevant():
    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]))
    model = TfidfCosine().fit(X)
    # anchor 0 scores positive 1 and negative 2 both 0: the positive is ranked second
    assert heldout_map(model, X, [[0, 1, 2]]) == pytest.approx(0.5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_slow_reference(seed):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(4), 15)
    dense = rng.random((60, 40)) * (rng.random((60, 40)) < 0.3)
    dense[np.arange(60), y] += 1.0
    X = sp.csr_matrix(dense)
    t = concept_triplets(y, n_positives=4, n_negatives=8, random_state=seed)
    model = SolisADA(lam=1e-3, eta=0.3).fit(X, triplets=t[: len(t) // 2])
    assert heldout_map(model, X, t) == pytest.approx(_slow_heldout_map(model, X, t))


def test_bad_triplets_are_refused():
    X = sp.csr_matrix(np.eye(3))
    model = TfidfCosine().fit(X)
    with pytest.raises(ValueError, match="triplets"):
        heldout_map(model, X, [[0, 1, 5]])
