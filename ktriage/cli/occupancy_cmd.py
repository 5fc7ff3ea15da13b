"""`ktriage occupancy`: the CUDA occupancy calculator on the command line (:func:`ktriage.api.occupancy`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ktriage.api import occupancy as occupancy_api
from ktriage.cli.console import make_console
from ktriage.cli.options import Arch, Format, emit, format_option, output_option

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
    report = occupancy_api(arch=arch, registers=registers, warps=warps, shared=shared, barriers=barriers)
    writers = {".json": report.json_text, ".md": report.to_markdown}
    emit(fmt, writers, lambda: report.print_table(make_console()), output, make_console(stderr=True))
