"""`ktriage bench W.json -t A -t B`: a recorded workload's kernels, every toolchain side by side.

The CLI half of ``ktriage.bench.recorded`` (options, progress, printing), called by
``ktriage.cli.bench_cmd`` when a workload file is given or ``--bundle`` holds a recorded workload:

- ``bench W.json -t A -t B --compile-only --bundle DIR`` compiles every (kernel, input) with every
  toolchain on this machine (no GPU);
- ``bench --bundle DIR`` (or ``bench W.json --bundle DIR``) measures it on the GPU host;
- ``bench W.json -t A -t B`` does both on a GPU host that has the toolchains.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from ktriage.cli.console import make_progress
from ktriage.cli.options import DEFAULT_COMPILE_TIMEOUT_S, Format, output_suffix, write_outputs
from ktriage.errors import KtriageError

if TYPE_CHECKING:
    from ktriage.measure.cells import Cell, RunInfo
    from ktriage.workload.bundles.format import Bundle
    from ktriage.workload.recorded.bundle import RecordedBundle


def refuse_op_options(given: Mapping[str, Any], what: str) -> None:
    """Options of op benches have no meaning for a recorded workload: refused, never ignored."""
    used = [name for name, value in given.items() if value not in (None, False, [], "")]
    if used:
        raise KtriageError(
            f"{', '.join(used)} do(es) not apply to {what}: its kernels, inputs, dtypes and grids are recorded",
            "drop the option(s); choose kernels with --kernel K3 and inputs with --input ID",
        )


def bench_workload(
    workload: str | None,
    *,
    loaded: Bundle | None,
    bundle: Path | None,
    toolchain: list[str] | None,
    kernels: list[str] | None,
    inputs: list[str] | None,
    compile_only: bool,
    arch: str,
    fmt: Format,
    outputs: list[Path],
    db: str | None,
    timing: str,
    no_l2_flush: bool,
    max_time: float,
    min_samples: int,
    jobs: int | None,
    console: Console,
    compile_timeout: float = DEFAULT_COMPILE_TIMEOUT_S,
    gpus: str | None = None,
) -> None:
    from ktriage.workload.recorded.bundle import load_recorded_bundle, recorded_view, workload_name

    if toolchain:
        if workload is None:
            raise KtriageError(
                "-t/--toolchain with --bundle and no workload: nothing to compile",
                "give the workload file: ktriage bench W.json -t A -t B --compile-only --bundle DIR",
            )
        recorded = _compile(workload, toolchain, kernels, inputs, bundle, arch, jobs, console, compile_timeout)
        kernels = inputs = None  # the bundle holds the selection
    elif bundle is not None:
        recorded = recorded_view(loaded) if loaded is not None else load_recorded_bundle(bundle)
        if workload is not None and workload_name(workload) != recorded.name:
            raise KtriageError(
                f"bundle {bundle} holds workload {recorded.name}, not {workload_name(workload)}",
                f"give the bundle of {workload}, or build one: ktriage bench {workload} -t A -t B --compile-only --bundle DIR",
            )
    elif workload is None:
        raise KtriageError(
            "--kernel without a workload or a bundle", "give the workload: ktriage bench W.json -t A -t B --kernel K3"
        )
    else:
        raise KtriageError(
            f"nothing to measure {workload} with: no toolchain and no bundle",
            f"compile it: ktriage bench {workload} -t A -t B (add --compile-only --bundle DIR on a CPU machine)",
        )
    if compile_only:
        return
    entries = recorded.select(kernels, inputs)
    from ktriage.api import require_torch

    require_torch()
    from ktriage.measure.gpus import host_gpus

    placed = host_gpus(gpus)
    _measure_and_report(
        recorded,
        entries,
        fmt=fmt,
        outputs=outputs,
        db=db,
        timing=timing,
        no_l2_flush=no_l2_flush,
        max_time=max_time,
        min_samples=min_samples,
        console=console,
        gpus=placed,
    )


def _compile(
    workload: str,
    toolchain: list[str],
    kernels: list[str] | None,
    inputs: list[str] | None,
    bundle: Path | None,
    arch: str,
    jobs: int | None,
    console: Console,
    compile_timeout: float,
) -> RecordedBundle:
    from ktriage.cli.resolve import resolve_toolchains
    from ktriage.compile.compiler import Compiler
    from ktriage.home import home_subdir
    from ktriage.record.workload import is_workload_path, load_workload
    from ktriage.workload.recorded.bundle import (
        build_recorded_bundle,
        load_recorded_bundle,
        workload_entries,
        workload_name,
    )

    if not is_workload_path(workload):
        raise KtriageError(
            f"{workload} is not a recorded workload (a .json file from `ktriage record`, or its journal)",
            "give W.json written by `ktriage record -o W.json -- COMMAND`, or bench an op with --op",
        )
    wl = load_workload(workload).require_kernels(workload)
    targets = sorted({i.spec.target for k in wl.kernels for i in k.inputs})
    if targets and arch not in targets:
        raise KtriageError(
            f"--arch {arch} does not apply to {workload}: it was recorded on {', '.join(targets)}",
            "drop --arch (the workload's kernels are compiled for the GPU they were recorded on)",
        )
    n = len(workload_entries(wl, kernels, inputs))
    with make_progress(console) as progress:
        tcs = resolve_toolchains(toolchain, progress)
        name = workload_name(workload)
        out = bundle or home_subdir("bundles") / f"wl-{name}-{'-'.join(t.id.split('.')[0] + t.id[-8:] for t in tcs)}"
        progress.add_task(f"compiling {n} kernel input(s) x {len(tcs)} toolchain(s)", total=None)
        with Compiler(jobs=jobs, timeout_s=compile_timeout) as compiler:
            path = build_recorded_bundle(wl, tcs, Path(out), compiler=compiler, kernels=kernels, inputs=inputs)
    recorded = load_recorded_bundle(path)
    failures = [a for a in recorded.bundle.artifacts.values() if not hasattr(a, "cubin_path")]
    console.print(
        f"bundle: {escape(str(path))} ({len(recorded.entries)} kernel inputs, "
        f"{len(recorded.bundle.artifacts) - len(failures)} kernels, {len(failures)} failed compiles)"
    )
    console.print(f"measure it on the GPU machine: ktriage bench --bundle {escape(str(path))}")
    return recorded


def _measure_and_report(
    recorded: RecordedBundle,
    entries: list[Any],
    *,
    fmt: Format,
    outputs: list[Path],
    db: str | None,
    timing: str,
    no_l2_flush: bool,
    max_time: float,
    min_samples: int,
    console: Console,
    gpus: list[int] | None = None,
) -> None:
    import typer

    from ktriage.bench.plan import RecordedPlan
    from ktriage.bench.recorded import run_recorded, summary_rows
    from ktriage.report.bench import print_table, to_csv, to_json, to_markdown

    tcs = list(recorded.bundle.toolchains)
    plan = RecordedPlan(
        bundle=str(recorded.bundle.path),
        name=recorded.name,
        entries=[e.id for e in entries],
        toolchains=tcs,
        timing={"mode": timing, "l2_flush": not no_l2_flush},
        min_samples=min_samples,
        max_time_s=max_time,
    )
    json_outputs = [p for p in outputs if output_suffix(p) == ".json"]
    with make_progress(console) as progress:
        task = progress.add_task(f"{recorded.name}: kernel inputs", total=len(entries))

        def on_cell(cell: Cell) -> None:
            if cell.status != "ok":
                console.print(
                    f"[red]{cell.status}[/] {escape(cell.key.label())}: {escape(str(cell.error or '')[:200])}"
                )

        run, cells = run_recorded(
            plan,
            entries,
            store_url=db,
            results_path=json_outputs[0] if json_outputs else None,
            toolchains=list(recorded.bundle.toolchains.values()),
            on_cell=on_cell,
            on_entry_done=lambda _e: progress.advance(task),
            gpus=gpus,
        )
    rows = summary_rows(cells, tcs[0] if tcs else None)
    title = f"{recorded.name} (recorded workload)"
    writers = {
        ".csv": lambda: to_csv(rows),
        ".md": lambda: to_markdown(rows, title),
        ".json": lambda: to_json(run, cells),
    }
    if fmt == Format.table:
        print_table(rows, console, title=title)
    else:
        typer.echo(writers[{Format.csv: ".csv", Format.markdown: ".md"}.get(fmt, ".json")](), nl=False)
    write_outputs(outputs, writers, console)
    if len(tcs) > 1:
        _print_verdicts(run, cells, console)
    console.print(f"run {escape(run.run_id)} stored; `ktriage runs show {run.run_id}`")


def _print_verdicts(run: RunInfo, cells: list[Cell], console: Console) -> None:
    from ktriage.compare.pairing import compare_toolchains
    from ktriage.compare.report import CompareReport
    from ktriage.report.markdown import to_markdown

    comparisons = compare_toolchains(cells, run=run, baseline=None, default_baselines={})
    console.print(to_markdown(CompareReport(comparisons)), markup=False, highlight=False)
