"""`ktriage bisect` and `ktriage bisect-step`: find the first bad release, ptxas or commit.

Thin: the options (declared in ``bisect_options``) -> :func:`ktriage.api.bisect` or
:func:`ktriage.api.bisect_step` -> the report. Exit status for CI (``ktriage.exit_status``'s table):
OK (0) a culprit was found, FINDING (1) no single culprit (ambiguous or unsure range), USAGE (2) bad
input. ``bisect-step`` speaks ``git bisect run``'s codes instead, because git reads them.
"""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from ktriage.api import EXIT_ABORT
from ktriage.api import bisect as bisect_api
from ktriage.api import bisect_step as step_api
from ktriage.cli import bisect_options as o
from ktriage.cli import exit_codes
from ktriage.cli import options as opt
from ktriage.cli.console import make_console, make_progress, print_error
from ktriage.cli.options import Format
from ktriage.errors import KtriageError


def bisect(
    source: o.Source,
    good: o.Good,
    bad: o.Bad,
    metric: o.Metric = None,
    command: o.Command = None,
    op: o.Op = None,
    mode: opt.ModeOpt = None,
    bwd: opt.Bwd = False,
    fwd: opt.Fwd = False,
    input: opt.Inputs = None,
    spec: o.Spec = None,
    toolchain: o.Toolchain = None,
    build: o.Build = None,
    first_parent: o.FirstParent = False,
    pin_file: o.PinFile = None,
    pin_repo: o.PinRepo = None,
    workers: o.Workers = 1,
    timeout: o.Timeout = None,
    build_timeout: o.BuildTimeout = 3600.0,
    state: o.State = None,
    resume: o.Resume = False,
    pre: o.Pre = False,
    arch: opt.Arch = "sm_90",
    dtype: opt.Precision = None,
    jobs: o.Jobs = None,
    bundle: o.Bundle = None,
    backend: o.Backend = None,
    artifact_timing: o.ArtifactTiming = "kernel",
    max_samples: o.MaxSamples = 200,
    threshold: o.Threshold = 0.05,
    gpus: o.Gpus = None,
    fmt: o.Fmt = Format.table,
    output: o.Output = None,
    markdown: o.Markdown = None,
    json_path: o.JsonPath = None,
    no_explain: o.NoExplain = False,
    keep_checkouts: o.KeepCheckouts = False,
    cluster: opt.Cluster = None,
) -> None:
    """Find the first bad candidate (release, ptxas, commit) by comparison with the measured endpoints,
    then explain it against its predecessor."""
    given = opt.arguments(locals())
    console = make_console(stderr=True)
    opt.check_format(fmt, o.FORMATS)
    outputs = opt.merge_outputs(output, md=markdown, json=json_path)
    opt.check_outputs(outputs, o.WRITERS, inputs=[spec])
    # The display shows the running round (its candidates, the time spent): without it a round of real
    # builds (30 minutes, on the cluster or here) printed nothing between the round before and its end.
    with make_progress(console):
        report = bisect_api(**o.bisect_args(given), say=lambda m: console.print(escape(m), highlight=False))
    writers = {".md": report.to_markdown, ".json": report.json_text}
    opt.emit(fmt, writers, lambda: report.print_table(make_console()), outputs)
    console.print(f"state: {escape(str(report.state_path))}")
    # the other way round from the verbs that gate on findings: a culprit is the answer sought (OK),
    # no single culprit is what the job must act on (FINDING)
    raise typer.Exit(exit_codes.OK if report.found else exit_codes.FINDING)


def bisect_step(
    baseline: o.StepBaseline = None,
    record_baseline: o.StepRecordBaseline = None,
    role: o.StepRole = "good",
    spec: o.StepSpec = None,
    op: o.StepOp = None,
    mode: opt.ModeOpt = None,
    fwd: opt.Fwd = False,
    bwd: opt.Bwd = False,
    input: opt.Inputs = None,
    metric: o.StepMetric = None,
    toolchain: o.StepToolchain = None,
    arch: o.StepArch = "sm_90",
) -> None:
    """One `git bisect run` step: compile the checked-out kernels and compare a metric with a stored
    baseline. Errors exit 128 so that git aborts instead of marking the commit bad."""
    console = make_console(stderr=True)
    try:
        result = step_api(
            baseline=baseline,
            record_baseline=record_baseline,
            role=role,
            spec=spec,
            op=op,
            mode=opt.pick_mode(mode, fwd=fwd, bwd=bwd),
            inputs=input or (),
            metric=metric,
            toolchain=opt.one_toolchain(toolchain, "bisect-step"),
            arch=arch,
        )
    except KtriageError as exc:  # printed here, not by main(): git bisect needs 128 (abort), not 2
        print_error(exc, console)
        sys.stdout.flush()
        raise typer.Exit(EXIT_ABORT) from None
    console.print(escape(result.message))
    raise typer.Exit(result.code)
