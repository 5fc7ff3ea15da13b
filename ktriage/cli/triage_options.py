"""The options of ``ktriage triage``, declared once (their help is the user documentation: docs/cli.md
is generated from it). Kept apart so the command module stays what it does: parse, call
``ktriage.api.triage`` (or ``--run``), render."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypedDict

import typer

from ktriage.cli.options import Format, arch_option, format_option, output_option

FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json", ".html")

Old = Annotated[
    str | None,
    typer.Argument(
        help="The old side: a TritonBench CSV (run.py --csv --output F), a TritonBench JSON (--output-json), a ktriage results file, or a run id in the store (--db). The same results file as OLD and NEW: its two toolchains timed side by side are the two sides.",
        show_default=False,
    ),
]
New = Annotated[str | None, typer.Argument(help="The new side, in any of the same formats.", show_default=False)]
OldToolchain = Annotated[
    str | None,
    typer.Option(
        "--old-toolchain",
        help="Toolchain spec of the old side, e.g. triton==3.3.1 (default: from the file, when it says).",
    ),
]
NewToolchain = Annotated[
    str | None,
    typer.Option(
        "--new-toolchain",
        help="Toolchain spec of the new side, e.g. triton==3.4.0 (default: from the file, when it says).",
    ),
]
ARCH = "sm_90"
Arch = Annotated[
    str | None,
    arch_option("Default: sm_90. Not with --run, which benches what the program launched on this GPU."),
]
"""None when not given: --run refuses any --arch, sm_90 spelt out too (only another value was refused)."""

Threshold = Annotated[
    float, typer.Option("--threshold", help="The gate in percent: cells that moved less are not flagged.")
]
Op = Annotated[
    str | None,
    typer.Option(
        "--op", help="The operator of a TritonBench CSV whose file name does not say it (layer_norm_bwd.csv does)."
    ),
]
NoBisect = Annotated[bool, typer.Option("--no-bisect", help="Skip the compile-only bisect of the regressions.")]
NoFixes = Annotated[bool, typer.Option("--no-fixes", help="Skip `explain --fixes` for the regressions.")]
Jobs = Annotated[
    int | None, typer.Option("--jobs", "-j", min=1, max=1024, help="Parallel compiles (default: CPU count).")
]
Fmt = Annotated[Format, format_option(FORMATS)]
Output = Annotated[
    list[Path] | None,
    output_option(WRITERS, "The markdown is also appended to $GITHUB_STEP_SUMMARY when set; .html is self-contained."),
]
Bundle = Annotated[
    Path | None,
    typer.Option(
        "--bundle",
        help="Write a bench bundle of the flagged cells here (both toolchains compiled; no GPU needed) and print the one command that re-measures them side by side on the GPU host.",
    ),
]
Measured = Annotated[
    list[str] | None,
    typer.Option(
        "--measured",
        help="Read the GPU re-run back: the results files of the bundle's bench, or the bundle folder (its results/); repeatable. Each flagged cell gets a measured verdict.",
    ),
]
Measure = Annotated[
    bool,
    typer.Option(
        "--measure",
        help="On a GPU host: bundle the flagged cells and re-measure them side by side in this process (--bundle DIR keeps the bundle there).",
    ),
]
Limit = Annotated[
    int | None,
    typer.Option(
        "--limit", help="Bundle at most this many flagged cells for the GPU re-run, worst first (default: all)."
    ),
]
MaxTime = Annotated[
    float | None,
    typer.Option(
        "--max-time",
        help="The GPU re-run (--bundle, --measure, --run): seconds of sampling per input at most (default: 5).",
        show_default=False,
    ),
]
SmCount = Annotated[
    int | None,
    typer.Option(
        "--sm-count",
        help="SMs to price the flagged cells for and to build the GPU re-run's bundle for (default: the GPU a results file was recorded on, else the arch's usual GPU; with --run, this GPU's).",
    ),
]
Run = Annotated[
    str | None,
    typer.Option(
        "--run",
        help='On a GPU host, from a program to the report in one command: record CMD (one string, e.g. "python train.py --steps 3"), compile it with --old-toolchain and --new-toolchain, bench both side by side, compare, explain, bisect (releases), fix; each step timed in the report. No OLD/NEW then.',
    ),
]
Workdir = Annotated[
    Path | None,
    typer.Option(
        "--workdir",
        help="--run: the folder for the workload (PROGRAM.workload.json), the bundle, results.json, report.md and report.json (default: ktriage-run-DATE-TIME here).",
    ),
]
Workload = Annotated[
    list[str] | None,
    typer.Option(
        "--workload",
        help="A recorded workload (W.json from `ktriage record` of the TritonBench run): flagged cells whose backend has no catalog kernels get their kernels from it, matched by shape, explained compile-side and bundled; repeatable.",
    ),
]


def run_refusals(params: Mapping[str, Any]) -> dict[str, object]:
    """The two-sides options as given (``params``: the command's parsed values), by flag: --run refuses each one set."""
    p = params
    return {
        "OLD/NEW": p["old"] or p["new"],
        "--op": p["op"],
        "--mode": p["mode"],
        "--bundle": p["bundle"],
        "--measure": p["measure"],
        "--measured": p["measured"] or None,
        "--workload": p["workload"] or None,
        "--limit": p["limit"],
        "--arch": p["arch"],
        "--allow-precision-mismatch": p["allow_precision_mismatch"],
    }


class TriageArgs(TypedDict):
    """The keywords of ``ktriage.api.triage`` a two-sides command line gives (all but ``say``)."""

    old: str
    new: str
    old_toolchain: str | None
    new_toolchain: str | None
    threshold: float
    arch: str
    op: str | None
    mode: str | None
    bisect: bool
    fixes: bool
    jobs: int | None
    bundle: Path | None
    measure: bool
    measured: list[Path]
    limit: int | None
    max_time: float | None
    db: str | None
    workloads: list[Path]
    allow_precision_mismatch: bool
    model: Path | None
    sm_count: int | None


def triage_args(params: Mapping[str, Any]) -> TriageArgs:
    """The entry point's keywords from the command's parsed values: --threshold from percent to a
    fraction, the pass's name, --no-bisect and --no-fixes turned around."""
    from ktriage.api import check_percent_gate

    p = params
    return TriageArgs(
        old=p["old"],
        new=p["new"],
        old_toolchain=p["old_toolchain"],
        new_toolchain=p["new_toolchain"],
        threshold=check_percent_gate(p["threshold"]),
        arch=p["arch"] or ARCH,
        op=p["op"],
        mode=p["mode"].value if p["mode"] else None,
        bisect=not p["no_bisect"],
        fixes=not p["no_fixes"],
        jobs=p["jobs"],
        bundle=p["bundle"],
        measure=p["measure"],
        measured=list(p["measured"] or ()),
        limit=p["limit"],
        max_time=p["max_time"],
        db=p["db"],
        workloads=list(p["workload"] or ()),
        allow_precision_mismatch=p["allow_precision_mismatch"],
        model=p["model"],
        sm_count=p["sm_count"],
    )
