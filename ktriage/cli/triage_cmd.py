"""`ktriage triage OLD NEW`: diff two result sets, explain the flagged cells compile-side, bisect, fix, report.

Thin: parses options and calls ``ktriage.triage.triage``; rendering is ``ktriage.report.triage``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ktriage.cli import exit_codes
from ktriage.cli.console import make_console, make_progress
from ktriage.cli.options import (
    Arch,
    Db,
    Format,
    ModeOpt,
    append_step_summary,
    check_format,
    check_outputs,
    check_writable,
    emit,
    format_option,
    output_option,
)
from ktriage.errors import KtriageError

FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json", ".html")


def triage(
    old: Annotated[
        str | None,
        typer.Argument(
            help="The old side: a TritonBench CSV (run.py --csv --output F), a TritonBench JSON (--output-json), a ktriage results file, or a run id in the store (--db). The same results file as OLD and NEW: its two toolchains timed side by side are the two sides.",
            show_default=False,
        ),
    ] = None,
    new: Annotated[
        str | None, typer.Argument(help="The new side, in any of the same formats.", show_default=False)
    ] = None,
    old_toolchain: Annotated[
        str | None,
        typer.Option(
            "--old-toolchain",
            help="Toolchain spec of the old side, e.g. triton==3.3.1 (default: from the file, when it says).",
        ),
    ] = None,
    new_toolchain: Annotated[
        str | None,
        typer.Option(
            "--new-toolchain",
            help="Toolchain spec of the new side, e.g. triton==3.4.0 (default: from the file, when it says).",
        ),
    ] = None,
    threshold: Annotated[
        float, typer.Option("--threshold", help="The gate in percent: cells that moved less are not flagged.")
    ] = 10.0,
    arch: Arch = "sm_90",
    op: Annotated[
        str | None,
        typer.Option(
            "--op", help="The operator of a TritonBench CSV whose file name does not say it (layer_norm_bwd.csv does)."
        ),
    ] = None,
    mode: ModeOpt = None,
    db: Db = None,
    no_bisect: Annotated[
        bool, typer.Option("--no-bisect", help="Skip the compile-only bisect of the regressions.")
    ] = False,
    no_fixes: Annotated[bool, typer.Option("--no-fixes", help="Skip `explain --fixes` for the regressions.")] = False,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="Parallel compiles (default: CPU count).")] = None,
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[
        list[Path] | None,
        output_option(
            WRITERS, "The markdown is also appended to $GITHUB_STEP_SUMMARY when set; .html is self-contained."
        ),
    ] = None,
    allow_failures: Annotated[
        bool, typer.Option("--allow-failures", help="Exit 0/1 even when a step failed (default: 4, 'incomplete').")
    ] = False,
    bundle: Annotated[
        Path | None,
        typer.Option(
            "--bundle",
            help="Write a bench bundle of the flagged cells here (both toolchains compiled; no GPU needed) and print the one command that re-measures them side by side on the GPU host.",
        ),
    ] = None,
    measured: Annotated[
        list[str] | None,
        typer.Option(
            "--measured",
            help="Read the GPU re-run back: the results files of the bundle's bench, or the bundle folder (its results/); repeatable. Each flagged cell gets a measured verdict.",
        ),
    ] = None,
    measure: Annotated[
        bool,
        typer.Option(
            "--measure",
            help="On a GPU host: bundle the flagged cells and re-measure them side by side in this process (--bundle DIR keeps the bundle there).",
        ),
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit", help="Bundle at most this many flagged cells for the GPU re-run, worst first (default: all)."
        ),
    ] = None,
    max_time: Annotated[
        float, typer.Option("--max-time", help="GPU re-run: seconds of sampling per input at most.")
    ] = 5.0,
    run: Annotated[
        str | None,
        typer.Option(
            "--run",
            help='On a GPU host, from a program to the report in one command: record CMD (one string, e.g. "python train.py --steps 3"), compile it with --old-toolchain and --new-toolchain, bench both side by side, compare, explain, bisect (releases), fix; each step timed in the report. No OLD/NEW then.',
        ),
    ] = None,
    workdir: Annotated[
        Path | None,
        typer.Option(
            "--workdir",
            help="--run: the folder for the workload (PROGRAM.workload.json), the bundle, results.json, report.md and report.json (default: ktriage-run-DATE-TIME here).",
        ),
    ] = None,
    workload: Annotated[
        list[str] | None,
        typer.Option(
            "--workload",
            help="A recorded workload (W.json from `ktriage record` of the TritonBench run): flagged cells whose backend has no catalog kernels get their kernels from it, matched by shape, explained compile-side and bundled; repeatable.",
        ),
    ] = None,
) -> None:
    """Triage a regression report: rank every cell past the gate, explain each flagged kernel
    compile-side with both toolchains, note a moved baseline, bisect compile-only, propose fixes,
    re-measure on a GPU (--measure, or --bundle then --measured), and write one report. Exit 1: a
    regression (compile-side or measured); 0: none; 4: a step failed.

    Without a GPU it does all but the re-measurement. With a GPU (--measure) or a bundle for the GPU
    host (--bundle, then --measured), the flagged cells are re-measured with both toolchains side by
    side, and each gets a measured verdict."""
    from ktriage.report.triage import print_table, to_html, to_json, to_markdown

    check_format(fmt, FORMATS)
    # every output is checked before the work (a triage compiles and bisects: minutes)
    check_outputs(output or [], WRITERS)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        check_writable(Path(summary), "$GITHUB_STEP_SUMMARY")
        if not Path(summary).parent.is_dir():  # appended to, never created with its folders
            raise KtriageError(
                f"$GITHUB_STEP_SUMMARY {summary}: the folder {Path(summary).parent} does not exist",
                "point GITHUB_STEP_SUMMARY at a file in an existing folder, or unset it",
            )
    if run is not None:
        from ktriage.cli.triage_run import triage_run

        return triage_run(
            run,
            old_toolchain,
            new_toolchain,
            workdir=workdir,
            given={
                "OLD/NEW": old or new,
                "--op": op,
                "--mode": mode,
                "--bundle": bundle,
                "--measure": measure,
                "--measured": measured,
                "--workload": workload,
                "--limit": limit,
                "--arch": arch if arch != "sm_90" else None,
            },
            threshold=threshold,
            jobs=jobs,
            no_bisect=no_bisect,
            no_fixes=no_fixes,
            max_time=max_time,
            db=db,
            fmt=fmt,
            output=output or [],
            allow_failures=allow_failures,
            summary=summary,
        )
    if old is None or new is None:
        raise KtriageError(
            "triage needs OLD and NEW (two result sets), or --run CMD on a GPU host",
            "e.g. ktriage triage old.csv new.csv, ktriage triage results.json results.json, or "
            'ktriage triage --run "python train.py" --old-toolchain triton==3.5.1 --new-toolchain triton==3.6.0',
        )
    if workdir is not None:
        raise KtriageError("--workdir applies to --run only", "drop it, or give --run CMD")
    from ktriage.api import triage as triage_api

    console = make_console(stderr=True)
    with make_progress(console):  # the library's long steps (compiles, bisect rounds, fixes tried) show there
        report = triage_api(
            old=old,
            new=new,
            old_toolchain=old_toolchain,
            new_toolchain=new_toolchain,
            threshold=threshold / 100.0,
            arch=arch,
            op=op,
            mode=mode.value if mode else None,
            bisect=not no_bisect,
            fixes=not no_fixes,
            jobs=jobs,
            bundle=bundle,
            measure=measure,
            measured=measured or (),
            limit=limit,
            max_time=max_time,
            db=db,
            workloads=workload or (),
            say=lambda m: console.print(f"[dim]{escape(m)}[/]"),
        )
    gpu = report.measured
    if gpu is not None and gpu.commands and not gpu.results:
        console.print(f"bundle for the GPU re-run: {escape(str(gpu.bundle))}")
        console.print(f"on the GPU host: [bold]{escape(gpu.commands[0])}[/]  (it runs: {escape('; '.join(gpu.bench))})")
        console.print(f"then here: the same triage with --measured {escape(str(gpu.bundle))}")
    emit(
        fmt,
        {".md": lambda: to_markdown(report), ".json": lambda: to_json(report) + "\n", ".html": lambda: to_html(report)},
        lambda: print_table(report, make_console()),
        output,
        console,
    )
    append_step_summary(summary, to_markdown(report))
    code = report.exit_code(allow_failures)
    if code != exit_codes.OK:
        raise typer.Exit(code)
