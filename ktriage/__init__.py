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
from typing import Any

__version__ = "0.1.0"

# public name -> the module that defines it, imported by name on first use. Not even under
# TYPE_CHECKING: import-linter would count a static import of ktriage.api here as an upward import
# by every module below the api layer that reads ``ktriage.__version__``. Type checkers see these
# names as Any through ``ktriage``; ``ktriage.api`` declares them typed.
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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ktriage' has no attribute {name!r}" + _api_hint(name))
    imported = importlib.import_module(module)
    value = imported if module == f"ktriage.{name}" else getattr(imported, name)
    globals()[name] = value
    return value


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
