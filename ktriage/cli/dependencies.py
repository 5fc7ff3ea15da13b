"""ktriage's runtime dependencies by import name, so that a missing one is named as such.

Why: on a GPU host without a package index, ktriage runs from ``PYTHONPATH`` with its dependencies'
wheels carried by hand (``benchmarks/gpu/gpu_tests.sh``). A forgotten wheel then surfaces as a
``ModuleNotFoundError`` deep inside a verb (``bench --bundle ... -o r.json`` imports SQLAlchemy to
store the run), which the CLI reported as "internal error ... a bug in ktriage". It is the
environment's problem, and the fix is the requirement to install.

``tests/cli/test_dependencies.py`` keeps this table equal to ``pyproject.toml``'s dependencies.
"""

from __future__ import annotations

from ktriage.errors import KtriageError

#: import name -> the requirement pyproject.toml declares (uv is left out: ktriage runs its binary, it
#: never imports it)
RUNTIME_DEPENDENCIES: dict[str, str] = {
    "typer": "typer>=0.27,<0.29",
    "rich": "rich>=13",
    "filelock": "filelock>=3.12",
    "platformdirs": "platformdirs>=4",
    "packaging": "packaging>=23",
    "sqlalchemy": "sqlalchemy>=2.0",
    "numpy": "numpy>=1.24",
    "scipy": "scipy>=1.10",
    "jinja2": "jinja2>=3.1",
    "markupsafe": "markupsafe>=2.1",
    "msgspec": "msgspec>=0.18",
    "tomli": "tomli>=2",
}


def missing_dependency(exc: ModuleNotFoundError) -> KtriageError | None:
    """The user error for a runtime dependency that is not installed; None when the missing module is
    none of ktriage's dependencies (then it stays an internal error: ktriage imported something it
    does not declare)."""
    top = (exc.name or "").split(".")[0]
    requirement = RUNTIME_DEPENDENCIES.get(top)
    if requirement is None:
        return None
    return KtriageError(
        f"ktriage's dependency {top} is not installed (No module named {exc.name!r})",
        f"pip install '{requirement}' (or install ktriage with its dependencies); on a host without a package "
        "index, carry its wheel and put it on PYTHONPATH",
    )
