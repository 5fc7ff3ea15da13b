"""``add_columns(table, headers)``: a rich table's column headers, escaped, in one place.

Why: a rich column header is markup, like a cell. A header with a bracket ("changes [attribution]") lost
it as an unknown tag, and explain's terminal headed its "[ptxas] ATOMG +32" column "changes" (commit
4d53dc56); the other verbs' tables added their headers raw, so a header naming a unit or a toolchain in
brackets would have vanished the same way. Every table adds its columns through here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.markup import escape
from rich.table import Table


def add_column(table: Table, header: str, **options: Any) -> None:
    """``table.add_column`` with ``header`` as text, not markup (``options``: rich's, e.g. ``justify``)."""
    table.add_column(escape(header), **options)


def add_columns(table: Table, headers: Iterable[str], **options: Any) -> None:
    """Each of ``headers`` as ``add_column`` adds it, with the same ``options``."""
    for header in headers:
        add_column(table, header, **options)
