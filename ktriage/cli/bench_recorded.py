"""`ktriage bench W.json -t A -t B`: a recorded workload's kernels, every toolchain side by side.

Called by ``ktriage.cli.bench_cmd`` when a workload file is given or ``--bundle`` holds a recorded
workload: refuses the op benches' options, calls :func:`ktriage.api.bench_recorded` (which checks
the rest, compiles and measures) and renders its report:

- ``bench W.json -t A -t B --compile-only --bundle DIR`` compiles every (kernel, input) with every
  toolchain on this machine (no GPU);
- ``bench --bundle DIR`` (or ``bench W.json --bundle DIR``) measures it on the GPU host;
- ``bench W.json -t A -t B`` does both on a GPU host that has the toolchains.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from ktriage.api import BenchReport, RecordedBenchReport, bench_recorded
from ktriage.cli.bench_options import Measuring
from ktriage.cli.console import make_progress
from ktriage.cli.options import Format, emit, output_suffix, refuse_inapplicable
from ktriage.errors import KtriageError


def refuse_op_options(given: Mapping[str, Any], what: str) -> None:
    """Options of op benches have no meaning for a recorded workload: refused, never ignored."""
    refuse_inapplicable(
        given,
        f"{what}: its kernels, inputs, dtypes and grids are recorded",
        "leave out every option named; choose kernels with --kernel K3 and inputs with --input ID",
    )


def refuse_profile(profile: bool) -> None:
    """``--profile`` runs Nsight Compute over an op bench's artifact backends after the timing; a recorded
    workload's bench has no such step (``bench_recorded`` takes no profile), so ``bench W.json -t A -t B
    --profile`` timed and exited 0 with no counters. Refused before anything runs (before the compile-only
    check too, whose fix would say ``bench --bundle DIR --profile``: refused again there), pointing at
    ``ktriage profile``, which profiles a recorded bundle entry by entry."""
    if profile:
        raise KtriageError(
            "--profile does not apply to a recorded workload's bench: it has no profiling step, so nothing "
            "would be profiled",
            "drop --profile, and run Nsight Compute over the recorded bundle on the GPU host: ktriage profile "
            "--bundle DIR (-i picks the entry; the bundle: ktriage bench W.json -t OLD -t NEW --compile-only "
            "--bundle DIR)",
        )


def bench_workload(
    workload: str | None,
    *,
    bundle: Path | None,
    toolchain: list[str] | None,
    kernels: list[str] | None,
    inputs: list[str] | None,
    compile_only: bool,
    arch: str | None,
    fmt: Format,
    outputs: list[Path],
    console: Console,
    measuring: Measuring,
    existed: Collection[Path] = (),
) -> None:
    json_outputs = [p for p in outputs if output_suffix(p) == ".json"]
    with make_progress(console):
        report = bench_recorded(
            workload=workload,
            bundle=bundle,
            toolchains=toolchain or (),
            kernels=kernels,
            inputs=inputs,
            compile_only=compile_only,
            arch=arch,
            results_path=json_outputs[0] if json_outputs else None,
            **measuring,
            say=lambda m: console.print(escape(m)),
        )
    render(report, fmt, outputs, console, verdicts=len(report.toolchains) > 1, existed=existed)


def render(
    report: BenchReport | RecordedBenchReport,
    fmt: Format,
    outputs: list[Path],
    console: Console,
    *,
    verdicts: bool,
    tritonbench_json: Path | None = None,
    existed: Collection[Path] = (),
) -> None:
    """Both benches' rendering: the results through emit(), the TritonBench JSON (an operator bench's),
    the toolchains' verdicts when more than one was timed, and the stored run. Nothing for compile-only."""
    if report.run is None:  # compile-only: the bundle is the result
        return
    writers = {".csv": report.to_csv, ".md": report.to_markdown, ".json": report.json_text}
    emit(fmt, writers, lambda: report.print_table(console), outputs, console, existed=existed)
    if tritonbench_json is not None and isinstance(report, BenchReport):
        for path in report.write_tritonbench_json(tritonbench_json):
            console.print(f"wrote {escape(str(path))} (TritonBench JSON)")
    if verdicts:
        console.print(report.verdicts_markdown(), markup=False, highlight=False)
    console.print(f"run {escape(report.run.run_id)} stored; `ktriage runs show {report.run.run_id}`")
