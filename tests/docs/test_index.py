"""docs/index.md maps every docs page, and the links of the front pages (index, concepts,
environment) point at files that exist, so the map cannot drift when a page is added or renamed; and
the page's compile-only bench example prints what it quotes."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import RunCli

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


def test_the_bench_example_prints_what_the_page_quotes(run_cli: RunCli, tmp_path: Path) -> None:
    """The compile-only bench of index.md ("Measure on a GPU host"), run as written with its bundle
    folder under tmp_path, prints the lines the page quotes: that wording changed twice in one series of
    changes ("2 kernels" became "1 kernel x 2 toolchains: 2 cubins"; the bundle's --only line was added)
    and the page kept the old one. Two kernels of the test home's Triton 3.3.1 and 3.4.0, no GPU."""
    text = DOCS.joinpath("index.md").read_text()
    found = re.search(r"```console\n\$ (ktriage bench .*?--compile-only .*?)\n(?!    )(.*?)```", text, re.S)
    assert found, "index.md has no compile-only `ktriage bench` example"
    argv = shlex.split(found.group(1).replace("\\\n", " "))[1:]
    quoted = argv[argv.index("--bundle") + 1]
    argv[argv.index("--bundle") + 1] = str(tmp_path / "bundle")
    r = run_cli(argv)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == found.group(2).replace(quoted, str(tmp_path / "bundle")).splitlines(), r.output
