"""`ktriage profile`: Nsight Compute counters of each toolchain's kernels from a bundle (GPU host).

The sequence is ktriage.api.profile (the checks, ncu per toolchain through ktriage.profile) and
ktriage.api.profile_attach (--results); this module parses options and prints."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from typer import _click

from ktriage.cli.console import make_console
from ktriage.cli.options import Db, Format, check_outputs, format_option, output_option, write_outputs

FORMATS = ("markdown", "json")
WRITERS = (".md", ".json")


def profile(
    ctx: typer.Context,
    bundle: Annotated[
        Path,
        typer.Option(
            "--bundle",
            help=(
                "A bundle (`ktriage bench --compile-only --bundle DIR`): every toolchain's kernels of one input are profiled."
            ),
        ),
    ],
    input_: Annotated[
        str | None,
        typer.Option(
            "--input",
            "-i",
            help=(
                "The one bundle input to profile. An op bundle's: its input id (7) or shape facts (N=4608), "
                "as bench's --input. A recorded bundle's: its entry number (3, as --input-id), or its input as "
                "bench --bundle -i names it (K3 or K3:fn, its label as bench's report prints it, some of its "
                "arguments inside its kernel's name: K3[X_ptr=2048x8192]). Default: the bundle's first."
            ),
        ),
    ] = None,
    input_id: Annotated[
        int | None,
        typer.Option(
            "--input-id",
            min=0,
            help="The bundle input to profile, by its TritonBench input id (a recorded bundle's: its entry number).",
        ),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            help=("The artifact backend whose kernels run (liger_layer_norm, ...). Default: the bundle's first."),
        ),
    ] = None,
    raw_dir: Annotated[
        Path | None,
        typer.Option(
            "--raw-dir", help=("Where ncu's reports, CSV exports and logs go. Default: BUNDLE/profile-input<ID>/.")
        ),
    ] = None,
    ncu: Annotated[str | None, typer.Option("--ncu", help="The ncu executable. Default: ncu on PATH.")] = None,
    warmup: Annotated[int, typer.Option("--warmup", min=0, max=10_000, help="Calls before the profiled one.")] = 3,
    fmt: Annotated[Format, format_option(FORMATS)] = Format.markdown,
    output: Annotated[list[Path] | None, output_option(WRITERS, "Default: profile.json in the raw folder.")] = None,
    results: Annotated[
        Path | None,
        typer.Option(
            "--results",
            help=(
                "A results file of this bundle's timing (`ktriage bench --bundle DIR -o R.json`): each toolchain's counters go "
                "into its cell there (and into the store's copy of the run), next to the timings; compare and triage quote them."
            ),
        ),
    ] = None,
    db: Db = None,
) -> None:
    """Run Nsight Compute (ncu --clock-control none) on each toolchain's kernels of a bundle input, one call
    after warm-up, and diff occupancy, registers, local-memory (spill) traffic, atomics, DRAM/L2 traffic,
    warp stalls and instructions per kernel, each tied to the compile-side change in one sentence.

    Where ncu cannot run (no permission to the counters, no ncu) the toolchain's entry says why and the
    others go on. With --results, the counters also go into that results file and the store, next to
    the timings (docs/profile.md).

    Exit codes: 0 counters collected; 4 none could be collected (no ncu, ncu failed, no permission:
    the reasons are printed and no profile.json is written); 2 usage errors (an unknown --backend,
    --input or --input-id, an --ncu that is no program, a --raw-dir or -o that cannot be written: all checked
    before ncu runs)."""
    from ktriage.api import profile as profile_api
    from ktriage.api import profile_attach
    from ktriage.cli import exit_codes

    check_outputs(list(output or []), WRITERS)
    if results is None and ctx.get_parameter_source("db") is not _click.core.ParameterSource.COMMANDLINE:
        db = None  # KTRIAGE_DB set for the nightly's other verbs: nothing here to store without --results
    report = profile_api(
        bundle=bundle,
        input_id=input_id,
        input=input_,
        backend=backend,
        raw_dir=raw_dir,
        ncu=ncu,
        warmup=warmup,
        results=results,
        db=db,
    )
    console = make_console(stderr=True)
    if not report.complete:
        console.print("[bold red]incomplete:[/] no counters were collected for any toolchain; nothing written")
        for note in report.notes:
            console.print(f"  {escape(note)}", soft_wrap=True, highlight=False)
        raise typer.Exit(exit_codes.INCOMPLETE)
    text = report.json_text()
    typer.echo(text) if fmt is Format.json else typer.echo(report.to_markdown(), nl=False)
    outputs = list(output or []) or [report.folder / "profile.json"]
    write_outputs(outputs, {".json": lambda: text + "\n", ".md": report.to_markdown}, console)
    if results is not None:
        report = profile_attach(report, results, db)
        for note in report.attach_notes:
            console.print(f"[yellow]note:[/] {escape(note)}")
        console.print(f"counters written into {escape(str(results))}")
        console.print(escape(report.stored or ""))
