"""Rendering of ``ktriage runs list|show``: stored runs as rows, one run's provenance and cells.

The store reads and summarizes (ktriage.store); here the summaries are only laid out as a rich
table, markdown, CSV or JSON (records.py). ``runs show``'s JSON is the run's export, the results
document ``ktriage compare`` and ``runs import`` read."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.markup import escape
from rich.table import Table

from ktriage.mdsafe import markdown_writer
from ktriage.measure.provenance import NOT_RECORDED, run_date_gpu, toolchain_name, toolchain_text
from ktriage.report import records
from ktriage.report.rich_table import add_column, add_columns
from ktriage.schema.jsontypes import JSONObject, JSONValue
from ktriage.wording import plural

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.measure.cells import Cell, RunInfo
    from ktriage.store import RunSummary

LIST_COLUMNS = ("id", "created", "ops", "GPU", "toolchains", "cells ok/wrong/error", "status")
MAX_OPS_SHOWN = 3  # a workload run may hold many ops: the first ones tell the run apart, the rest are counted
CELL_COLUMNS = ("op", "mode", "input", "backend", "toolchain", "status", "n", "median ms", "p20-p80 ms", "note")


def _toolchain_names(summary: RunSummary) -> str:
    names = [toolchain_text(tc) for tc in summary.run.toolchains]
    return ", ".join(names) or "(host only)"


def _ops_text(ops: Sequence[str]) -> str:
    """The ops a run measured, e.g. "layer_norm" or "a, b, c +2 more"; "-" for a run without cells."""
    shown = ", ".join(ops[:MAX_OPS_SHOWN]) or "-"
    return shown + (f" +{len(ops) - MAX_OPS_SHOWN} more" if len(ops) > MAX_OPS_SHOWN else "")


def _cells_text(counts: dict[str, int]) -> str:
    errors = counts.get("error", 0) + counts.get("timeout", 0)
    return f"{counts.get('ok', 0)}/{counts.get('wrong', 0)}/{errors}"


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).isoformat(timespec="seconds")


def list_rows(summaries: Sequence[RunSummary]) -> list[JSONObject]:
    return [
        {
            "id": s.run.run_id,
            "created": s.run.created,
            "ops": _ops_text(s.ops),
            "GPU": run_date_gpu(s.run)[1],  # "GPU not recorded" where the run has none, as compare says it
            "toolchains": _toolchain_names(s),
            "cells ok/wrong/error": _cells_text(s.counts),
            "status": s.display_status,
        }
        for s in summaries
    ]


def list_title(url: str) -> str:
    return f"runs in {url}"


def list_json(summaries: Sequence[RunSummary]) -> str:
    return records.to_json(
        [
            {
                "id": s.run.run_id,
                "created": s.run.created,
                "ops": list(s.ops),
                "gpu": s.run.gpu.get("name"),
                "toolchains": [toolchain_name(tc) for tc in s.run.toolchains],  # null: neither id nor spec
                "cells": dict(s.counts),
                "status": s.display_status,
                "finished": _when(s.finished) if s.finished else None,
            }
            for s in summaries
        ]
    )


def deleted_line(summary: RunSummary, cells: int, url: str) -> str:
    """What ``runs delete`` says it removed: the run's date and GPU as ``runs list`` says them ("GPU not
    recorded" where the run names none: it printed "?")."""
    created, gpu, _ = run_date_gpu(summary.run)
    return (
        f"deleted run {summary.run.run_id} ({created}, {gpu}, {summary.run.status}, {plural(cells, 'cell')}) from {url}"
    )


def more_note(shown: int) -> str:
    """Under a list cut by ``--limit``: without it the table read as every stored run."""
    return f"newest {plural(shown, 'run')} shown: the store has more (--limit N lists up to N)"


@markdown_writer
def list_markdown(summaries: Sequence[RunSummary], url: str, *, more: bool = False) -> str:
    notes = [more_note(len(summaries))] if more else []
    return records.to_markdown(list_title(url), LIST_COLUMNS, list_rows(summaries), notes=notes)


def list_csv(summaries: Sequence[RunSummary]) -> str:
    return records.to_csv(LIST_COLUMNS, list_rows(summaries))


def print_list(
    summaries: Sequence[RunSummary], url: str, console: Console, *, filtered: bool, more: bool = False
) -> None:
    if not summaries:
        console.print(f"no runs in {escape(url)}" + (" matching the filters" if filtered else ""))
        return
    table = Table(title=escape(list_title(url)), box=box.SIMPLE_HEAD, pad_edge=False)
    add_columns(table, LIST_COLUMNS, overflow="fold")
    for s, row in zip(summaries, list_rows(summaries), strict=True):
        style = {"finished": "green", "failed": "red"}.get(s.run.status, "yellow")
        *head, status = (escape(str(row[c])) for c in LIST_COLUMNS)
        table.add_row(*head, f"[{style}]{status}[/]")
    console.print(table)
    if more:
        console.print(escape(more_note(len(summaries))))


def _sections(summary: RunSummary, info: RunInfo) -> list[tuple[str, JSONObject]]:
    head: JSONObject = {
        "run": info.run_id,
        "status": summary.display_status,
        "created": info.created,
        "finished": _when(summary.finished),
        "command": info.command or "-",
        "host": info.host or "-",
        "workload git sha": info.workload_git_sha or "-",
        "writer": f"pid {summary.writer_pid} on {summary.writer_host}",
    }
    if summary.error:
        head["error"] = summary.error
    gpu = dict(info.gpu)
    after = gpu.pop("after", None)
    out: list[tuple[str, JSONObject]] = [("run", head), ("GPU (before)", gpu)]
    if isinstance(after, dict):
        out.append(("GPU (after)", after))
    return out


def _tail_sections(info: RunInfo) -> list[tuple[str, JSONObject]]:
    out: list[tuple[str, JSONObject]] = []
    if info.packages:
        out.append(("host packages", dict(info.packages)))
    if info.settings:
        out.append(("settings", dict(info.settings)))
    return out


def _options_text(options: JSONValue) -> str:
    """A toolchain record's ``ptxas_options`` (a list of strings) as one line, "-" for none."""
    return " ".join(str(o) for o in options) if isinstance(options, list) and options else "-"


def _toolchain_rows(info: RunInfo) -> list[JSONObject]:
    return [
        {
            # a value the run did not record, said in words as ``runs list`` says a GPU ("?" asked the reader)
            "id": tc.get("id") or NOT_RECORDED,
            "triton": tc.get("triton_version") or NOT_RECORDED,
            "ptxas": tc.get("ptxas_version") or NOT_RECORDED,
            "ptxas options": _options_text(tc.get("ptxas_options")),
        }
        for tc in info.toolchains
    ]


def _cell_rows(cells: Sequence[Cell]) -> list[JSONObject]:
    from ktriage.store.samples import format_ms, summarize

    rows: list[JSONObject] = []
    for c in cells:
        s = summarize(c.samples_ms)
        k = c.key
        rows.append(
            {
                "op": k.op,
                "mode": k.mode,
                "input": f"{k.input_id}: {k.input_label}",
                "backend": k.backend,
                "toolchain": k.toolchain or "(host)",
                "status": c.status,
                "n": str(s.n),
                "median ms": format_ms(s.median_ms),
                "p20-p80 ms": "-" if s.p20_ms is None else f"{format_ms(s.p20_ms)}-{format_ms(s.p80_ms)}",
                "note": c.error or "",
            }
        )
    return rows


def show_json(info: RunInfo, cells: list[Cell]) -> str:
    from ktriage.measure.results_file import results_text

    return results_text(info, cells)


@markdown_writer
def show_markdown(summary: RunSummary, info: RunInfo, cells: list[Cell]) -> str:
    lines = [f"# run {info.run_id}", ""]
    for title, data in _sections(summary, info):
        lines += [*records.kv_markdown(title, data), ""]
    if info.toolchains:
        lines += [
            "## toolchains",
            "",
            *records.markdown_table(("id", "triton", "ptxas", "ptxas options"), _toolchain_rows(info)),
            "",
        ]
    for title, data in _tail_sections(info):
        lines += [*records.kv_markdown(title, data), ""]
    lines += [f"## {plural(len(cells), 'cell')}", "", *records.markdown_table(CELL_COLUMNS, _cell_rows(cells))]
    return "\n".join(lines) + "\n"


def print_show(summary: RunSummary, info: RunInfo, cells: list[Cell], console: Console) -> None:
    for title, data in _sections(summary, info):
        console.print(records.kv_table(title, data))
    if info.toolchains:
        records.print_rows(console, "toolchains", ("id", "triton", "ptxas", "ptxas options"), _toolchain_rows(info))
    for title, data in _tail_sections(info):
        console.print(records.kv_table(title, data))
    ct = Table(title=plural(len(cells), "cell"), box=box.SIMPLE_HEAD, pad_edge=False)
    for col in CELL_COLUMNS:
        add_column(ct, col, overflow="fold", justify="right" if col in ("n", "median ms") else "left")
    for row in _cell_rows(cells):
        ct.add_row(*(escape(str(row[c])) for c in CELL_COLUMNS))
    console.print(ct)
