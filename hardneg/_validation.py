"""Input checks shared by every estimator and tool.

Inputs are converted once where they enter: dense rows become C-contiguous
float32, sparse rows become CSR float32. Bad input raises ``ValueError`` or
``TypeError`` that names the argument and its shape.

The conversion itself is scikit-learn's ``check_array``, and the messages
carry the phrases scikit-learn's estimator checks look for ("Complex data not
supported", "Reshape your data", "0 feature(s)", "X has 3 features, but ...
is expecting 4 features as input", "Negative values in data", "Unknown label
type", "Only binary classification is supported"), so every estimator here
behaves like a scikit-learn one. :func:`validate_X` adds scikit-learn's
``n_features_in_`` / ``feature_names_in_`` bookkeeping on top.

Parameter checks use scikit-learn's declarative constraints
(``_parameter_constraints``); the few names they need from scikit-learn's
private ``_param_validation`` module are imported here and nowhere else, so a
change there is fixed in one place. Every public estimator declares every
parameter there and checks them once, when ``fit`` starts
(``_validate_params``), before it reads the data; what needs the data or two
parameters together (``k <= n_samples``) is checked after. Finite values: an
``Interval`` refuses NaN, and an end left open at ``None`` (``closed="left"``
or ``"neither"``) refuses ±inf too; a parameter that means something at inf
says so with a closed end (SolisTG's ``theta``: ``(0, inf]``).
``tests/core/test_param_checks.py`` holds every estimator to this.
"""

from __future__ import annotations

import logging
import numbers
import os
import sys
import warnings

import numpy as np

# scikit-learn is imported where it is used, not here: the store and the CLI use these
# checks too, and importing scikit-learn costs them ~1 s and ~130 MiB before any work.

__all__ = [
    "RANDOM_STATE",
    "available_memory",
    "check_binary_target",
    "check_k",
    "check_labels",
    "check_matrix",
    "check_memory",
    "check_non_negative",
    "check_positive_int",
    "check_random_state",
    "check_target_present",
    "issparse",
    "validate_X",
    "validate_params",
]

logger = logging.getLogger(__name__)


def issparse(X) -> bool:
    """``scipy.sparse.issparse(X)``, without importing SciPy (~0.3 s) for dense input.

    An object can only be a SciPy sparse matrix or array if ``scipy.sparse``
    was imported already: the store and the CLI, which see dense input,
    never import it through these checks.

    Parameters
    ----------
    X : object
        Any input.

    Returns
    -------
    bool
        Whether ``X`` is a SciPy sparse matrix or array.
    """
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and sp.issparse(X)


def __getattr__(name):
    # Interval and StrOptions (scikit-learn's parameter constraints) load on first use
    if name in ("Interval", "StrOptions"):
        from sklearn.utils import _param_validation

        return getattr(_param_validation, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: Parameter constraint for ``random_state``: None, an int, a RandomState or a numpy Generator.
RANDOM_STATE = ["random_state", np.random.Generator]

_NON_NUMERIC_KINDS = "USMmV"  # strings, bytes, datetimes, timedeltas, records


def check_matrix(
    X,
    name: str = "X",
    *,
    accept_sparse: bool = False,
    non_negative: bool = False,
    min_rows: int = 1,
    n_features: int | None = None,
    dtype=np.float32,
    estimator=None,
):
    """Return ``X`` as a 2-D float32 array (or CSR matrix) after checking it.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    name : str
        Argument name used in error messages.
    accept_sparse : bool
        Allow scipy sparse input (converted to CSR). Otherwise sparse input is
        a ``TypeError``.
    non_negative : bool
        Require every value to be >= 0 (histogram-intersection kernels).
    min_rows : int
        Minimum number of rows; ``0`` allows an empty matrix.
    n_features : int, optional
        Required number of columns (a fitted model's dimension).
    dtype : numpy dtype
        Target dtype (float32 unless a caller needs more).
    estimator : estimator, optional
        Named in the message of a dimension mismatch.

    Returns
    -------
    X : ndarray (C-contiguous) or scipy.sparse.csr_matrix of ``dtype``
    """
    if issparse(X):
        if not accept_sparse:
            raise TypeError(
                f"{name}: sparse input is not supported here; pass a dense array (got {type(X).__name__} of shape {X.shape})"
            )
        shape = X.shape
    else:
        if isinstance(X, (str, bytes)) or X is None:
            raise TypeError(f"{name}: expected a 2-D numeric array, got {type(X).__name__}")
        if not hasattr(X, "__array__") and not hasattr(X, "__len__"):
            raise TypeError(f"{name}: expected a 2-D numeric array, got {type(X).__name__}")
        try:
            arr = np.asarray(X)
        except Exception as exc:  # ragged lists and the like
            raise TypeError(f"{name}: cannot be converted to a numeric array ({exc})") from None
        # checked before check_array, whose messages for these print the whole array
        if arr.dtype.kind == "c":
            raise ValueError(f"{name}: Complex data not supported (dtype {arr.dtype}, shape {arr.shape})")
        if arr.dtype.kind in _NON_NUMERIC_KINDS:
            raise TypeError(f"{name}: expected numeric values, got dtype {arr.dtype}")
        if arr.ndim != 2:
            hint = ""
            if arr.ndim == 1:
                hint = (
                    f"; Reshape your data with {name}.reshape(-1, 1) if it has a single feature"
                    f" or {name}.reshape(1, -1) if it is a single sample"
                )
            raise ValueError(
                f"{name}: expected a 2-D array of shape (n_samples, n_features), got shape {arr.shape}{hint}"
            )
        shape = arr.shape
        if not hasattr(X, "__array__") or arr.dtype.kind == "O":
            X = arr  # lists, and object arrays that check_array converts element by element
    if shape[0] < min_rows:
        raise ValueError(
            f"{name}: needs at least {min_rows} row(s): found array with {shape[0]} sample(s) "
            f"(shape={tuple(shape)}) while a minimum of {min_rows} is required"
        )
    if shape[1] == 0:
        raise ValueError(
            f"{name}: has no features: found array with 0 feature(s) (shape={tuple(shape)}) while a minimum of 1 is required."
        )
    if n_features is not None and shape[1] != n_features:
        owner = type(estimator).__name__ if estimator is not None else "the model"
        raise ValueError(
            f"{name} has {shape[1]} features, but {owner} is expecting {n_features} features as input "
            f"(got shape {tuple(shape)})"
        )
    from sklearn.utils import check_array

    try:
        # values beyond float32's range become inf here and are reported below, without a numpy warning
        with np.errstate(over="ignore", invalid="ignore"):
            X = check_array(
                X, accept_sparse="csr" if accept_sparse else False, dtype=dtype, order="C", ensure_all_finite=False,
                ensure_min_samples=0, ensure_min_features=0, input_name=name,
            )
    except (TypeError, ValueError) as exc:  # e.g. an object array holding a dict or a word
        raise type(exc)(f"{name}: {exc}") from None
    if issparse(X):
        import scipy.sparse as sp

        if not isinstance(X, sp.csr_matrix):
            X = sp.csr_matrix(X)
        if not X.has_canonical_format:
            X = X.copy()  # never rewrite the caller's matrix
            X.sum_duplicates()
        values = X.data
    else:
        values = X
    if values.size and not np.isfinite(values).all():
        big = f" (or values too large for {np.dtype(dtype).name})" if np.dtype(dtype) != np.float64 else ""
        raise ValueError(f"{name}: contains NaN or infinity{big} (shape {X.shape})")
    if non_negative:
        check_non_negative(X, name)
    return X


def check_non_negative(X, name: str = "X") -> None:
    """Refuse negative values in a checked matrix (histogram-intersection kernels)."""
    values = X.data if issparse(X) else X
    if values.size and values.min() < 0:
        raise ValueError(
            f"{name}: Negative values in data (min {values.min():.4g}); the histogram-intersection kernel needs non-negative features"
        )


def validate_X(estimator, X, *, reset: bool, name: str = "X", **kwargs):
    """:func:`check_matrix` for an estimator's ``fit`` (``reset=True``) or prediction methods.

    ``reset=True`` records ``n_features_in_`` (and ``feature_names_in_`` for a
    DataFrame); ``reset=False`` first raises ``NotFittedError`` on an
    unfitted estimator, then requires the fitted number of features.
    ``kwargs`` go to :func:`check_matrix`.
    """
    from sklearn.utils.validation import check_is_fitted, validate_data

    if not reset:
        check_is_fitted(estimator)
        kwargs.setdefault("n_features", estimator.n_features_in_)
    Xc = check_matrix(X, name, estimator=estimator, **kwargs)
    # scikit-learn's own bookkeeping of n_features_in_ and feature names, on the original input
    validate_data(estimator, X, reset=reset, skip_check_array=True)
    return Xc


def check_labels(y, n_samples: int, name: str = "y") -> np.ndarray:
    """Return 1-D labels of length ``n_samples``."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of labels, got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(f"{name}: has {y.shape[0]} labels for {n_samples} samples")
    return y


def check_target_present(estimator, y) -> None:
    """A supervised ``fit`` given ``y=None`` says so in scikit-learn's words."""
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None")


def check_binary_target(estimator, y, n_samples: int, name: str = "y"):
    """Labels of a binary classifier: ``(y, classes)`` with ``classes`` of length 2.

    A column vector ``(n, 1)`` is raveled with a ``DataConversionWarning``;
    continuous targets are "Unknown label type: continuous"; more than two
    classes are refused ("Only binary classification is supported").
    """
    from sklearn.exceptions import DataConversionWarning
    from sklearn.utils.multiclass import check_classification_targets, type_of_target

    check_target_present(estimator, y)
    if isinstance(y, str):
        raise TypeError(f"{name}: expected an array of labels, got a string")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn(
            f"A column-vector y was passed when a 1d array was expected. Please change the shape of {name} "
            "to (n_samples,), for example using ravel().",
            DataConversionWarning,
            stacklevel=3,
        )
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{name}: y should be a 1d array of labels, got an array of shape {y.shape} instead")
    if y.shape[0] != n_samples:
        raise ValueError(f"{name}: has {y.shape[0]} labels for {n_samples} samples")
    if y.dtype.kind in "fc" and not np.isfinite(y).all():
        raise ValueError(f"{name}: Input y contains NaN or infinity")
    check_classification_targets(y)
    y_type = type_of_target(y, input_name=name)
    classes = np.unique(y)
    owner = type(estimator).__name__
    if y_type != "binary":
        raise ValueError(
            f"{name}: Only binary classification is supported by {owner}. The type of the target is {y_type} "
            f"({classes.size} classes)"
        )
    if classes.size != 2:
        raise ValueError(f"{name}: {owner} needs 2 classes to train, got 1 class ({classes[0]!r})")
    return y, classes


def check_finite_scores(scores, what: str = "scores") -> None:
    """Refuse to rank on NaN or infinite scores: they sort to one end and look like results.

    A damaged feature (or model) makes them; the ranking would print e.g.
    ``-3.4e38`` as a score. Raises ValueError naming how many are bad.
    """
    scores = np.asarray(scores)
    if scores.size and not np.isfinite(scores).all():
        bad = int(scores.size - np.isfinite(scores).sum())
        raise ValueError(f"{what}: {bad} of {scores.size} are NaN or infinite; the features or the model hold non-finite values, so no ranking is given")


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")
    return int(value)


def check_k(k, n_items: int, name: str = "k") -> int:
    """``k`` for top-k retrieval: 1 <= k <= n_items."""
    k = check_positive_int(k, name)
    if k > n_items:
        raise ValueError(f"{name}={k} is larger than the collection ({n_items} items)")
    return k


def check_random_state(random_state) -> np.random.Generator:
    """One generator, made once in ``fit`` (None, an int, or a Generator)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, numbers.Integral):
        return np.random.default_rng(int(random_state))  # same stream as the numpy integer itself
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise TypeError(f"random_state: expected None, an int or a numpy Generator, got {type(random_state).__name__}")


def validate_params(estimator) -> None:
    """Check ``estimator``'s parameters against its ``_parameter_constraints``.

    Raises scikit-learn's ``InvalidParameterError`` (a ``ValueError`` and a
    ``TypeError``), whose message names the parameter, the estimator and the
    allowed range.
    """
    estimator._validate_params()


# ---------------------------------------------------------------------------- memory
def _cgroup_memory_left() -> int | None:
    """Bytes left under a cgroup v2 memory limit (containers), or None."""
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = fh.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current") as fh:
            current = int(fh.read().strip())
        return max(int(limit) - current, 0)
    except (OSError, ValueError):
        return None


def available_memory() -> int | None:
    """Bytes of memory this process can still allocate, or None if unknown.

    Linux: ``MemAvailable`` from ``/proc/meminfo`` (free memory plus the page
    cache the kernel can drop), else ``SC_AVPHYS_PAGES``; capped by a cgroup v2
    limit when there is one.
    """
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, OSError, ValueError):
            avail = None
    cgroup = _cgroup_memory_left()
    if cgroup is not None:
        avail = cgroup if avail is None else min(avail, cgroup)
    return avail


def _human(n_bytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n_bytes < 1024 or unit == "TB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:.1f} TB"  # pragma: no cover


def check_memory(n_bytes: float, what: str, hint: str = "") -> None:
    """Refuse work that needs more memory than is available, before allocating it.

    Parameters
    ----------
    n_bytes : float
        Estimated peak memory of the work.
    what : str
        The work, for the message (e.g. "LSHHasher(n_bits=100000).fit on (1000, 64)").
    hint : str
        What the user can change (e.g. "lower n_bits").
    """
    avail = available_memory()
    logger.debug("%s: needs about %s, %s available", what, _human(n_bytes), "unknown" if avail is None else _human(avail))
    if avail is not None and n_bytes > avail:
        raise ValueError(
            f"{what} needs about {_human(n_bytes)} of memory but only {_human(avail)} is available"
            + (f"; {hint}" if hint else "")
        )


def is_store(obj) -> bool:
    """Whether ``obj`` reads like a :class:`hardneg.store.FeatureStore` (duck-typed: no import of the store)."""
    return hasattr(obj, "iter_chunks") and hasattr(obj, "take") and hasattr(obj, "items")


def reads_as_number(text: str) -> bool:
    """Whether a text cell parses as a number (``float(text)`` succeeds: "3", "1.5", "nan", "inf")."""
    try:
        float(text)
    except ValueError:
        return False
    return True
