"""`ktriage tune`: spill- and occupancy-aware configs for one kernel launch (logic in ktriage.tune)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from ktriage.catalog.resolve import select_input_range, spec_input_id
from ktriage.cli.console import make_console, make_progress
from ktriage.cli.options import (
    DEFAULT_COMPILE_TIMEOUT_S,
    Bwd,
    Cluster,
    CompileTimeout,
    Format,
    Fwd,
    InputId,
    ModeOpt,
    NumInputs,
    Precision,
    SpecArch,
    format_option,
    input_option,
    jobs_option,
    output_option,
    pick_mode,
    toolchain_option,
    write_outputs,
)
from ktriage.cli.resolve import resolve_specs, resolve_toolchains
from ktriage.compile.compiler import Compiler
from ktriage.compile.remote import ClusterCompiler
from ktriage.errors import KtriageError
from ktriage.spec.model import input_label

if TYPE_CHECKING:
    from ktriage.toolchain.manager import Toolchain
    from ktriage.tune.screen import ScreenResult


def _ints(text: str | None, what: str) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise KtriageError(
            f"{what} {text!r} is not a comma-separated list of integers", f"write e.g. {what} 4,8,16"
        ) from exc


def _blocks(items: list[str] | None) -> dict[str, list[int]] | None:
    if not items:
        return None
    out: dict[str, list[int]] = {}
    for item in items:
        name, sep, vals = item.partition("=")
        if not sep:
            raise KtriageError(f"--block {item!r} has no '='", "write e.g. --block BLOCK_SIZE=8192,16384")
        out[name.strip()] = _ints(vals, "--block") or []
    return out


FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json")


def tune(
    target: Annotated[
        str,
        typer.Argument(
            help="A catalog op (e.g. liger.layer_norm), a spec .toml file, or a workload .json recorded by `ktriage record`."
        ),
    ],
    toolchain: Annotated[
        list[str],
        toolchain_option(
            "The first is the toolchain tuned for; the others are timed with the library's own config on the GPU (e.g. the release before a regression)."
        ),
    ],
    input: Annotated[
        list[str] | None, input_option("Each input is tuned on its own, all are timed in one GPU run.")
    ] = None,
    input_id: InputId = None,
    num_inputs: NumInputs = None,
    arch: SpecArch = None,
    mode: ModeOpt = None,
    fwd: Fwd = False,
    bwd: Bwd = False,
    precision: Precision = None,
    sm_count: Annotated[
        int | None, typer.Option("--sm-count", help="SM count for grids and waves (default: the arch's usual GPU).")
    ] = None,
    compile_only: Annotated[
        bool, typer.Option("--compile-only", help="Stop after compile-only screening (no GPU needed).")
    ] = False,
    top_k: Annotated[int, typer.Option("--top-k", help="Candidates kept after screening (and timed on the GPU).")] = 5,
    max_spill_bytes: Annotated[
        int,
        typer.Option(
            "--max-spill-bytes",
            help="Drop configs whose ptxas spill store bytes exceed this (stack size is not spills).",
        ),
    ] = 0,
    budget: Annotated[
        float, typer.Option("--budget", help="GPU seconds for timing the kept candidates (all together).")
    ] = 10.0,
    warps: Annotated[str | None, typer.Option("--warps", help="Only these num_warps, e.g. 4,8,16.")] = None,
    stages: Annotated[str | None, typer.Option("--stages", help="Only these num_stages, e.g. 1,3.")] = None,
    block: Annotated[
        list[str] | None,
        typer.Option("--block", help="Only these values of a block knob, e.g. BLOCK_SIZE=8192. Repeatable."),
    ] = None,
    bundle: Annotated[
        Path | None,
        typer.Option("--bundle", help="Where to write the timing bundle (default: under the ktriage home)."),
    ] = None,
    compare_with: Annotated[
        list[str] | None, typer.Option("--compare-with", help="Older spelling of a second, third... -t.")
    ] = None,
    results_file: Annotated[
        Path | None,
        typer.Option(
            "--results",
            help="A `ktriage bench --output-json` file of this tune bundle: report the winner (per input) from it.",
        ),
    ] = None,
    fmt: Annotated[Format, format_option(FORMATS)] = Format.table,
    output: Annotated[
        list[Path] | None, output_option(WRITERS, ".md: the tables as markdown; .json: the whole report.")
    ] = None,
    all_rows: Annotated[
        bool, typer.Option("--all", help="Show every candidate in the table, not only the kept ones.")
    ] = False,
    jobs: Annotated[int | None, jobs_option("Parallel compiles (default: CPU count).")] = None,
    cluster: Cluster = None,
    compile_timeout: CompileTimeout = DEFAULT_COMPILE_TIMEOUT_S,
) -> None:
    """Find a config that does not spill and fits the grid: enumerate num_warps, num_stages and the
    declared block sizes, compile all on the CPU, screen by spills, occupancy and a roofline estimate,
    then time the best few on the GPU against the library's own config."""
    from ktriage.record.workload import is_workload_path
    from ktriage.report.tune import print_report, to_json_text, to_markdown
    from ktriage.tune.scaling import scale_blocks
    from ktriage.tune.screen import screen
    from ktriage.tune.space import config_space

    outputs = list(output or [])
    console = make_console(stderr=fmt != Format.table)
    if not toolchain:
        raise KtriageError("no --toolchain given", "pass the toolchain to tune for, e.g. -t triton==3.4.0")
    specs = resolve_specs(
        target,
        mode=pick_mode(mode, fwd=fwd, bwd=bwd),
        inputs=input,
        target_arch=arch,
        dtype=precision,
        sm_count=sm_count,
        sm_count_beyond_specs=True,
    )
    specs = select_input_range(specs, input_id, num_inputs, spec_input_id)
    if len(specs) > 1 and not input and input_id is None and num_inputs is None:
        raise KtriageError(
            f"{target} has {len(specs)} inputs and tune tunes each one: choose them",
            "pass --input for each, e.g. " + " ".join(f"--input {input_label(s.meta, s.name)}" for s in specs[:2]),
        )
    spaces = [
        config_space(spec, warps=_ints(warps, "--warps"), stages=_ints(stages, "--stages"), blocks=_blocks(block))
        for spec in specs
    ]
    with make_progress(console) as progress:
        tc, *others = resolve_toolchains([*toolchain, *(compare_with or [])], progress)
        task = progress.add_task("compiling candidates", total=None)
        from ktriage.execute.select import remote_executor

        executor = remote_executor(cluster)
        with ClusterCompiler(jobs=jobs, timeout_s=compile_timeout, executor=executor) as compiler:
            results = [
                screen(
                    space,
                    tc,
                    compiler,
                    top_k=top_k,
                    max_spill_bytes=max_spill_bytes,
                    sm_count=sm_count,
                    on_done=lambda _o: progress.advance(task),
                )
                for space in spaces
            ]
            scalings = [
                scale_blocks(space.spec, tc, compiler, space=space, sm_count=sm_count, max_spill_bytes=max_spill_bytes)
                for space in spaces
            ]
            timings: Sequence[dict[str, Any] | None] = [None] * len(results)
            if not compile_only and any(r.kept for r in results):
                recorded = Path(target) if is_workload_path(target) and Path(target).is_file() else None
                timings = _time_on_gpu(
                    results, compiler, bundle, budget, results_file, sm_count, console, others, workload=recorded
                )
    if fmt == Format.json:
        typer.echo(to_json_text(results, scalings, timings), nl=False)
    elif fmt == Format.markdown:
        typer.echo(to_markdown(results, scalings, timings, show_all=all_rows), nl=False)
    else:
        print_report(results, scalings, timings, console, show_all=all_rows)
    write_outputs(
        outputs,
        {
            ".json": lambda: to_json_text(results, scalings, timings),
            ".md": lambda: to_markdown(results, scalings, timings, show_all=all_rows),
        },
        make_console(stderr=True),
    )


def _time_on_gpu(
    results: Sequence[ScreenResult],
    compiler: Compiler,
    bundle: Path | None,
    budget: float,
    results_file: Path | None,
    sm_count: int | None,
    console: Console,
    others: Sequence[Toolchain] = (),
    workload: Path | None = None,
) -> list[dict[str, Any]]:
    """Time the kept candidates (:func:`ktriage.tune.timing_run.time_candidates`) and print its notes."""
    from ktriage.tune.timing_run import time_candidates

    run = time_candidates(
        results,
        compiler,
        bundle=bundle,
        budget=budget,
        results_file=results_file,
        sm_count=sm_count,
        others=others,
        workload=workload,
    )
    for level, text in run.notes:
        if level == "warn":
            head, _, rest = text.partition(":")
            console.print(f"[yellow]{escape(head)}:[/]{escape(rest)}")
        else:
            console.print(escape(text))
    return run.timings
