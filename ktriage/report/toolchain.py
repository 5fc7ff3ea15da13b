"""Rendering of ``ktriage toolchain list|show``: the built toolchains as rows, one toolchain's fields.

The rows and fields are read from the toolchains (sizes and probed facts are passed in, measured by
the manager); here they are only laid out as a rich table, markdown, JSON or CSV (records.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ktriage.mdsafe import markdown_writer
from ktriage.report import records
from ktriage.schema.jsontypes import JSONObject

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.toolchain.manager import Toolchain

LIST_COLUMNS = ("id", "triton", "ptxas", "from", "size", "options")


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def list_json(tcs: Sequence[Toolchain], sizes: Sequence[int]) -> str:
    return records.to_json([tc.to_json() | {"size_bytes": n} for tc, n in zip(tcs, sizes, strict=True)])


def list_rows(tcs: Sequence[Toolchain], sizes: Sequence[int]) -> list[JSONObject]:
    return [
        {
            "id": tc.id,
            "triton": tc.triton_version + (" (host)" if tc.spec.triton_host else ""),
            "ptxas": tc.ptxas_version,
            "from": "bundled" if tc.ptxas_is_bundled else "release" if tc.spec.ptxas_kind == "release" else "path",
            "size": human_size(n),
            "options": " ".join(tc.ptxas_options),
        }
        for tc, n in zip(tcs, sizes, strict=True)
    ]


EMPTY = "no toolchains yet: ktriage toolchain add triton==3.4.0"


@markdown_writer
def list_markdown(tcs: Sequence[Toolchain], sizes: Sequence[int]) -> str:
    return records.to_markdown("toolchains", LIST_COLUMNS, list_rows(tcs, sizes))


def print_list(tcs: Sequence[Toolchain], sizes: Sequence[int], console: Console) -> None:
    if not tcs:
        console.print(f"no toolchains yet: [bold]{EMPTY.split(': ', 1)[1]}[/]")
        return
    records.print_rows(console, "toolchains", LIST_COLUMNS, list_rows(tcs, sizes), styles={"id": "bold"})


def _fields(data: JSONObject) -> JSONObject:
    return {k: " ".join(v) if isinstance(v, list) else v for k, v in data.items()}


def show_json(data: JSONObject) -> str:
    return records.to_json(data)


@markdown_writer
def show_markdown(tc_id: str, data: JSONObject) -> str:
    return "\n".join(records.kv_markdown(tc_id, _fields(data))) + "\n"


def print_show(tc_id: str, data: JSONObject, console: Console) -> None:
    console.print(records.kv_table(tc_id, _fields(data)))
