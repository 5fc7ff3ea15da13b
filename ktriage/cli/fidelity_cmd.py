"""`ktriage fidelity`: check, on this CPU machine, that ktriage's cubins are the ones Triton's JIT builds."""

from __future__ import annotations

import datetime
import platform
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console
from ktriage.cli.options import (
    Format,
    arch_option,
    check_format,
    check_outputs,
    emit,
    format_option,
    output_option,
    toolchain_option,
)

if TYPE_CHECKING:
    from ktriage.api import FidelityRow


FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json")


def fidelity(
    toolchains: Annotated[list[str] | None, toolchain_option("Default: every supported Triton release.")] = None,
    case: Annotated[
        list[str] | None, typer.Option("--case", "-k", help="Only cases whose name contains this (repeatable).")
    ] = None,
    arch: Annotated[str, arch_option("The target the fake driver reports.")] = "sm_90",
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS, "The table of every case.")] = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", min=1, max=1024, help="Parallel compiles on the ktriage side.")
    ] = 2,
    spec: Annotated[
        Path | None,
        typer.Option(
            "--spec",
            help="Check this spec file's kernels written by values "
            "(\\[kernel.args], docs/specs.md) instead of the built-in cases; one written by types, "
            "or that does not load, is an error row (exit 4).",
        ),
    ] = None,
) -> None:
    """Replay each case's launch through Triton's real launch path (decorators, binder, compile) with
    only the GPU driver faked, derive ktriage's spec from what the JIT was launched with, compile it
    through ktriage, and compare compile inputs and cubin bytes. Exit 0: all identical; 1: some
    differ; 4: some could not be checked."""
    from ktriage.api import fidelity as fidelity_api

    check_format(fmt, FORMATS)
    check_outputs(output or [], WRITERS)
    console = make_console(stderr=fmt != Format.table)

    def show(r: FidelityRow) -> None:
        console.print(
            f"{r.triton_version:7} {r.status:9} {r.case}" + (f"  [yellow]{r.detail[:160]}[/]" if r.detail else "")
        )

    report = fidelity_api(
        toolchains=toolchains or (),
        cases=case or (),
        arch=arch,
        jobs=jobs,
        spec=spec,
        on_row=show,
        say=lambda m: console.print(f"[dim]{escape(m)}[/]"),
    )
    words = ["ktriage", "fidelity"]  # the command as given (rebuilt: main(argv) may run in-process)
    words += [w for t in toolchains or [] for w in ("-t", t)] + [w for k in case or [] for w in ("-k", k)]
    words += (
        (["--spec", str(spec)] if spec is not None else [])
        + (["--arch", arch] if arch != "sm_90" else [])
        + [w for o in output or [] for w in ("-o", str(o))]
    )
    command = shlex.join(words)
    machine = f"{platform.machine()} {platform.node()}, Python {platform.python_version()}"
    stamp = {"command": command, "machine": machine, "date": datetime.date.today().isoformat()}
    writers = {".md": lambda: report.to_markdown(**stamp), ".json": lambda: report.json_text(**stamp)}
    emit(fmt, writers, lambda: None, output)
    counts = report.counts
    console.print(", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    if counts.get("differs"):
        raise typer.Exit(exit_codes.FINDING)
    if counts.get("error"):
        raise typer.Exit(exit_codes.INCOMPLETE)
