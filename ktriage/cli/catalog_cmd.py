"""`ktriage catalog list|show`: browse the built-in ops and the exact specs they expand to. Parses,
calls one entry point of ``ktriage.api`` (``catalog_list``, ``catalog_show``) and renders its report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ktriage.api import catalog_list, catalog_show
from ktriage.cli.console import make_console
from ktriage.cli.options import (
    SUFFIX,
    CatalogInputs,
    Format,
    ModeOpt,
    Precision,
    arch_option,
    format_option,
    output_option,
    write_outputs,
)

app = typer.Typer(help="Built-in kernels: Liger-Kernel recipes and ktriage's tutorial kernels.", no_args_is_help=True)


LIST_FORMATS = ("table", "markdown", "json", "csv")
LIST_WRITERS = (".md", ".json", ".csv")
SHOW_FORMATS = ("table", "markdown", "json", "toml")
SHOW_WRITERS = (".md", ".json", ".toml")


@app.command("list")
def list_cmd(
    fmt: Annotated[Format, format_option(LIST_FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(LIST_WRITERS)] = None,
) -> None:
    """List catalog ops with their modes, number of inputs and the package that provides the kernel."""
    report = catalog_list()
    writers = {".md": report.to_markdown, ".json": report.json_text, ".csv": report.to_csv}
    if fmt is Format.table:
        report.print_table(make_console())
    else:
        typer.echo(writers[SUFFIX[fmt]](), nl=False)
    write_outputs(output or [], writers, make_console(stderr=True))


@app.command("show")
def show_cmd(
    op: str = typer.Argument(..., help="Op name, e.g. liger.layer_norm or liger.layer_norm@latest."),
    mode: ModeOpt = None,
    inputs: CatalogInputs = None,
    target: Annotated[str, arch_option("--target is an older spelling.", "--target")] = "sm_90",
    dtype: Precision = None,
    sm_count: int | None = typer.Option(None, "--sm-count", help="SMs of the GPU (default: the target's usual part)."),
    fmt: Annotated[
        Format, format_option(SHOW_FORMATS, "toml: the spec file (ktriage explain SPEC.toml reads it).")
    ] = Format.table,
    output: Annotated[list[Path] | None, output_option(SHOW_WRITERS)] = None,
) -> None:
    """Expand an op into kernel specs: launch parameters and specialization as the library launches them."""
    report = catalog_show(
        op=op, mode=mode.value if mode else None, target=target, dtype=dtype, inputs=inputs, sm_count=sm_count
    )
    writers = {".md": report.to_markdown, ".json": report.json_text, ".toml": report.to_toml}
    if fmt is Format.table:
        report.print_table(make_console())
    else:
        typer.echo(writers[SUFFIX[fmt]](), nl=False)
    write_outputs(output or [], writers, make_console(stderr=True))
