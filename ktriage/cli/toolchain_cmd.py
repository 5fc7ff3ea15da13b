"""`ktriage toolchain add|list|show|remove`: parses, calls one entry point of ``ktriage.api``
(``toolchain_add``...) and renders its report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ktriage.api import toolchain_add, toolchain_list, toolchain_remove, toolchain_show
from ktriage.cli import exit_codes
from ktriage.cli.console import make_console, print_error
from ktriage.cli.options import Format, emit, format_option, output_option
from ktriage.errors import KtriageError

app = typer.Typer(help="Manage compiler toolchains (Triton + ptxas).", no_args_is_help=True)

SPEC_HELP = (
    "A toolchain spec: triton==3.4.0 | triton==3.3.1,ptxas==12.8.93 | triton==3.4.0,ptxas-options=--register-usage-level=4 "
    "| triton=./dist/triton-....whl | triton==3.4.0,ptxas=/path/to/ptxas (see docs/toolchains.md)"
)
ID_HELP = "A toolchain id (or unique prefix) or spec"

FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json")


@app.command("add")
def add(specs: list[str] = typer.Argument(..., help=SPEC_HELP, metavar="SPEC")) -> None:
    """Build toolchains (a virtualenv per Triton, ptxas releases on demand); reuse them if built.

    Every spec is tried: one that fails (a release not on the index, a typo) is reported with its fix
    and the others are still built and kept; the exit code is 2 when any failed."""
    console = make_console()
    failed: list[str] = []
    for spec in specs:
        try:
            with console.status(f"[bold]{spec}[/]: starting") as status:

                def show_step(message: str, label: str = spec) -> None:
                    status.update(f"[bold]{label}[/]: {message}")

                tc = toolchain_add(spec=spec, say=show_step)
        except KtriageError as exc:  # why caught here: `add A B` stopped at A, and B was never tried
            named = exc if len(specs) == 1 else KtriageError(f"{spec}: {exc.problem}", exc.fix, exc.details)
            print_error(named)
            failed.append(spec)
            continue
        opts = f"  options: {' '.join(tc.ptxas_options)}" if tc.ptxas_options else ""
        source = "bundled" if tc.ptxas_is_bundled else str(tc.ptxas)
        console.print(
            f"[green]ready[/] [bold]{tc.id}[/]  triton {tc.triton_version}  ptxas {tc.ptxas_version} ({source}){opts}"
        )
    if failed and len(specs) > 1:
        make_console(stderr=True).print(
            f"[bold red]{len(failed)} of {len(specs)} toolchains failed:[/] {escape(', '.join(failed))}"
            + (" (the others are built)" if len(failed) < len(specs) else "")
        )
    if failed:
        raise typer.Exit(exit_codes.USAGE)


@app.command("list")
def list_(
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS)] = None,
) -> None:
    """List built toolchains: id, versions, options, size on disk."""
    report = toolchain_list()
    writers = {".json": report.json_text, ".md": report.to_markdown}
    emit(fmt, writers, lambda: report.print_table(make_console()), output, make_console(stderr=True))
    if fmt is Format.json and report.leftovers:
        # The JSON on stdout is the list of toolchains (its shape is kept for scripts); what the table
        # and markdown show under it, virtualenvs no toolchain uses, goes to stderr, so it is not lost.
        report.print_leftovers(make_console(stderr=True))


@app.command("show")
def show(
    id_or_spec: str = typer.Argument(..., help=ID_HELP, metavar="ID|SPEC"),
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS)] = None,
) -> None:
    """Show every field of a built toolchain, and how its Triton assembles for each probed arch."""
    report = toolchain_show(id_or_spec=id_or_spec)
    writers = {".json": report.json_text, ".md": report.to_markdown}
    emit(fmt, writers, lambda: report.print_table(make_console()), output, make_console(stderr=True))


@app.command("remove")
def remove(id_or_spec: str = typer.Argument(..., help=ID_HELP, metavar="ID|SPEC")) -> None:
    """Remove a toolchain (its venv and ptxas release too, once nothing else uses them)."""
    make_console().print(f"removed {toolchain_remove(id_or_spec=id_or_spec)}")
