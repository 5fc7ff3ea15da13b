"""A runtime dependency that is not installed is a user error naming it, not "a bug in ktriage"."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from ktriage.cli.dependencies import RUNTIME_DEPENDENCIES
from tests.conftest import RunCli

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]


def test_the_table_is_pyproject_dependencies() -> None:
    """Every declared dependency that ktriage imports is in the table with its declared requirement (uv is
    a binary ktriage runs, never imports)."""
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    requirements = {re.split(r"[<>=;! \[]", d, maxsplit=1)[0].lower(): d.split(";")[0].strip() for d in declared}
    requirements.pop("uv")
    assert RUNTIME_DEPENDENCIES == requirements


def test_a_missing_dependency_is_named_with_its_requirement(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # None in sys.modules makes `import sqlalchemy` raise ModuleNotFoundError, as on a host without its wheel
    for name in [m for m in sys.modules if m == "sqlalchemy" or m.startswith("sqlalchemy.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    for name in [m for m in sys.modules if m.startswith("ktriage.store")]:
        monkeypatch.delitem(sys.modules, name)  # re-imported, so the store meets the missing module
    before = set(sys.modules)
    try:
        r = run_cli(["runs", "list", "--db", f"sqlite:///{tmp_path / 'k.db'}"])
    finally:  # modules first imported here go; monkeypatch puts the deleted ones back
        for name in set(sys.modules) - before:
            del sys.modules[name]
    assert r.exit_code == 2, r.stderr
    assert "ktriage's dependency sqlalchemy is not installed" in r.problem
    assert r.fix is not None and "pip install 'sqlalchemy>=2.0'" in r.fix
    assert "internal error" not in r.err_text


def test_a_module_ktriage_does_not_declare_stays_an_internal_error() -> None:
    from ktriage.cli.dependencies import missing_dependency

    assert missing_dependency(ModuleNotFoundError("No module named 'torch'", name="torch")) is None
