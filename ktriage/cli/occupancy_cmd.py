"""`ktriage occupancy`: the CUDA occupancy calculator on the command line (logic in ktriage.analyze.occupancy)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ktriage.analyze.occupancy import compute_occupancy
from ktriage.arch import parse_arch
from ktriage.cli.console import make_console
from ktriage.cli.options import Arch, Format, format_option, output_option, write_outputs

FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json")


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
    from ktriage.report.occupancy import print_table, to_json, to_markdown

    outputs = list(output or [])
    a = parse_arch(arch)
    result = compute_occupancy(a, registers, warps, shared, barriers=barriers)
    if fmt is Format.json:
        typer.echo(to_json(result), nl=False)
    elif fmt is Format.markdown:
        typer.echo(to_markdown(result, a, barriers), nl=False)
    else:
        print_table(result, a, make_console(), barriers)
    write_outputs(
        outputs,
        {".json": lambda: to_json(result), ".md": lambda: to_markdown(result, a, barriers)},
        make_console(stderr=True),
    )
