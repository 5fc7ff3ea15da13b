"""`ktriage record -o W.json -- COMMAND [ARGS...]`: record a program's Triton kernels into a workload."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console


def record(
    command: Annotated[list[str], typer.Argument(help="The program to run, after --, e.g. -- python train.py --steps 3.", show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="The workload file to write (JSON; its journal W.json.journal is kept while the program runs).")],
) -> None:
    """Run a program with a launch hook injected from outside (a sitecustomize on PYTHONPATH; the
    code is unchanged) and write every distinct Triton kernel it launched into a portable workload:
    each kernel's spec as the JIT compiled it, autotune configs and choice, heuristics values, a
    source snapshot, and per distinct launch the argument descriptions, grid and count.

    Exit codes: 0 the program exited 0; 4 it failed or was killed (what it launched before is in the
    workload); 2 usage errors."""
    from ktriage.record.run import record as run_record

    console = make_console(stderr=True)
    result = run_record(command, output)
    w = result.workload
    inputs = sum(len(k.inputs) for k in w.kernels)
    console.print(f"recorded {len(w.kernels)} kernels, {inputs} inputs, "
                  f"{sum(k.launches for k in w.kernels)} launches; {len(w.not_captured)} not captured -> "
                  f"{escape(str(result.path))} (the program {result.exit_note})")
    for missed in w.not_captured:
        console.print(f"[yellow]not captured[/] {escape(missed.function)}: {escape(missed.why)}")
    if result.returncode != 0:
        raise typer.Exit(exit_codes.INCOMPLETE)
