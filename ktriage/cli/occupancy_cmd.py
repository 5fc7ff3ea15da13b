"""`ktriage occupancy`: the CUDA occupancy calculator on the command line (logic in ktriage.analyze.occupancy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ktriage.analyze.occupancy import compute_occupancy
from ktriage.arch import parse_arch
from ktriage.cli.console import make_console
from ktriage.cli.options import Arch, Format, check_format, check_outputs, format_option, output_option, write_outputs


FORMATS = ("table", "json")
WRITERS = (".json",)


def occupancy(
    arch: Arch = "sm_90",
    registers: int = typer.Option(
        ..., "--registers", "-r", help="Registers per thread (ptxas 'Used N registers', 0..255)."
    ),
    warps: int = typer.Option(..., "--warps", "-w", help="Warps per CTA (Triton's num_warps, 1..32)."),
    shared: int = typer.Option(0, "--shared", "-s", help="Shared memory per CTA in bytes (Triton's metadata.shared)."),
    barriers: int = typer.Option(1, "--barriers", help="Named barriers the kernel uses (ptxas 'used N barriers')."),
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS)] = None,
) -> None:
    """Resident CTAs and warps per SM for a kernel, the limiting resource, and what would lift it.

    Follows the CUDA occupancy rules (cuda_occupancy.h): registers allocated per warp in units of
    256, 4 sub-partitions, warp / CTA caps, shared memory with the driver's 1 KB reserved per block.
    """
    check_format(fmt, FORMATS)
    outputs = list(output or [])
    check_outputs(outputs, WRITERS)
    a = parse_arch(arch)
    result = compute_occupancy(a, registers, warps, shared, barriers=barriers)
    write_outputs(outputs, {".json": lambda: json.dumps(result.to_json(), indent=2) + "\n"})
    if fmt is Format.json:
        typer.echo(json.dumps(result.to_json(), indent=2))
        return
    console = make_console()
    table = Table(title=f"Occupancy on {a.describe()}", show_header=True, header_style="bold")
    table.add_column("resource")
    table.add_column("CTAs/SM it allows", justify="right")
    table.add_column("detail")
    details = {
        "registers": f"{registers} regs/thread -> {result.registers_per_warp_allocated} per warp allocated, "
        f"{result.registers_per_cta_allocated} per CTA; {a.regs_per_sm} per SM in {a.sub_partitions} sub-partitions",
        "shared_memory": f"{shared} B + {result.reserved_shared} B reserved -> {result.shared_per_cta_allocated} B "
        f"allocated per CTA; up to {a.shared_per_sm} B per SM, {a.shared_per_block_optin} B per CTA (opt-in)",
        "warps": f"{warps} warps per CTA; {a.max_warps_per_sm} warps per SM",
        "blocks": f"at most {a.max_ctas_per_sm} CTAs per SM",
        "barriers": f"named barriers per CTA: {barriers}",
    }
    for name, allowed in result.limits.items():
        style = "bold red" if name == result.limiter else ""
        table.add_row(f"[{style}]{name}[/]" if style else name, str(allowed), details[name])
    console.print(table)
    console.print(
        f"[bold]{result.ctas_per_sm}[/] CTAs/SM, [bold]{result.warps_per_sm}[/]/{result.max_warps_per_sm} warps "
        f"([bold]{result.occupancy:.1%}[/] occupancy), limited by [bold red]{result.limiter.replace('_', ' ')}[/]"
    )
    if result.ctas_per_sm:
        console.print(f"shared-memory carveout needed: {result.carveout_bytes} B")
    console.print(f"lift: {result.lift}")
