"""Every :class:`~ktriage.errors.KtriageError` subclass comes back whole from a pickle: errors cross processes
(a Ray task's exception is pickled back to the driver), and Python's own reduction rebuilt an error as
``cls(*args)``, which raised for a subclass whose ``__init__`` takes other arguments (``CudaError(call, name,
code)``, ``NothingLoads(unloaded, ...)``): Ray then answered "failed to deserialize exception" and the executor
took the job for one its node lost.

The subclasses are found in the source (every class of ``ktriage/`` deriving from one of them), so a new one is
checked without being listed here; one whose ``__init__`` is its own needs a sample below (the test says so)."""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest

from ktriage.errors import KtriageError, Worded, in_flags, worded

PACKAGE = Path(__import__("ktriage").__file__).resolve().parent
PROBLEM = worded(lambda o: f"bad {o('limit', '--limit', 0)}")
FIX = worded(lambda o: f"give {o('limit', '--limit', 5)}")


def _subclasses_in_source() -> dict[str, type[KtriageError]]:
    """``module:Class`` of every class in ``ktriage/`` that derives, by name, from KtriageError or one of its
    subclasses (found until no new one appears: a subclass of a subclass in another module counts)."""
    classes: list[tuple[str, ast.ClassDef]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(), str(path))
        classes += [(module, node) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    known = {"KtriageError"}
    found: dict[str, type[KtriageError]] = {}
    while True:
        new = [
            (module, node)
            for module, node in classes
            if node.name not in known
            and any((b.id if isinstance(b, ast.Name) else getattr(b, "attr", None)) in known for b in node.bases)
        ]
        if not new:
            return found
        for module, node in new:
            known.add(node.name)
            cls = getattr(importlib.import_module(module), node.name)
            assert issubclass(cls, KtriageError), f"{module}:{node.name} derives from no KtriageError"
            found[f"{module}:{node.name}"] = cls


def _nothing_loads() -> KtriageError:
    from ktriage.errors import SpecError
    from ktriage.spec.model import KernelSpec
    from ktriage.spec.toml_file import NothingLoads, UnloadedKernel

    spec = KernelSpec(name="k", source="k.py:k", signature={"x": "*fp32"})
    return NothingLoads([UnloadedKernel(spec, SpecError(PROBLEM, FIX, "log"))], PROBLEM, FIX, "details")


def _cuda_error() -> KtriageError:
    from ktriage.measure.driver import CudaError

    return CudaError("cuLaunchKernel", "CUDA_ERROR_ILLEGAL_ADDRESS", 700)


SAMPLES: dict[str, Callable[[], KtriageError]] = {
    "ktriage.spec.toml_file:NothingLoads": _nothing_loads,
    "ktriage.measure.driver:CudaError": _cuda_error,
}
"""An instance of each subclass whose ``__init__`` is not KtriageError's (the others are made with it)."""

SUBCLASSES = {"ktriage.errors:KtriageError": KtriageError, **_subclasses_in_source()}


def _sample(name: str, cls: type[KtriageError]) -> KtriageError:
    if name in SAMPLES:
        return SAMPLES[name]()
    if cls.__init__ is not KtriageError.__init__:
        pytest.fail(f"{name} has an __init__ of its own: add a sample of it to SAMPLES in {__file__}")
    return cls(PROBLEM, FIX, "details")


def _same(a: object, b: object, where: str) -> None:
    """``b`` is ``a`` again: the same type, text (and a Worded's flags), attributes, recursively."""
    assert type(a) is type(b), f"{where}: {type(a)} came back as {type(b)}"
    if isinstance(a, BaseException):
        assert isinstance(b, BaseException)
        _same(a.args, b.args, f"{where}.args")
        _same(vars(a), vars(b), f"{where}.__dict__")
        assert str(a) == str(b), where
    elif isinstance(a, Worded):
        assert a == b and in_flags(a) == in_flags(b), f"{where}: {in_flags(a)!r} came back as {in_flags(b)!r}"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{where}: {a.keys()} came back as {b.keys()}"
        for key in a:
            _same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    else:
        assert a == b, f"{where}: {a!r} came back as {b!r}"


def test_the_source_has_the_subclasses_this_test_knows_of() -> None:
    """The discovery finds the families and the subclasses defined outside errors.py (so it finds a new one)."""
    names = set(SUBCLASSES)
    assert {"ktriage.errors:SpecError", "ktriage.errors:CallError", *SAMPLES} <= names, sorted(names)
    assert "ktriage.execute.base:NodeUnfit" in names and "ktriage.bisect.predicates:BisectAbort" in names


@pytest.mark.parametrize("name", sorted(SUBCLASSES))
def test_every_ktriage_error_comes_back_whole_from_a_pickle(name: str) -> None:
    error = _sample(name, SUBCLASSES[name])
    assert error.fix, f"the sample of {name} has no fix: the test would not see one lost"
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        _same(error, pickle.loads(pickle.dumps(error, protocol)), f"{name} (protocol {protocol})")
    _same(error, copy.deepcopy(error), f"{name} (deepcopy)")
    _same(error, copy.copy(error), f"{name} (copy)")
