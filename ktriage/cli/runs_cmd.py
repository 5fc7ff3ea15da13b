"""`ktriage runs list|show|export|import|delete`: the results store. Parses, calls one entry point of
``ktriage.api`` (``runs_list``...) and renders its report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ktriage.api import ImportInterrupted, runs_delete, runs_export, runs_import, runs_list, runs_show
from ktriage.cli.console import make_console
from ktriage.cli.options import RESULTS_FILE, Db, Format, emit, format_option, output_option, write_outputs

# The help stays the one ktriage.cli.app's listing shows (tests/cli/test_app.py): import and delete are listed below it.
app = typer.Typer(
    help="Stored measurement runs: list, show, export, import, delete (the results store).", no_args_is_help=True
)


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
        help="Only runs with this toolchain: a Triton version or its prefix (3.4: not ptxas 13.4), a spec (triton==3.4.0), or an id, whole or cut at a dot (docs/store.md).",
    ),
    fmt: Annotated[Format, format_option(LIST_FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(LIST_WRITERS)] = None,
) -> None:
    """List stored runs: id, date, GPU, toolchains, cells ok/wrong/error, status."""
    report = runs_list(db=db, limit=limit, status=status, gpu=gpu, op=op, toolchain=toolchain)
    writers = {".md": report.to_markdown, ".json": report.json_text, ".csv": report.to_csv}
    emit(fmt, writers, lambda: report.print_table(make_console()), output, make_console(stderr=True))


@app.command("show")
def show_cmd(
    run: str = typer.Argument(..., help="Run id or a unique prefix of it (see `ktriage runs list`)."),
    db: Db = None,
    fmt: Annotated[
        Format, format_option(SHOW_FORMATS, "json: the run's export (raw samples; `runs import` and compare read it).")
    ] = Format.table,
    output: Annotated[list[Path] | None, output_option(SHOW_WRITERS, writes=[RESULTS_FILE])] = None,
) -> None:
    """Show a run: environment, toolchains, settings, and the median latency of every cell."""
    report = runs_show(run=run, db=db)
    writers = {".md": report.to_markdown, ".json": report.json_text}
    emit(fmt, writers, lambda: report.print_table(make_console()), output, make_console(stderr=True))


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
        list[Path] | None,
        output_option(EXPORT_WRITERS, "Without --format, nothing goes to stdout then.", writes=[RESULTS_FILE]),
    ] = None,
    db: Db = None,
) -> None:
    """Export a run as JSON (reads back with `runs import` or compare) or as a TritonBench-like CSV."""
    report = runs_export(run=run, db=db)
    writers = {".json": report.json_text, ".csv": report.to_csv}
    if fmt is not None or not output:  # no --format: json on stdout, or nothing there when -o is given
        typer.echo(
            writers[".csv" if fmt is Format.csv else ".json"](), nl=False
        )  # the export's bytes, as written to -o
    write_outputs(output or [], writers, make_console(stderr=True))


@app.command("import")
def import_cmd(
    path: Path = typer.Argument(..., help="A JSON file from `ktriage runs export RUN --format json`."),
    db: Db = None,
) -> None:
    """Import an exported run (e.g. measured on the GPU host) into this store."""
    # Ctrl-C: say whether the run was stored (whole or not at all), so the user knows whether to import again
    try:
        done = runs_import(path=path, db=db)
    except ImportInterrupted as exc:
        _say_interrupted(str(exc))
        raise
    try:
        make_console().print(f"imported run {done.run_id} ({done.cells} cells) into {escape(done.url)}")
    except KeyboardInterrupt:  # after the commit: the run is stored
        _say_interrupted(str(ImportInterrupted(done.run_id, True, done.url)))
        raise


def _say_interrupted(line: str) -> None:
    make_console(stderr=True, strict=False).print(escape(line), soft_wrap=True, highlight=False)


@app.command("delete")
def delete_cmd(
    run: str = typer.Argument(..., help="Run id or a unique prefix of it (see `ktriage runs list`)."),
    db: Db = None,
) -> None:
    """Delete a run and its cells from the store (e.g. to import it again); prints what was deleted."""
    done = runs_delete(run=run, db=db)
    make_console().print(escape(done.line()))
