"""`ktriage cache info|verify|gc`: parses, calls one entry point of ``ktriage.api`` (``cache_info``,
``cache_verify``, ``cache_gc``) and renders its report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ktriage.api import cache_gc, cache_info, cache_verify
from ktriage.cli import exit_codes
from ktriage.cli.console import make_console
from ktriage.cli.options import Format, emit, format_option, output_option

app = typer.Typer(help="The artifact cache: its size, a check of every entry, cleanup.", no_args_is_help=True)

FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json")


@app.command("info")
def info(
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS)] = None,
) -> None:
    """Where the artifact cache is, how many entries it holds and its size on disk."""
    report = cache_info()
    writers = {".json": report.json_text, ".md": report.to_markdown}
    emit(fmt, writers, lambda: report.print_table(make_console()), output, make_console(stderr=True))


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
    report = cache_verify(fix=fix)
    writers = {".json": report.json_text, ".md": report.to_markdown}
    emit(fmt, writers, lambda: report.print_table(make_console()), output, make_console(stderr=True))
    if not report.ok:
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
    report = cache_gc(older_than_days=older_than, dry_run=dry_run)
    writers = {".json": report.json_text, ".md": report.to_markdown}
    emit(fmt, writers, lambda: report.print_table(make_console()), output, make_console(stderr=True))
