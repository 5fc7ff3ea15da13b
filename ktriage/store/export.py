"""Run exports: JSON that reads back into RunInfo/Cells, and a TritonBench-like CSV.

The JSON (``{"run": RunInfo, "cells": [Cell, ...]}``) is the exchange format between machines: a GPU
host exports a run, a CPU machine imports or compares it. The CSV is for people and spreadsheets, in
TritonBench's spirit but long rather than wide: one row per (op, input, backend, toolchain) with the
latency summary, so toolchains of the same backend sit side by side without column explosions.
"""

from __future__ import annotations

import csv
import io
from typing import Literal

from ktriage.errors import StoreError, joined, run_as, worded
from ktriage.measure.cells import Cell, RunInfo
from ktriage.measure.results_file import EXPORT_CSV_COLUMNS as CSV_COLUMNS
from ktriage.measure.results_file import parse_results, results_text
from ktriage.store.samples import summarize

ExportFormat = Literal["json", "csv"]


def export_json(run: RunInfo, cells: list[Cell]) -> str:
    """The whole run, raw samples included, in the results-file format (one home:
    ktriage.measure.results_file); ``read_json_export`` reads it back exactly. The text of a results
    file, final newline included: ``runs export`` printed it without one, so the shell prompt landed
    on the closing brace and ``cat a.json b.json`` or ``wc -l`` miscounted."""
    return results_text(run, cells)


def read_json_export(text: str) -> tuple[RunInfo, list[Cell]]:
    """Parse an ``export_json`` document (e.g. a file carried back from the GPU host)."""
    return parse_results(text, origin="the document")


def _num(value: float | None) -> str:
    return "" if value is None else repr(value)


def _rate(amount: int | None, median_ms: float | None, unit: float) -> str:
    if amount is None or not median_ms:
        return ""
    return repr(amount / (median_ms * 1e-3) / unit)


def export_csv(run: RunInfo, cells: list[Cell]) -> str:
    """One row per cell; gbps/tflops from the median when the cell knows its bytes/flops."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for cell in cells:
        s = summarize(cell.samples_ms)
        passed = cell.accuracy.get("passed")
        k = cell.key
        writer.writerow(
            [
                k.op,
                k.mode,
                k.input_id,
                k.input_label,
                k.backend,
                k.toolchain or "",
                cell.status,
                _num(s.median_ms),
                _num(s.min_ms),
                _num(s.p20_ms),
                _num(s.p80_ms),
                s.n,
                _rate(cell.bytes_moved, s.median_ms, 1e9),
                _rate(cell.flops, s.median_ms, 1e12),
                "" if passed is None else ("pass" if passed else "fail"),
                cell.error or "",
                run.run_id,
            ]
        )
    return out.getvalue()


def export_run(run: RunInfo, cells: list[Cell], fmt: str) -> str:
    """Dispatch on the format name, with a clear error for anything else."""
    if fmt == "json":
        return export_json(run, cells)
    if fmt == "csv":
        return export_csv(run, cells)
    raise StoreError(
        worded(lambda o: f"unknown export format {o('fmt', '--format', fmt)}"),
        # the library's export is named as each reader makes it (run_as): no kt.* call on the command line
        joined(
            worded(lambda o: f"use {o('fmt', '--format', 'json')} or {o('fmt', '--format', 'csv')}; both come from "),
            run_as("kt.runs_export(run=...), as .json_text() and .to_csv()", "ktriage runs export RUN"),
        ),
    )
