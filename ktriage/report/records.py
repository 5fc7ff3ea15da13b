"""Rendering of a plain table of records (one row per item, the same columns) and of a key/value
list, in every stdout format and file writer: a rich table, markdown, CSV and JSON.

The verbs whose result is such a table (``catalog list``, ``runs list``, ``toolchain list``, the
key/value ``show`` verbs) build their rows in their own report module and render them here, so a
markdown table or a CSV looks the same whichever verb wrote it."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.markup import escape
from rich.table import Table

from ktriage.mdsafe import markdown_writer, md_text
from ktriage.report.rich_table import add_column
from ktriage.schema.jsontypes import JSONValue

if TYPE_CHECKING:
    from rich.console import Console

Row = Mapping[str, JSONValue]


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {v}" for k, v in value.items()) or "-"
    return str(value)


def _md(value: Any) -> str:
    return md_text(" ".join(_text(value).split()))


def markdown_table(columns: Sequence[str], rows: Sequence[Row], *, right: Collection[str] = ()) -> list[str]:
    """A markdown table; the ``right`` columns (numbers) are right-aligned, the rest left."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---:" if c in right else "---" for c in columns) + "|"]
    lines += ["| " + " | ".join(_md(r.get(c)) for c in columns) + " |" for r in rows]
    return lines


@markdown_writer
def to_markdown(title: str, columns: Sequence[str], rows: Sequence[Row], *, notes: Sequence[str] = ()) -> str:
    lines = [f"## {title}", ""]
    lines += markdown_table(columns, rows) if rows else ["nothing to list"]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def to_csv(columns: Sequence[str], rows: Sequence[Row]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[_text(r.get(c)) for c in columns] for r in rows])
    return buf.getvalue()


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2) + "\n"


def print_rows(
    console: Console,
    title: str,
    columns: Sequence[str],
    rows: Sequence[Row],
    *,
    styles: Mapping[str, str] | None = None,
) -> None:
    """A rich table; ``styles`` gives a column's cell style (e.g. ``{"id": "bold"}``)."""
    table = Table(title=escape(title), box=box.SIMPLE_HEAD, pad_edge=False)
    for c in columns:
        add_column(table, c, overflow="fold", style=(styles or {}).get(c))
    for r in rows:
        table.add_row(*(escape(_text(r.get(c))) for c in columns))
    console.print(table)


def kv_markdown(title: str, data: Mapping[str, Any], level: int = 2) -> list[str]:
    lines = [f"{'#' * level} {title}", "", "| key | value |", "|---|---|"]
    lines += [f"| {_md(k)} | {_md(v)} |" for k, v in data.items()]
    return lines


def kv_table(title: str, data: Mapping[str, Any]) -> Table:
    table = Table(title=escape(title), box=box.SIMPLE_HEAD, pad_edge=False, show_header=False)
    add_column(table, "key", style="bold")
    add_column(table, "value", overflow="fold")
    for k, v in data.items():
        table.add_row(escape(str(k)), escape(_text(v)))
    return table
