"""Rendering of ``ktriage toolchain list|show``: the built toolchains as rows, one toolchain's fields.

The rows and fields are read from the toolchains (sizes and probed facts are passed in, measured by
the manager); here they are only laid out as a rich table, markdown, JSON or CSV (records.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.markup import escape

from ktriage.mdsafe import markdown_writer
from ktriage.report import records
from ktriage.schema.jsontypes import JSONObject

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.toolchain.manager import LeftoverEnv, Toolchain

LIST_COLUMNS = ("id", "triton", "ptxas", "from", "size", "options")


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def list_json(tcs: Sequence[Toolchain], sizes: Sequence[int], problems: Sequence[str | None] = ()) -> str:
    """Each toolchain's record, its size and ``problem``: null, or why it cannot be used as built."""
    said = list(problems) or [None] * len(tcs)
    return records.to_json(
        [tc.to_json() | {"size_bytes": n, "problem": p} for tc, n, p in zip(tcs, sizes, said, strict=True)]
    )


def problem_lines(tcs: Sequence[Toolchain], problems: Sequence[str | None]) -> list[str]:
    """One line per toolchain that is listed but cannot be used as built, with the command that
    builds it again: its record is there, its virtualenv is not whole."""
    return [
        f"{tc.id}: {p}; ktriage toolchain add '{tc.spec}' builds it again"
        for tc, p in zip(tcs, problems, strict=True)
        if p is not None
    ]


def leftover_lines(leftovers: Sequence[LeftoverEnv]) -> list[str]:
    """One line per virtualenv that no toolchain uses (a failed or killed build's), with its size and
    the command that removes it."""
    return [
        f"{env.name} ({human_size(env.size)}{', ' + env.problem.removeprefix('is ') if env.problem else ''}): "
        f"no toolchain uses it; ktriage toolchain remove {env.name} removes it"
        for env in leftovers
    ]


def _triton_origin(tc: Toolchain) -> str:
    """How the list tells a Triton that is not the PyPI release of its version apart: a local wheel (a build
    may carry a release's number) was listed as plain ``3.6.0``, one row beside the release's that differed
    only in the hash of its id."""
    if tc.spec.triton_host:
        return " (host)"
    return " (wheel)" if tc.spec.triton_wheel is not None else ""


def list_rows(tcs: Sequence[Toolchain], sizes: Sequence[int]) -> list[JSONObject]:
    return [
        {
            "id": tc.id,
            "triton": tc.triton_version + _triton_origin(tc),
            "ptxas": tc.ptxas_version,
            "from": "bundled" if tc.ptxas_is_bundled else "release" if tc.spec.ptxas_kind == "release" else "path",
            "size": human_size(n),
            "options": " ".join(tc.ptxas_options),
        }
        for tc, n in zip(tcs, sizes, strict=True)
    ]


EMPTY = "no toolchains yet: ktriage toolchain add triton==3.4.0"


@markdown_writer
def list_markdown(
    tcs: Sequence[Toolchain],
    sizes: Sequence[int],
    problems: Sequence[str | None] = (),
    leftovers: Sequence[LeftoverEnv] = (),
) -> str:
    from ktriage.mdsafe import md_text

    text = records.to_markdown("toolchains", LIST_COLUMNS, list_rows(tcs, sizes))
    notes = problem_lines(tcs, problems) if problems else []
    text += "".join(f"\n**not usable:** {md_text(line)}\n" for line in notes)
    return text + "".join(f"\n**leftover:** {md_text(line)}\n" for line in leftover_lines(leftovers))


def print_list(
    tcs: Sequence[Toolchain],
    sizes: Sequence[int],
    console: Console,
    problems: Sequence[str | None] = (),
    leftovers: Sequence[LeftoverEnv] = (),
) -> None:
    if not tcs:
        console.print(f"no toolchains yet: [bold]{EMPTY.split(': ', 1)[1]}[/]")
    else:
        records.print_rows(console, "toolchains", LIST_COLUMNS, list_rows(tcs, sizes), styles={"id": "bold"})
    for line in problem_lines(tcs, problems) if problems else []:
        console.print(f"[yellow]not usable:[/] {escape(line)}")
    print_leftovers(leftovers, console)


def print_leftovers(leftovers: Sequence[LeftoverEnv], console: Console) -> None:
    for line in leftover_lines(leftovers):
        console.print(f"[yellow]leftover:[/] {escape(line)}")


def _fields(data: JSONObject) -> JSONObject:
    return {k: " ".join(v) if isinstance(v, list) else v for k, v in data.items()}


def show_json(data: JSONObject) -> str:
    return records.to_json(data)


@markdown_writer
def show_markdown(tc_id: str, data: JSONObject) -> str:
    return "\n".join(records.kv_markdown(tc_id, _fields(data))) + "\n"


def print_show(tc_id: str, data: JSONObject, console: Console) -> None:
    console.print(records.kv_table(tc_id, _fields(data)))
