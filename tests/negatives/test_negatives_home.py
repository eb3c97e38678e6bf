"""hardneg.negatives is the one home of pool, pair and triplet samplers (issue 25).

The names import from ``hardneg.negatives`` (the compatibility modules of the old
private paths are gone, issue 40); every sampler draws exactly what it drew
before the move (the expected draws below were recorded with the code at its old
paths, commit c9d24cc, on the same seeds).
"""

import importlib
import subprocess
import sys

import numpy as np
import pytest

import hardneg.negatives as neg
from hardneg.negatives import (
    BootstrapPoolSampler,
    ConceptTripletSampler,
    CorrelationPairSampler,
    NegativePool,
    RandomPairSampler,
    RandomPoolSampler,
    RandomTripletSampler,
    UncertaintyPairSampler,
    concept_protocol,
    concept_triplets,
    random_triplets,
)

REEXPORTS = [
    # (package, name, object): public names of the same objects elsewhere; the pair samplers'
    # names in hardneg.zeroshot, the triplet samplers in hardneg.similarity's API
    ("hardneg.zeroshot", "NegativeSampler", neg.BasePairSampler),
    ("hardneg.zeroshot", "RandomSampler", RandomPairSampler),
    ("hardneg.zeroshot", "UncertaintySampler", UncertaintyPairSampler),
    ("hardneg.zeroshot", "CorrelationSampler", CorrelationPairSampler),
    ("hardneg.zeroshot", "SAMPLERS", neg.PAIR_SAMPLERS),
    ("hardneg.similarity", "concept_triplets", concept_triplets),
    ("hardneg.similarity", "concept_protocol", concept_protocol),
    ("hardneg.similarity", "random_triplets", random_triplets),
]


@pytest.mark.parametrize("module, name, new", REEXPORTS, ids=[f"{m}.{n}" for m, n, _ in REEXPORTS])
def test_reexports_are_the_same_objects(module, name, new):
    assert getattr(importlib.import_module(module), name) is new


@pytest.mark.parametrize("module", ["hardneg.negatives._base", "hardneg.negatives._random", "hardneg.negatives._bootstrap",
                                    "hardneg.similarity._sampling"])
def test_old_private_paths_are_gone(module):
    """Private module paths promise nothing (issue 40): the compatibility modules are deleted."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)


def test_one_naming_scheme():
    samplers = [n for n in neg.__all__ if n.endswith("Sampler")]
    for name in samplers:
        assert any(name.endswith(kind + "Sampler") for kind in ("Pool", "Pair", "Triplet")), name
        assert name in neg.__doc__ or name.startswith("Base"), f"{name} missing from the package docstring"
    kinds = {kind: [n for n in samplers if n.endswith(kind + "Sampler")] for kind in ("Pool", "Pair", "Triplet")}
    assert all(len(v) >= 2 for v in kinds.values()), kinds


def test_pair_sampler_names_recorded_in_model_files_are_unchanged():
    assert {k: v.__name__ for k, v in neg.PAIR_SAMPLERS.items()} == {
        "random": "RandomPairSampler", "uncertainty": "UncertaintyPairSampler", "correlation": "CorrelationPairSampler"}
    assert isinstance(neg.make_pair_sampler("uncertainty"), UncertaintyPairSampler)
    with pytest.raises(ValueError, match="^sampler: expected one of"):
        neg.make_pair_sampler("hard")


def test_negatives_imports_no_estimator():
    code = ("import sys, hardneg.negatives; "
            "bad = [m for m in sys.modules if m.startswith(('hardneg.concept', 'hardneg.zeroshot', 'hardneg.similarity', 'torch'))]; "
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


# ---------------------------------------------------------------- same draws as before the move
def _pool():
    X = np.random.default_rng(0).random((40, 3))
    return NegativePool(X, tags=[["a"]] * 5 + [["b"]] * 35, exclude_tags=["a"])


def test_pool_samplers_draw_as_before():
    pool = _pool()
    assert RandomPoolSampler().sample(pool, 6, 3).rows.tolist() == [7, 11, 12, 29, 10, 33]
    s = BootstrapPoolSampler(n_candidates=15).sample(pool, 4, 5, scorer=lambda B: B[:, 0])
    assert (s.rows.tolist(), s.n_skipped) == ([9, 31, 33, 19], 0)
    s = BootstrapPoolSampler(n_candidates=15, skip_top="auto").sample(pool, 4, 5, scorer=lambda B: B[:, 0])
    assert (s.rows.tolist(), s.n_skipped) == ([17, 22, 5, 23], 10)


@pytest.mark.parametrize("cls, expected", [
    (RandomPairSampler, [[6, 4, 4], [6, 4, 5], [0, 1, 0], [2, 3, 6], [6, 0, 5]]),
    (UncertaintyPairSampler, [[5, 5, 5], [0, 1, 5], [0, 3, 3], [3, 3, 3], [1, 4, 4]]),
    (CorrelationPairSampler, [[4, 5, 5], [0, 0, 5], [0, 3, 3], [3, 2, 2], [1, 1, 1]]),
])
def test_pair_samplers_draw_as_before(cls, expected):
    vec = np.array([[0.0, 1], [0.2, 1], [1, 0], [1.1, 0.2], [0.5, 0.5], [0.4, 0.6], [2.0, 2.0]])
    lab = np.array([0, 0, 1, 1, 2, 2, 2])
    E = np.random.default_rng(1).random((5, 2))
    pos = np.array([0, 2, 4, 1, 3])
    s = cls().prepare(vec, lab)
    assert s.sample(E, vec.copy(), pos, lab[pos], 3, 2, np.random.default_rng(7)).tolist() == expected


def test_triplet_samplers_draw_as_before():
    y = np.repeat([0, 1, 2], 6)
    expected = [[11, 6, 14], [14, 15, 7], [6, 11, 14], [3, 4, 9], [11, 6, 13], [4, 3, 8]]
    assert concept_triplets(y, n_positives=2, n_negatives=2, random_state=0)[:6].tolist() == expected
    assert ConceptTripletSampler(2, n_negatives=2).sample(y, random_state=0)[:6].tolist() == expected
    t, train = concept_protocol(y, 1, n_positives=2, n_negatives=3, random_state=0)
    assert t[:4].tolist() == [[9, 10, 0], [9, 10, 2], [10, 9, 0], [10, 9, 2]]
    assert train.tolist() == [0, 2, 3, 9, 10]
    expected = [[15, 12, 7], [11, 6, 16], [9, 6, 12], [4, 0, 13], [5, 4, 17]]
    assert random_triplets(y, 5, random_state=0).tolist() == expected
    assert RandomTripletSampler(5).sample(y, random_state=0).tolist() == expected
    assert repr(RandomTripletSampler(5)) == "RandomTripletSampler(n_triplets=5)"


def test_cli_sampler_choices_come_from_the_pair_registry(tmp_path):
    import typer
    from typer.testing import CliRunner

    from hardneg.exceptions import CLIError
    from hardneg.cli.zsl import app as zsl_app

    app = typer.Typer()
    app.add_typer(zsl_app, name="zsl")
    r = CliRunner().invoke(app, ["zsl", "train", str(tmp_path), "-o", str(tmp_path / "m.npz"), "--sampler", "hard"])
    assert isinstance(r.exception, CLIError)
    assert str(r.exception) == "--sampler: expected one of random, uncertainty, correlation, got 'hard'"
