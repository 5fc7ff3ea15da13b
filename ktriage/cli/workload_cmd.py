"""`ktriage workload show`: what a recorded workload holds (kernels, inputs, launch counts, what was not captured);
`ktriage workload import`: a workload from tritonparse traces (a second source of the same file).

Why `import` is here and not `record --from-tritonparse`: `record` runs a program (`-- COMMAND`, exit 4
when it fails); importing runs nothing, it reads files and writes a workload, beside `show` that reads one.
Each parses, calls one entry point of ``ktriage.api`` (``workload_show``, ``workload_import``) and renders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ktriage.api import workload_import, workload_show
from ktriage.cli.console import make_console
from ktriage.cli.options import (
    SUFFIX,
    WORKLOAD,
    Format,
    check_outputs,
    format_option,
    output_option,
    write_outputs,
)

app = typer.Typer(
    help="Recorded workloads (ktriage record): show what one holds, import one from tritonparse traces.",
    no_args_is_help=True,
)

SHOW_FORMATS = ("table", "markdown", "json")
SHOW_WRITERS = (".md", ".json")


@app.command("show")
def show_cmd(
    workload: Annotated[
        Path, typer.Argument(help="A workload file written by `ktriage record -o W.json` (or its .journal).")
    ],
    fmt: Annotated[Format, format_option(SHOW_FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(SHOW_WRITERS, writes=[WORKLOAD])] = None,
) -> None:
    """Show a recorded workload: its kernels (function + specialization + options), their inputs with
    grids, launch counts and autotune choices, what was not captured and why, the host's versions."""
    check_outputs(output or [], SHOW_WRITERS, writes=[WORKLOAD])
    report = workload_show(path=workload)
    writers = {".md": report.to_markdown, ".json": report.json_text}
    if fmt is Format.table:
        report.print_table(make_console())
    else:
        typer.echo(writers[SUFFIX[fmt]](), nl=False)
    write_outputs(output or [], writers, make_console(stderr=True))


@app.command("import")
def import_cmd(
    traces: Annotated[
        list[Path],
        typer.Argument(
            help="tritonparse's raw trace files (.ndjson, or gzip .bin.ndjson / .ndjson.gz), all of one run.",
            show_default=False,
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="The workload file to write (JSON).")],
) -> None:
    """Convert tritonparse traces (``tritonparse.structured_logging.init(dir, enable_trace_launch=True)``,
    TritonBench's ``--tritonparse``) into a workload: per compilation the kernel, its spec (checked
    against what the JIT compiled) and the source the trace carries; per launch event an input (its
    argument descriptions, grid and count). What the trace cannot carry is listed as not captured.
    A damaged or foreign trace exits 2."""
    from rich.markup import escape

    done = workload_import(traces=traces, output=output)
    console = make_console(stderr=True)
    console.print(
        f"imported {done.kernels} kernels, {done.inputs} inputs, {done.launches} launches; "
        f"{len(done.not_captured)} not captured -> {escape(str(output))}"
    )
    for missed in done.not_captured:
        console.print(f"[yellow]not captured[/] {escape(missed.function)}: {escape(missed.why)}")
