"""docs/environment.md names every KTRIAGE_ environment variable, and only those: the names are
found by a regex over the source text (ktriage/**/*.py must all be documented; tests and scripts
too), and every name the page documents must occur in that source."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "docs" / "environment.md").exists())
DOC = ROOT / "docs" / "environment.md"
NAME = re.compile(r"\bKTRIAGE_[A-Z0-9_]*[A-Z0-9]\b")
THIS = Path(__file__).resolve()


def _names(paths: list[Path]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in paths:
        if path.resolve() == THIS:
            continue
        for name in NAME.findall(path.read_text(errors="replace")):
            found.setdefault(name, path)
    return found


def _package_sources() -> list[Path]:
    return sorted((ROOT / "ktriage").rglob("*.py"))


def _test_and_script_sources() -> list[Path]:
    return sorted(
        [*(ROOT / "tests").rglob("*.py"), *(ROOT / "scripts").rglob("*.sh"), *(ROOT / "scripts").rglob("*.py")]
    )


def _documented() -> set[str]:
    return set(NAME.findall(DOC.read_text()))


def test_every_variable_ktriage_reads_or_sets_is_documented() -> None:
    used = _names(_package_sources())
    assert {"KTRIAGE_HOME", "KTRIAGE_DB"} <= set(used)
    missing = {n: str(p.relative_to(ROOT)) for n, p in used.items() if n not in _documented()}
    assert not missing, f"document these in docs/environment.md: {missing}"


def test_every_variable_of_the_tests_and_scripts_is_documented() -> None:
    used = _names(_test_and_script_sources())
    assert "KTRIAGE_TEST_HOME" in used
    missing = {n: str(p.relative_to(ROOT)) for n, p in used.items() if n not in _documented()}
    assert not missing, f"document these in docs/environment.md: {missing}"


def test_every_documented_variable_is_used() -> None:
    used = set(_names(_package_sources() + _test_and_script_sources()))
    stale = sorted(_documented() - used)
    assert not stale, f"docs/environment.md documents variables no source uses: {stale}"
