"""docs/errors.md has one entry per error family: every KtriageError subclass defined in
ktriage/errors.py has a ``## Name`` heading and a line in the drawn tree, and every subclass defined
elsewhere in ktriage (found in the source text) is named on the page."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from ktriage import errors

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "docs" / "errors.md").exists())
DOC = ROOT / "docs" / "errors.md"


def _families() -> list[str]:
    return [
        name
        for name, obj in vars(errors).items()
        if inspect.isclass(obj)
        and issubclass(obj, errors.KtriageError)
        and obj is not errors.KtriageError
        and obj.__module__ == errors.__name__
    ]


def _tree() -> str:
    text = DOC.read_text()
    return text[text.index("```\nKtriageError") :]


def test_every_family_has_a_heading_and_a_tree_line() -> None:
    families = _families()
    assert {
        "SpecError",
        "ToolchainError",
        "CompileError",
        "DeviceError",
        "MeasureError",
        "StoreError",
        "FormatError",
    } <= set(families)
    headings = set(re.findall(r"^## (\w+)\s*$", DOC.read_text(), re.M))
    missing = [f for f in families if f not in headings]
    assert not missing, f"docs/errors.md has no '## <name>' section for {missing}"
    tree = _tree().split("```\n", 2)[1]
    assert not [f for f in families if not re.search(rf"[├└]── {f}\b", tree)], "draw every family in the tree"


def test_no_heading_names_a_family_that_does_not_exist() -> None:
    headings = re.findall(r"^## (\w+Error)\s*$", DOC.read_text(), re.M)
    assert set(headings) <= set(_families())


def test_subclasses_outside_errors_py_are_named() -> None:
    names = set(_families()) | {"KtriageError"}
    defined: set[str] = set()
    pattern = re.compile(r"^class (\w+)\((\w+)\)", re.M)
    found = True
    while found:  # subclasses of subclasses (CudaError(DeviceError)), to a fixed point
        found = False
        for path in (ROOT / "ktriage").rglob("*.py"):
            if path.name == "errors.py" and path.parent.name == "ktriage":
                continue
            for cls, base in pattern.findall(path.read_text()):
                if base in names | defined and cls not in defined:
                    defined.add(cls)
                    found = True
    assert "CudaError" in defined
    text = DOC.read_text()
    missing = sorted(c for c in defined if f"`{c}`" not in text)
    assert not missing, f"docs/errors.md does not name {missing} (section 'Subclasses outside errors.py')"
