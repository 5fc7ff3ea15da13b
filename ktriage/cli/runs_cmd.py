"""`ktriage runs list|show|export|import`: read the results store (a thin shell over ktriage.store)."""

from __future__ import annotations

import datetime as _dt
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from ktriage.cli.console import make_console
from ktriage.cli.options import Db
from ktriage.errors import KtriageError

if TYPE_CHECKING:  # the store imports SQLAlchemy: loaded when a runs command runs, not for its --help
    from ktriage.store import RunSummary

app = typer.Typer(help="Stored measurement runs: list, show, export (the results store).", no_args_is_help=True)
console = make_console()
err_console = make_console(stderr=True)



class ExportFormat(str, Enum):
    json = "json"
    csv = "csv"


def _toolchain_names(summary: RunSummary) -> str:
    names = [str(tc.get("id") or tc.get("spec") or "?") for tc in summary.run.toolchains]
    return ", ".join(names) or "(host only)"


def _cells_text(counts: dict[str, int]) -> str:
    errors = counts.get("error", 0) + counts.get("timeout", 0)
    return f"{counts.get('ok', 0)}/{counts.get('wrong', 0)}/{errors}"


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).isoformat(timespec="seconds")


@app.command("list")
def list_cmd(
    db: Db = None,
    limit: int = typer.Option(20, "--limit", "-n", help="Show at most this many runs (newest first)."),
    status: str | None = typer.Option(None, "--status", help="Only runs with this stored status (running, finished, interrupted, failed)."),
    gpu: str | None = typer.Option(None, "--gpu", help="Only runs on a GPU whose name contains this."),
    op: str | None = typer.Option(None, "--op", help="Only runs that measured this op (e.g. layer_norm)."),
    toolchain: str | None = typer.Option(None, "--toolchain", help="Only runs with this toolchain: a toolchain spec or id (docs/toolchains.md), or a part of one."),
) -> None:
    """List stored runs: id, date, GPU, toolchains, cells ok/wrong/error, status."""
    from ktriage.store import RunFilters, open_store

    with open_store(db) as store:
        summaries = store.summaries(limit, RunFilters(status=status, gpu=gpu, toolchain=toolchain, op=op))
        url = store.url
    if not summaries:
        console.print(f"no runs in {escape(url)}" + (" matching the filters" if any((status, gpu, op, toolchain)) else ""))
        return
    table = Table(title=f"runs in {escape(url)}", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("id", "created", "GPU", "toolchains", "cells ok/wrong/error", "status"):
        table.add_column(col, overflow="fold")
    for s in summaries:
        style = {"finished": "green", "failed": "red"}.get(s.run.status, "yellow")
        table.add_row(
            s.run.run_id, s.run.created, escape(str(s.run.gpu.get("name", "?"))), escape(_toolchain_names(s)),
            _cells_text(s.counts), f"[{style}]{escape(s.display_status)}[/]",
        )  # fmt: skip
    console.print(table)


def _kv_table(title: str, data: dict[str, Any]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value", overflow="fold")
    for k, v in data.items():
        table.add_row(escape(str(k)), escape(str(v)))
    return table


@app.command("show")
def show_cmd(
    run: str = typer.Argument(..., help="Run id or a unique prefix of it (see `ktriage runs list`)."),
    db: Db = None,
) -> None:
    """Show a run: environment, toolchains, settings, and the median latency of every cell."""
    from ktriage.store import open_store
    from ktriage.store.samples import format_ms, summarize

    with open_store(db) as store:
        summary = store.summary(run)
        info, cells = store.load_run(summary.run.run_id)
    head = {
        "run": info.run_id, "status": summary.display_status, "created": info.created, "finished": _when(summary.finished),
        "command": info.command or "-", "host": info.host or "-", "workload git sha": info.workload_git_sha or "-",
        "writer": f"pid {summary.writer_pid} on {summary.writer_host}",
    }  # fmt: skip
    if summary.error:
        head["error"] = summary.error
    console.print(_kv_table("run", head))
    gpu = dict(info.gpu)
    after = gpu.pop("after", None)
    console.print(_kv_table("GPU (before)", gpu))
    if isinstance(after, dict):
        console.print(_kv_table("GPU (after)", after))
    if info.toolchains:
        tct = Table(title="toolchains", box=box.SIMPLE_HEAD, pad_edge=False)
        for col in ("id", "triton", "ptxas", "ptxas options"):
            tct.add_column(col, overflow="fold")
        for tc in info.toolchains:
            opts = " ".join(tc.get("ptxas_options") or []) or "-"
            tct.add_row(*(escape(str(x)) for x in (tc.get("id", "?"), tc.get("triton_version", "?"), tc.get("ptxas_version", "?"), opts)))
        console.print(tct)
    if info.packages:
        console.print(_kv_table("host packages", info.packages))
    if info.settings:
        console.print(_kv_table("settings", info.settings))
    ct = Table(title=f"{len(cells)} cell(s)", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("op", "mode", "input", "backend", "toolchain", "status", "n", "median ms", "p20-p80 ms", "note"):
        ct.add_column(col, overflow="fold", justify="right" if col in ("n", "median ms") else "left")
    for c in cells:
        s = summarize(c.samples_ms)
        spread = "-" if s.p20_ms is None else f"{format_ms(s.p20_ms)}-{format_ms(s.p80_ms)}"
        k = c.key
        ct.add_row(
            *(escape(str(x)) for x in (k.op, k.mode, f"{k.input_id}: {k.input_label}", k.backend, k.toolchain or "(host)", c.status)),
            str(s.n), format_ms(s.median_ms), spread, escape(c.error or ""),
        )  # fmt: skip
    console.print(ct)


@app.command("export")
def export_cmd(
    run: str = typer.Argument(..., help="Run id or a unique prefix of it."),
    fmt: ExportFormat = typer.Option(ExportFormat.json, "--format", "-f", help="json (run + cells with raw samples) or csv (one row per cell)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    db: Db = None,
) -> None:
    """Export a run as JSON (reads back with `runs import` or compare) or as a TritonBench-like CSV."""
    from ktriage.store import open_store

    with open_store(db) as store:
        text = store.export(run, fmt.value)
    if output is None:
        typer.echo(text, nl=False)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    err_console.print(f"wrote {escape(str(output))}")


@app.command("import")
def import_cmd(
    path: Path = typer.Argument(..., help="A JSON file from `ktriage runs export RUN --format json`."),
    db: Db = None,
) -> None:
    """Import an exported run (e.g. measured on the GPU host) into this store."""
    from ktriage.store import open_store, read_json_export

    if not path.is_file():
        raise KtriageError(f"no such file: {path}", "give the path of a JSON export")
    info, cells = read_json_export(path.read_text())
    with open_store(db) as store:
        store.import_run(info, cells)
        url = store.url
    console.print(f"imported run {info.run_id} ({len(cells)} cells) into {escape(url)}")
