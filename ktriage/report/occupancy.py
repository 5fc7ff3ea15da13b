"""Rendering of ``ktriage occupancy``: the limits table (rich and markdown) and the JSON document.

Everything here is read off :class:`ktriage.analyze.occupancy.Occupancy` (computed there); the
detail column only restates the inputs and the architecture's limits next to each resource."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from ktriage.mdsafe import markdown_writer
from ktriage.report.rich_table import add_column
from ktriage.wording import plural

if TYPE_CHECKING:
    from rich.console import Console

    from ktriage.analyze.occupancy import Occupancy
    from ktriage.arch import Arch


def to_json(result: Occupancy) -> str:
    """The JSON document: stdout's ``--format json`` and ``-o PATH.json`` are this text."""
    return json.dumps(result.to_json(), indent=2) + "\n"


def _details(result: Occupancy, a: Arch, barriers: int) -> dict[str, str]:
    return {
        "registers": f"{result.registers} regs/thread -> {result.registers_per_warp_allocated} per warp allocated, "
        f"{result.registers_per_cta_allocated} per CTA; {a.regs_per_sm} per SM in {a.sub_partitions} sub-partitions",
        "shared_memory": f"{result.shared_bytes} B + {result.reserved_shared} B reserved -> {result.shared_per_cta_allocated} B "
        f"allocated per CTA; up to {a.shared_per_sm} B per SM, {a.shared_per_block_optin} B per CTA (opt-in)",
        "warps": f"{result.num_warps} warps per CTA; {a.max_warps_per_sm} warps per SM",
        "blocks": f"at most {a.max_ctas_per_sm} CTAs per SM",
        "barriers": f"named barriers per CTA: {barriers}",
    }


def _title(a: Arch) -> str:
    return f"Occupancy on {a.describe()}"


def _verdict(result: Occupancy) -> str:
    return (
        f"{plural(result.ctas_per_sm, 'CTA')}/SM, {result.warps_per_sm}/{result.max_warps_per_sm} warps "
        f"({result.occupancy:.1%} occupancy), limited by {result.limiter.replace('_', ' ')}"
    )


@markdown_writer
def to_markdown(result: Occupancy, a: Arch, barriers: int = 1) -> str:
    details = _details(result, a, barriers)
    lines = [f"## {_title(a)}", "", "| resource | CTAs/SM it allows | detail |", "|---|---:|---|"]
    for name, allowed in result.limits.items():
        label = f"**{name}**" if name == result.limiter else name
        detail = details.get(name, "").replace("|", "\\|")
        lines.append(f"| {label} | {allowed} | {detail} |")
    lines += ["", f"**{_verdict(result)}**", ""]
    if result.ctas_per_sm:
        lines.append(f"- shared-memory carveout needed: {result.carveout_bytes} B")
    lines.append(f"- lift: {result.lift}")
    return "\n".join(lines) + "\n"


def print_table(result: Occupancy, a: Arch, console: Console, barriers: int = 1) -> None:
    details = _details(result, a, barriers)
    table = Table(title=escape(_title(a)), show_header=True, header_style="bold")
    add_column(table, "resource")
    add_column(table, "CTAs/SM it allows", justify="right")
    add_column(table, "detail")
    for name, allowed in result.limits.items():
        style = "bold red" if name == result.limiter else ""
        table.add_row(f"[{style}]{name}[/]" if style else name, str(allowed), escape(details.get(name, "")))
    console.print(table)
    console.print(
        f"[bold]{plural(result.ctas_per_sm, 'CTA')}[/]/SM, [bold]{result.warps_per_sm}[/]/{result.max_warps_per_sm} warps "
        f"([bold]{result.occupancy:.1%}[/] occupancy), limited by [bold red]{result.limiter.replace('_', ' ')}[/]"
    )
    if result.ctas_per_sm:
        console.print(f"shared-memory carveout needed: {result.carveout_bytes} B")
    console.print(f"lift: {escape(result.lift)}")
