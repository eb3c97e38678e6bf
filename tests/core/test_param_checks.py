"""Parameters are checked once, at ``fit``, by one mechanism: scikit-learn's ``_parameter_constraints``.

For every public estimator (``tests/test_common.py`` lists them all):

* the constraints name exactly the parameters ``get_params`` returns;
* ``fit`` (and ``partial_fit`` / ``fit_transform`` / ``fit_predict``) runs
  ``_validate_params`` before it reads the data, and refuses NaN, ±inf, a
  string and an object of no valid type for every parameter with a one-line
  ``InvalidParameterError`` (a ``ValueError``) naming the parameter — unless
  the parameter's constraints admit the value (``ACCEPTED`` says where, and why);
* no parameter is checked again by hand afterwards: the source of the
  estimator's classes holds no ``check_*(self.<param>)`` call and no
  ``if ... self.<param> ...: raise``, except the checks that need the data or
  another parameter (``CROSS_CHECKS``, with reasons).
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_param_validation
from test_common import ESTIMATORS

import hardneg
from hardneg._validation import Interval

IDS = [type(e).__name__ for e in ESTIMATORS]

# (estimator, parameter) -> (value its constraints admit, why)
ACCEPTED = {
    ("SolisTG", "theta"): (math.inf, "theta=inf truncates every weight (the paper's plain truncated gradient)"),
}

# Checks of a parameter after _validate_params that the constraints cannot express:
# they read the data or compare two parameters. (estimator class, parameters read) -> reason.
CROSS_CHECKS = {
    ("ESVMEncoder", ("min_negatives", "n_negatives")): "min_negatives <= n_negatives: two parameters",
    ("ESVMEncoder", ("min_negatives",)): "min_negatives <= rows of the negative pool: the data",
    ("TSVMHashing", ("mode",)): "a model file's arrays must match its mode (load, not fit)",
    ("ZeroShotClassifier", ("max_negatives", "n_negatives", "negative_set")): (
        "max_negatives >= n_negatives when negative_set='grow': three parameters"
    ),
}

# Functions that turn a checked parameter into what fit uses (no check of their own).
CONVERTERS = {"check_random_state"}

_X = np.random.default_rng(0).random((20, 5)).astype(np.float32)
_y = np.arange(20) % 2


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_constraints_cover_every_parameter(estimator):
    declared = set(getattr(type(estimator), "_parameter_constraints", {}))
    params = set(estimator.get_params(deep=False))
    assert declared == params, f"missing: {sorted(params - declared)}, not parameters: {sorted(declared - params)}"
    assert "no_validation" not in type(estimator)._parameter_constraints.values()


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_scikit_learn_param_validation_check(estimator):
    # scikit-learn's own check: a value of no valid type, and values just outside every
    # declared interval / option set, raise "The 'p' parameter of Est must be ... Got ... instead."
    check_param_validation(type(estimator).__name__, clone(estimator))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_every_parameter_refuses_nan_inf_and_wrong_types(estimator):
    name = type(estimator).__name__
    for param in estimator.get_params(deep=False):
        for bad in (math.nan, math.inf, -math.inf, "not-a-value", object()):
            model = clone(estimator).set_params(**{param: bad})
            allowed = ACCEPTED.get((name, param), (None,))[0]
            if allowed is not None and (bad is allowed or bad == allowed):
                model._validate_params()  # admitted, as listed
                continue
            with pytest.raises(InvalidParameterError) as info:
                model.fit(_X, _y)
            message = str(info.value)
            assert "\n" not in message and message.startswith(f"The '{param}' parameter of {name} must be "), message
            assert isinstance(info.value, ValueError)


class _Checked(Exception):
    pass


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_fit_checks_parameters_before_the_data(estimator, monkeypatch):
    # X is not even an array: a fit that looked at it before its parameters would fail differently
    model = clone(estimator)

    def first(self):
        if self is model:
            raise _Checked
    monkeypatch.setattr(type(model), "_validate_params", first)
    with pytest.raises(_Checked):
        model.fit("not an array", _y)


def _class_sources(estimator):
    for cls in type(estimator).__mro__:
        if cls.__module__.startswith("hardneg."):
            yield cls, ast.parse(textwrap.dedent(inspect.getsource(cls)))


def _self_params(node, params) -> tuple:
    return tuple(sorted({
        n.attr for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" and n.attr in params
    }))


def _hand_checks_in(tree, params) -> set:
    """Parameter tuples read by ``check_*(self.p)`` calls and ``if ... self.p ...: raise`` in ``tree``."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if func.lstrip("_").startswith("check_") and func not in CONVERTERS:
                read = _self_params(ast.Tuple(elts=[*node.args, *(k.value for k in node.keywords)]), params)
                if read:
                    found.add(read)
        elif isinstance(node, ast.If) and any(isinstance(b, ast.Raise) for b in node.body):
            read = _self_params(node.test, params)
            if read:
                found.add(read)
    return found


def hand_checks(estimator) -> set:
    """``(class name, parameters)`` of every hand check of a declared parameter in the estimator's classes."""
    params = set(estimator.get_params(deep=False))
    return {(cls.__name__, read) for cls, tree in _class_sources(estimator) for read in _hand_checks_in(tree, params)}


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_no_parameter_is_checked_again_by_hand(estimator):
    extra = hand_checks(estimator) - set(CROSS_CHECKS)
    assert not extra, f"parameters checked by hand after _validate_params (declare them in _parameter_constraints): {sorted(extra)}"


def test_cross_checks_list_is_current():
    found = set().union(*(hand_checks(e) for e in ESTIMATORS))
    stale = sorted(set(CROSS_CHECKS) - found)
    assert not stale, f"CROSS_CHECKS entries that no longer exist: {stale}"


def test_hand_check_finder_finds_planted_checks():
    planted = ast.parse(textwrap.dedent("""
        class Planted:
            def fit(self, X):
                lam = check_finite(self.lam, "lam")
                if self.k > X.shape[0]:
                    raise ValueError("k")
                if self.C > 3:
                    logger.info("large C")
                rng = check_random_state(self.random_state)
    """))
    assert _hand_checks_in(planted, {"lam", "k", "C", "random_state"}) == {("lam",), ("k",)}


def test_interval_open_ends_refuse_infinity():
    # what the constraints rely on: an open end at None refuses ±inf, NaN is never inside
    assert not Interval(Real, 0, None, closed="left").is_satisfied_by(math.inf)
    assert not Interval(Real, None, None, closed="neither").is_satisfied_by(-math.inf)
    assert not Interval(Real, 0, None, closed="neither").is_satisfied_by(math.nan)
    assert Interval(Real, 0, None, closed="right").is_satisfied_by(math.inf)  # (0, inf]: SolisTG's theta
    assert not Interval(Integral, 1, None, closed="left").is_satisfied_by(2.0)


def test_similarity_learners_lost_their_own_parameter_check():
    import hardneg.similarity._checks as checks

    assert not hasattr(checks, "check_finite_param")


def test_constraint_names_come_from_one_module():
    # scikit-learn's private _param_validation is named in hardneg/_validation.py only (one place to fix)
    package = Path(hardneg.__file__).parent
    users = sorted(
        str(path.relative_to(package.parent)) for path in package.rglob("*.py")
        if "_param_validation" in path.read_text(encoding="utf-8") and path.name != "_validation.py"
    )
    assert not users, f"import Interval / StrOptions from hardneg._validation instead: {users}"
