"""`ktriage bench`: TritonBench-compatible operator benchmarks, every toolchain side by side.

Same op names, input sweeps, backend names and flags as TritonBench (`--op`, `--only`, `--baseline`,
`--metrics`, `--bwd`, `--input-id`, `--num-inputs`, `--precision`, `--csv`, `--output`,
`--output-json`), plus `--toolchain` (repeatable): the Triton kernels of a backend are compiled by
each toolchain on this machine (no GPU needed) into a bundle, and timed from that bundle in ONE GPU
process next to the native backends. `--compile-only` stops after the bundle (a CPU machine);
`--bundle DIR` measures a bundle made elsewhere (the GPU machine). A recorded workload
(`bench W.json -t A -t B`) goes to ``ktriage.cli.bench_recorded``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from ktriage.bench.plan import BenchPlan, native_variants
from ktriage.cli.console import make_console, make_progress
from ktriage.cli.options import (
    DEFAULT_COMPILE_TIMEOUT_S,
    Bwd,
    CompileTimeout,
    Db,
    Format,
    Fwd,
    FwdBwd,
    InputId,
    Inputs,
    Mode,
    NumInputs,
    arch_option,
    check_format,
    check_outputs,
    format_option,
    jobs_option,
    merge_outputs,
    mode_option,
    output_option,
    pick_mode,
    precision_option,
    toolchain_option,
    write_outputs,
)
from ktriage.errors import KtriageError
from ktriage.measure.cells import Cell, RunInfo
from ktriage.measure.gpus import GPUS_HELP, host_gpus
from ktriage.report.bench import print_table, results_table, to_csv, to_json, to_markdown

if TYPE_CHECKING:
    from ktriage.catalog.inputs import InputCase
    from ktriage.workload.bundles.format import Bundle

FORMATS = ("table", "markdown", "json", "csv")
WRITERS = (".csv", ".md", ".json")


def bench(
    workload: Annotated[
        str | None,
        typer.Argument(
            help="A recorded workload (W.json from `ktriage record`): bench its kernels, every toolchain side by side (docs/record.md)."
        ),
    ] = None,
    kernel: Annotated[
        list[str] | None,
        typer.Option("--kernel", help="With a workload: only this kernel (K3 or its function name); repeatable."),
    ] = None,
    op: Annotated[str | None, typer.Option("--op", help="TritonBench operator: layer_norm, embedding, rope.")] = None,
    only: Annotated[
        str | None,
        typer.Option(
            "--only", help="Comma-separated backends (TritonBench names), e.g. liger_layer_norm,torch_layer_norm."
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="Baseline backend for speedups (default: the op's, e.g. torch_layer_norm)."),
    ] = None,
    metrics: Annotated[
        str, typer.Option("--metrics", help="Comma-separated: latency, speedup, gbps, tflops, accuracy.")
    ] = "latency,speedup,accuracy",
    mode: Annotated[Mode | None, mode_option("Default: fwd as in TritonBench, or the bundle's pass.")] = None,
    bwd: Bwd = False,
    fwd: Fwd = False,
    fwd_bwd: FwdBwd = False,
    input: Inputs = None,
    input_id: InputId = None,
    num_inputs: NumInputs = None,
    precision: Annotated[
        str | None, precision_option("Default: TritonBench's fp32 (torch's default dtype), or the bundle's.")
    ] = None,
    toolchain: Annotated[
        list[str] | None, toolchain_option("Compiles the Triton backends; the first is the reference.")
    ] = None,
    compile_only: Annotated[
        bool,
        typer.Option("--compile-only", help="Only compile the bundle (no GPU needed); measure it later with --bundle."),
    ] = False,
    bundle: Annotated[
        Path | None,
        typer.Option("--bundle", help="Bundle directory: written by --compile-only, read on the GPU machine."),
    ] = None,
    arch: Annotated[str, arch_option("Target of the compiled kernels (the GPU machine's).")] = "sm_90",
    sm_count: Annotated[
        int | None, typer.Option("--sm-count", help="SM count the library would see (default: the arch's usual GPU).")
    ] = None,
    fmt: Annotated[
        Format, format_option(FORMATS, "json: the results file's document (as -o PATH.json writes).")
    ] = Format.table,
    csv_out: Annotated[bool, typer.Option("--csv", help="TritonBench's spelling of --format csv.")] = False,
    output: Annotated[
        list[Path] | None,
        output_option(
            WRITERS,
            ".csv/.md: the results table (TritonBench's --output is the .csv); .json: every cell with raw samples (the results file `ktriage compare` reads; rewritten after each input while measuring; --format json prints the same document).",
        ),
    ] = None,
    output_json: Annotated[
        Path | None, typer.Option("--output-json", help="TritonBench's spelling of -o PATH.json (the results file).")
    ] = None,
    tritonbench_json: Annotated[
        Path | None,
        typer.Option(
            "--tritonbench-json",
            help="Also write the run as TritonBench's JSON (what its dashboards read; one file per toolchain, docs/triage.md).",
        ),
    ] = None,
    db: Db = None,
    timing: Annotated[
        str,
        typer.Option(
            "--timing",
            help="auto (a protocol per backend: queued for native backends, graph for single kernels under 10 us, else events; recorded per cell), or for all: events (CUDA events per call), graph (CUDA graph replays), queued (events behind a spin kernel: no launch gaps).",
        ),
    ] = "auto",
    no_l2_flush: Annotated[
        bool, typer.Option("--no-l2-flush", help="Do not flush the L2 cache between calls (TritonBench flushes).")
    ] = False,
    max_time: Annotated[
        float, typer.Option("--max-time", help="Seconds of sampling per input at most (all variants together).")
    ] = 10.0,
    min_samples: Annotated[
        int, typer.Option("--min-samples", help="Samples per variant before the adaptive stop may end sampling.")
    ] = 10,
    artifact_timing: Annotated[
        str,
        typer.Option(
            "--artifact-timing",
            help="What an artifact backend times: tritonbench (as TritonBench times the library), library, or kernel (launches only).",
        ),
    ] = "tritonbench",
    compile_mode: Annotated[
        str, typer.Option("--compile-mode", help="torch.compile mode of the torch_compile backends.")
    ] = "max-autotune-no-cudagraphs",
    artifacts_only: Annotated[
        bool,
        typer.Option(
            "--artifacts-only",
            help="With --toolchain/--bundle: skip the host's own copy of the artifact backends (the default now; kept for old scripts).",
        ),
    ] = False,
    host_artifacts: Annotated[
        bool,
        typer.Option(
            "--host-artifacts",
            help="With --toolchain/--bundle: also time the host's own copy of the artifact backends (e.g. liger with the host Triton).",
        ),
    ] = False,
    jobs: Annotated[int | None, jobs_option("Parallel compiles.")] = None,
    compile_timeout: CompileTimeout = DEFAULT_COMPILE_TIMEOUT_S,
    gpus: Annotated[str | None, typer.Option("--gpus", help=GPUS_HELP)] = None,
    profile: Annotated[
        bool,
        typer.Option(
            "--profile",
            help="After the timing, run Nsight Compute (ncu) on each measured input and artifact backend of the bundle, every toolchain; the counters go into the results file and the store next to the timings (docs/profile.md).",
        ),
    ] = False,
) -> None:
    """Benchmark an operator like TritonBench, with every toolchain's kernels timed side by side in one GPU process."""
    from ktriage.report.bench import METRICS
    from ktriage.workload.ops.opdef import (
        check_mode,
        get_op,
        resolve_precision,
        select_op_inputs,
    )

    if csv_out:
        fmt = Format.csv
    check_format(fmt, FORMATS)
    outputs = merge_outputs(output, output_json)
    check_outputs(outputs, WRITERS)
    console = make_console(stderr=fmt != Format.table)
    wanted_metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    unknown = [m for m in wanted_metrics if m not in METRICS]
    if unknown:
        raise KtriageError(f"unknown metric(s) {unknown}", f"use any of: {', '.join(METRICS)}")
    asked_mode = pick_mode(mode, fwd=fwd, bwd=bwd, fwd_bwd=fwd_bwd)
    from ktriage.workload.recorded.bundle import is_recorded_bundle

    loaded = None
    if bundle is not None and not toolchain:
        from ktriage.workload.bundles.format import load_bundle

        loaded = load_bundle(bundle)
    if workload is not None or kernel or (loaded is not None and is_recorded_bundle(loaded)):
        from ktriage.cli.bench_recorded import bench_workload, refuse_op_options

        refuse_op_options(
            {
                "--op": op,
                "--only": only,
                "--baseline": baseline,
                "--fwd/--bwd/--mode": asked_mode,
                "--precision": precision,
                "--sm-count": sm_count,
                "--input-id": input_id,
                "--num-inputs": num_inputs,
                "--tritonbench-json": tritonbench_json,
                "--artifacts-only": artifacts_only,
                "--metrics": metrics != "latency,speedup,accuracy",
                "--artifact-timing": artifact_timing != "tritonbench",
                "--compile-mode": compile_mode != "max-autotune-no-cudagraphs",
            },
            "a recorded workload",
        )
        return bench_workload(
            workload,
            loaded=loaded,
            bundle=bundle,
            toolchain=toolchain,
            kernels=kernel,
            inputs=input,
            compile_only=compile_only,
            arch=arch,
            fmt=fmt,
            outputs=outputs,
            db=db,
            timing=timing,
            no_l2_flush=no_l2_flush,
            max_time=max_time,
            min_samples=min_samples,
            jobs=jobs,
            console=console,
            compile_timeout=compile_timeout,
            gpus=gpus,
        )
    if loaded is not None:
        op = op or loaded.op
    if op is None:
        raise KtriageError("no --op given", "e.g. --op layer_norm (ops: layer_norm, embedding, rope)")
    opdef = get_op(op)
    mode_name = check_mode(opdef, asked_mode or (loaded.mode if loaded is not None else "fwd"))
    prec = resolve_precision(opdef, precision if precision is not None else (loaded.precision if loaded else None))
    cases = select_op_inputs(opdef, input_id=input_id, num_inputs=num_inputs, selectors=input)
    chosen = [b.strip() for b in only.split(",")] if only else list(opdef.backends)
    base = baseline or opdef.baseline
    known = set(opdef.backends) | set(opdef.artifact_backends)
    bad = [b for b in chosen + [base] if b not in known]
    if bad:
        raise KtriageError(
            f"{op} has no backend(s) {bad}", f"TritonBench's backends of {op}: {', '.join(sorted(known))}"
        )
    if base not in chosen:
        chosen.insert(0, base)
    artifact = [b for b in chosen if b in opdef.artifact_backends] if (toolchain or loaded) else []
    if timing not in ("auto", "events", "graph", "queued"):
        raise KtriageError(f"unknown --timing {timing!r}", "use auto, events, graph or queued")
    native = native_variants(
        chosen, set(opdef.backends), artifact, host_artifacts=host_artifacts and not artifacts_only
    )

    toolchain_records: list[dict[str, Any]] = []
    if toolchain:
        loaded, toolchain_records = _compile_bundle(
            op, mode_name, cases, toolchain, artifact, bundle, arch, sm_count, prec, jobs, console, compile_timeout
        )
    elif loaded is not None:
        toolchain_records = list(loaded.toolchains.values())
        if loaded.mode != mode_name or loaded.op != op:
            raise KtriageError(
                f"bundle {bundle} holds {loaded.op} {loaded.mode}, not {op} {mode_name}",
                "pass the op and pass of the bundle, or build a new one with --toolchain",
            )
        bundle_ids = {c.id for c in loaded.input_cases()}
        cases = [c for c in cases if c.id in bundle_ids]
        if not cases:
            raise KtriageError(
                f"no selected input is in bundle {bundle}", f"inputs in the bundle: {sorted(bundle_ids)}"
            )
    if compile_only:
        return
    _require_gpu()
    placed = host_gpus(gpus)
    plan = BenchPlan(
        op=op,
        mode=mode_name,
        input_ids=[c.id for c in cases],
        native_backends=native,
        artifact_backends=artifact,
        baseline=base,
        precision=prec,
        bundle=str(loaded.path) if loaded else None,
        toolchains=[t["id"] for t in toolchain_records] if artifact else [],
        timing={"mode": timing, "l2_flush": not no_l2_flush},
        min_samples=min_samples,
        max_time_s=max_time,
        artifact_timing=artifact_timing,
        compile_mode=compile_mode,
    )
    json_outputs = [p for p in outputs if p.suffix.lower() == ".json"]
    # the first results file is also rewritten after each input while measuring (a crash keeps what was measured)
    run, cells = _measure(plan, db, json_outputs[0] if json_outputs else None, toolchain_records, console, placed)
    if profile:
        _profile(run, cells, plan, db, console)
    labels = {t["id"]: str(t.get("spec") or t["id"]) for t in toolchain_records}
    rows = results_table(cells, opdef, base, wanted_metrics, labels)
    title = f"{op} {mode_name} ({prec})"
    writers = {
        ".csv": lambda: to_csv(rows),
        ".md": lambda: to_markdown(rows, title),
        ".json": lambda: to_json(run, cells),
    }
    if fmt == Format.table:
        print_table(rows, console, title=title)
    else:
        typer.echo(writers[{Format.csv: ".csv", Format.markdown: ".md"}.get(fmt, ".json")](), nl=False)
    write_outputs(outputs, writers, console)  # the results files once more, final: the text stdout's json is
    if tritonbench_json is not None:
        from ktriage.measure.tritonbench_format import write_tritonbench_json

        for path in write_tritonbench_json(tritonbench_json, run, cells):
            console.print(f"wrote {escape(str(path))} (TritonBench JSON)")
    if len(plan.toolchains) > 1:
        _print_toolchain_verdicts(run, cells, base, console)
    console.print(f"run {escape(run.run_id)} stored; `ktriage runs show {run.run_id}`")


def _profile(run: RunInfo, cells: list[Cell], plan: BenchPlan, db: str | None, console: Console) -> None:
    """``--profile``: ncu on the bundle after the timing (ktriage.profile.attach); the cells and the
    run get the counters in place (the results files are written after this), the store's run too."""
    from ktriage.profile.attach import attach_to_store, profile_measured

    if plan.bundle is None or not plan.artifact_backends:
        console.print("[yellow]--profile: no bundle with artifact backends in this bench: nothing profiled[/]")
        return
    profile_measured(
        run,
        cells,
        Path(plan.bundle),
        backends=plan.artifact_backends,
        input_ids=plan.input_ids,
        say=lambda m: console.print(escape(m)),
    )
    console.print(escape(attach_to_store(db, run, cells)))


def _require_gpu() -> None:
    """torch must be there; whether a GPU is visible the worker checks while it starts (importing
    torch here would put its seconds before the worker's start instead of alongside it)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise KtriageError(
            "measuring needs torch and an NVIDIA GPU on this machine",
            "compile here with --compile-only --bundle DIR, then run `ktriage bench --bundle DIR` on the GPU machine",
        )


def _compile_bundle(
    op: str,
    mode: str,
    cases: list[InputCase],
    toolchain: list[str],
    artifact: list[str],
    bundle: Path | None,
    arch: str,
    sm_count: int | None,
    prec: str,
    jobs: int | None,
    console: Console,
    compile_timeout: float = DEFAULT_COMPILE_TIMEOUT_S,
) -> tuple[Bundle, list[dict[str, Any]]]:
    from ktriage.cli.resolve import resolve_toolchains
    from ktriage.compile.compiler import Compiler
    from ktriage.home import home_subdir
    from ktriage.workload.bundles.build import build_bundle
    from ktriage.workload.bundles.format import load_bundle

    if not artifact:
        raise KtriageError(
            "--toolchain given, but none of the chosen backends runs Triton kernels from a toolchain",
            "add an artifact backend to --only, e.g. liger_layer_norm",
        )
    with make_progress(console) as progress:
        tcs = resolve_toolchains(toolchain, progress)
        out = bundle or home_subdir("bundles") / f"{op}-{mode}-{'-'.join(t.id.split('.')[0] + t.id[-8:] for t in tcs)}"
        progress.add_task(f"compiling {len(cases)} input(s) x {len(tcs)} toolchain(s)", total=None)
        with Compiler(jobs=jobs, timeout_s=compile_timeout) as compiler:
            path = build_bundle(
                op,
                mode,
                [c.id for c in cases],
                tcs,
                Path(out),
                target=arch,
                sm_count=sm_count,
                compiler=compiler,
                precision=prec,
                backends=artifact,
            )
    loaded = load_bundle(path)
    failures = [a for a in loaded.artifacts.values() if not hasattr(a, "cubin_path")]
    console.print(
        f"bundle: {escape(str(path))} ({len(loaded.artifacts) - len(failures)} kernels, {len(failures)} failed compiles)"
    )
    console.print(
        f"measure it on the GPU machine: ktriage bench --bundle {escape(str(path))} --op {op} --{mode.replace('_', '-')}"
    )
    return loaded, [t.to_json() for t in tcs]


def _measure(
    plan: BenchPlan,
    db: str | None,
    output_json: Path | None,
    toolchains: list[dict[str, Any]],
    console: Console,
    gpus: list[int] | None = None,
) -> tuple[RunInfo, list[Cell]]:
    from ktriage.bench.session import run_bench

    with make_progress(console) as progress:
        task = progress.add_task(f"{plan.op} {plan.mode}: inputs", total=len(plan.input_ids))

        def on_cell(cell: Cell) -> None:
            if cell.status != "ok":
                console.print(
                    f"[red]{cell.status}[/] {escape(cell.key.label())}: {escape(str(cell.error or '')[:200])}"
                )

        return run_bench(
            plan,
            store_url=db,
            results_path=output_json,
            toolchains=toolchains,
            on_cell=on_cell,
            on_input_done=lambda _i: progress.advance(task),
            gpus=gpus,
        )


def _print_toolchain_verdicts(run: RunInfo, cells: list[Cell], baseline: str, console: Console) -> None:
    from ktriage.ops.registry import default_baselines
    from ktriage.report.markdown import to_markdown
    from ktriage.stats.compare import compare_toolchains

    comparisons = compare_toolchains(cells, run=run, baseline=baseline, default_baselines=default_baselines())
    console.print(to_markdown(comparisons), markup=False, highlight=False)
