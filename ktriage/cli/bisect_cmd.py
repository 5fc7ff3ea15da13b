"""`ktriage bisect` and `ktriage bisect-step`: find the first bad release, ptxas or commit.

Thin: options -> ``ktriage.bisect.run.BisectOptions`` -> ``run_bisect`` -> reports. Exit status for
CI: 0 a culprit was found, 1 no single culprit (ambiguous or unsure range), 2 bad input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ktriage.catalog.resolve import op_default_mode
from ktriage.cli.console import make_console, print_error
from ktriage.cli.options import (
    Arch,
    Bwd,
    Cluster,
    Format,
    Fwd,
    Inputs,
    ModeOpt,
    Precision,
    arch_option,
    check_format,
    check_outputs,
    emit,
    format_option,
    jobs_option,
    merge_outputs,
    one_toolchain,
    output_option,
    pick_mode,
    toolchain_option,
)
from ktriage.errors import KtriageError
from ktriage.measure.gpus import GPUS_HELP

FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json")


def bisect(
    source: Annotated[
        str,
        typer.Option(
            "--source",
            help="pypi:triton, pypi:<package> (e.g. liger-kernel; toolchain fixed), ptxas (frontend fixed by --toolchain), or git:PATH.",
        ),
    ],
    good: Annotated[str, typer.Option("--good", help="The last known good version / ptxas release / commit.")],
    bad: Annotated[str, typer.Option("--bad", help="The first known bad version / ptxas release / commit.")],
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            help="Compile-only: spill_store_bytes, spill_load_bytes, stack_bytes, registers, shared_bytes, ctas_per_sm, warps_per_sm, local_loads, local_stores, sass:OPCODE; or latency (GPU time from --bundle).",
        ),
    ] = None,
    command: Annotated[
        str | None,
        typer.Option(
            "--command", help="A script judged like `git bisect run`: exit 0 good, 125 skip, 1-127 bad, >=128 abort."
        ),
    ] = None,
    op: Annotated[str | None, typer.Option("--op", help="A catalog op, e.g. liger.layer_norm.")] = None,
    mode: ModeOpt = None,
    bwd: Bwd = False,
    fwd: Fwd = False,
    input: Inputs = None,
    spec: Annotated[
        str | None,
        typer.Option(
            "--spec", help="A spec TOML; with --source git a path inside the repository, read at each commit."
        ),
    ] = None,
    toolchain: Annotated[
        list[str] | None,
        toolchain_option(
            "Given once here: the fixed toolchain (ptxas and git sources, pypi:<package>); may use {checkout}, e.g. triton={checkout}/dist/*.whl."
        ),
    ] = None,
    build: Annotated[
        str | None,
        typer.Option(
            "--build",
            help="git sources: a shell command run in each commit's checkout ('none': nothing to build). A failure skips the commit.",
        ),
    ] = None,
    first_parent: Annotated[
        bool,
        typer.Option(
            "--first-parent",
            help="git sources: follow only the first parent (merge commits are candidates, merged branches are not).",
        ),
    ] = False,
    pin_file: Annotated[
        str | None,
        typer.Option(
            "--pin-file",
            help="A file that pins another repository's commit (e.g. cmake/llvm-hash.txt): if the culprit moves it, bisect inside that repository.",
        ),
    ] = None,
    pin_repo: Annotated[
        Path | None, typer.Option("--pin-repo", help="The local checkout of the pinned repository.")
    ] = None,
    workers: Annotated[
        int, typer.Option("--workers", help="Candidates tested per round, in parallel (k-ary search).")
    ] = 1,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds per command run; a timeout skips that candidate.")
    ] = None,
    build_timeout: Annotated[
        float, typer.Option("--build-timeout", help="Seconds per build; a timeout skips that candidate.")
    ] = 3600.0,
    state: Annotated[
        Path | None,
        typer.Option("--state", help="The state file (default: under the ktriage home, named after the options)."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue from the state file without re-testing what it holds.")
    ] = False,
    pre: Annotated[bool, typer.Option("--pre", help="Include pre-releases in pypi/ptxas ranges.")] = False,
    arch: Arch = "sm_90",
    dtype: Precision = None,
    jobs: Annotated[int | None, jobs_option("Parallel compile workers (default: --workers).")] = None,
    bundle: Annotated[
        Path | None,
        typer.Option(
            "--bundle", help="--metric latency: the compile-here bundle of the candidate toolchains (GPU host)."
        ),
    ] = None,
    backend: Annotated[
        str | None, typer.Option("--backend", help="--metric latency: the artifact backend to time (e.g. liger).")
    ] = None,
    artifact_timing: Annotated[
        str,
        typer.Option(
            "--artifact-timing",
            help="--metric latency: what is timed: kernel (launches only, the default for toolchain comparisons), tritonbench or library.",
        ),
    ] = "kernel",
    max_samples: Annotated[
        int,
        typer.Option(
            "--max-samples", help="--metric latency: samples per variant before a candidate is called unsure."
        ),
    ] = 200,
    threshold: Annotated[
        float, typer.Option("--threshold", help="--metric latency: the smallest relative change counted (0.05 = 5%).")
    ] = 0.05,
    gpus: Annotated[str | None, typer.Option("--gpus", help="--metric latency: " + GPUS_HELP)] = None,
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[list[Path] | None, output_option(WRITERS)] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Older spelling of -o PATH.md.")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Older spelling of -o PATH.json.")] = None,
    no_explain: Annotated[
        bool, typer.Option("--no-explain", help="Skip the explain of culprit vs predecessor.")
    ] = False,
    keep_checkouts: Annotated[
        bool,
        typer.Option(
            "--keep-checkouts",
            help="git sources: keep every commit's checkout (default: only the culprit's and its predecessor's).",
        ),
    ] = False,
    cluster: Cluster = None,
) -> None:
    """Find the first bad candidate (release, ptxas, commit) by comparison with the measured endpoints,
    then explain it against its predecessor."""
    from ktriage.api import bisect as bisect_api

    console = make_console(stderr=True)
    check_format(fmt, FORMATS)
    outputs = merge_outputs(output, md=markdown, json=json_path)
    check_outputs(outputs, WRITERS)
    report = bisect_api(
        source=source,
        good=good,
        bad=bad,
        metric=metric,
        command=command,
        op=op,
        mode=pick_mode(mode, fwd=fwd, bwd=bwd),
        inputs=input or (),
        spec=spec,
        toolchain=one_toolchain(toolchain, "bisect"),
        build=build,
        first_parent=first_parent,
        pin_file=pin_file,
        pin_repo=pin_repo,
        workers=workers,
        timeout=timeout,
        build_timeout=build_timeout,
        state=state,
        resume=resume,
        pre=pre,
        arch=arch,
        dtype=dtype,
        jobs=jobs,
        explain=not no_explain,
        keep_checkouts=keep_checkouts,
        cluster=cluster,
        bundle=bundle,
        backend=backend,
        artifact_timing=artifact_timing,
        max_samples=max_samples,
        threshold=threshold,
        gpus=gpus,
        say=lambda m: console.print(escape(m), highlight=False),
    )
    writers = {".md": report.to_markdown, ".json": report.json_text}
    emit(fmt, writers, lambda: report.print_table(make_console()), outputs)
    console.print(f"state: {escape(str(report.state_path))}")
    raise typer.Exit(0 if report.found else 1)


def bisect_step(
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="Judge the current checkout against this baseline (exit 0 good, 1 bad, 125 skip, 128 abort).",
        ),
    ] = None,
    record_baseline: Annotated[
        Path | None,
        typer.Option(
            "--record-baseline",
            help="Measure the current checkout and store it as the baseline's good (or --as bad) values.",
        ),
    ] = None,
    role: Annotated[str, typer.Option("--as", help="With --record-baseline: good (default) or bad.")] = "good",
    spec: Annotated[str | None, typer.Option("--spec", help="A spec TOML, relative to the checkout.")] = None,
    op: Annotated[str | None, typer.Option("--op", help="A catalog op.")] = None,
    mode: ModeOpt = None,
    fwd: Fwd = False,
    bwd: Bwd = False,
    input: Inputs = None,
    metric: Annotated[
        str | None, typer.Option("--metric", help="A compile metric (see ktriage bisect --help).")
    ] = None,
    toolchain: Annotated[
        list[str] | None, toolchain_option("Given once here: the toolchain that compiles the checkout.")
    ] = None,
    arch: Annotated[str, arch_option("Default: the baseline's.")] = "sm_90",
) -> None:
    """One `git bisect run` step: compile the checked-out kernels and compare a metric with a stored
    baseline. Errors exit 128 so that git aborts instead of marking the commit bad."""
    from ktriage.bisect.step import (
        EXIT_ABORT,
        StepConfig,
        decide_step,
        load_baseline,
        measure_here,
    )
    from ktriage.bisect.step import record_baseline as record
    from ktriage.bisect.workspace import CandidateFailed

    console = make_console(stderr=True)
    try:
        pass_ = pick_mode(mode, fwd=fwd, bwd=bwd)
        tc = one_toolchain(toolchain, "bisect-step")
        if (baseline is None) == (record_baseline is None):
            raise KtriageError(
                "give exactly one of --baseline and --record-baseline",
                "record at a good commit, then judge with --baseline",
            )
        if role not in ("good", "bad"):
            raise KtriageError(f"--as {role!r}", "use --as good or --as bad")
        if record_baseline is not None:
            if not (metric and tc and (spec or op)):
                raise KtriageError(
                    "--record-baseline needs --metric, --toolchain and --spec or --op",
                    "e.g. --spec spec.toml --metric spill_store_bytes -t triton==3.4.0",
                )
            cfg = StepConfig(metric, tc, spec, op, pass_ or op_default_mode(op) or "bwd", tuple(input or ()), arch)
            data = record(record_baseline, cfg, role)  # type: ignore[arg-type]
            recorded = data["good"] if role == "good" else data["bad"]
            console.print(
                f"{role} baseline: {escape(json.dumps(recorded['values']))} -> {escape(str(record_baseline))}"
            )
            raise typer.Exit(0)
        assert baseline is not None
        cfg, good, bad = load_baseline(baseline)
        cfg = StepConfig(
            metric or cfg.metric,
            tc or cfg.toolchain,
            spec or cfg.spec,
            op or cfg.op,
            pass_ or cfg.mode,
            tuple(input or cfg.inputs),
            arch if arch != "sm_90" else cfg.arch,
        )
        try:
            values = measure_here(cfg)
        except CandidateFailed as exc:
            console.print(f"skip: {escape(exc.reason)}")
            raise typer.Exit(125) from None
        code, reason = decide_step(values, good, bad)
        console.print(f"{ {0: 'good', 1: 'bad', 125: 'skip'}[code] }: {escape(reason)} ({escape(json.dumps(values))})")
        raise typer.Exit(code)
    except KtriageError as exc:  # printed here, not by main(): git bisect needs 128 (abort), not 2
        print_error(exc, console)
        sys.stdout.flush()
        raise typer.Exit(EXIT_ABORT) from None
