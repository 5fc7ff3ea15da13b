"""docs/index.md maps every docs page, and the links of the front pages (index, concepts,
environment) point at files that exist, so the map cannot drift when a page is added or renamed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "docs" / "index.md").exists())
DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_index_maps_every_page() -> None:
    table = DOCS.joinpath("index.md").read_text().split("## Pages", 1)[1]
    mapped = set(re.findall(r"^\| \[(\w+\.md)\]\(\1\) \| .+ \|$", table, re.M))
    pages = {p.name for p in DOCS.glob("*.md")} - {"index.md"}
    assert not pages - mapped, f"add to the map in docs/index.md: {sorted(pages - mapped)}"
    assert not mapped - pages, f"the map in docs/index.md names missing pages: {sorted(mapped - pages)}"


@pytest.mark.parametrize("page", ["index.md", "concepts.md", "environment.md", "errors.md"])
def test_links_resolve(page: str) -> None:
    text = DOCS.joinpath(page).read_text()
    broken = [t for t in LINK.findall(text) if "://" not in t and not (DOCS / t).exists()]
    assert not broken, f"{page}: broken links {broken}"
