"""ktriage: find, bisect, explain and fix performance regressions of Triton GPU kernels.

The package layout follows the pipeline of DESIGN.md:
``spec`` (KernelSpec) -> ``compile`` (with a ``toolchain``) -> artifacts -> ``analyze``
(resources, occupancy) -> ``explain`` (findings, attribution). ``catalog`` holds ready-made specs.
Each package imports only the packages below it: docs/architecture.md lists the layers, and the
import-linter contract in pyproject.toml checks them.

The library's entry points are ``ktriage.api`` (one function per verb, docs/api.md); this package
re-exports ``api`` and the typed reports lazily (PEP 562), so ``import ktriage`` (which every
module's ``ktriage.__version__`` and the console script pay for) imports nothing else. The verbs
themselves are not re-exported here: ``ktriage.explain``, ``ktriage.bench``... are subpackages, and
the import system rebinds those attributes whenever the subpackage is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# What type checkers see for the lazy names below: each is the api's own class (not Any), and a name
# missing here is a type error, as it is an AttributeError at run time; ``__all__`` makes them
# re-exports. Never run. tests/api/test_api.py keeps this block and _LAZY naming the same things from
# the same modules; tests/api/typed_usage.py (mypy strict) reads each one. import-linter ignores this
# one edge, ktriage -> ktriage.api (pyproject.toml): counted as an import, which it is not at run time,
# every module reading ``ktriage.__version__`` would import upwards through it.
if TYPE_CHECKING:
    from ktriage import api
    from ktriage.api import (
        BenchReport,
        BisectReport,
        CompareReport,
        ExplainReport,
        FidelityReport,
        RecordReport,
        TriageReport,
    )

# public name -> the module that defines it, imported by name on first use (``_lazy_attribute``).
_LAZY: dict[str, str] = {
    "api": "ktriage.api",
    "BenchReport": "ktriage.api",
    "CompareReport": "ktriage.api",
    "TriageReport": "ktriage.api",
    "BisectReport": "ktriage.api",
    "ExplainReport": "ktriage.api",
    "FidelityReport": "ktriage.api",
    "RecordReport": "ktriage.api",
}

__all__ = [
    "BenchReport",
    "BisectReport",
    "CompareReport",
    "TriageReport",
    "ExplainReport",
    "FidelityReport",
    "RecordReport",
    "__version__",
    "api",
]


def _lazy_attribute(name: str) -> Any:
    """The module's ``__getattr__`` (PEP 562): a name of _LAZY, imported on first use and kept."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ktriage' has no attribute {name!r}" + _api_hint(name))
    imported = importlib.import_module(module)
    value = imported if module == f"ktriage.{name}" else getattr(imported, name)
    globals()[name] = value
    return value


if not TYPE_CHECKING:
    # Bound only at run time: a type checker that saw a module ``__getattr__`` returning Any would take
    # every name, a misspelt one too, as Any; the names above are all there are.
    __getattr__ = _lazy_attribute


def _api_hint(name: str) -> str:
    """Where a verb's function is, for a caller who wrote ``ktriage.bench(...)`` after ``import ktriage``:
    the functions are ``ktriage.api``'s (docs/api.md), and plain Python said only "no attribute". Only on
    this error path is ``ktriage.api`` imported, so ``import ktriage`` stays free."""
    if name.startswith("_"):
        return ""
    api = importlib.import_module("ktriage.api")
    if name in getattr(api, "__all__", ()):
        return f": the library's functions and reports are in ktriage.api (import ktriage.api as kt; kt.{name})"
    return ""


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
