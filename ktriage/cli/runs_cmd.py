"""`ktriage runs list|show|export|import`: read the results store (a thin shell over ktriage.store)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ktriage.cli.console import make_console
from ktriage.cli.options import SUFFIX, Db, Format, format_option, output_option, write_outputs
from ktriage.errors import KtriageError

# the store imports SQLAlchemy: loaded when a runs command runs, not for its --help

app = typer.Typer(help="Stored measurement runs: list, show, export (the results store).", no_args_is_help=True)
console = make_console()
err_console = make_console(stderr=True)


LIST_FORMATS = ("table", "markdown", "json", "csv")
LIST_WRITERS = (".md", ".json", ".csv")
SHOW_FORMATS = ("table", "markdown", "json")
SHOW_WRITERS = (".md", ".json")
EXPORT_FORMATS = ("json", "csv")
EXPORT_WRITERS = (".json", ".csv")


@app.command("list")
def list_cmd(
    db: Db = None,
    limit: int = typer.Option(20, "--limit", "-n", help="Show at most this many runs (newest first)."),
    status: str | None = typer.Option(
        None, "--status", help="Only runs with this stored status (running, finished, interrupted, failed)."
    ),
    gpu: str | None = typer.Option(None, "--gpu", help="Only runs on a GPU whose name contains this."),
    op: str | None = typer.Option(None, "--op", help="Only runs that measured this op (e.g. layer_norm)."),
    toolchain: str | None = typer.Option(
        None,
        "--toolchain",
        help="Only runs with this toolchain: a toolchain spec or id (docs/toolchains.md), or a part of one.",
    ),
    fmt: Annotated[Format, format_option(LIST_FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(LIST_WRITERS)] = None,
) -> None:
    """List stored runs: id, date, GPU, toolchains, cells ok/wrong/error, status."""
    from ktriage.report.runs import list_csv, list_json, list_markdown, print_list
    from ktriage.store import RunFilters, open_store

    with open_store(db) as store:
        summaries = store.summaries(limit, RunFilters(status=status, gpu=gpu, toolchain=toolchain, op=op))
        url = store.url
    writers = {
        ".md": lambda: list_markdown(summaries, url),
        ".json": lambda: list_json(summaries),
        ".csv": lambda: list_csv(summaries),
    }
    if fmt is Format.table:
        print_list(summaries, url, console, filtered=any((status, gpu, op, toolchain)))
    else:
        typer.echo(writers[SUFFIX[fmt]](), nl=False)
    write_outputs(output or [], writers, err_console)


@app.command("show")
def show_cmd(
    run: str = typer.Argument(..., help="Run id or a unique prefix of it (see `ktriage runs list`)."),
    db: Db = None,
    fmt: Annotated[
        Format, format_option(SHOW_FORMATS, "json: the run's export (raw samples; `runs import` and compare read it).")
    ] = Format.table,
    output: Annotated[list[Path] | None, output_option(SHOW_WRITERS)] = None,
) -> None:
    """Show a run: environment, toolchains, settings, and the median latency of every cell."""
    from ktriage.report.runs import print_show, show_json, show_markdown
    from ktriage.store import open_store

    with open_store(db) as store:
        summary = store.summary(run)
        info, cells = store.load_run(summary.run.run_id)
    writers = {".md": lambda: show_markdown(summary, info, cells), ".json": lambda: show_json(info, cells)}
    if fmt is Format.table:
        print_show(summary, info, cells, console)
    else:
        typer.echo(writers[SUFFIX[fmt]](), nl=False)
    write_outputs(output or [], writers, err_console)


@app.command("export")
def export_cmd(
    run: str = typer.Argument(..., help="Run id or a unique prefix of it."),
    fmt: Annotated[
        Format | None,
        format_option(
            EXPORT_FORMATS,
            "json (run + cells with raw samples) or csv (one row per cell). Default: json, or nothing when -o is given.",
        ),
    ] = None,
    output: Annotated[
        list[Path] | None, output_option(EXPORT_WRITERS, "Without --format, nothing goes to stdout then.")
    ] = None,
    db: Db = None,
) -> None:
    """Export a run as JSON (reads back with `runs import` or compare) or as a TritonBench-like CSV."""
    from ktriage.store import open_store
    from ktriage.store.export import export_csv, export_json

    outputs = list(output or [])
    with open_store(db) as store:
        info, cells = store.load_run(run)

    writers = {".json": lambda: export_json(info, cells), ".csv": lambda: export_csv(info, cells)}
    if fmt is not None or not outputs:
        typer.echo(writers[SUFFIX[fmt or Format.json]](), nl=False)
    write_outputs(outputs, writers, err_console)


@app.command("import")
def import_cmd(
    path: Path = typer.Argument(..., help="A JSON file from `ktriage runs export RUN --format json`."),
    db: Db = None,
) -> None:
    """Import an exported run (e.g. measured on the GPU host) into this store."""
    from ktriage.measure.results_file import read_results
    from ktriage.store import open_store

    if not path.is_file():
        raise KtriageError(f"no such file: {path}", "give the path of a JSON export")
    info, cells = read_results(path)  # the schema layer: size, UTF-8, JSON and every field checked
    with open_store(db) as store:
        store.import_run(info, cells)
        url = store.url
    console.print(f"imported run {info.run_id} ({len(cells)} cells) into {escape(url)}")
