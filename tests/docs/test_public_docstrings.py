"""Every public class and function has a numpydoc docstring that documents its signature, and type hints.

"Public" means exported in ``__all__`` by ``hardneg`` or one of its subpackages. Each object is
checked with numpydoc's own validator (``numpydoc.validate.validate``), with these codes on:

- GL08: the object has no docstring at all;
- PR01: a parameter of the signature is not documented (the reader cannot know what to pass);
- PR02: a documented parameter is not in the signature (the docstring went stale after a change);
- RT01: a function that returns something has no Returns section.

Style codes (summary punctuation, section order, "See Also", examples: SS0x, ES01, SA01, EX01,
...) are off: they say nothing about whether the documentation is true or complete, and the
house style writes one-line summaries that run past one sentence. Classes are checked against
``__init__``'s signature (numpydoc's rule). The public methods and properties of those classes
(names without a leading underscore, defined on the class itself) are walked too: a property
needs a docstring (GL08) but no Returns section.

Beside numpydoc, every named parameter of the signature (``__init__``'s for a class) must carry
a type hint, and a function must declare its return type.

When this test was added (issue 25) 114 of the 188 objects failed it; all are fixed now.
KNOWN_GAPS may list an object that cannot be fixed at once; the test fails on a listed object
that passes, so the list only shrinks. EXEMPT lists objects the check cannot apply to, with why.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

import hardneg  # noqa: E402

CODES = {"GL08", "PR01", "PR02", "RT01"}


def public_objects() -> dict[str, object]:
    """``{import path: object}`` for every class and function in a hardneg ``__all__``, each object once."""
    modules = ["hardneg"] + [f"hardneg.{m.name}" for m in pkgutil.iter_modules(hardneg.__path__) if m.ispkg]
    found: dict[tuple[str, str], tuple[str, object]] = {}
    for name in modules:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", None) or []:
            obj = getattr(module, attr)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            key = (obj.__module__, obj.__qualname__)
            if key not in found:
                found[key] = (f"{name}.{attr}", obj)
    return dict(found.values())


def public_methods(objects: dict[str, object]) -> dict[str, object]:
    """``{path: function}`` for every public method, classmethod, staticmethod and property
    defined on a public class (inherited ones are checked where they are defined)."""
    found: dict[str, object] = {}
    for path, cls in objects.items():
        if not inspect.isclass(cls) or path in EXEMPT:
            continue
        for name, member in vars(cls).items():
            if name.startswith("_"):
                continue
            if isinstance(member, property):
                func = member.fget
            elif isinstance(member, (classmethod, staticmethod)):
                func = member.__func__
            else:
                func = member
            if inspect.isfunction(func):
                found[f"{path}.{name}"] = member
    return found


def method_problems(member: object) -> list[str]:
    """numpydoc's codes for one method (validated at its defining module's path)."""
    func = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
    real = f"{func.__module__}.{func.__qualname__}"
    codes = {"GL08"} if isinstance(member, property) else CODES
    return [f"{code} {msg}" for code, msg in numpydoc_validate.validate(real)["errors"] if code in codes]


def missing_hints(obj: object) -> list[str]:
    """Parameters (and ``return`` for a function) of ``obj``'s signature without a type hint."""
    func = obj.__init__ if inspect.isclass(obj) else obj
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):  # a C or builtin __init__: nothing to annotate
        return []
    skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)  # *args/**kwargs pass through: numpydoc checks their docs
    missing = [
        p.name for p in sig.parameters.values() if p.name not in ("self", "cls") and p.kind not in skip and p.annotation is inspect.Parameter.empty
    ]
    if not inspect.isclass(obj) and sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def problems(path: str, obj: object) -> list[str]:
    errors = [f"{code} {msg}" for code, msg in numpydoc_validate.validate(path)["errors"] if code in CODES]
    hints = missing_hints(obj)
    if hints:
        errors.append(f"no type hint: {', '.join(hints)}")
    return errors


#: objects the check cannot apply to, each with the reason
EXEMPT = {
    # an ndarray subclass built by __new__: numpydoc reads __new__'s parameters, while the API docs'
    # renderer (griffe) checks documented parameters against ndarray's __init__ and fails the build
    "hardneg.store.CodeBlock",
}

#: objects that failed when the test was added and are not fixed yet (none left: every public
#: object passes); an entry here must still fail, so the list can only shrink
KNOWN_GAPS: set[str] = set()

#: public methods that had no numpydoc Parameters/Returns when methods were first walked
#: (issue 25: 247 of 270; none left); an entry here must still fail, so the list can only shrink
KNOWN_METHOD_GAPS: set[str] = set()


@pytest.fixture(scope="module")
def objects():
    return public_objects()


def test_the_walk_finds_the_public_api(objects):
    assert len(objects) > 150
    assert "hardneg.concept.NegativeBootstrap" in objects


def test_public_api_documents_its_signature(objects):
    bad = []
    for path, obj in sorted(objects.items()):
        if path in KNOWN_GAPS or path in EXEMPT:
            continue
        errs = problems(path, obj)
        if errs:
            bad.append(f"{path}: " + "; ".join(errs))
    assert not bad, f"{len(bad)} public objects to document (numpydoc Parameters/Returns, type hints):\n" + "\n".join(bad)


def test_public_methods_document_their_signature(objects):
    methods = public_methods(objects)
    assert len(methods) > 200
    bad = []
    for path, member in sorted(methods.items()):
        if path in KNOWN_METHOD_GAPS:
            continue
        errs = method_problems(member)
        if errs:
            bad.append(f"{path}: " + "; ".join(errs))
    assert not bad, f"{len(bad)} public methods to document (numpydoc Parameters/Returns):\n" + "\n".join(bad)


def test_known_method_gaps_list_only_shrinks(objects):
    methods = public_methods(objects)
    stale = sorted(p for p in KNOWN_METHOD_GAPS
                   if p not in methods or not method_problems(methods[p]))
    assert not stale, "fixed or gone, delete from KNOWN_METHOD_GAPS: " + ", ".join(stale)


def test_known_gaps_list_only_shrinks(objects):
    stale = sorted(p for p in KNOWN_GAPS if p not in objects or not problems(p, objects[p]))
    assert not stale, "fixed or gone, delete from KNOWN_GAPS: " + ", ".join(stale)


def test_checker_catches_an_undocumented_parameter():
    assert problems(f"{__name__}._example_missing_b", _example_missing_b) == [
        "PR01 Parameters {'b'} not documented",
        "RT01 No Returns section found",
        "no type hint: b, return",
    ]


class _ExampleClass:
    def method_missing_x(self, x):
        """Double.

        Returns
        -------
        int
            Twice ``x``.
        """
        return 2 * x

    @property
    def undocumented(self):
        return 1


def test_method_checker_catches_an_undocumented_parameter_and_property():
    assert method_problems(vars(_ExampleClass)["method_missing_x"]) == ["PR01 Parameters {'x'} not documented"]
    assert [e.split()[0] for e in method_problems(vars(_ExampleClass)["undocumented"])] == ["GL08"]


def _example_missing_b(a: int, b):
    """Add.

    Parameters
    ----------
    a : int
        First.
    """
    return a + b
