"""A rich column header is markup: one with a bracket lost it as an unknown tag (explain's "changes
[attribution]" read "changes", commit 4d53dc56), and tune, runs, bisect, triage --run and triage added
theirs raw. Every report table adds its columns through ``report.rich_table``, which escapes them."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console
from rich.table import Table

import ktriage.report
from ktriage.report.rich_table import add_column, add_columns


def test_a_header_with_brackets_is_shown_as_written() -> None:
    table = Table()
    add_columns(table, ["changes [attribution]", "[bold]x[/]"], overflow="fold")
    add_column(table, "median [ms]", justify="right")
    table.add_row("a", "b", "1.0")
    console = Console(record=True, width=200)
    console.print(table)
    text = console.export_text()
    assert "changes [attribution]" in text and "[bold]x[/]" in text and "median [ms]" in text


def test_no_report_table_adds_a_column_but_through_the_escaping_helper() -> None:
    folder = Path(ktriage.report.__file__).parent
    raw = [
        f"{p.name}:{n}"
        for p in sorted(folder.glob("*.py"))
        if p.name != "rich_table.py"
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\.add_column\(", line)
    ]
    assert not raw, f"headers added unescaped (use ktriage.report.rich_table.add_column/add_columns): {raw}"
