"""The scikit-learn contract: every public estimator passes scikit-learn's estimator checks.

``ESTIMATORS`` lists every public estimator of hardneg once, with small, fast
settings (small data comes from the parameters, never from skipping checks).
:func:`test_every_public_estimator_is_checked` walks hardneg's subpackages and
fails for a public ``BaseEstimator`` subclass that is neither here nor in
``NOT_CHECKED`` (abstract bases), so a new estimator cannot be forgotten.
A check an estimator is known to fail goes in ``EXPECTED_FAILURES`` with its
reason; the checks run with strict xfail, so a listed check that starts to
pass fails the suite until it is taken off the list.
"""

import importlib
import inspect
import pkgutil
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

import hardneg
import hardneg._validation as validation
from hardneg.concept import CONCEPT_METHODS
from hardneg.encoding import CentringEncoder, ESVMEncoder, WhiteningEncoder
from hardneg.features import Codebook, VocabularyTree
from hardneg.hashing import LSHHasher, PQHasher, SKLSHHasher, TSVMHashing
from hardneg.hashing._registry import MAX_BITS, METHODS, hasher_class, hashers
from hardneg.similarity import OasisDiagonal, OasisFull, SolisADA, SolisAFB, SolisDA, SolisTG, TfidfCosine
from hardneg.svm import HIKSVC, LinearSVM, RampTSVM
from hardneg.zeroshot import DAP, ESZSL, ZeroShotClassifier

HASHER_SETTINGS = {
    "pca-itq": {"n_bits": 2, "max_iter": 5},
    # the default 8 bits per sub-quantizer: 256 centroids from the checks' 10-100 rows (fewer, with a warning)
    "pq": {"n_bits": 8},
    # hull_C=10, not the default near-hard margin (1e6): the same hull code path, but libsvm needs
    # ~0.2 s per hull on the checks' overlapping blobs at 1e6 (20 s of the suite)
    "tsvm": {"n_bits": 4, "n_epochs": 1, "max_iter": 1, "max_per_class": 20, "hull_C": 10.0},
}


def _concept_estimators():
    small = {"n_iter": 2, "n_bins": 8, "max_negatives": 200}
    out = []
    for method in CONCEPT_METHODS.values():
        takes = set(method.cls._get_param_names())
        out.append(method.cls(**{k: v for k, v in small.items() if k in takes}))
    return out


ESTIMATORS = [
    # svm/
    HIKSVC(),
    # liblinear's tolerance, tight enough that weighting a row by 2 and repeating it give the same solution to 1e-7
    LinearSVM(tol=1e-8, random_state=0),
    RampTSVM(n_epochs=2, max_iter=3, random_state=0),
    # hashing/: every hasher in the hashers' own list, 8 bits (2 for the PCA-based ones: the checks' data
    # has 2 or more features) unless HASHER_SETTINGS says otherwise
    *(hasher_class(name)(random_state=0, **HASHER_SETTINGS.get(name, {"n_bits": 2 if m.bits_at_most_dim else 8}))
      for name, m in METHODS.items()),
    # features/
    Codebook(n_words=3, n_iter=3, random_state=0),
    VocabularyTree(branching=3, depth=2, n_iter=3, random_state=0),
    # encoding/
    ESVMEncoder(min_negatives=1, random_state=0),
    CentringEncoder(),
    WhiteningEncoder(n_components=2),
    # concept/: every method of the CLI's table, small (a new method needs no line here)
    *_concept_estimators(),
    # similarity/: labels y become n_triplets random triplets
    SolisTG(n_triplets=200, random_state=0),
    SolisDA(n_triplets=200, random_state=0),
    SolisAFB(n_triplets=200, random_state=0),
    SolisADA(n_triplets=200, random_state=0),
    OasisDiagonal(n_triplets=200, random_state=0),
    OasisFull(n_triplets=200, random_state=0),
    TfidfCosine(),
    # zeroshot/: no class_attributes, so one-hot vectors per seen class
    ZeroShotClassifier(n_epochs=2, m=4, batch_size=32, random_state=0),
    ESZSL(),
    DAP(),
]

# Public BaseEstimator subclasses that are not estimators one can fit: abstract bases.
NOT_CHECKED = {
    "BaseHasher": "abstract base of the hashers (no algorithm of its own)",
    "DiagonalSimilarity": "abstract base of the similarity learners (no fit of its own)",
    "HIKEnsembleConcept": "abstract base of the concept estimators (no sampling scheme of its own)",
    "ConSE": ("no training: fit ignores X and y and loads a fixed classifier head and class embeddings "
              "([Norouzi14]); tests/zeroshot/test_conse.py checks it against hand-worked values"),
}

EXPECTED_FAILURES = {
    "ESVMEncoder": {
        "check_estimators_dtypes": (
            "fits on small random integers, which include all-zero rows; an all-zero exemplar has no "
            "direction to encode (Eq. (2) divides by its norm), so fit and transform refuse it"
        ),
    },
    "HIKSVC": {
        "check_class_weight_classifiers": (
            "fits on make_blobs data with negative values and ignores the positive_only tag; "
            "the histogram-intersection kernel is undefined there, so fit refuses it"
        ),
    },
    "PooledClassifier": {
        "check_class_weight_classifiers": (
            "feeds make_blobs features with negative values without the positive_only shift the other "
            "checks apply; the histogram-intersection kernel refuses negative input by design"
        ),
    },
    "RampTSVM": {
        "check_sample_weight_equivalence_on_dense_data": (
            "SGD over a random order of rows on a non-convex (ramp-loss) objective: a row of "
            "weight 2 and the same row twice take different paths to different local optima"
        ),
    },
}


def _public_estimator_classes():
    """Every public class of a hardneg subpackage that subclasses BaseEstimator."""
    found = {}
    for info in pkgutil.iter_modules(hardneg.__path__):
        if info.name.startswith("_") or not info.ispkg:
            continue
        module = importlib.import_module(f"hardneg.{info.name}")
        names = getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")])
        for name in names:
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator) and obj.__module__.startswith("hardneg."):
                found[obj.__name__] = obj
    return found


def test_every_public_estimator_is_checked():
    public = _public_estimator_classes()
    checked = [type(e).__name__ for e in ESTIMATORS]
    assert len(checked) == len(set(checked)), "an estimator is listed twice"
    missing = sorted(set(public) - set(checked) - set(NOT_CHECKED))
    assert not missing, f"public estimators not in tests/test_common.py ESTIMATORS: {missing}"
    stale = sorted((set(checked) | set(NOT_CHECKED) | set(EXPECTED_FAILURES)) - set(public))
    assert not stale, f"listed in tests/test_common.py but not a public hardneg estimator: {stale}"
    assert len(public) == len(ESTIMATORS) + len(NOT_CHECKED)


def _expected_failures(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


@pytest.mark.filterwarnings("ignore:PQHasher. X has .* rows, fewer than:UserWarning")
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures, xfail_strict=True)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ----------------------------------------------------------------------------- not fitted
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_methods_before_fit_raise_not_fitted_error(estimator):
    X = np.random.default_rng(0).random((5, 3))
    methods = [m for m in ("predict", "decision_function", "transform", "similarity") if hasattr(estimator, m)]
    assert methods
    for method in methods:
        with pytest.raises(NotFittedError):
            getattr(clone(estimator), method)(X)
    if hasattr(estimator, "similarity"):
        with pytest.raises(NotFittedError):
            clone(estimator).score(X, np.arange(5) % 2)


# ----------------------------------------------------------------------------- PQ on small data
def test_pq_on_fewer_rows_than_centroids_learns_fewer_and_says_so():
    X = np.random.default_rng(0).normal(size=(100, 8)).astype(np.float32)
    # 256 centroids per 8-bit sub-quantizer cannot be learned from 100 rows (FAISS raised RuntimeError, then
    # fit refused): each row becomes a centroid, the codes keep the length asked for, and fit warns
    with pytest.warns(UserWarning, match=r"100 rows, fewer than the 256 centroids.*n_centroids_=100.*subquantizer_bits <= 6"):
        small = PQHasher(n_bits=16, random_state=0).fit(X)
    codes = small.transform(X)
    assert small.n_centroids_ == 100 and codes.dtype == np.uint8 and codes.shape == (100, 2)
    assert len(np.unique(codes[:, 0])) == 100  # every row its own centroid: the unused code values never occur
    idx, dist = small.search(X[:4], codes, k=1)
    assert idx[:, 0].tolist() == [0, 1, 2, 3] and np.allclose(dist[:, 0], 0.0, atol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # enough rows: no warning
        pq = PQHasher(n_bits=18, subquantizer_bits=6, random_state=0).fit(X)
    assert pq.n_centroids_ == 64
    codes = pq.transform(X)
    assert codes.dtype == np.uint8 and codes.shape == (100, 3)  # 3 sub-quantizers of 6 bits, bit-packed
    idx, _ = pq.search(X[:4], codes, k=1)
    assert idx[:, 0].tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="multiple of 6"):
        PQHasher(n_bits=16, subquantizer_bits=6).fit(X)


# ----------------------------------------------------------------------------- Codebook
def test_codebook_is_an_estimator_with_fit_X_y():
    assert isinstance(Codebook(), BaseEstimator)
    assert list(inspect.signature(Codebook.fit).parameters)[:3] == ["self", "X", "y"]
    X = np.random.default_rng(0).normal(size=(60, 4)).astype(np.float32)
    a = Codebook(n_words=4, n_iter=3, random_state=5).fit(X, None)
    b = clone(a).fit(X)
    np.testing.assert_array_equal(a.centroids_, b.centroids_)
    assert a.n_features_in_ == 4 and a.get_params()["random_state"] == 5


def test_codebook_fit_random_state_argument_still_works_but_is_deprecated():
    X = np.random.default_rng(0).normal(size=(60, 4)).astype(np.float32)
    with pytest.warns(FutureWarning, match="random_state"):
        old = Codebook(n_words=4, n_iter=3).fit(X, random_state=3)
    new = Codebook(n_words=4, n_iter=3, random_state=3).fit(X)
    np.testing.assert_array_equal(old.centroids_, new.centroids_)


def test_codebook_bounds_n_words():
    X = np.zeros((10, 2), np.float32)
    with pytest.raises(ValueError, match="n_words"):
        Codebook(n_words=0).fit(X)
    with pytest.raises(ValueError, match="n_words"):
        Codebook(n_words=10**9).fit(X)


# ----------------------------------------------------------------------------- size bounds
HASHER_CLASSES = list(hashers().values())


@pytest.mark.parametrize("cls", HASHER_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("n_bits", [0, -5, MAX_BITS + 8, 100_000, 2.5, "64"])
def test_hashers_refuse_impossible_n_bits_before_any_work(cls, n_bits):
    # `hardneg hash train -m lsh -b 100000` grew to 5.8 GB and died with SIGSEGV
    X = np.random.default_rng(0).normal(size=(20, 4))
    with pytest.raises((ValueError, TypeError), match="'n_bits' parameter of " + cls.__name__):
        cls(n_bits=n_bits).fit(X, np.arange(20) % 2)


def test_largest_n_bits_is_allowed():
    LSHHasher(n_bits=MAX_BITS)._validate_params()
    with pytest.raises(ValueError, match="n_bits"):
        LSHHasher(n_bits=MAX_BITS + 1)._validate_params()


def test_fit_refuses_what_cannot_fit_in_memory_before_allocating(monkeypatch):
    monkeypatch.setattr(validation, "available_memory", lambda: 1_000_000)  # 1 MB left
    X = np.random.default_rng(0).normal(size=(50, 8))
    assert LSHHasher(n_bits=16, random_state=0).fit(X).transform(X).shape == (50, 2)  # small work still runs
    # the rotation alone would be a 1024 x 1024 float matrix and its QR workspace (8 MB)
    monkeypatch.setattr(LSHHasher, "_build_index", lambda *a: pytest.fail("allocated before the memory check"))
    with pytest.raises(ValueError, match=r"LSHHasher\(n_bits=1024\)\.fit .* needs about 8\.\d MB of memory but only 976\.6 KB"):
        LSHHasher(n_bits=1024).fit(X)
    with pytest.raises(ValueError, match="lower n_words"):
        Codebook(n_words=40_000).fit(np.zeros((40_000, 8), np.float32))


def test_available_memory_is_known_on_linux():
    avail = validation.available_memory()
    assert avail is None or avail > 0


@pytest.mark.parametrize(
    "estimator, param",
    [
        (HIKSVC(C=0.0), "C"),
        (HIKSVC(class_weight="uniform"), "class_weight"),
        (LinearSVM(loss="log"), "loss"),
        (LinearSVM(max_iter=0), "max_iter"),
        (RampTSVM(s=0.5), "s"),
        (RampTSVM(n_epochs=0), "n_epochs"),
        (RampTSVM(C=float("nan")), "C"),
        (SKLSHHasher(gamma=-1.0), "gamma"),
        (TSVMHashing(subsample=0.0), "subsample"),
        (TSVMHashing(n_trees=10**6), "n_trees"),
        (TSVMHashing(mode="pca"), "mode"),
        (PQHasher(subquantizer_bits=20), "subquantizer_bits"),
    ],
)
def test_parameters_are_checked_in_fit_with_a_message_naming_them(estimator, param):
    X = np.random.default_rng(0).random((20, 4))
    y = np.arange(20) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no work starts, so nothing warns
        with pytest.raises(ValueError, match=f"'{param}' parameter of {type(estimator).__name__}"):
            estimator.fit(X, y)
