"""docs/index.md maps every docs page, and the links of the front pages (index, concepts,
environment) point at files that exist, so the map cannot drift when a page is added or renamed; the
page's compile-only bench example prints what it quotes, and so do the quickstart's other console
examples that run without a GPU or the network (explain, catalog, occupancy, compare on committed
results) and compare.md's on committed results."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
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


# ------------------------------------------------------------------ the console examples, run as quoted

QUOTED_COLUMNS = "120"  # the width index.md says its outputs were made at
RUNNABLE = ("explain", "catalog", "occupancy", "compare")  # no GPU, no package index (bisect asks it for releases)
BORDER = set("┏┳┓┡╇┩└┴┘┗┻┛━─ ")
ELISION = re.compile(r"…|\.\.\.")


def _console_examples(page: str) -> Iterator[tuple[str, str, int | None]]:
    """Each ``$ ktriage VERB ...`` of the page's console blocks with the output quoted under it and the
    exit status a following ``$ echo $?`` quotes (None: not quoted)."""
    text = DOCS.joinpath(page).read_text()
    # every fenced block, opening and closing fences paired (compare.md's have no language)
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```$", text, re.S | re.M)
    for block in blocks:
        parts = re.split(r"^\$ ", block, flags=re.M)[1:]
        for i, part in enumerate(parts):
            command, _, quoted = part.partition("\n")
            while command.endswith("\\"):  # a command continued on the next line
                more, _, quoted = quoted.partition("\n")
                command = command[:-1] + " " + more.strip()
            if not command.startswith("ktriage "):
                continue
            code = None
            if i + 1 < len(parts) and parts[i + 1].startswith("echo $?"):
                code = int(parts[i + 1].split("\n")[1])
            yield command, quoted, code


def _missing_fragments(quoted: str, output: str) -> list[str]:
    """The pieces of the quoted output, between its elisions (``…``, ``...``), that the real output lacks.
    Both sides are compared with whitespace collapsed and table borders dropped, so a line wrapped
    elsewhere, a column padded otherwise or a border left out of the quote still matches; a line that
    starts with an elision stands for lines left out."""
    have = " ".join(" ".join(line for line in output.splitlines() if not set(line) <= BORDER).split())
    kept = []
    for line in quoted.splitlines():
        stripped = line.strip()
        if ELISION.match(stripped):
            kept.append("…")  # a line left out: what is around it need not be adjacent in the output
        elif not set(stripped) <= BORDER:  # table borders, quoted or not, are no text
            kept.append(stripped)
    fragments = ELISION.split(" ".join(kept))
    return [f for f in (" ".join(f.split()) for f in fragments) if f and f not in have]


def _examples() -> Iterator[object]:
    for page in ("index.md", "compare.md"):
        for command, quoted, code in _console_examples(page):
            argv = shlex.split(command)[1:]
            if argv[0] not in RUNNABLE:
                continue
            files = [a for a in argv[1:] if not a.startswith("-") and ("/" in a or a.endswith((".json", ".csv")))]
            if any(not (ROOT / f).exists() for f in files):
                continue  # a file the page describes how to make (compare.md's two TritonBench CSVs)
            yield pytest.param(argv, quoted, code, id=f"{page}:{' '.join(argv[:2])}")


@pytest.mark.parametrize(("argv", "quoted", "code"), list(_examples()))
def test_the_console_examples_print_what_the_pages_quote(
    argv: list[str], quoted: str, code: int | None, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quickstart quoted outputs that a change of the wording or the numbers had left behind (the
    predictions written "+461 %" after they became "+461%", compare's rows naming the toolchains after a
    --toolchains row came to name its backend alone), and only the bench example was run. Each example
    here runs as written, from the repository root at the page's width: every quoted piece must be in
    its output and the quoted exit status its status. explain compiles with the test home's Triton
    3.3.1 and 3.4.0; the others read committed files."""
    monkeypatch.chdir(ROOT)
    r = run_cli(argv, env={"KTRIAGE_COLUMNS": QUOTED_COLUMNS})
    if code is not None:
        assert r.exit_code == code, r.output
    missing = _missing_fragments(quoted, r.stdout + r.stderr)
    assert not missing, "quoted but not printed:\n" + "\n".join(missing) + "\n--- printed:\n" + r.output


def test_the_quote_check_finds_a_stale_piece() -> None:
    """The check itself: an old wording is found, elisions and other wrapping are not."""
    printed = "a  b c\n┏━━━┓\n│ x │ y │\n└───┘\nlast line"
    assert not _missing_fragments("a b\n…\nlast", printed)
    assert not _missing_fragments("a b c\n│ x   │ y │\nlast line", printed)
    assert _missing_fragments("a b c … last  linen", printed) == ["last linen"]
