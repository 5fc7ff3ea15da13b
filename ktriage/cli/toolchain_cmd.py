"""`ktriage toolchain add|list|show|remove`: a thin shell over ktriage.toolchain.manager."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from ktriage.cli.console import make_console
from ktriage.cli.options import Format, check_format, format_option
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


FORMATS = ("table", "json")


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
        console.print(f"[green]ready[/] [bold]{tc.id}[/]  triton {tc.triton_version}  ptxas {tc.ptxas_version} ({source}){opts}")


@app.command("list")
def list_(fmt: Annotated[Format, format_option(FORMATS)] = Format.table) -> None:
    """List built toolchains: id, versions, options, size on disk."""
    check_format(fmt, FORMATS)
    tcs = list_toolchains()
    if fmt is Format.json:
        typer.echo(json.dumps([tc.to_json() | {"size_bytes": toolchain_size(tc)} for tc in tcs], indent=2))
        return
    if not tcs:
        console.print("no toolchains yet: [bold]ktriage toolchain add triton==3.4.0[/]")
        return
    table = Table(title="toolchains", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("id", overflow="fold", style="bold", min_width=24)
    table.add_column("triton", no_wrap=True, min_width=6)
    table.add_column("ptxas", no_wrap=True, min_width=8)
    table.add_column("from", no_wrap=True, min_width=7)
    table.add_column("size", no_wrap=True, justify="right", min_width=8)
    table.add_column("options", overflow="fold", min_width=8)
    for tc in tcs:
        source = "bundled" if tc.ptxas_is_bundled else "release" if tc.spec.ptxas_kind == "release" else "path"
        table.add_row(tc.id, tc.triton_version, tc.ptxas_version, source, _size(toolchain_size(tc)), " ".join(tc.ptxas_options))
    console.print(table)


@app.command("show")
def show(
    id_or_spec: str = typer.Argument(..., help="A toolchain id (or unique prefix) or spec", metavar="ID|SPEC"),
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
) -> None:
    """Show every field of a built toolchain, and how its Triton assembles for each probed arch."""
    check_format(fmt, FORMATS)
    tc = _find(id_or_spec)
    data = tc.to_json()
    facts = tc.facts()
    data["order_sensitive"] = facts.order_sensitive
    data["assemblers"] = {
        f"sm_{cc}": tc.assembler(cc).label() if not isinstance(arch, str) else f"cannot build: {arch}"
        for cc, arch in sorted(facts.archs.items())
    }
    if fmt is Format.json:
        typer.echo(json.dumps(data, indent=2))
        return
    table = Table(show_header=False, title=tc.id)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in data.items():
        if isinstance(value, dict):
            value = "; ".join(f"{k}: {v}" for k, v in value.items())
        table.add_row(key, " ".join(value) if isinstance(value, list) else str(value))
    console.print(table)


@app.command("remove")
def remove(id_or_spec: str = typer.Argument(..., help="A toolchain id (or unique prefix) or spec", metavar="ID|SPEC")) -> None:
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


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
