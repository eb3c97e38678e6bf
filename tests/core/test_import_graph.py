"""No import circles among hardneg's modules.

The graph is read from the source (the AST), not by importing: an edge
``a -> b`` for every ``import`` / ``from ... import`` in module ``a`` that
names hardneg module ``b`` (``from pkg import name`` is an edge to
``pkg.name`` when that is a module, else to ``pkg``). Imports under
``if TYPE_CHECKING:`` are not edges.

* Module-level imports (those that run when the module is imported) must
  form no cycle at all: :func:`test_module_level_imports_form_no_cycle`.
* Imports inside functions are how a circle hides (the three this test was
  written for: the SOLIS solvers <-> ``similarity/_lazy.py``, the exemplar-SVM
  checks <-> the batch / SGD solvers, ``zeroshot/_classifier.py`` <->
  ``_tune.py``), so :func:`test_no_new_cycle_through_deferred_imports` counts
  them too and allows only the cycles in ``KNOWN_DEFERRED_CYCLES``, each with
  its reason. A listed cycle that is gone fails the test, so the list only
  shrinks; it is empty now, and :func:`test_former_circles_stay_open` keeps
  each circle removed so far open.
"""

from __future__ import annotations

import ast
import inspect
import sys
from numbers import Real
from pathlib import Path

import numba
import numpy as np
import pytest
import scipy.sparse as sp

import hardneg
import hardneg.similarity as similarity
from hardneg._validation import Interval
from hardneg.similarity import _base
from hardneg.similarity._base import SolisBase, register_solver
from hardneg.similarity._prox import ETA, W0

ROOT = Path(hardneg.__file__).resolve().parent

# Cycles that exist only through imports inside functions, each a strongly connected component (a set
# of modules) -> its reason. Empty since issue 25 (store._edit <-> _feature_store, hashing._base -> the
# hashing package, features._extract <-> distributed._extract were the last): a new one fails the test.
KNOWN_DEFERRED_CYCLES: dict[frozenset[str], str] = {}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is_package) for every module of hardneg."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if "__pycache__" in parts:
            continue
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_pkg)
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module):
    """``(node, deferred)`` for every import; ``deferred``: inside a function (runs only when called)."""
    out = []

    def walk(node, deferred):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append((node, deferred))
            return
        if isinstance(node, ast.If) and _is_type_checking(node):
            return
        inner = deferred or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            walk(child, inner)

    walk(tree, False)
    return out


def _owner(name: str, modules) -> str | None:
    """The hardneg module that ``name`` (a dotted path) lies in."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(*, deferred: bool) -> dict[str, set[str]]:
    """Edges between hardneg modules; ``deferred=True`` also counts imports inside functions."""
    modules = _modules()
    graph = {}
    for name, (path, is_pkg) in modules.items():
        package = name if is_pkg else name.rpartition(".")[0]
        targets = set()
        for node, inside in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if inside and not deferred:
                continue
            if isinstance(node, ast.Import):
                targets.update(_owner(a.name, modules) for a in node.names if a.name.split(".")[0] == "hardneg")
                continue
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                full = ".".join(base + ([node.module] if node.module else []))
            else:
                full = node.module or ""
            if full.split(".")[0] != "hardneg":
                continue
            for alias in node.names:
                sub = f"{full}.{alias.name}"
                targets.add(sub if sub in modules else _owner(full, modules))
        targets.discard(None)
        targets.discard(name)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def _describe(component, graph) -> str:
    edges = [f"{a} -> {b}" for a in sorted(component) for b in sorted(graph[a] & component)]
    return "{" + ", ".join(edges) + "}"


def test_module_level_imports_form_no_cycle():
    graph = import_graph(deferred=False)
    assert len(graph) > 100  # the walk found the package
    found = cycles(graph)
    assert not found, "import cycles among hardneg modules (module-level imports): " + "; ".join(
        _describe(c, graph) for c in found
    )


def test_no_new_cycle_through_deferred_imports():
    graph = import_graph(deferred=True)
    found = set(cycles(graph))
    new = [c for c in found if c not in KNOWN_DEFERRED_CYCLES]
    assert not new, "import cycles hidden by imports inside functions: " + "; ".join(_describe(c, graph) for c in new)
    gone = [sorted(c) for c in KNOWN_DEFERRED_CYCLES if c not in found]
    assert not gone, f"listed in KNOWN_DEFERRED_CYCLES but no longer a cycle (take them off the list): {gone}"


@pytest.mark.parametrize("a, b", [
    ("hardneg.similarity._lazy", "hardneg.similarity._ada"),
    ("hardneg.similarity._base", "hardneg.similarity._tg"),
    ("hardneg.svm._exemplar", "hardneg.svm._exemplar_batch"),
    ("hardneg.svm._exemplar", "hardneg.svm._exemplar_sgd"),
    ("hardneg.zeroshot._tune", "hardneg.zeroshot._classifier"),
    ("hardneg.store._feature_store", "hardneg.store._edit"),
    ("hardneg.store._item_table", "hardneg.store._feature_store"),  # it writes through the store's writer (_writer)
    ("hardneg.store._writer", "hardneg.store._feature_store"),
    ("hardneg.store._chunks", "hardneg.store._feature_store"),
    ("hardneg.hashing._base", "hardneg.hashing"),
])
def test_former_circles_stay_open(a, b):
    # the shared piece (loop, checks, exception, partition function, loader) lives in the lower module,
    # which imports nothing above it
    graph = import_graph(deferred=True)
    assert b not in graph[a]


# ----------------------------------------------------------------------------- layers
# Each package's layer, lowest first: a module imports only its own layer or lower ones (imports inside
# functions count too). The runner (``_parallel``) sits below every method, so a method imports it at
# module level; ``_load`` finds each kind's loader by name (importlib), so it sits at the bottom.
LAYERS: list[set[str]] = [
    {"_typing", "_validation", "_extras", "_atomic", "_persist", "_progress", "_topk", "_imaging", "_lazy_exports",
     "_load", "exceptions"},
    {"store"},
    {"_parallel", "datasets"},
    {"features", "eval", "svm", "negatives"},
    {"similarity", "hashing", "concept"},
    {"index"},
    {"encoding", "zeroshot"},
    {"report", "distributed"},
    {"serve"},
    {"demos"},
    {"cli"},
]


def _layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:  # the package's own __init__ re-exports everything: the top
        return len(LAYERS)
    return next(i for i, group in enumerate(LAYERS) if parts[1] in group)


def test_every_package_has_a_layer():
    tops = {m.split(".")[1] for m in import_graph(deferred=True) if "." in m}
    assert tops == set().union(*LAYERS), "add the new package to LAYERS (or take the removed one off)"


def test_no_module_imports_a_higher_layer():
    graph = import_graph(deferred=True)
    upward = sorted(f"{a} -> {b}" for a, bs in graph.items() for b in bs if _layer(b) > _layer(a))
    assert not upward, "imports that point up the layers: " + "; ".join(upward)


def test_methods_import_the_runner_at_module_level():
    eager, deferred = import_graph(deferred=False), import_graph(deferred=True)
    hidden = sorted(f"{a} -> {b}" for a in deferred if not a.startswith("hardneg.cli") for b in deferred[a] - eager[a]
                    if b.startswith("hardneg._parallel"))
    assert not hidden, "the runner imported inside a function: " + "; ".join(hidden)


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [frozenset("abc")]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_graph_reads_relative_and_deferred_imports():
    # the edges this test relies on, on modules whose imports are known
    eager = import_graph(deferred=False)
    deferred = import_graph(deferred=True)
    assert "hardneg.svm._exemplar_qp" in eager["hardneg.svm._exemplar_batch"]  # from . import _exemplar_qp as qp
    assert "hardneg.svm._exemplar" in eager["hardneg.svm._exemplar_sgd"]  # from ._exemplar import ...
    assert "hardneg.zeroshot._tune" not in eager["hardneg.zeroshot._classifier"]
    assert "hardneg.zeroshot._tune" in deferred["hardneg.zeroshot._classifier"]  # imported inside a method


# ----------------------------------------------------------------------------- a SOLIS solver is one file
@pytest.fixture
def plain_solver():
    """A solver defined here, as a new solver file would define it: its per-word rules, its class,
    one decorator. Nothing in similarity/_lazy.py, _base.py or __init__.py changes."""

    @numba.njit(inline="always")
    def plain_weight(j, S, g, p):
        return S[0, j]

    @numba.njit(inline="always")
    def plain_update(j, v, S, g, p):
        S[0, j] += p[ETA] * v  # a subgradient step on the hinge, no l1

    @register_solver("plain-test", weight=plain_weight, update=plain_update)
    class PlainTestSolver(SolisBase):
        _n_state = 1
        _param_slots = {"eta": ETA, "w_init": W0}
        _parameter_constraints = {**SolisBase._parameter_constraints, "eta": [Interval(Real, 0, None, closed="neither")]}

        def __init__(self, eta=0.5, lam=0.0, w_init=0.0, n_triplets=100, random_state=None):
            self.eta, self.lam, self.w_init, self.n_triplets, self.random_state = eta, lam, w_init, n_triplets, random_state

        def _init_state(self, n_words, w0):
            return np.full((1, n_words), w0, np.float64)

    yield PlainTestSolver
    _base.SOLVERS.pop("plain-test")
    _base._REGISTRY.pop("PlainTestSolver")


def test_a_new_solver_is_one_file(plain_solver, tmp_path):
    assert similarity.SOLVERS["plain-test"] is plain_solver
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.random((30, 12)) * (rng.random((30, 12)) < 0.4))
    t = rng.integers(0, 30, size=(200, 3))
    model = plain_solver(eta=0.5).fit(X, triplets=t)
    # the obvious reference: w += eta * v for every violated triplet, in order
    A = X.toarray().astype(np.float64)
    w = np.zeros(12)
    for a, p, n in t:
        v = A[a] * (A[p] - A[n])
        if 1.0 - w @ v > 0:
            w += 0.5 * v
    np.testing.assert_allclose(model.w_, w, rtol=1e-6, atol=1e-6)
    again = similarity.load_similarity(model.save(tmp_path / "plain.npz"))
    assert type(again) is plain_solver
    np.testing.assert_array_equal(again.w_, model.w_)
    with pytest.raises(ValueError, match=r"^The 'eta' parameter of PlainTestSolver must be a float in the range \(0\.0, inf\)"):
        plain_solver(eta=float("nan")).fit(X, triplets=t)


def test_registry_lists_every_solver_class_of_the_package():
    defined = {
        obj for module in list(sys.modules.values())
        if getattr(module, "__name__", "").startswith("hardneg.similarity.")
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, SolisBase) and obj is not SolisBase and obj.__module__.startswith("hardneg.")
    }
    assert set(similarity.SOLVERS.values()) == defined
    assert set(similarity.SOLVERS) == {"tg", "da", "afb", "ada"}
    for cls in defined:
        assert getattr(similarity, cls.__name__) is cls and cls.__name__ in similarity.__all__
    with pytest.raises(TypeError, match="registered twice"):
        register_solver("ada", weight=None, update=None)(type("Other", (SolisBase,), {}))
