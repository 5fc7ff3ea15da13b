"""`ktriage toolchain add|list|show|remove`: a thin shell over ktriage.toolchain.manager."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ktriage.cli.console import make_console
from ktriage.cli.options import Format, format_option, output_option, write_outputs
from ktriage.errors import KtriageError
from ktriage.toolchain.manager import (
    Toolchain,
    ensure_toolchain,
    find_toolchain,
    list_toolchains,
    remove_toolchain,
    toolchain_size,
)

app = typer.Typer(help="Manage compiler toolchains (Triton + ptxas).", no_args_is_help=True)
console = make_console()

SPEC_HELP = (
    "A toolchain spec: triton==3.4.0 | triton==3.3.1,ptxas==12.8.93 | triton==3.4.0,ptxas-options=--register-usage-level=4 "
    "| triton=./dist/triton-....whl | triton==3.4.0,ptxas=/path/to/ptxas (see docs/toolchains.md)"
)


FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json")


@app.command("add")
def add(specs: list[str] = typer.Argument(..., help=SPEC_HELP, metavar="SPEC")) -> None:
    """Build toolchains (a virtualenv per Triton, ptxas releases on demand); reuse them if built."""
    for spec in specs:
        with console.status(f"[bold]{spec}[/]: starting") as status:

            def show_step(message: str, label: str = spec) -> None:
                status.update(f"[bold]{label}[/]: {message}")

            tc = ensure_toolchain(spec, progress=show_step)
        opts = f"  options: {' '.join(tc.ptxas_options)}" if tc.ptxas_options else ""
        source = "bundled" if tc.ptxas_is_bundled else str(tc.ptxas)
        console.print(
            f"[green]ready[/] [bold]{tc.id}[/]  triton {tc.triton_version}  ptxas {tc.ptxas_version} ({source}){opts}"
        )


@app.command("list")
def list_(
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS)] = None,
) -> None:
    """List built toolchains: id, versions, options, size on disk."""
    from ktriage.report.toolchain import list_json, list_markdown, print_list

    tcs = list_toolchains()
    sizes = [toolchain_size(tc) for tc in tcs]
    if fmt is Format.json:
        typer.echo(list_json(tcs, sizes), nl=False)
    elif fmt is Format.markdown:
        typer.echo(list_markdown(tcs, sizes), nl=False)
    else:
        print_list(tcs, sizes, console)
    write_outputs(
        output or [],
        {".json": lambda: list_json(tcs, sizes), ".md": lambda: list_markdown(tcs, sizes)},
        make_console(stderr=True),
    )


@app.command("show")
def show(
    id_or_spec: str = typer.Argument(..., help="A toolchain id (or unique prefix) or spec", metavar="ID|SPEC"),
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS)] = None,
) -> None:
    """Show every field of a built toolchain, and how its Triton assembles for each probed arch."""
    from ktriage.report.toolchain import print_show, show_json, show_markdown

    tc = _find(id_or_spec)
    data = tc.to_json()
    facts = tc.facts()
    data["order_sensitive"] = facts.order_sensitive
    data["assemblers"] = {
        f"sm_{cc}": tc.assembler(cc).label() if not isinstance(arch, str) else f"cannot build: {arch}"
        for cc, arch in sorted(facts.archs.items())
    }
    if fmt is Format.json:
        typer.echo(show_json(data), nl=False)
    elif fmt is Format.markdown:
        typer.echo(show_markdown(tc.id, data), nl=False)
    else:
        print_show(tc.id, data, console)
    write_outputs(
        output or [],
        {".json": lambda: show_json(data), ".md": lambda: show_markdown(tc.id, data)},
        make_console(stderr=True),
    )


@app.command("remove")
def remove(
    id_or_spec: str = typer.Argument(..., help="A toolchain id (or unique prefix) or spec", metavar="ID|SPEC"),
) -> None:
    """Remove a toolchain (its venv and ptxas release too, once nothing else uses them)."""
    tc = _find(id_or_spec)
    remove_toolchain(tc.id)
    console.print(f"removed {tc.id}")


def _find(id_or_spec: str) -> Toolchain:
    tc = find_toolchain(id_or_spec)
    if tc is None:
        raise KtriageError(
            f"no built toolchain matches {id_or_spec!r}",
            "see `ktriage toolchain list`, or build it with `ktriage toolchain add SPEC`",
        )
    return tc
