"""docs/cli.md is generated from the parsers (``python -m ktriage.cli.docgen > docs/cli.md``): this
test regenerates it and compares, so the committed table cannot drift from the commands."""

from __future__ import annotations

from pathlib import Path

from ktriage.cli.app import VERBS
from ktriage.cli.docgen import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_docs_cli_md_is_the_generated_table() -> None:
    assert DOC.read_text() == render(), "regenerate it: python -m ktriage.cli.docgen > docs/cli.md"


def test_every_verb_has_a_section() -> None:
    text = render()
    for verb in VERBS:
        assert f"## ktriage {verb.name}" in text


def test_short_w_means_one_thing() -> None:
    """-w is occupancy's --warps and no other option's."""
    rows = [line for line in render().splitlines() if line.startswith("|") and "`-w`" in line]
    assert rows and all(row.startswith("| `--warps`, `-w`") for row in rows)
