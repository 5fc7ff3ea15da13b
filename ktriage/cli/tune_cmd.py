"""`ktriage tune`: spill- and occupancy-aware configs for one kernel launch.

Parses the flags, calls :func:`ktriage.api.tune` (which checks them and runs the verb) and renders
its report; the flags' declarations are in ``tune_options``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from rich.console import Console
from rich.markup import escape

from ktriage.api import DEFAULT_COMPILE_TIMEOUT_S
from ktriage.api import tune as tune_api
from ktriage.cli import options as opt
from ktriage.cli import tune_options as o
from ktriage.cli.console import make_console, make_progress, say_compiles_kept
from ktriage.cli.options import Format
from ktriage.errors import in_flags


def tune(
    target: o.Target,
    toolchain: o.Toolchains,
    input: o.Inputs = None,
    input_id: opt.InputId = None,
    num_inputs: opt.NumInputs = None,
    arch: opt.SpecArch = None,
    mode: opt.ModeOpt = None,
    fwd: opt.Fwd = False,
    bwd: opt.Bwd = False,
    precision: opt.Precision = None,
    sm_count: o.SmCount = None,
    compile_only: o.CompileOnly = False,
    top_k: o.TopK = 5,
    max_spill_bytes: o.MaxSpillBytes = 0,
    budget: o.Budget = 10.0,
    warps: o.Warps = None,
    stages: o.Stages = None,
    block: o.Block = None,
    bundle: o.BundleDir = None,
    compare_with: o.CompareWith = None,
    results_file: o.ResultsFile = None,
    fmt: Annotated[Format, opt.format_option(o.FORMATS)] = Format.table,
    output: Annotated[
        list[Path] | None, opt.output_option(o.WRITERS, ".md: the tables as markdown; .json: the whole report.")
    ] = None,
    all_rows: o.AllRows = False,
    jobs: Annotated[int | None, opt.jobs_option("Parallel compiles (default: CPU count).")] = None,
    cluster: opt.Cluster = None,
    compile_timeout: opt.CompileTimeout = DEFAULT_COMPILE_TIMEOUT_S,
    model: opt.Model = None,
) -> None:
    """Find a config that does not spill and fits the grid: enumerate num_warps, num_stages and the
    declared block sizes, compile all on the CPU, screen by spills, occupancy and a roofline estimate,
    then time the best few on the GPU against the library's own config."""
    opt.check_outputs(output or [], o.WRITERS, inputs=[target])
    console = make_console(stderr=fmt != Format.table)
    warp_list, stage_list, block_lists = (
        o.ints(warps, "--warps"),
        o.ints(stages, "--stages", example="1,3"),
        o.blocks(block),
    )
    with say_compiles_kept(), make_progress(console):
        report = tune_api(
            target=target,
            toolchains=[*toolchain, *(compare_with or [])] if toolchain else [],
            mode=opt.pick_mode(mode, fwd=fwd, bwd=bwd),
            inputs=input,
            input_id=input_id,
            num_inputs=num_inputs,
            arch=arch,
            precision=precision,
            sm_count=sm_count,
            compile_only=compile_only,
            top_k=top_k,
            max_spill_bytes=max_spill_bytes,
            budget=budget,
            warps=warp_list,
            stages=stage_list,
            blocks=block_lists,
            bundle=bundle,
            results_file=results_file,
            jobs=jobs,
            cluster=cluster,
            compile_timeout=compile_timeout,
            model=model,
        )
        print_notes(report.notes, console)
        if fmt == Format.json:  # the JSON has their facts only; the table and the markdown carry the sentences
            report.print_warnings(console)
    writers = {".json": report.json_text, ".md": lambda: report.to_markdown(show_all=all_rows)}
    opt.emit(fmt, writers, lambda: report.print_table(console, show_all=all_rows), output, make_console(stderr=True))


def print_notes(notes: Sequence[tuple[str, str]], console: Console) -> None:
    """The timing step's notes (no GPU here: the command to time the bundle on one), warnings in yellow,
    each option named by its flag (``--results PATH``), as the command takes it."""
    for level, note in notes:
        text = in_flags(note)
        if level == "warn":
            head, _, rest = text.partition(":")
            console.print(f"[yellow]{escape(head)}:[/]{escape(rest)}")
        else:
            console.print(escape(text))
