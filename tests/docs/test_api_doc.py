"""docs/api.md is a notebook-style script through the public API only: this runs its code blocks,
section by section (each section's blocks in one namespace, from the repository root), so the page
cannot rot. The explain section compiles the layer_norm backward kernels with real Triton 3.3.1 and
3.4.0 wheels and real ptxas (no GPU); compare and triage read committed results files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = next(p for p in Path(__file__).resolve().parents if (p / "docs" / "api.md").exists()) / "docs" / "api.md"
PUBLIC = re.compile(r"^\s*(?:import|from)\s+(ktriage[\w.]*)", re.M)


def _sections() -> dict[str, list[str]]:
    text = DOC.read_text()
    out: dict[str, list[str]] = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, body = part.partition("\n")
        blocks = re.findall(r"```python\n(.*?)```", body, re.S)
        if blocks:
            out[title.strip()] = blocks
    return out


def test_the_page_uses_the_public_api_only() -> None:
    """``ktriage.api`` and ``ktriage`` (and its errors), nothing below: what a user may rely on."""
    imported = {m for blocks in _sections().values() for b in blocks for m in PUBLIC.findall(b)}
    assert imported and imported <= {"ktriage", "ktriage.api", "ktriage.errors"}, imported


@pytest.mark.parametrize("section", sorted(_sections()))
def test_the_section_runs(section: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DOC.parents[1])  # the page's paths are the repository's
    namespace: dict[str, object] = {}
    for i, block in enumerate(_sections()[section]):
        exec(compile(block, f"{DOC}:{section}:block {i + 1}", "exec"), namespace)


def test_every_public_name_is_on_the_page() -> None:
    """Each name ``ktriage.api`` exports is named on the page as ``kt.NAME``: nine of them (the defaults,
    ``EXIT_ABORT``, ``require_torch``...) were exported and nowhere documented."""
    import ktriage.api as kt

    text = DOC.read_text()
    missing = [name for name in kt.__all__ if not re.search(rf"`kt\.{re.escape(name)}\b", text)]
    assert not missing, f"document in docs/api.md: {missing}"


CALL = re.compile(r"kt\.(\w+)\(([^()]*)\)")
WRONG_ON_PURPOSE = {("explain", "toolchain")}  # the page's example of a keyword refused with "did you mean"


def test_every_kt_call_shown_names_keywords_the_function_takes() -> None:
    """The ``kt.NAME(keyword=...)`` calls the docs and ktriage's own messages show bind: runs import's fix for a
    TritonBench file said ``kt.compare(a=..., b=...)``, which kt.compare refuses (it takes ``old=``/``new=``)."""
    import inspect

    import ktriage.api as kt

    root = DOC.parents[1]
    files = [root / "README.md", *sorted((root / "docs").glob("*.md")), *sorted((root / "ktriage").rglob("*.py"))]
    wrong = []
    for path in files:
        for name, args in CALL.findall(path.read_text()):
            function = getattr(kt, name, None)
            if function is None:
                wrong.append(f"{path.relative_to(root)}: kt.{name} does not exist")
                continue
            if inspect.isclass(function) or not callable(function):
                continue
            params = inspect.signature(function).parameters
            for keyword in re.findall(r"(?:^|,)\s*(\w+)=", args):
                if keyword not in params and (name, keyword) not in WRONG_ON_PURPOSE:
                    wrong.append(f"{path.relative_to(root)}: kt.{name}({keyword}=...)")
    assert not wrong, "calls shown that do not bind:\n" + "\n".join(wrong)
