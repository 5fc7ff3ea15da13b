"""The options of ``ktriage bisect`` and ``ktriage bisect-step``, declared once (their help is the
user documentation: docs/cli.md is generated from it). Kept apart so the command module stays what
it does: parse, call the entry point, render."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypedDict

import typer

from ktriage.api import GPUS_HELP
from ktriage.cli.options import (
    Format,
    arch_option,
    format_option,
    jobs_option,
    one_toolchain,
    output_option,
    pick_mode,
    toolchain_option,
)

FORMATS = ("table", "markdown", "json")
WRITERS = (".md", ".json")

Source = Annotated[
    str,
    typer.Option(
        "--source",
        help="pypi:triton, pypi:<package> (e.g. liger-kernel; toolchain fixed), ptxas (frontend fixed by --toolchain), or git:PATH.",
    ),
]
Good = Annotated[str, typer.Option("--good", help="The last known good version / ptxas release / commit.")]
Bad = Annotated[str, typer.Option("--bad", help="The first known bad version / ptxas release / commit.")]
Metric = Annotated[
    str | None,
    typer.Option(
        "--metric",
        help="Compile-only: spill_store_bytes, spill_load_bytes, stack_bytes, registers, shared_bytes, ctas_per_sm, warps_per_sm, local_loads, local_stores, sass_instructions, sass:OPCODE; or latency (GPU time from --bundle).",
    ),
]
Command = Annotated[
    str | None,
    typer.Option(
        "--command", help="A script judged like `git bisect run`: exit 0 good, 125 skip, 1-127 bad, >=128 abort."
    ),
]
Op = Annotated[str | None, typer.Option("--op", help="A catalog op, e.g. liger.layer_norm.")]
Spec = Annotated[
    str | None,
    typer.Option("--spec", help="A spec TOML; with --source git a path inside the repository, read at each commit."),
]
Toolchain = Annotated[
    list[str] | None,
    toolchain_option(
        "Given once here: the fixed toolchain (ptxas and git sources, pypi:<package>); may use {checkout}, e.g. triton={checkout}/dist/*.whl."
    ),
]
Build = Annotated[
    str | None,
    typer.Option(
        "--build",
        help="git sources: a shell command run in each commit's checkout ('none': nothing to build). A failure skips the commit.",
    ),
]
FirstParent = Annotated[
    bool,
    typer.Option(
        "--first-parent",
        help="git sources: follow only the first parent (merge commits are candidates, merged branches are not).",
    ),
]
PinFile = Annotated[
    str | None,
    typer.Option(
        "--pin-file",
        help="A file that pins another repository's commit (e.g. cmake/llvm-hash.txt): if the culprit moves it, bisect inside that repository.",
    ),
]
PinRepo = Annotated[Path | None, typer.Option("--pin-repo", help="The local checkout of the pinned repository.")]
Workers = Annotated[
    int, typer.Option("--workers", min=1, help="Candidates tested per round, in parallel (k-ary search).")
]
Timeout = Annotated[
    float | None, typer.Option("--timeout", help="Seconds per command run; a timeout skips that candidate.")
]
BuildTimeout = Annotated[
    float, typer.Option("--build-timeout", help="Seconds per build; a timeout skips that candidate.")
]
State = Annotated[
    Path | None,
    typer.Option(
        "--state",
        help="The state file (default: under the ktriage home, named after the options). "
        "One given here that holds rounds is continued with --resume, never started over; one that holds another file is refused.",
    ),
]
Resume = Annotated[
    bool, typer.Option("--resume", help="Continue from the state file without re-testing what it holds.")
]
Pre = Annotated[bool, typer.Option("--pre", help="Include pre-releases in pypi/ptxas ranges.")]
Jobs = Annotated[int | None, jobs_option("Parallel compile workers (default: --workers).")]
Bundle = Annotated[
    Path | None,
    typer.Option("--bundle", help="--metric latency: the compile-here bundle of the candidate toolchains (GPU host)."),
]
Backend = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help="--metric latency: the artifact backend of the bundle to time (e.g. liger_layer_norm, liger_embedding).",
    ),
]
ArtifactTiming = Annotated[
    str,
    typer.Option(
        "--artifact-timing",
        help="--metric latency: what is timed: kernel (launches only, the default for toolchain comparisons), tritonbench or library.",
    ),
]
MaxSamples = Annotated[
    int,
    typer.Option(
        "--max-samples", min=10, help="--metric latency: samples per variant before a candidate is called unsure."
    ),
]
Threshold = Annotated[
    float, typer.Option("--threshold", help="--metric latency: the smallest relative change counted (0.05 = 5%).")
]
Gpus = Annotated[str | None, typer.Option("--gpus", help="--metric latency: " + GPUS_HELP)]
Fmt = Annotated[Format, format_option(FORMATS)]
Output = Annotated[list[Path] | None, output_option(WRITERS)]
Markdown = Annotated[Path | None, typer.Option("--markdown", help="Older spelling of -o PATH.md.")]
JsonPath = Annotated[Path | None, typer.Option("--json", help="Older spelling of -o PATH.json.")]
NoExplain = Annotated[bool, typer.Option("--no-explain", help="Skip the explain of culprit vs predecessor.")]
KeepCheckouts = Annotated[
    bool,
    typer.Option(
        "--keep-checkouts",
        help="git sources: keep every commit's checkout (default: only the culprit's and its predecessor's).",
    ),
]
StepBaseline = Annotated[
    Path | None,
    typer.Option(
        "--baseline",
        help="Judge the current checkout against this baseline (exit 0 good, 1 bad, 125 skip, 128 abort).",
    ),
]
StepRecordBaseline = Annotated[
    Path | None,
    typer.Option(
        "--record-baseline",
        help="Measure the current checkout and store it as the baseline's good (or --as bad) values.",
    ),
]
StepRole = Annotated[str, typer.Option("--as", help="With --record-baseline: good (default) or bad.")]
StepSpec = Annotated[str | None, typer.Option("--spec", help="A spec TOML, relative to the checkout.")]
StepOp = Annotated[str | None, typer.Option("--op", help="A catalog op.")]
StepMetric = Annotated[str | None, typer.Option("--metric", help="A compile metric (see ktriage bisect --help).")]
StepToolchain = Annotated[
    list[str] | None, toolchain_option("Given once here: the toolchain that compiles the checkout.")
]
StepArch = Annotated[str, arch_option("Default: the baseline's.")]


class BisectArgs(TypedDict):
    """The keywords of ``ktriage.api.bisect`` a ``ktriage bisect`` command line gives (all but ``say``)."""

    source: str
    good: str
    bad: str
    metric: str | None
    command: str | None
    op: str | None
    mode: str | None
    inputs: list[str]
    spec: str | None
    toolchain: str | None
    build: str | None
    first_parent: bool
    pin_file: str | None
    pin_repo: Path | None
    workers: int
    timeout: float | None
    build_timeout: float
    state: Path | None
    resume: bool
    pre: bool
    arch: str
    dtype: str | None
    jobs: int | None
    explain: bool
    keep_checkouts: bool
    cluster: str | None
    bundle: Path | None
    backend: str | None
    artifact_timing: str
    max_samples: int
    threshold: float
    gpus: str | None


def bisect_args(params: Mapping[str, Any]) -> BisectArgs:
    """The entry point's keywords from the command's parsed values (typer has checked their types):
    the pass from --mode/--fwd/--bwd, the one toolchain, --no-explain turned around."""
    p = params
    return BisectArgs(
        source=p["source"],
        good=p["good"],
        bad=p["bad"],
        metric=p["metric"],
        command=p["command"],
        op=p["op"],
        mode=pick_mode(p["mode"], fwd=p["fwd"], bwd=p["bwd"]),
        inputs=p["input"] or [],
        spec=p["spec"],
        toolchain=one_toolchain(p["toolchain"], "bisect"),
        build=p["build"],
        first_parent=p["first_parent"],
        pin_file=p["pin_file"],
        pin_repo=p["pin_repo"],
        workers=p["workers"],
        timeout=p["timeout"],
        build_timeout=p["build_timeout"],
        state=p["state"],
        resume=p["resume"],
        pre=p["pre"],
        arch=p["arch"],
        dtype=p["dtype"],
        jobs=p["jobs"],
        explain=not p["no_explain"],
        keep_checkouts=p["keep_checkouts"],
        cluster=p["cluster"],
        bundle=p["bundle"],
        backend=p["backend"],
        artifact_timing=p["artifact_timing"],
        max_samples=p["max_samples"],
        threshold=p["threshold"],
        gpus=p["gpus"],
    )
