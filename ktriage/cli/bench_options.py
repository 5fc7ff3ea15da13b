"""The options of ``ktriage bench``, declared once (their help is the user documentation: docs/cli.md
is generated from it). Kept apart so the command module stays what it does: parse, call
``ktriage.api.bench``, render. TritonBench's spellings (``--only``, ``--csv``, ``--output-json``) are
kept so its command lines run unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypedDict

import typer

from ktriage import api
from ktriage.api import BENCH_DEFAULTS, GPUS_HELP
from ktriage.cli import options as opt
from ktriage.cli.options import (
    RESULTS_FILE,
    Format,
    Mode,
    arch_option,
    format_option,
    jobs_option,
    mode_option,
    output_option,
    precision_option,
    toolchain_option,
)

FORMATS = ("table", "markdown", "json", "csv")
WRITERS = (".csv", ".md", ".json")

Workload = Annotated[
    str | None,
    typer.Argument(
        help="A recorded workload (W.json from `ktriage record`): bench its kernels, every toolchain side by side (docs/record.md)."
    ),
]

Kernel = Annotated[
    list[str] | None,
    typer.Option(
        "--kernel",
        help="With a workload: only this kernel (K3, its function name, or K3:function as the reports print it); repeatable.",
    ),
]

Op = Annotated[str | None, typer.Option("--op", help="TritonBench operator: layer_norm, embedding, rope.")]

Only = Annotated[
    str | None,
    typer.Option(
        "--only", help="Comma-separated backends (TritonBench names), e.g. liger_layer_norm,torch_layer_norm."
    ),
]

Baseline = Annotated[
    str | None,
    typer.Option("--baseline", help="Baseline backend for speedups (default: the op's, e.g. torch_layer_norm)."),
]

Metrics = Annotated[str, typer.Option("--metrics", help="Comma-separated: latency, speedup, gbps, tflops, accuracy.")]

PassMode = Annotated[Mode | None, mode_option("Default: fwd as in TritonBench, or the bundle's pass.")]

Precision = Annotated[
    str | None, precision_option("Default: TritonBench's fp32 (torch's default dtype), or the bundle's.")
]

Toolchain = Annotated[list[str] | None, toolchain_option("Compiles the Triton backends; the first is the reference.")]

CompileOnly = Annotated[
    bool,
    typer.Option(
        "--compile-only",
        help="Only compile the bundle with the -t toolchains (no GPU needed); measure it later with --bundle.",
    ),
]

Bundle = Annotated[
    Path | None,
    typer.Option("--bundle", help="Bundle directory: written by --compile-only, read on the GPU machine."),
]

Arch = Annotated[
    str | None,
    arch_option(
        "Target of the compiled kernels (the GPU machine's). Default: sm_90 for an op, the recorded GPU's for a "
        "workload; measuring a bundle, the bundle's own (another is refused)."
    ),
]

SmCount = Annotated[
    int | None, typer.Option("--sm-count", help="SM count the library would see (default: the arch's usual GPU).")
]

Fmt = Annotated[Format, format_option(FORMATS, "json: the results file's document (as -o PATH.json writes).")]

CsvOut = Annotated[bool, typer.Option("--csv", help="TritonBench's spelling of --format csv.")]

Output = Annotated[
    list[Path] | None,
    output_option(
        WRITERS,
        ".csv/.md: the results table (TritonBench's --output is the .csv); .json: every cell with raw samples (the results file `ktriage compare` reads; rewritten after each input while measuring; --format json prints the same document).",
        writes=[RESULTS_FILE],
    ),
]

OutputJson = Annotated[
    Path | None, typer.Option("--output-json", help="TritonBench's spelling of -o PATH.json (the results file).")
]

TritonbenchJson = Annotated[
    Path | None,
    typer.Option(
        "--tritonbench-json",
        help="Also write the run as TritonBench's JSON (what its dashboards read; one file per toolchain, docs/triage.md).",
    ),
]

Timing = Annotated[
    str,
    typer.Option(
        "--timing",
        help="auto (a protocol per backend: queued for native backends, graph for single kernels under 10 us, else events; recorded per cell), or for all: events (CUDA events per call), graph (CUDA graph replays), queued (events behind a spin kernel: no launch gaps).",
    ),
]

NoL2Flush = Annotated[
    bool, typer.Option("--no-l2-flush", help="Do not flush the L2 cache between calls (TritonBench flushes).")
]

MaxTime = Annotated[
    float, typer.Option("--max-time", help="Seconds of sampling per input at most (all variants together).")
]

MinSamples = Annotated[
    int, typer.Option("--min-samples", help="Samples per variant before the adaptive stop may end sampling.")
]

ArtifactTiming = Annotated[
    str,
    typer.Option(
        "--artifact-timing",
        help="What an artifact backend times: tritonbench (as TritonBench times the library), library, or kernel (launches only).",
    ),
]

CompileMode = Annotated[str, typer.Option("--compile-mode", help="torch.compile mode of the torch_compile backends.")]

ArtifactsOnly = Annotated[
    bool,
    typer.Option(
        "--artifacts-only",
        help="With --toolchain/--bundle: skip the host's own copy of the artifact backends (the default now; kept for old scripts).",
    ),
]

HostArtifacts = Annotated[
    bool,
    typer.Option(
        "--host-artifacts",
        help="With --toolchain/--bundle: also time the host's own copy of the artifact backends (e.g. liger with the host Triton).",
    ),
]

Jobs = Annotated[int | None, jobs_option("Parallel compiles (with -t: measuring a bundle compiles nothing).")]

Gpus = Annotated[str | None, typer.Option("--gpus", help=GPUS_HELP)]

Profile = Annotated[
    bool,
    typer.Option(
        "--profile",
        help="After the timing, run Nsight Compute (ncu) on each measured input and artifact backend of the bundle, every toolchain; the counters go into the results file and the store next to the timings (docs/profile.md). An op bench's: a recorded workload's bundle is profiled by `ktriage profile --bundle DIR`.",
    ),
]


def format_and_outputs(
    fmt: Format, csv_out: bool, output: list[Path] | None, output_json: Path | None, workload: str | None = None
) -> tuple[Format, list[Path]]:
    """The format (``--csv`` is TritonBench's ``-f csv``) and every -o/--output-json path, checked before
    anything runs (none may be the ``workload`` read)."""
    fmt = Format.csv if csv_out else fmt
    opt.check_format(fmt, FORMATS)
    outputs = opt.merge_outputs(output, json=output_json)
    opt.check_outputs(outputs, WRITERS, inputs=[workload], writes=[opt.RESULTS_FILE])
    return fmt, outputs


def refuse_what_compile_only_ignores(
    compile_only: bool, params: Mapping[str, Any], fmt: Format, outputs: list[Path], *, recorded: bool
) -> None:
    """The library's rule (``ktriage.api.refuse_what_compile_only_ignores``: --compile-only measures
    nothing, so an option of measuring is refused, not ignored) on the command's parsed values
    (``params``), with the command's own options of measuring named first: every -o (the library sees
    only the .json), --format json/csv and --tritonbench-json. Called before the routing, so a recorded
    workload's compile is refused in the same words as an op's (``recorded``: its fix names
    ``bench_recorded``, the library's entry point for it).

    ``params`` goes to the library whole: it reads the keywords of its own list of measuring options
    (one list, so an option added there is refused here too), which the command's parameters are named
    after, all but ``--no-l2-flush`` (``l2_flush``, inverted)."""
    given: list[tuple[str, str | None]] = [("-o", str(p)) for p in outputs]
    given += [("--format", fmt.value)] if fmt != Format.table else []
    given += [("--tritonbench-json", str(params["tritonbench_json"]))] if params["tritonbench_json"] else []
    api.refuse_what_compile_only_ignores(
        compile_only,
        {**params, "l2_flush": not params["no_l2_flush"]},
        given=given,
        entry="bench_recorded" if recorded else "bench",
    )


def op_only_options(params: Mapping[str, Any], mode: str | None) -> dict[str, object]:
    """The op benches' options as given (``params``: the command's parsed values), by flag, in the
    order a refusal names them: a recorded workload refuses each one that is set (or off its default)."""
    return {
        "--op": params["op"],
        "--only": params["only"],
        "--baseline": params["baseline"],
        "--fwd/--bwd/--mode": mode,
        "--precision": params["precision"],
        "--sm-count": params["sm_count"],
        "--input-id": params["input_id"],
        "--num-inputs": params["num_inputs"],
        "--tritonbench-json": params["tritonbench_json"],
        "--artifacts-only": params["artifacts_only"],
        "--host-artifacts": params["host_artifacts"],  # an op's artifact backends; a workload has none
        "--metrics": params["metrics"] != BENCH_DEFAULTS.metrics,
        "--artifact-timing": params["artifact_timing"] != BENCH_DEFAULTS.artifact_timing,
        "--compile-mode": params["compile_mode"] != BENCH_DEFAULTS.compile_mode,
    }


class Measuring(TypedDict):
    """How both benches compile and time (the keywords ``ktriage.api.bench`` and ``bench_recorded`` share)."""

    db: str | None
    timing: str
    l2_flush: bool
    max_time: float
    min_samples: int
    jobs: int | None
    compile_timeout: float
    gpus: str | None
