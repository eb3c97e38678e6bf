"""hardneg.load (one loader for every model and index file) and hardneg.exceptions.

Every kind the dispatcher knows has a round trip here: fit a tiny model, save,
load with ``hardneg.load``, same class and same outputs. Files that are not
hardneg models are one-line ModelFileErrors. Importing ``hardneg`` stays cheap.
"""

from __future__ import annotations

import ast
import builtins
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import hardneg
from hardneg import exceptions as E
from hardneg._load import LOADERS
from hardneg._persist import model_kind, save_model
from hardneg.exceptions import HardnegError, ModelFileError
from hardneg.hashing._registry import KIND_PREFIX, METHODS, hasher_class

ROOT = Path(hardneg.__file__).parent


def _same(a, b):
    if hasattr(a, "to_dict"):  # a search result (hardneg.TopK)
        a, b = a.to_dict(), b.to_dict()
        assert a == b
        return
    if sp.issparse(a):
        a, b = a.toarray(), b.toarray()
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# ---------------------------------------------------------------------- round-trip cases
def _concept(n_bins):
    def case(tmp_path):
        from hardneg.concept import NegativeBootstrap

        rng = np.random.default_rng(0)
        pos, pool = rng.random((10, 5)) + 0.5, rng.random((120, 5))
        model = NegativeBootstrap(n_iter=3, random_state=0).fit(pos, pool).compress(n_bins=n_bins)
        return model, model.save(tmp_path / "concept.npz"), lambda m: m.decision_function(pool)

    return case


def _labelled(seed=0, n_classes=4, per=40, d=12):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 3, (n_classes, d))
    y = np.repeat(np.arange(n_classes), per)
    return (centers[y] + rng.normal(size=(y.size, d))).astype(np.float32), y


def _hasher(name, **kw):
    def case(tmp_path):
        from hardneg.hashing._registry import METHODS, hasher_class

        X, y = _labelled()
        model = hasher_class(name)(random_state=0, **kw)
        model.fit(X, y) if METHODS[name].labels else model.fit(X)
        return model, model.save(tmp_path / f"{name}.npz"), lambda m: m.transform(X)

    return case


def _bow(seed=0, n=40, m=20):
    rng = np.random.default_rng(seed)
    D = rng.random((n, m)) * (rng.random((n, m)) < 0.3)
    y = np.arange(n) % 2
    D[y == 0, :3] += 1
    return sp.csr_matrix(D.astype(np.float32)), y


def _similarity(name):
    def case(tmp_path):
        from hardneg import similarity as S

        X, y = _bow()
        t = S.concept_triplets(y, n_positives=3, n_negatives=5, random_state=0)
        model = getattr(S, name)().fit(X, triplets=t)
        return model, model.save(tmp_path / f"{name}.npz"), lambda m: m.similarity(X[:5], X)

    return case


def _esvm(solver):
    def case(tmp_path):
        from hardneg.encoding import ESVMEncoder

        rng = np.random.default_rng(0)
        negatives, X = rng.normal(size=(60, 30)).astype(np.float32), rng.normal(size=(4, 30)).astype(np.float32)
        enc = ESVMEncoder(solver=solver, lam=0.01, alpha_pos=1.0, alpha_neg=0.01, min_negatives=20, random_state=0)
        enc.fit(negatives)
        return enc, enc.save(tmp_path / f"esvm-{solver}.npz"), lambda m: m.transform(X)

    return case


def _zero_shot(tmp_path):
    pytest.importorskip("torch")
    from hardneg.zeroshot import ZeroShotClassifier

    rng = np.random.default_rng(0)
    attrs = 3.0 * rng.random((4, 5))
    y = np.repeat(np.arange(4), 15)
    X = (attrs[y] @ rng.normal(size=(5, 10)) + 0.05 * rng.normal(size=(y.size, 10))).astype(np.float32)
    clf = ZeroShotClassifier(n_epochs=2, m=4, batch_size=16, random_state=0).fit(X, y, attrs)
    return clf, clf.save(tmp_path / "zsl.npz"), lambda m: m.decision_function(X)


def _conse(tmp_path):
    from hardneg.zeroshot import ConSE

    rng = np.random.default_rng(0)
    model = ConSE(n_top=3, head=(rng.normal(size=(6, 10)), rng.normal(size=6)), class_embeddings=rng.normal(size=(6, 4))).fit()
    X = rng.random((8, 10))
    return model, model.save(tmp_path / "conse.npz"), lambda m: m.transform(X)


def _inverted(tmp_path):
    from hardneg.index import InvertedIndex
    from hardneg.similarity import TfidfCosine, concept_triplets

    X, y = _bow()
    model = TfidfCosine().fit(X, triplets=concept_triplets(y, n_positives=2, n_negatives=2, random_state=0))
    index = InvertedIndex.from_model(model)
    index.add(X, ids=[f"doc{i}" for i in range(X.shape[0])])
    return index, index.save(tmp_path / "inverted.npz"), lambda m: m.search(X[:5], 7)


def _hamming(ivf):
    def case(tmp_path):
        from hardneg.index import HammingIndex

        codes = np.random.default_rng(0).integers(0, 256, (300, 2), dtype=np.uint8)
        index = HammingIndex(16)
        index.add(codes, ids=[f"item{i}" for i in range(300)])
        if ivf:
            index = index.to_approximate(nlist=4, nprobe=4)
        return index, index.save(tmp_path / "codes.faissbin"), lambda m: m.search(codes[:6], 5)

    return case


def _codebook(tree_branching):
    def case(tmp_path):
        from hardneg.features import Codebook

        rng = np.random.default_rng(0)
        X = np.vstack([rng.normal(c, 0.05, (20, 6)) for c in rng.normal(0, 3, (27, 6))]).astype(np.float32)
        cb = Codebook(n_words=27 if tree_branching else 8, tree_branching=tree_branching, n_iter=5, random_state=0).fit(X)
        return cb, cb.save(tmp_path / "codebook.npz"), lambda m: m.predict(X)

    return case


HASHER_SETTINGS = {"tsvm": {"n_bits": 4, "n_epochs": 1, "max_iter": 2}, "pq": {"n_bits": 8, "subquantizer_bits": 4}}

# kind -> named cases; test_every_kind_has_a_round_trip keeps this in step with LOADERS and the hashers' list
CASES = {
    "hardneg.concept.CompressedConcept": {"bins": _concept(50), "exact": _concept(None)},
    # every hasher in the hashers' own list, with 8 bits unless it needs other settings here
    **{hasher_class(name)._kind: {name: _hasher(name, **HASHER_SETTINGS.get(name, {"n_bits": 8}))} for name in METHODS},
    "hardneg.Similarity": {name: _similarity(name) for name in (
        "SolisTG", "SolisDA", "SolisAFB", "SolisADA", "OasisDiagonal", "OasisFull", "TfidfCosine")},
    "esvm_encoder": {"batch": _esvm("batch"), "lda": _esvm("lda")},
    "hardneg.zeroshot.ZeroShotClassifier": {"zsl": _zero_shot},
    "hardneg.zeroshot.ConSE": {"conse": _conse},
    "hardneg.InvertedIndex": {"inverted": _inverted},
    "hamming-index": {"exact": _hamming(False), "ivf": _hamming(True)},
    "hardneg.Codebook": {"flat": _codebook(None), "tree": _codebook(3)},
}


def test_every_kind_has_a_round_trip():
    known = set(LOADERS) | {hasher_class(name)._kind for name in METHODS}
    assert known - set(CASES) == set(), "a kind hardneg.load knows has no round-trip case here"
    assert set(CASES) - known == set(), "a round-trip case for a kind hardneg.load does not know"


def test_every_hasher_and_similarity_class_is_covered():
    from hardneg.hashing import HASHERS
    from hardneg.similarity._base import _REGISTRY

    # every hasher's kind carries the prefix that hardneg.load hands to load_hasher
    assert all(cls._kind.startswith(KIND_PREFIX) for cls in HASHERS.values())
    assert not any(kind.startswith(KIND_PREFIX) for kind in LOADERS)
    assert set(_REGISTRY) == set(CASES["hardneg.Similarity"])


@pytest.mark.parametrize(
    "kind, name", [(kind, name) for kind, cases in CASES.items() for name in cases], ids=lambda v: str(v)
)
def test_round_trip(tmp_path, kind, name):
    model, path, output = CASES[kind][name](tmp_path)
    file = Path(path)
    if kind == "hamming-index":
        file = file.with_name(file.name + ".ids.npz")
    assert model_kind(file) == kind
    back = hardneg.load(path)
    assert type(back) is type(model)
    want, got = output(model), output(back)
    for a, b in zip(want, got) if isinstance(want, tuple) else [(want, got)]:
        _same(a, b)
    # the class's own load is the same loader
    again = type(model).load(path)
    assert type(again) is type(model)
    if kind == "hamming-index":  # the sidecar's path loads the same index
        _same(output(hardneg.load(file))[0], want[0])


def test_a_negative_bootstrap_file_loads_as_its_compressed_concept(tmp_path):
    from hardneg.concept import CompressedConcept, NegativeBootstrap

    rng = np.random.default_rng(1)
    pos, pool = rng.random((8, 4)) + 0.5, rng.random((80, 4))
    model = NegativeBootstrap(n_iter=2, random_state=0).fit(pos, pool)
    path = model.save(tmp_path / "nb.npz", n_bins=None)
    for back in (hardneg.load(path), NegativeBootstrap.load(path)):
        assert type(back) is CompressedConcept
        np.testing.assert_allclose(back.decision_function(pool), model.decision_function(pool), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- files that are not models
@pytest.fixture
def saved_concept(tmp_path):
    model, path, _ = _concept(20)(tmp_path)
    return path


def _error(path, match=None) -> str:
    with pytest.raises(ModelFileError, match=match) as info:
        hardneg.load(path)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_foreign_files_are_one_line_model_file_errors(tmp_path):
    np.savez(tmp_path / "foreign.npz", a=np.arange(3), b=np.ones((2, 2)))
    _error(tmp_path / "foreign.npz", "not a hardneg model file")
    np.savez_compressed(tmp_path / "compressed.npz", a=np.arange(3))
    _error(tmp_path / "compressed.npz")
    (tmp_path / "random.npz").write_bytes(np.random.default_rng(0).bytes(4096))
    _error(tmp_path / "random.npz")
    (tmp_path / "model.npz").write_bytes(pickle.dumps({"weights": np.ones(3)}))
    _error(tmp_path / "model.npz")
    (tmp_path / "empty.npz").write_bytes(b"")
    _error(tmp_path / "empty.npz")
    _error(tmp_path / "missing.npz", "does not exist")
    (tmp_path / "folder.npz").mkdir()
    _error(tmp_path / "folder.npz", "does not exist")


def test_a_kind_this_version_does_not_know(tmp_path):
    save_model(tmp_path / "future.npz", "hardneg.FutureModel", 1, {"w": np.ones(3)}, {})
    assert "'hardneg.FutureModel'" in _error(tmp_path / "future.npz", "does not know")


def test_a_class_load_of_another_kind_names_both(saved_concept):
    from hardneg.encoding import ESVMEncoder
    from hardneg.hashing import LSHHasher
    from hardneg.index import HammingIndex
    from hardneg.zeroshot import ZeroShotClassifier

    for cls, expected in ((LSHHasher, "hash-lsh"), (ESVMEncoder, "esvm_encoder"), (HammingIndex, "hamming-index"),
                          (ZeroShotClassifier, "hardneg.zeroshot.ZeroShotClassifier")):
        with pytest.raises(ModelFileError) as info:
            cls.load(saved_concept)
        message = str(info.value)
        assert "'hardneg.concept.CompressedConcept'" in message and repr(expected) in message and "\n" not in message


def test_a_similarity_class_load_of_another_similarity_class(tmp_path):
    model, path, _ = _similarity("SolisADA")(tmp_path)
    from hardneg.similarity import OasisFull

    with pytest.raises(ModelFileError, match="SolisADA.*OasisFull"):
        OasisFull.load(path)


def test_sidecar_without_its_index_file(tmp_path):
    index, path, _ = _hamming(False)(tmp_path)
    Path(path).unlink()
    _error(Path(str(path) + ".ids.npz"), "does not exist")


def test_distributed_workers_open_models_with_hardneg_load(tmp_path, saved_concept):
    from hardneg.concept import CompressedConcept
    from hardneg._parallel._partition import open_model

    assert isinstance(open_model(str(saved_concept), "concept"), CompressedConcept)
    with pytest.raises(ModelFileError, match="CompressedConcept.*hasher"):
        open_model(str(saved_concept), "hasher")
    (tmp_path / "junk.npz").write_bytes(b"junk")
    with pytest.raises(ModelFileError):
        open_model(str(tmp_path / "junk.npz"), "esvm")
    with pytest.raises(ValueError, match="kind"):
        open_model(str(saved_concept), "forest")


# ---------------------------------------------------------------------- import cost
def test_import_hardneg_is_cheap_and_load_is_lazy():
    code = (
        "import sys, json, hardneg\n"
        "first = sorted(m for m in sys.modules if m.split('.')[0] in ('hardneg', 'numpy', 'scipy', 'sklearn', 'faiss', 'torch'))\n"
        "from hardneg.exceptions import HardnegError\n"
        "second = sorted(m for m in sys.modules if m.split('.')[0] in ('hardneg', 'numpy', 'scipy', 'sklearn', 'faiss', 'torch'))\n"
        "print(json.dumps([first, second, callable(hardneg.load), hardneg.ModelFileError.__module__]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    first, second, callable_load, module = json.loads(out)
    assert first == ["hardneg"]
    assert second == ["hardneg", "hardneg.exceptions"]  # catching an error imports no numpy
    assert callable_load and module == "hardneg.exceptions"
    with pytest.raises(AttributeError):
        hardneg.no_such_thing  # noqa: B018


# ---------------------------------------------------------------------- exceptions
def _exception_classes_defined():
    """(file, class name) of every public class in hardneg whose bases look like an exception
    (a private one, like the service's internal ``_BodyTooLarge``, never reaches a user)."""
    known = set(E.__all__)
    builtin = {n for n in dir(builtins) if isinstance(getattr(builtins, n), type) and issubclass(getattr(builtins, n), BaseException)}
    found = []
    for file in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if bases & (known | builtin) or any(b.endswith(("Error", "Exception")) for b in bases):
                    found.append((file.relative_to(ROOT).as_posix(), node.name))
    return found


def test_every_exception_is_defined_in_hardneg_exceptions():
    found = _exception_classes_defined()
    outside = [f"{f}: {name}" for f, name in found if f != "exceptions.py"]
    assert outside == [], "define exceptions in hardneg/exceptions.py (re-export them from private modules)"
    assert {name for _, name in found} == set(E.__all__)


@pytest.mark.parametrize("name", E.__all__)
def test_every_exception_subclasses_hardneg_error(name):
    assert issubclass(getattr(E, name), HardnegError)


def test_exceptions_keep_their_builtin_bases_and_old_homes():
    from hardneg._persist import ModelFileError as persist_mfe
    from hardneg.exceptions import CLIError
    from hardneg.concept._related import WordNetUnavailable
    from hardneg.datasets import DatasetDownloadError, DatasetNotFoundError
    from hardneg.features import ImageReadError
    from hardneg.store import StoreDamagedError, StoreError, StoreLockedError
    from hardneg.zeroshot import TrainingDivergedError

    # (hardneg.serve needs the service extra; its modules re-export E.ServeError / E.BatcherClosed, which the
    # AST check above covers)
    BatcherClosed, ServeError = E.BatcherClosed, E.ServeError
    assert persist_mfe is E.ModelFileError and StoreError is E.StoreError
    bases = {
        E.ModelFileError: ValueError, StoreError: ValueError, StoreLockedError: StoreError, StoreDamagedError: StoreError,
        TrainingDivergedError: ValueError, ImageReadError: ValueError, DatasetNotFoundError: FileNotFoundError,
        DatasetDownloadError: OSError, WordNetUnavailable: RuntimeError, BatcherClosed: RuntimeError,
        ServeError: Exception, CLIError: Exception,
    }
    for cls, base in bases.items():
        assert issubclass(cls, base) and issubclass(cls, HardnegError) and getattr(E, cls.__name__) is cls
    damaged = StoreDamagedError("/s", "vectors/X/c/0/0", "is missing")
    assert damaged.key == "vectors/X/c/0/0" and "is missing" in str(damaged)
    again = pickle.loads(pickle.dumps(E.ModelFileError("x.npz: bad")))
    assert type(again) is E.ModelFileError and str(again) == "x.npz: bad"
    assert str(DatasetNotFoundError("no files")) == "no files"


@pytest.mark.parametrize("name", ["hardneg._load", "hardneg.exceptions"])
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
