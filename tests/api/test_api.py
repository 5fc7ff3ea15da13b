"""The public surface of the library: ``ktriage.api`` (one function per verb) and ``ktriage`` itself
re-export lazily (PEP 562). ``__all__`` and the lazy table must name the same things, every name
must resolve to what its module defines, and importing either package must import no entry point
(``ktriage --help`` imports ``ktriage``)."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ktriage
import ktriage.api

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("package", [ktriage, ktriage.api], ids=["ktriage", "ktriage.api"])
def test_all_and_the_lazy_table_agree(package: object) -> None:
    names = set(package.__all__)  # type: ignore[attr-defined]
    lazy = set(package._LAZY)  # type: ignore[attr-defined]
    eager = {"__version__"} if package is ktriage else set()
    assert names == lazy | eager, f"__all__ and _LAZY differ: {sorted(names ^ (lazy | eager))}"
    assert len(package.__all__) == len(names), "a name is listed twice in __all__"  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(ktriage.api._LAZY))
def test_every_api_name_resolves_to_its_module(name: str) -> None:
    module = importlib.import_module(f"ktriage.api.{ktriage.api._LAZY[name]}")
    assert getattr(ktriage.api, name) is getattr(module, name)


@pytest.mark.parametrize("name", sorted(ktriage._LAZY))
def test_every_top_level_name_resolves(name: str) -> None:
    value = getattr(ktriage, name)
    assert value is (ktriage.api if name == "api" else getattr(ktriage.api, name))


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = ktriage.api.nope  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = ktriage.nope  # type: ignore[attr-defined]


def test_a_verb_asked_of_the_top_package_points_to_the_api() -> None:
    """``import ktriage; ktriage.runs_list(...)`` said only "no attribute": the functions are ktriage.api's.
    (A verb that is also a subpackage, ``ktriage.tune``, is that module once imported: not tested here.)"""
    top: Any = ktriage
    with pytest.raises(AttributeError, match=r"'runs_list': .*ktriage.api \(import ktriage.api as kt; kt.runs_list\)"):
        top.runs_list  # noqa: B018
    with pytest.raises(AttributeError, match=r"no attribute 'nope'$"):
        top.nope  # noqa: B018


def test_entry_points_are_keyword_only_and_typed() -> None:
    """A verb's arguments are many and optional: keyword-only keeps calls readable and lets a
    parameter be added anywhere; typed returns are what docs/api.md asserts on."""
    verbs = [n for n in ktriage.api.__all__ if f"{n[:1].upper()}{n[1:]}Report" in ktriage.api.__all__]
    assert verbs, "no entry point found: each verb has a VerbReport"
    for name in verbs:
        func = getattr(ktriage.api, name)
        params = inspect.signature(func).parameters.values()
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), name
        hints = inspect.get_annotations(func, eval_str=True)
        assert hints.get("return") is getattr(ktriage.api, f"{name[:1].upper()}{name[1:]}Report"), name


PROBE = """
import json, sys
import ktriage, ktriage.api
print(json.dumps(sorted(m for m in sys.modules if m.startswith("ktriage"))))
"""


def test_importing_the_packages_imports_no_entry_point() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=REPO, check=True)
    assert json.loads(proc.stdout) == ["ktriage", "ktriage.api"]
    alone = PROBE.replace("import ktriage, ktriage.api", "import ktriage")
    proc = subprocess.run([sys.executable, "-c", alone], capture_output=True, text=True, cwd=REPO, check=True)
    assert json.loads(proc.stdout) == ["ktriage"], "import ktriage imports more of ktriage than itself"


def _type_checking_names() -> dict[str, str]:
    """The names ``ktriage/__init__.py`` imports under ``if TYPE_CHECKING:`` -> the module each is."""
    tree = ast.parse((REPO / "ktriage" / "__init__.py").read_text())
    blocks = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    names: dict[str, str] = {}
    for node in (n for block in blocks for n in block.body):
        assert isinstance(node, ast.ImportFrom) and node.module, ast.unparse(node)
        for alias in node.names:  # re-exported by __all__ (test_all_and_the_lazy_table_agree)
            # ``from ktriage import api``: the subpackage
            names[alias.name] = f"ktriage.{alias.name}" if node.module == "ktriage" else node.module
    return names


def test_the_typed_names_of_ktriage_are_its_lazy_names() -> None:
    """Type checkers read ``ktriage``'s lazy names from its TYPE_CHECKING imports (``__getattr__`` is
    hidden from them): a name added to _LAZY alone would be a type error for every typed caller, one
    left in the block alone would type a name that is an AttributeError at run time."""
    assert _type_checking_names() == ktriage._LAZY


def test_the_typed_script_reads_every_lazy_name_of_ktriage() -> None:
    """tests/api/typed_usage.py (mypy strict, test_typing.py) asserts each name's type through ``ktriage``."""
    script = (REPO / "tests" / "api" / "typed_usage.py").read_text()
    missing = [n for n in ktriage._LAZY if f"assert_type(ktriage.{n}," not in script]
    assert not missing, f"add assert_type(ktriage.X, ...) to typed_usage.py's top_level_usage for: {missing}"
