"""One progress protocol (hardneg/_progress.py, issue 25): ``progress(n)`` with the units just done.

Every public function or method of the package that takes ``progress`` is
found by walking the source; each is either run here on tiny data, checking
that the ``n`` are non-negative integers adding up to the total that
``hardneg._progress`` documents, or named in ``NOT_RUN_HERE`` with the test
that covers it / the reason. A new ``progress=`` without either fails.
"""

import ast
import pathlib
import warnings

import numpy as np
import pytest

import hardneg
from hardneg._progress import ProgressCounter, check_progress

ROOT = pathlib.Path(hardneg.__file__).parent


def _public_progress_functions():
    """``module.path:Qual.name`` of every public def with a ``progress`` parameter (CLI excluded)."""
    found = set()
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("").as_posix().replace("/", ".")
        if rel.startswith("hardneg.cli") or rel == "hardneg._progress":
            continue

        def visit(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    if not child.name.startswith("_"):
                        visit(child, prefix + [child.name])
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    args = [a.arg for a in child.args.args + child.args.kwonlyargs]
                    if "progress" in args and not child.name.startswith("_"):
                        found.add(f"{rel}:{'.'.join(prefix + [child.name])}")

        visit(ast.parse(path.read_text(encoding="utf-8")), [])
    return found


def _check(counter, total):
    assert all(isinstance(n, (int, np.integer)) and n >= 0 for n in counter.calls), counter.calls
    assert counter.total == total, (counter.calls, total)
    assert counter.calls, "progress was never called"


# ---------------------------------------------------------------- data
@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    from hardneg.store import FeatureStore

    rng = np.random.default_rng(0)
    X = rng.random((37, 6)).astype(np.float32) + 0.01
    path = tmp_path_factory.mktemp("progress") / "dense"
    with FeatureStore.create(path, dim=6, chunk_rows=8) as st:
        st.append(X, ids=[f"i{k}" for k in range(37)], labels=np.arange(37) % 3, split="train",
                  tags=[["a"] if k < 5 else ["b"] for k in range(37)])
    return X, path


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    import scipy.sparse as sp

    from hardneg.store import FeatureStore

    X = sp.random(23, 30, density=0.2, format="csr", random_state=1, dtype=np.float32)
    path = tmp_path_factory.mktemp("progress") / "sparse"
    with FeatureStore.create(path, dim=30, sparse=True, chunk_rows=8) as st:
        st.append(X, ids=[f"s{k}" for k in range(23)], labels=np.arange(23) % 2, split="train")
    return X, path


def _nb(X, n_iter=3):
    from hardneg.concept import NegativeBootstrap

    return NegativeBootstrap(n_iter=n_iter, n_bins=8, random_state=0).fit(X[:5] + 0.5, X[5:])


# ---------------------------------------------------------------- cases: name -> runner(fixtures) -> None
def case_concept_fit(dense, sparse):
    from hardneg.concept import AsymmetricBagging, NegativeBootstrap, RandomSampling

    X, _ = dense
    for est in (NegativeBootstrap(n_iter=4, n_bins=8, random_state=0), RandomSampling(n_iter=3, n_bins=8),
                AsymmetricBagging(n_iter=2, n_bins=8)):
        c = ProgressCounter()
        est.fit(X[:5] + 0.5, X[5:], progress=c)
        _check(c, est.n_iter)


def case_refine(dense, sparse):
    X, _ = dense
    c = ProgressCounter()
    _nb(X).refine(X[:5] + 0.5, X[5:7], progress=c)
    _check(c, 1)


def case_train_concept(dense, sparse):
    from hardneg.serve._concept import ConceptSpec, train_concept
    from hardneg.store import FeatureStore

    _, path = dense
    for neg, total in ((np.zeros(0, np.int64), 3), (np.array([20, 21]), 4)):
        c = ProgressCounter()
        spec = ConceptSpec(positive_rows=np.arange(5), negative_rows=neg, tag="a", n_iter=3, n_bins=8)
        train_concept(FeatureStore.open(path), spec, progress=c)
        _check(c, total)


def case_concept_search(dense, sparse):
    from hardneg.concept import search
    from hardneg.concept._search import score_rows
    from hardneg.store import FeatureStore

    X, path = dense
    model = _nb(X, 2).compress()
    st = FeatureStore.open(path)
    for fn, total in ((lambda c: search(model, X, k=3, chunk_rows=10, progress=c), 37),
                      (lambda c: search(model, st, k=3, rows=np.arange(3, 30), chunk_rows=10, progress=c), 27),
                      (lambda c: score_rows(model, st, np.arange(4, 20), block_rows=5, progress=c), 16),
                      (lambda c: search(model, st, k=3, chunk_rows=10, progress=c), 37)):
        c = ProgressCounter()
        fn(c)
        _check(c, total)


def case_knn(dense, sparse):
    from hardneg.index import knn_topk
    from hardneg.store import FeatureStore

    X, path = dense
    c = ProgressCounter()
    knn_topk(FeatureStore.open(path), X[:2], k=3, block_rows=10, progress=c)
    _check(c, 37)


def case_hashing(dense, sparse):
    from hardneg.hashing import TSVMHashing
    from hardneg.index import HammingIndex
    from hardneg.store import FeatureStore

    X, path = dense
    y = np.arange(37) % 3
    h = TSVMHashing(n_bits=4, n_trees=2, random_state=0)
    c = ProgressCounter()
    h.fit(X, y, progress=c)
    _check(c, h.progress_total(3))  # one unit per node, the C="auto" candidates' first
    assert h.C_scores_ and h.progress_total(3) == 2 * (3 - 1) + 2 * 2 * (3 - 1)  # 2 candidates of 2 trees
    c = ProgressCounter()
    TSVMHashing(n_bits=4, n_trees=2, random_state=0).fit(X[:4], y[:4], progress=c)  # too few to validate
    _check(c, h.progress_total(3))
    c = ProgressCounter()
    TSVMHashing(n_bits=4, n_trees=2, C=1.0, random_state=0).fit(X, y, progress=c)
    _check(c, 2 * (3 - 1))  # n_trees * (leaves - 1), one leaf per class
    st = FeatureStore.open(path)
    c = ProgressCounter()
    HammingIndex.from_store(st, h, chunk_rows=10, progress=c)
    _check(c, 37)


def case_inverted(dense, sparse):
    from hardneg.index import InvertedIndex
    from hardneg.similarity import TfidfCosine
    from hardneg.store import FeatureStore

    X, path = sparse
    model = TfidfCosine().fit(X)
    c = ProgressCounter()
    InvertedIndex.from_store(FeatureStore.open(path), model, chunk_rows=10, progress=c)
    _check(c, 23)


def case_ivf_build(dense, sparse):
    import tempfile

    from hardneg.index import build_ivf_index

    codes = np.random.default_rng(0).integers(0, 256, (230, 2), dtype=np.uint8)
    c = ProgressCounter()
    with tempfile.TemporaryDirectory() as d:
        build_ivf_index(codes, f"{d}/x.index", nlist=4, chunk_rows=50, progress=c)
    _check(c, 230)


def case_esvm(dense, sparse):
    from hardneg.encoding import ESVMEncoder, encode_store
    from hardneg.store import FeatureStore

    X, path = dense
    enc = ESVMEncoder(n_recursions=2, n_negatives=30, min_negatives=10, random_state=0)
    c = ProgressCounter()
    enc.fit(X[:30], progress=c)
    _check(c, 30 * (2 - 1))
    c = ProgressCounter()
    enc.transform(X[30:], progress=c)
    _check(c, 7)
    c = ProgressCounter()
    encode_store(enc, FeatureStore.open(path), path.parent / "codes", batch_rows=10, overwrite=True, progress=c)
    _check(c, 37)


def case_exemplar(dense, sparse):
    from hardneg.svm import fit_exemplar_svms_batch, fit_exemplar_svms_liblinear, fit_exemplar_svms_sgd

    X, _ = dense
    for fn in (fit_exemplar_svms_liblinear, fit_exemplar_svms_batch, fit_exemplar_svms_sgd):
        c = ProgressCounter()
        fn(X[:4], X[4:], lam=0.01, alpha_pos=1.0, alpha_neg=0.01, progress=c)
        _check(c, 4)


def case_vocab_tree(dense, sparse):
    from hardneg.features import VocabularyTree

    X = np.random.default_rng(0).random((200, 4)).astype(np.float32)
    c = ProgressCounter()
    VocabularyTree(branching=3, depth=3, random_state=0).fit(X, progress=c)
    assert c.calls == [1, 1, 1]  # one per level: not the level index (0, 1, 2)
    _check(c, 3)


def case_store_rewrite(dense, sparse):
    import shutil

    from hardneg.store import FeatureStore, quantize_store
    from hardneg.store._edit import rebuild_store

    _, path = dense
    c = ProgressCounter()
    quantize_store(FeatureStore.open(path), path.parent / "q", n_bins=8, chunk_rows=10, overwrite=True, progress=c)
    _check(c, 37)
    copy = path.parent / "copy"
    shutil.copytree(path, copy)
    c = ProgressCounter()
    rebuild_store(copy, np.arange(37) % 4 != 0, block_rows=10, progress=c)
    _check(c, 37)  # rows read, kept or not


def case_zeroshot(dense, sparse):
    pytest.importorskip("torch")
    from hardneg.zeroshot import ZeroShotClassifier

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 10)
    X = np.eye(3)[y] @ rng.random((3, 5)) + 0.01 * rng.random((30, 5))
    c = ProgressCounter()
    clf = ZeroShotClassifier(m=2, n_epochs=3, batch_size=16, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # progress= is not the deprecated path
        clf.fit(X, y, progress=c)
    assert c.calls == [1, 1, 1]
    _check(c, 3)
    seen = []
    with pytest.warns(FutureWarning, match=r"callback=\) is deprecated"):
        clf.fit(X, y, callback=lambda epoch, est: seen.append(epoch))
    assert seen == [1, 2, 3]


CASES = {
    "hardneg.concept._ensemble:HIKEnsembleConcept.fit": case_concept_fit,
    "hardneg.concept._negative_bootstrap:NegativeBootstrap.refine": case_refine,
    "hardneg.serve._concept:train_concept": case_train_concept,
    "hardneg.concept._search:search": case_concept_search,
    "hardneg.concept._search:score_rows": case_concept_search,
    "hardneg.index._flat:knn_topk": case_knn,
    "hardneg.hashing._tsvm_hashing:TSVMHashing.fit": case_hashing,
    "hardneg.index._hamming:HammingIndex.from_store": case_hashing,
    "hardneg.index._inverted:InvertedIndex.from_store": case_inverted,
    "hardneg.index._ivf_build:build_ivf_index": case_ivf_build,
    "hardneg.encoding._esvm:ESVMEncoder.fit": case_esvm,
    "hardneg.encoding._esvm:ESVMEncoder.transform": case_esvm,
    "hardneg.encoding._store:encode_store": case_esvm,
    "hardneg.svm._exemplar:fit_exemplar_svms_liblinear": case_exemplar,
    "hardneg.svm._exemplar_batch:fit_exemplar_svms_batch": case_exemplar,
    "hardneg.svm._exemplar_sgd:fit_exemplar_svms_sgd": case_exemplar,
    "hardneg.features._vocab_tree:VocabularyTree.fit": case_vocab_tree,
    "hardneg.store._quantize:quantize_store": case_store_rewrite,
    "hardneg.store._edit:rebuild_store": case_store_rewrite,
    "hardneg.zeroshot._classifier:ZeroShotClassifier.fit": case_zeroshot,
}

#: Not run here, with the reason (and where the count is checked instead).
NOT_RUN_HERE = {
    "hardneg.encoding._esvm:ESVMEncoder.grow": "fit's pool encoding, more levels (same code path as fit)",
    "hardneg.encoding._retrieval:esvm_search": "the search scan of hardneg.concept.search (tests/encoding/test_encoding.py)",
    "hardneg.features._extract:extract_to_store": "needs images and a feature model (tests/features/test_features_extract.py)",
    "hardneg.features._fashion:build_fashion_mnist_store": "needs the Fashion-MNIST files",
    "hardneg.store._import:import_embeddings": "rows imported (tests/store/test_store_import.py)",
    "hardneg.datasets._xlsa17:import_xlsa17": "needs xlsa17 .mat files",
    "hardneg.zeroshot._text_search:text_search": "needs a sentence-embedding model; its scan is hardneg.concept.search",
    "hardneg.zeroshot._text_index:build_text_index": "needs the CNN head's weights and the sentence model (tests/zeroshot/test_conse.py)",
    "hardneg.zeroshot._text_index:open_text_index": "build_text_index behind the cache (tests/zeroshot/test_conse.py)",
    "hardneg.demos.concept:run_concept_demo": "trains every concept method on digits (tests/demos/test_demo_report.py)",
    "hardneg._parallel._runner:Runner.map_reduce": "runner plumbing, counted through concept.search / knn_topk above",
    "hardneg._parallel._runner:Runner.map_ordered": "runner plumbing, counted through encode_store above",
    "hardneg._parallel._runner:DaskRunner.map_reduce": "runner plumbing (tests/distributed/test_distributed.py)",
    "hardneg._parallel._runner:DaskRunner.map_ordered": "runner plumbing (tests/distributed/test_distributed.py)",
}


def test_every_public_progress_parameter_is_covered():
    # matched by qualified name within the module, so a function that moves to another
    # module stays covered; one that is added, renamed or loses progress= does not
    found = _public_progress_functions()
    covered = {k.split(":")[1] for k in set(CASES) | set(NOT_RUN_HERE)}
    missing = sorted(f for f in found if f.split(":")[1] not in covered)
    assert not missing, f"functions with progress= but no case here: {missing}"
    stale = sorted(covered - {f.split(":")[1] for f in found})
    assert not stale, f"cases for functions that no longer take progress=: {stale}"


@pytest.mark.parametrize("case", sorted(set(CASES.values()), key=lambda f: f.__name__), ids=lambda f: f.__name__)
def test_progress_counts_add_up_to_the_documented_total(case, dense, sparse):
    case(dense, sparse)


def test_every_covered_method_is_in_the_protocol_table():
    import hardneg._progress as protocol

    doc = protocol.__doc__
    for name in set(CASES) | set(NOT_RUN_HERE):
        if "_runner:" in name or name.endswith(".grow"):
            continue  # internal plumbing
        short = name.split(":")[1].split(".")[-1]
        assert short in doc, f"{name} is missing from hardneg/_progress.py's table"


def test_check_progress():
    assert check_progress(None) is None
    assert check_progress(print) is print
    with pytest.raises(TypeError, match="^progress: expected a callable"):
        check_progress(3)
