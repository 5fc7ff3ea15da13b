"""Rendering of ``ktriage bench`` results: TritonBench's table (one row per input, ``<backend>-<metric>``
columns) as rows, CSV, markdown and a rich table; JSON is the results file (every cell with its raw
samples, the document ``ktriage compare`` reads), one text for stdout and ``-o PATH.json``."""

from __future__ import annotations

import csv
import io
import statistics
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from ktriage.bench.plan import variant_name
from ktriage.mdsafe import markdown_writer
from ktriage.measure.cells import Cell, RunInfo
from ktriage.report.rich_table import add_column

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.workload.ops.opdef import OpDef

METRICS = ("latency", "speedup", "gbps", "tflops", "accuracy")


def _median(cell: Cell) -> float | None:
    return statistics.median(cell.samples_ms) if cell.status == "ok" and cell.samples_ms else None


def results_table(
    cells: list[Cell], opdef: OpDef, baseline: str, metrics: list[str], labels: dict[str, str] | None = None
) -> list[dict[str, str]]:
    """TritonBench's layout: one row per input (x_val), ``<backend>-<metric>`` columns; an artifact
    backend is named ``<backend>@<toolchain spec>`` (``labels`` maps toolchain ids to specs).
    ``opdef`` is the op the cells measured (TritonBench's metrics are per op)."""
    from ktriage.workload.ops.opdef import gbps, tflops

    rows: dict[int, dict[str, str]] = {}
    for cell in cells:
        row = rows.setdefault(cell.key.input_id, {"x_val": cell.key.input_label})
        name = variant_name(cell.key)
        if cell.key.toolchain and labels and cell.key.toolchain in labels:
            name = f"{cell.key.backend}@{labels[cell.key.toolchain]}"
        med = _median(cell)
        base_cell = next(
            (
                c
                for c in cells
                if c.key.input_id == cell.key.input_id and c.key.backend == baseline and c.key.toolchain is None
            ),
            None,
        )
        base_med = _median(base_cell) if base_cell else None
        for metric in metrics:
            col = f"{name}-{metric}"
            if metric == "latency":
                row[col] = f"{med:.4f}" if med is not None else cell.status
            elif metric == "speedup" and name != baseline:
                row[col] = f"{base_med / med:.3f}" if med and base_med else "-"
            elif metric == "gbps":
                row[col] = f"{gbps(cell.bytes_moved, med):.1f}" if med and cell.bytes_moved else "-"
            elif metric == "tflops":
                row[col] = f"{tflops(cell.flops, med):.3f}" if med and cell.flops else "-"
            elif metric == "accuracy" and name != baseline:
                row[col] = "1" if cell.status == "ok" else "0"
    return [rows[k] for k in sorted(rows)]


def _columns(rows: list[dict[str, str]]) -> list[str]:
    return list(dict.fromkeys(k for r in rows for k in r))


def _is_number(text: str) -> bool:
    try:
        float(text.removesuffix("x").removesuffix("%"))
    except ValueError:
        return False
    return True


def numeric(rows: list[dict[str, str]], column: str) -> bool:
    """Whether ``column`` holds numbers (right-aligned): some cell is one (``0.0345``, ``1.038x``) and the
    rest are words without digits (``-``, ``error``, a latency cell's status). The input label
    (``x_val``) stays text. Every column but x_val used to be right-aligned, kernel, input, toolchain and
    check included."""
    cells = [r.get(column, "-") for r in rows]
    return (
        column != "x_val"
        and any(_is_number(c) for c in cells)
        and all(_is_number(c) or not any(ch.isdigit() for ch in c) for c in cells)
    )


def to_csv(rows: list[dict[str, str]]) -> str:
    if not rows:
        return ""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=_columns(rows), restval="-")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


@markdown_writer
def to_markdown(rows: list[dict[str, str]], title: str) -> str:
    lines = [f"## {title}", ""]
    if not rows:
        return "\n".join([*lines, "no results", ""])
    columns = _columns(rows)
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "|".join("---:" if numeric(rows, c) else "---" for c in columns) + "|")
    lines += ["| " + " | ".join(r.get(c, "-") for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def to_json(run: RunInfo, cells: list[Cell]) -> str:
    """The results file's text (:func:`ktriage.measure.results_file.results_text`): ``--format json``
    prints what ``-o PATH.json`` / ``--output-json`` writes."""
    from ktriage.measure.results_file import results_text

    return results_text(run, cells)


def print_table(rows: list[dict[str, str]], console: Console, title: str) -> None:
    if not rows:
        console.print("no results")
        return
    columns = _columns(rows)
    table = Table(title=escape(title))
    for c in columns:
        add_column(table, c, justify="right" if numeric(rows, c) else "left")
    for r in rows:
        table.add_row(*(escape(r.get(c, "-")) for c in columns))
    console.print(table)


class BenchRenders:
    """The writers every bench report shares: the results table printed, as CSV and as markdown, and the
    results file. One home, so ``ktriage bench --op`` and ``ktriage bench W.json`` cannot drift in what
    ``-o r.csv``, ``-o r.md`` and ``-o r.json`` write. A report (a dataclass) has the run and cells, and
    supplies its rows, title and the call that measures it (for the compile-only refusal)."""

    run: RunInfo | None
    cells: list[Cell]
    measure_hint = "measure the bundle"

    @property
    def title(self) -> str:
        raise NotImplementedError

    def table_rows(self) -> list[dict[str, str]]:
        raise NotImplementedError

    def print_table(self, console: Console) -> None:
        print_table(self.table_rows(), console, title=self.title)

    def to_csv(self) -> str:
        return to_csv(self.table_rows())

    @markdown_writer
    def to_markdown(self) -> str:
        return to_markdown(self.table_rows(), self.title)

    def json_text(self) -> str:
        """The results file (``ktriage compare`` reads it): every cell with its raw samples."""
        from ktriage.errors import KtriageError

        if self.run is None:
            raise KtriageError("a compile-only bench measured nothing", self.measure_hint)
        return to_json(self.run, self.cells)
