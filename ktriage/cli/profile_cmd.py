"""`ktriage profile`: Nsight Compute counters of each toolchain's kernels from a bundle (GPU host).

The logic is in ktriage.profile (run: ncu per toolchain; ncu: the CSV parser; diff: deltas and
the sentence tying each to the compile side); this module parses options and prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ktriage.cli.console import make_console
from ktriage.cli.options import Db, Format, format_option, output_option, write_outputs

FORMATS = ("markdown", "json")
WRITERS = (".md", ".json")


def profile(
    bundle: Annotated[
        Path,
        typer.Option(
            "--bundle",
            help=(
                "A bundle (`ktriage bench --compile-only --bundle DIR`): every toolchain's kernels of one input are profiled."
            ),
        ),
    ],
    input_id: Annotated[
        int | None,
        typer.Option(
            "--input-id",
            "-i",
            help=("The bundle input to profile (its TritonBench input id). Default: the bundle's first."),
        ),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            help=("The artifact backend whose kernels run (liger_layer_norm, ...). Default: the bundle's first."),
        ),
    ] = None,
    raw_dir: Annotated[
        Path | None,
        typer.Option(
            "--raw-dir", help=("Where ncu's reports, CSV exports and logs go. Default: BUNDLE/profile-input<ID>/.")
        ),
    ] = None,
    ncu: Annotated[str | None, typer.Option("--ncu", help="The ncu executable. Default: ncu on PATH.")] = None,
    warmup: Annotated[int, typer.Option("--warmup", min=0, max=10_000, help="Calls before the profiled one.")] = 3,
    fmt: Annotated[Format, format_option(FORMATS)] = Format.markdown,
    output: Annotated[list[Path] | None, output_option(WRITERS, "Default: profile.json in the raw folder.")] = None,
    results: Annotated[
        Path | None,
        typer.Option(
            "--results",
            help=(
                "A results file of this bundle's timing (`ktriage bench --bundle DIR -o R.json`): each toolchain's counters go "
                "into its cell there (and into the store's copy of the run), next to the timings; compare and triage quote them."
            ),
        ),
    ] = None,
    db: Db = None,
) -> None:
    """Run Nsight Compute (ncu --clock-control none) on each toolchain's kernels of a bundle input, one call
    after warm-up, and diff occupancy, registers, local-memory (spill) traffic, atomics, DRAM/L2 traffic,
    warp stalls and instructions per kernel, each tied to the compile-side change in one sentence.

    Where ncu cannot run (no permission to the counters, no ncu) the toolchain's entry says why and the
    others go on. With --results, the counters also go into that results file and the store, next to
    the timings (docs/profile.md).

    Exit codes: 0 counters collected; 4 none could be collected (no ncu, ncu failed, no permission:
    the reasons are printed and no profile.json is written); 2 usage errors (an unknown --backend or
    --input-id, an --ncu that is no program, a --raw-dir or -o that cannot be written: all checked
    before ncu runs)."""
    import shutil

    from ktriage.cli import exit_codes
    from ktriage.cli.options import check_outputs, check_writable
    from ktriage.errors import KtriageError
    from ktriage.profile.diff import to_markdown
    from ktriage.profile.run import default_input, input_backends, profile_bundle
    from ktriage.workload.bundles.format import load_bundle

    check_outputs(list(output or []), WRITERS)
    if db is not None and results is None:
        raise KtriageError(
            "--db is where --results' run is updated, and no --results was given",
            "add --results R.json (the bundle's timing), or leave --db out",
        )
    if raw_dir is not None:
        check_writable(raw_dir, "--raw-dir", folder=True)
    if ncu is not None and shutil.which(ncu) is None:
        raise KtriageError(
            f"--ncu {ncu}: no such program (or not executable)",
            "give the path of Nsight Compute's ncu, e.g. /usr/local/cuda/bin/ncu, or put ncu on PATH",
        )
    loaded = load_bundle(bundle)
    if results is not None:  # a bad results file is refused before ncu runs, not after
        from ktriage.measure.results_file import read_results

        read_results(results)
    case_id = input_id if input_id is not None else default_input(loaded)
    names = input_backends(loaded, case_id)  # an unknown --input-id is refused here
    if backend is not None and backend not in names:
        raise KtriageError(
            f"--backend {backend!r}: input {case_id} of bundle {bundle} has no such backend",
            f"give one of: {', '.join(names)}",
        )
    folder = raw_dir or Path(loaded.path) / f"profile-input{case_id}"
    if raw_dir is None:
        check_writable(folder, "the raw folder (--raw-dir)", folder=True)
    doc = profile_bundle(bundle, input_id=case_id, backend=backend, out_dir=folder, ncu=ncu, warmup=warmup)
    if not any(info.get("launches") for info in (doc.get("toolchains") or {}).values()):
        from rich.markup import escape

        console = make_console(stderr=True)
        console.print("[bold red]incomplete:[/] no counters were collected for any toolchain; nothing written")
        for note in doc.get("notes") or ["ncu gave no launch of the profiled kernels"]:
            console.print(f"  {escape(str(note))}", soft_wrap=True, highlight=False)
        raise typer.Exit(exit_codes.INCOMPLETE)
    text = json.dumps(doc, indent=1)
    outputs = list(output or []) or [folder / "profile.json"]
    if fmt is Format.json:
        typer.echo(text)
    else:
        typer.echo(to_markdown(doc), nl=False)
    console = make_console(stderr=True)
    write_outputs(outputs, {".json": lambda: text + "\n", ".md": lambda: to_markdown(doc)}, console)
    if results is not None:
        from rich.markup import escape

        from ktriage.profile.attach import attach_to_results_file, attach_to_store

        run, cells, notes = attach_to_results_file(results, [doc], raw_dirs=[str(folder)])
        for note in notes:
            console.print(f"[yellow]note:[/] {escape(note)}")
        console.print(f"counters written into {escape(str(results))}")
        console.print(escape(attach_to_store(db, run, cells)))
