"""`ktriage workload show`: what a recorded workload holds (kernels, inputs, launch counts, what was not captured)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ktriage.cli.console import make_console
from ktriage.cli.options import SUFFIX, Format, format_option, output_option, write_outputs

app = typer.Typer(help="Recorded workloads (ktriage record): show what one holds.", no_args_is_help=True)

SHOW_FORMATS = ("table", "markdown", "json")
SHOW_WRITERS = (".md", ".json")


@app.command("show")
def show_cmd(
    workload: Annotated[Path, typer.Argument(help="A workload file written by `ktriage record -o W.json` (or its .journal).")],
    fmt: Annotated[Format, format_option(SHOW_FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(SHOW_WRITERS)] = None,
) -> None:
    """Show a recorded workload: its kernels (function + specialization + options), their inputs with
    grids, launch counts and autotune choices, what was not captured and why, the host's versions."""
    from ktriage.record.workload import load_workload
    from ktriage.report.workload import print_show, show_json, show_markdown

    loaded = load_workload(workload)
    writers = {".md": lambda: show_markdown(loaded), ".json": lambda: show_json(loaded)}
    if fmt is Format.table:
        print_show(loaded, make_console())
    else:
        typer.echo(writers[SUFFIX[fmt]](), nl=False)
    write_outputs(output or [], writers, make_console(stderr=True))
