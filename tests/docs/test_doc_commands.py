"""Every ``ktriage VERB ...`` command the docs show (README.md and docs/*.md, in code blocks and inline code)
names only options that verb's parser has.

Why: a new user copies the commands from the docs. docs/model.md showed ``calibrate --score-only ...
--format json`` while calibrate has no ``--format`` (its scores go to ``--scores-out``): the command failed with
"No such option". docs/cli.md is generated from the parsers, but the prose pages are written by hand; this
reads each command the way the parser would see its options (quotes kept together, nothing after ``--``,
which is the recorded program's) and checks each against the parser's own option names."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ktriage.cli.docgen import _commands

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "docs" / "index.md").exists())
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMANDS: dict[str, Any] = dict(_commands())
PROMPT = re.compile(r"^\s*(?:\$\s+)?(?:[A-Z_]+=\S+\s+)*ktriage\s+(?P<rest>.*)$")
OPTION = re.compile(r"^--?[A-Za-z][\w-]*$")


def _option_names(command: Any) -> set[str]:
    names = {"--help"}
    for param in command.params:
        names.update(getattr(param, "opts", ()))
        names.update(getattr(param, "secondary_opts", ()))
    return names


def _block_commands(text: str) -> Iterator[str]:
    """The ``ktriage ...`` lines of the fenced blocks, continuation lines joined, comments dropped."""
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        lines = block.split("\n")
        i = 0
        while i < len(lines):
            match = PROMPT.match(lines[i])
            i += 1
            if not match:
                continue
            body = match.group("rest")
            while body.rstrip().endswith("\\") and i < len(lines):
                body = body.rstrip()[:-1] + " " + lines[i]
                i += 1
            yield re.split(r"\s#\s", body)[0]


def _tokens(body: str) -> list[str]:
    try:
        tokens = shlex.split(body)
    except ValueError:  # an unbalanced quote in a usage line: words are enough there
        tokens = body.split()
    return tokens[: tokens.index("--")] if "--" in tokens else tokens


def _unknown_options(body: str) -> list[str]:
    tokens = _tokens(body)
    if not tokens or tokens[0].startswith("-"):
        return []  # `ktriage --debug explain ...`, `ktriage --help`: the root's own options
    name = tokens[0]
    if len(tokens) > 1 and f"{name} {tokens[1]}" in COMMANDS:
        name = f"{name} {tokens[1]}"
    if name not in COMMANDS:
        return []  # a group named alone (`ktriage cache info/verify/gc`) or a word of prose
    known = _option_names(COMMANDS[name])
    unknown = []
    for token in tokens[1:]:
        for part in token.strip("[]()").split("|"):  # usage lines: [--format table|markdown], [--fwd|--bwd]
            option = part.strip("[](),.;").split("=", 1)[0]
            if OPTION.match(option) and option not in known:
                unknown.append(f"{name} {option}")
    return unknown


def _doc_commands() -> Iterator[tuple[str, str]]:
    for page in PAGES:
        text = page.read_text()
        for body in _block_commands(text):
            yield page.name, body
        for span in re.findall(r"`ktriage ([^`]+)`", text):
            yield page.name, span


def test_every_documented_option_exists() -> None:
    wrong = [
        f"{page}: ktriage {body.strip()[:90]}: {opt}"
        for page, body in _doc_commands()
        for opt in _unknown_options(body)
    ]
    assert not wrong, "options the docs show that the parser does not have:\n" + "\n".join(wrong)


def test_the_check_finds_an_option_a_verb_lacks() -> None:
    """The page's old calibrate line is refused; its fix and other verbs' real options pass."""
    assert _unknown_options("calibrate --results run.json --explain e.json --score-only --format json") == [
        "calibrate --format"
    ]
    assert not _unknown_options("calibrate --results run.json --explain e.json --score-only --scores-out s.json")
    assert not _unknown_options('triage --run "python train.py --steps 3" --old-toolchain triton==3.5.1')
    assert not _unknown_options("record -o W.json -- python train.py --steps 3")
    assert not _unknown_options("compare A B [--format table|markdown|json|csv] [-o summary.md]")
    assert _unknown_options("cache gc --older-than 30 --dry-runs") == ["cache gc --dry-runs"]
