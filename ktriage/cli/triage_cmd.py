"""`ktriage triage OLD NEW`: diff two result sets, explain the flagged cells compile-side, bisect, fix, report.

Thin: parses options, calls ``ktriage.api.triage`` (``ktriage.api.triage_run`` with --run) and renders its report.
"""

from __future__ import annotations

import typer
from rich.markup import escape

from ktriage.cli import exit_codes
from ktriage.cli import triage_options as o
from ktriage.cli.console import make_console, make_progress
from ktriage.cli.options import (
    AllowFailures,
    AllowPrecisionMismatch,
    Db,
    Format,
    Model,
    ModeOpt,
    append_step_summary,
    arguments,
    check_format,
    check_outputs,
    emit,
    step_summary,
)
from ktriage.errors import KtriageError


def triage(
    old: o.Old = None,
    new: o.New = None,
    old_toolchain: o.OldToolchain = None,
    new_toolchain: o.NewToolchain = None,
    threshold: o.Threshold = 10.0,
    arch: o.Arch = None,
    op: o.Op = None,
    mode: ModeOpt = None,
    db: Db = None,
    no_bisect: o.NoBisect = False,
    no_fixes: o.NoFixes = False,
    jobs: o.Jobs = None,
    fmt: o.Fmt = Format.table,
    output: o.Output = None,
    allow_failures: AllowFailures = False,
    bundle: o.Bundle = None,
    measured: o.Measured = None,
    measure: o.Measure = False,
    limit: o.Limit = None,
    max_time: o.MaxTime = None,
    run: o.Run = None,
    workdir: o.Workdir = None,
    workload: o.Workload = None,
    allow_precision_mismatch: AllowPrecisionMismatch = False,
    model: Model = None,
    sm_count: o.SmCount = None,
) -> None:
    """Triage a regression report: rank every cell past the gate, explain each flagged kernel
    compile-side with both toolchains, note a moved baseline, bisect compile-only, propose fixes,
    re-measure on a GPU (--measure, or --bundle then --measured), and write one report. Exit 1: a
    regression (compile-side or measured); 0: none; 4: a step failed.

    Without a GPU it does all but the re-measurement. With a GPU (--measure) or a bundle for the GPU
    host (--bundle, then --measured), the flagged cells are re-measured with both toolchains side by
    side, and each gets a measured verdict."""
    given = arguments(locals())
    check_format(fmt, o.FORMATS)
    # every output is checked before the work (a triage compiles and bisects: minutes)
    check_outputs(output or [], o.WRITERS, inputs=[old, new])
    summary = step_summary()
    if run is not None:
        from ktriage.cli.triage_run import triage_run

        return triage_run(
            run,
            old_toolchain,
            new_toolchain,
            workdir=workdir,
            given=o.run_refusals(given),
            threshold=threshold,
            jobs=jobs,
            no_bisect=no_bisect,
            no_fixes=no_fixes,
            max_time=max_time,
            db=db,
            model=model,
            sm_count=sm_count,
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
        report = triage_api(**o.triage_args(given), say=lambda m: console.print(f"[dim]{escape(m)}[/]"))
    gpu = report.measured
    # the bundle's command, for a reader of the terminal when stdout is JSON or markdown (piped, most often);
    # the terminal table says it itself ("needs a GPU: ..."), once
    if gpu is not None and gpu.commands and not gpu.results and fmt != Format.table:
        console.print(f"bundle for the GPU re-run: {escape(str(gpu.bundle))}")
        console.print(f"on the GPU host: [bold]{escape(gpu.commands[0])}[/]  (it runs: {escape('; '.join(gpu.bench))})")
        console.print(f"then here: the same triage with --measured {escape(str(gpu.bundle))}")
    writers = {".md": report.to_markdown, ".json": lambda: report.json_text() + "\n", ".html": report.to_html}
    emit(fmt, writers, lambda: report.print_table(make_console()), output, console)
    append_step_summary(summary, report.to_markdown())
    code = report.exit_code(allow_failures)
    if code != exit_codes.OK:
        raise typer.Exit(code)
