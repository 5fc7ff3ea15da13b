"""`ktriage record -o W.json -- COMMAND [ARGS...]`: record a program's Triton kernels into a workload."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console
from ktriage.errors import KtriageError
from ktriage.wording import plural


def record(
    command: Annotated[
        list[str],
        typer.Argument(help="The program to run, after --, e.g. -- python train.py --steps 3.", show_default=False),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="The workload file to write (JSON; its journal W.json.journal is kept while the program runs, and a lock W.json.lock refuses a second recording into the same file).",
        ),
    ],
) -> None:
    """Run a program with a launch hook injected from outside (a sitecustomize on PYTHONPATH; the
    code is unchanged) and write every distinct Triton kernel it launched into a portable workload:
    each kernel's spec as the JIT compiled it, autotune configs and choice, heuristics values, a
    source snapshot, and per distinct launch the argument descriptions, grid and count.

    Ctrl-C (or SIGTERM) is passed to the program's process group and what it launched until then is
    written; if record itself is killed, the program is ended too and the journal stays readable.

    Exit codes: 0 the program exited 0; 4 it failed or was killed (what it launched before is in the
    workload); 130 interrupted (Ctrl-C, SIGTERM; the workload is written); 2 usage errors, an output
    that cannot be written (checked before the program runs), another record writing the same -o, no
    CUDA GPU here and nothing launched (no workload is written: record on the GPU machine)."""
    from ktriage.api import record as record_api

    console = make_console(stderr=True)
    report = record_api(command=command, output=output)
    w, result = report.workload, report.result
    inputs = sum(len(k.inputs) for k in w.kernels)
    console.print(
        f"recorded {plural(len(w.kernels), 'kernel')}, {plural(inputs, 'input')}, "
        f"{plural(sum(k.launches for k in w.kernels), 'launch', 'launches')}; {len(w.not_captured)} not captured -> "
        f"{escape(str(result.path))} (the program {result.exit_note})"
    )
    for missed in w.not_captured:
        console.print(f"[yellow]not captured[/] {escape(missed.function)}: {escape(missed.why)}")
    for blocked in report.blockers:  # said now, not when bench refuses the input on the GPU host
        console.print(
            f"[yellow]cannot bench[/] {escape(blocked.kernel)} {escape(blocked.function)} input "
            f"{blocked.input}: {escape(blocked.why)}"
        )
    if not w.kernels and not w.not_captured and not result.gpu_problem:  # a GPU host: the program launched none
        try:
            w.require_kernels(str(result.path))
        except KtriageError as exc:  # the one wording of an empty workload, as explain and bench refuse it
            fix = f" (fix: {escape(exc.fix)})" if exc.fix else ""
            console.print(f"[yellow]nothing to explain:[/] {escape(exc.problem)}{fix}")
    if result.gpu_problem:
        console.print(
            f"[yellow]no GPU:[/] {escape(result.gpu_problem)}: no kernel could run here "
            "(record on the GPU host, or check `nvidia-smi` and the driver)"
        )
    if result.interrupted is not None:
        console.print(f"interrupted: {escape(result.exit_note)}; the workload holds what ran until then")
        raise typer.Exit(exit_codes.INTERRUPTED)
    if result.returncode != 0:
        raise typer.Exit(exit_codes.INCOMPLETE)
