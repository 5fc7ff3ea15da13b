"""`ktriage cache info|verify|gc`: a thin shell over ktriage.compile.cache (the cache format's home)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console
from ktriage.cli.options import Format, emit, format_option, output_option

app = typer.Typer(help="The artifact cache: its size, a check of every entry, cleanup.", no_args_is_help=True)
console = make_console()

FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json")


def _root() -> Path:
    from ktriage.home import home_subdir

    return home_subdir("artifacts")


@app.command("info")
def info(
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS)] = None,
) -> None:
    """Where the artifact cache is, how many entries it holds and its size on disk."""
    from ktriage.compile.cache import cache_info
    from ktriage.report.cache import info_json, info_markdown, print_info

    data = cache_info(_root())
    emit(
        fmt,
        {".json": lambda: info_json(data), ".md": lambda: info_markdown(data)},
        lambda: print_info(data, console),
        output,
        make_console(stderr=True),
    )


@app.command("verify")
def verify(
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Quarantine the damaged entries (moved aside, compiled again when next needed); exit 0, or 1 when some could not be moved.",
        ),
    ] = False,
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS)] = None,
) -> None:
    """Check every cache entry against its manifest (sha256 of each file) and list the damaged ones.

    Exit codes: 0 all entries verify (or --fix quarantined the damaged ones), 1 some entries are
    damaged (with --fix: some could not be moved aside, e.g. a read-only cache; each says why)."""
    from ktriage.compile.cache import fix_damaged, verify_all
    from ktriage.report.cache import print_verify, verify_json, verify_markdown

    root = _root()
    states = verify_all(root)
    damaged = any(s.problem is not None for s in states)
    if fix and damaged:
        states = fix_damaged(root, states)
    emit(
        fmt,
        {".json": lambda: verify_json(root, states, fix), ".md": lambda: verify_markdown(root, states, fix)},
        lambda: print_verify(root, states, fix, console),
        output,
        make_console(stderr=True),
    )
    if damaged and (not fix or any(s.quarantined is False for s in states)):
        raise typer.Exit(exit_codes.FINDING)


@app.command("gc")
def gc(
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than",
            metavar="DAYS",
            min=0,
            help="Also remove entries not used for DAYS days (and old-format entries not touched for as long).",
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be removed; remove nothing.")] = False,
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS)] = None,
) -> None:
    """Remove quarantined entries and stale temp folders (with --older-than, unused entries too) and report the bytes freed."""
    from ktriage.compile.cache import gc as run_gc
    from ktriage.report.cache import gc_json, gc_markdown, print_gc

    items, freed = run_gc(_root(), older_than_days=older_than, dry_run=dry_run)
    emit(
        fmt,
        {".json": lambda: gc_json(items, freed, dry_run), ".md": lambda: gc_markdown(items, freed, dry_run)},
        lambda: print_gc(items, freed, dry_run, console),
        output,
        make_console(stderr=True),
    )
