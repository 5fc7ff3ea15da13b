"""docs/cli.md is generated from the parsers (``python -m ktriage.cli.docgen > docs/cli.md``): this
test regenerates it and compares, so the committed table cannot drift from the commands."""

from __future__ import annotations

from pathlib import Path

from ktriage.cli.app import VERBS
from ktriage.cli.docgen import render
from tests.conftest import RunCli

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


def test_help_shows_every_bracket_of_the_help_text(run_cli: RunCli) -> None:
    """--help renders each help text as rich markup, where ``[cluster]`` or ``[kernel.args]`` is a style tag and
    vanished: explain --help said "Needs pip install 'ktriage'", fidelity --help "written by values (,
    docs/specs.md)". No help text may hold such a tag unescaped; the two that did show their brackets."""
    from rich.markup import RE_TAGS

    from ktriage.cli.docgen import _commands

    texts = [
        (f"{name} {where}", text or "")
        for name, command in _commands()
        for where, text in [("", command.help)] + [(p.opts[0], getattr(p, "help", None)) for p in command.params]
    ]
    tags = [
        f"{where}: {m.group(0)}"
        for where, text in texts
        for m in RE_TAGS.finditer(text)
        if not m.group(2)  # escaped (\[...]) is shown as written
    ]
    assert not tags, tags
    shown = " ".join(run_cli(["explain", "--help"]).stdout.replace("│", " ").split())
    assert "Needs pip install 'ktriage[cluster]'" in shown, shown
    shown = " ".join(run_cli(["fidelity", "--help"]).stdout.replace("│", " ").split())
    assert "written by values ([kernel.args], docs/specs.md)" in shown, shown
    assert "'ktriage[cluster]'" in render() and "\\[" not in render()  # docs/cli.md shows what --help shows


def test_allow_failures_is_one_option_with_one_help_in_every_verb() -> None:
    """explain, triage and compare each defined --allow-failures with its own help, and they drifted
    ("Exit 0 even when ...", "Exit 0/1 even when a step failed", "Exit 0/1 (regressions) ..."). Now one
    definition (cli/options.py) says what it changes in each: 0 or 1 instead of 4."""
    from ktriage.cli.docgen import _commands

    helps = {
        name: " ".join(str(p.help).split())
        for name, command in _commands()
        for p in command.params
        if "--allow-failures" in p.opts
    }
    assert sorted(helps) == ["compare", "explain", "triage"]
    assert len(set(helps.values())) == 1, helps
    (text,) = set(helps.values())
    assert "Exit 0, or 1 on a finding" in text and "instead of 4 ('incomplete')" in text
