"""`ktriage bench`: TritonBench-compatible operator benchmarks, every toolchain side by side.

Same op names, input sweeps, backend names and flags as TritonBench (`--op`, `--only`, `--baseline`, `--metrics`,
`--bwd`, `--input-id`, `--num-inputs`, `--precision`, `--csv`, `--output`, `--output-json`), plus `--toolchain`
(repeatable): the Triton kernels of a backend are compiled by each toolchain on this machine (no GPU needed) into a
bundle, and timed from that bundle in ONE GPU process next to the native backends. `--compile-only` stops after the
bundle (a CPU machine); `--bundle DIR` measures a bundle made elsewhere (the GPU machine). A recorded workload
(`bench W.json -t A -t B`) goes to ``ktriage.cli.bench_recorded``, whose ``render`` both benches share.
"""

from __future__ import annotations

import typer
from rich.markup import escape
from typer import _click

from ktriage.api import BENCH_DEFAULTS, DEFAULT_COMPILE_TIMEOUT_S, is_recorded_bundle, is_workload_path
from ktriage.api import bench as bench_api
from ktriage.cli import bench_options as o
from ktriage.cli import options as opt
from ktriage.cli.bench_recorded import bench_workload, refuse_op_options, refuse_profile, render
from ktriage.cli.console import make_console, make_progress
from ktriage.cli.options import Format


def bench(
    ctx: typer.Context,
    workload: o.Workload = None,
    kernel: o.Kernel = None,
    op: o.Op = None,
    only: o.Only = None,
    baseline: o.Baseline = None,
    metrics: o.Metrics = BENCH_DEFAULTS.metrics,
    mode: o.PassMode = None,
    bwd: opt.Bwd = False,
    fwd: opt.Fwd = False,
    fwd_bwd: opt.FwdBwd = False,
    input: opt.Inputs = None,
    input_id: opt.InputId = None,
    num_inputs: opt.NumInputs = None,
    precision: o.Precision = None,
    toolchain: o.Toolchain = None,
    compile_only: o.CompileOnly = False,
    bundle: o.Bundle = None,
    arch: o.Arch = None,
    sm_count: o.SmCount = None,
    fmt: o.Fmt = Format.table,
    csv_out: o.CsvOut = False,
    output: o.Output = None,
    output_json: o.OutputJson = None,
    tritonbench_json: o.TritonbenchJson = None,
    db: opt.Db = None,
    timing: o.Timing = BENCH_DEFAULTS.timing,
    no_l2_flush: o.NoL2Flush = False,
    max_time: o.MaxTime = BENCH_DEFAULTS.max_time,
    min_samples: o.MinSamples = BENCH_DEFAULTS.min_samples,
    artifact_timing: o.ArtifactTiming = BENCH_DEFAULTS.artifact_timing,
    compile_mode: o.CompileMode = BENCH_DEFAULTS.compile_mode,
    artifacts_only: o.ArtifactsOnly = False,
    host_artifacts: o.HostArtifacts = False,
    jobs: o.Jobs = None,
    compile_timeout: opt.CompileTimeout = DEFAULT_COMPILE_TIMEOUT_S,
    gpus: o.Gpus = None,
    profile: o.Profile = False,
) -> None:
    """Benchmark an operator like TritonBench, with every toolchain's kernels timed side by side in one GPU process."""
    given = opt.arguments(locals())
    if not toolchain and ctx.get_parameter_source("compile_timeout") is not _click.core.ParameterSource.COMMANDLINE:
        # $KTRIAGE_COMPILE_TIMEOUT is set for every verb, no request to a run that compiles nothing (refused if given)
        compile_timeout = DEFAULT_COMPILE_TIMEOUT_S
    fmt, outputs = o.format_and_outputs(fmt, csv_out, output, output_json, workload)
    existed = [p for p in outputs if p.is_file()]  # the results file is written while measuring
    console = make_console(stderr=fmt != Format.table)
    measuring = o.Measuring(
        db=db,
        timing=timing,
        l2_flush=not no_l2_flush,
        max_time=max_time,
        min_samples=min_samples,
        jobs=jobs,
        compile_timeout=compile_timeout,
        gpus=gpus,
    )
    asked_mode = opt.pick_mode(mode, fwd=fwd, bwd=bwd, fwd_bwd=fwd_bwd)
    recorded = bool(workload is not None or kernel or (bundle and not toolchain and is_recorded_bundle(bundle)))
    if recorded and (workload is None or is_workload_path(workload)):  # else bench_recorded names it (an op: --op)
        refuse_op_options(o.op_only_options(given, asked_mode), "a recorded workload")
        refuse_profile(profile)
    # after the refusals above: its fix spells out the measuring run, which must name only options that apply
    o.refuse_what_compile_only_ignores(compile_only, given, fmt, outputs, recorded=recorded)
    if recorded:
        return bench_workload(
            workload,
            bundle=bundle,
            toolchain=toolchain,
            kernels=kernel,
            inputs=input,
            compile_only=compile_only,
            arch=arch,
            fmt=fmt,
            outputs=outputs,
            existed=existed,
            console=console,
            measuring=measuring,
        )
    with make_progress(console):
        report = bench_api(
            op=op,
            only=only or None,  # a comma-separated str: ktriage.api.bench splits it
            baseline=baseline,
            metrics=metrics,
            mode=asked_mode,
            inputs=input,
            input_id=input_id,
            num_inputs=num_inputs,
            precision=precision,
            toolchains=toolchain or (),
            compile_only=compile_only,
            bundle=bundle,
            arch=arch,
            sm_count=sm_count,
            results_path=next((p for p in outputs if opt.output_suffix(p) == ".json"), None),
            artifact_timing=artifact_timing,
            compile_mode=compile_mode,
            host_artifacts=host_artifacts and not artifacts_only,
            profile=profile,
            **measuring,
            say=lambda m: console.print(escape(m)),
        )
    many = report.plan is not None and len(report.plan.toolchains) > 1  # the toolchains' verdicts
    render(report, fmt, outputs, console, verdicts=many, tritonbench_json=tritonbench_json, existed=existed)
