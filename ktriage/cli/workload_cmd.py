"""`ktriage workload show`: what a recorded workload holds (kernels, inputs, launch counts, what was not captured);
`ktriage workload import`: a workload from tritonparse traces (a second source of the same file).

Why `import` is here and not `record --from-tritonparse`: `record` runs a program (`-- COMMAND`, exit 4
when it fails); importing runs nothing, it reads files and writes a workload, beside `show` that reads one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ktriage.cli.console import make_console
from ktriage.cli.options import (
    SUFFIX,
    Format,
    check_outputs,
    check_replaceable,
    check_writable,
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
    output: Annotated[list[Path] | None, output_option(SHOW_WRITERS)] = None,
) -> None:
    """Show a recorded workload: its kernels (function + specialization + options), their inputs with
    grids, launch counts and autotune choices, what was not captured and why, the host's versions."""
    from ktriage.record.workload import load_workload
    from ktriage.report.workload import print_show, show_json, show_markdown

    check_outputs(output or [], SHOW_WRITERS)
    loaded = load_workload(workload)
    writers = {".md": lambda: show_markdown(loaded), ".json": lambda: show_json(loaded)}
    if fmt is Format.table:
        print_show(loaded, make_console())
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

    from ktriage.errors import KtriageError
    from ktriage.record.tritonparse import convert
    from ktriage.record.workload import WORKLOAD_KIND, check_workload, save_workload

    if output.suffix != ".json":
        raise KtriageError(f"-o {output}: a workload file ends in .json", "write it as -o W.json")
    check_writable(output, "-o")
    check_replaceable(output, "-o", WORKLOAD_KIND.encode(), "a ktriage workload")
    w = convert(traces)
    check_workload(w.to_json(), f"the workload of {', '.join(map(str, traces))}")
    try:
        save_workload(w, output)
    except OSError as exc:
        raise KtriageError(
            f"cannot write the workload {output}: {exc.strerror or exc}", "choose a writable -o path"
        ) from exc
    console = make_console(stderr=True)
    console.print(
        f"imported {len(w.kernels)} kernels, {sum(len(k.inputs) for k in w.kernels)} inputs, "
        f"{sum(k.launches for k in w.kernels)} launches; {len(w.not_captured)} not captured -> {escape(str(output))}"
    )
    for missed in w.not_captured:
        console.print(f"[yellow]not captured[/] {escape(missed.function)}: {escape(missed.why)}")
