"""``ktriage.api.bench_recorded(workload=..., toolchains=[...], ...) -> RecordedBenchReport``: a
recorded workload's kernels (``ktriage record``), every toolchain side by side (docs/record.md).

- ``toolchains`` given: compile every (kernel, input) with every toolchain into a bundle (no GPU);
- ``bundle`` given without toolchains: measure that bundle (the GPU host);
- both steps unless ``compile_only``.

Why an entry point: the CLI built the compiler, the bundle and the measuring plan itself, so a GPU
job script had no way to bench a recorded workload but the command line. ``ktriage bench W.json``
parses its flags, calls :func:`bench_recorded` and renders the report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ktriage import progress
from ktriage.api import _args as args
from ktriage.api._bench import (
    BENCH_DEFAULTS,
    refuse_compiling_options,
    refuse_what_compile_only_ignores,
    require_gpu_before_compiling,
)
from ktriage.api._toolchains import resolve_toolchains
from ktriage.api.paths import check_writable
from ktriage.brief import brief
from ktriage.errors import KtriageError, joined, option, run_as, spelled, worded
from ktriage.explain.session import DEFAULT_COMPILE_TIMEOUT_S
from ktriage.mdsafe import markdown_writer
from ktriage.measure.cells import Cell, RunInfo
from ktriage.record.workload import is_workload_path as is_workload_path  # ktriage.api.is_workload_path
from ktriage.record.workload import refuse_trace_name
from ktriage.report.bench import BenchRenders
from ktriage.wording import plural

if TYPE_CHECKING:
    from ktriage.workload.recorded.bundle import RecordedBundle

Say = Callable[[str], None]
__all__ = ["RecordedBenchReport", "bench_recorded"]


@dataclass(frozen=True)
class RecordedBenchReport(BenchRenders):
    """A recorded workload's bench: the bundle compiled or read, and, unless ``compile_only``, the
    run and its cells (one per kernel input and toolchain, every sample kept). The renderers are
    ``ktriage bench W.json``'s; :meth:`verdicts_markdown` compares the toolchains (more than one)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    name: str
    bundle: Path
    toolchains: list[str]  # ids, the reference first
    run: RunInfo | None = None  # None: compile_only (nothing measured)
    cells: list[Cell] = field(default_factory=list)
    measure_hint = "measure the bundle: bench_recorded(bundle=...)"

    @property
    def title(self) -> str:
        return f"{self.name} (recorded workload)"

    def table_rows(self) -> list[dict[str, str]]:
        from ktriage.bench.recorded import summary_rows

        return summary_rows(self.cells, self.toolchains[0] if self.toolchains else None)

    @markdown_writer
    def verdicts_markdown(self) -> str:
        """Each toolchain against the reference, cell by cell (what ``compare`` says of the run)."""
        from ktriage.compare.pairing import compare_toolchains
        from ktriage.compare.report import CompareReport
        from ktriage.report.markdown import to_markdown

        if self.run is None:
            return ""
        comparisons = compare_toolchains(self.cells, run=self.run, baseline=None, default_baselines={})
        return to_markdown(CompareReport(comparisons))


@args.entry_point
def bench_recorded(
    *,
    workload: str | Path | None = None,
    bundle: str | Path | None = None,
    toolchains: Sequence[str] = (),
    kernels: Sequence[str] | None = None,
    inputs: int | Sequence[str | int] | None = None,
    compile_only: bool = False,
    arch: str | None = None,
    results_path: str | Path | None = None,
    db: str | None = None,
    timing: str = BENCH_DEFAULTS.timing,
    l2_flush: bool = True,
    max_time: float = BENCH_DEFAULTS.max_time,
    min_samples: int = BENCH_DEFAULTS.min_samples,
    jobs: int | None = None,
    compile_timeout: float = DEFAULT_COMPILE_TIMEOUT_S,
    gpus: str | None = None,
    say: Say | None = None,
) -> RecordedBenchReport:
    """Bench ``workload`` (W.json from ``ktriage record``, or its journal) with every toolchain, or
    measure ``bundle`` (a recorded workload's bundle built elsewhere). ``kernels`` (K3 or a function
    name) and ``inputs`` narrow it; ``results_path``: where the results file is written as cells come.
    ``say``: the steps' messages (the bundle written, a failed cell).

    Raises :class:`~ktriage.errors.KtriageError` (naming the fix) for a bad argument, before any
    toolchain is built: with ``compile_only``, ``results_path``, ``timing``, ``l2_flush``, ``max_time``,
    ``min_samples`` or ``gpus`` off its default; measuring a ``bundle``, ``jobs`` or ``compile_timeout``. A lone str where a list goes is one item (``kernels="K3"``); ``arch`` takes
    every spelling ``--arch`` does."""
    from ktriage.workload.recorded.bundle import load_recorded_bundle, workload_name

    say = args.callback(say, "say")
    compile_only = args.switch(compile_only, "compile_only", "--compile-only")
    l2_flush = args.switch(l2_flush, "l2_flush", "--no-l2-flush")

    workload = args.path_or_name(workload, "workload", "W.json") if workload is not None else None
    if workload is not None:
        require_workload_path(workload)
    toolchains = args.texts(toolchains, "toolchains", "-t/--toolchain")
    # one-string arguments: bundle=[...] was a TypeError from pathlib
    bundle, results_path = (
        args.optional_path(bundle, "bundle", "--bundle"),
        args.optional_path(results_path, "results_path", "-o"),
    )
    db = args.db(db)
    timing = args.text(timing, "timing", "--timing", example=BENCH_DEFAULTS.timing)
    gpus = args.optional_text(gpus, "gpus", "--gpus", example="0,1")
    kernels = args.texts(kernels, "kernels", "--kernel") or None
    inputs = args.texts(inputs, "inputs", "--input", numbers=True) or None
    jobs, compile_timeout = args.JOBS.optional(jobs), args.COMPILE_TIMEOUT(compile_timeout)
    max_time, min_samples = args.MAX_TIME(max_time), args.MIN_SAMPLES(min_samples)
    refuse_what_compile_only_ignores(
        compile_only,
        {
            "results_path": results_path,
            "timing": timing,
            "l2_flush": l2_flush,
            "max_time": max_time,
            "min_samples": min_samples,
            "gpus": gpus,
        },
        entry="bench_recorded",
    )
    if bundle is not None and not toolchains and not compile_only:
        refuse_compiling_options(
            jobs,
            compile_timeout,
            why=f"when measuring bundle {bundle} (it was compiled where it was built)",
            example="ktriage bench W.json -t OLD -t NEW --compile-only --bundle DIR",
        )
    arch = args.arch(arch) if arch is not None else None  # None: each kernel's recorded target
    if bundle is not None and toolchains:  # the folder the bundle is written to (read: a folder or its manifest)
        check_writable(bundle, option("bundle", "--bundle"), folder=True)
        from ktriage.workload.bundles.format import check_bundle_folder
        from ktriage.workload.recorded.bundle import RECORDED_MODE, workload_name

        check_bundle_folder(Path(bundle), replacing=(workload_name(workload), RECORDED_MODE) if workload else None)
    tell: Say = say or (lambda _m: None)
    if compile_only and not toolchains:
        from ktriage.api._bench import refuse_nothing_to_compile

        refuse_nothing_to_compile("ktriage bench W.json -t OLD -t NEW --compile-only --bundle DIR")
    if toolchains:
        if workload is None:
            given = (
                worded(lambda o: f"{o('bundle', '--bundle')} and no workload") if bundle is not None else "no workload"
            )
            raise KtriageError(
                worded(lambda o: f"{o('toolchains', '-t/--toolchain')} with {spelled(given, o)}: nothing to compile"),
                joined(
                    "give the workload file: ",
                    run_as(
                        "kt.bench_recorded(workload='W.json', toolchains=['A', 'B'], compile_only=True, bundle='DIR')",
                        "ktriage bench W.json -t A -t B --compile-only --bundle DIR",
                    ),
                ),
            )
        if not compile_only:  # before the compile: no GPU here is said now, not after it
            require_gpu_before_compiling()
        recorded = _compile(workload, toolchains, kernels, inputs, bundle, arch, jobs, compile_timeout, tell)
        kernels = inputs = None  # the bundle holds the selection
    elif bundle is not None:
        recorded = load_recorded_bundle(bundle)
        _refuse_other_arch(recorded, arch)
        if workload is not None and workload_name(workload) != recorded.name:
            raise KtriageError(
                f"bundle {bundle} holds workload {recorded.name}, not {workload_name(workload)}",
                f"give the bundle of {workload}, or build one: ktriage bench {workload} -t A -t B --compile-only --bundle DIR",
            )
    elif workload is None:
        raise KtriageError(
            (worded(lambda o: f"{o('kernels', '--kernel')} without") if kernels else "neither")
            + " a workload nor a bundle",
            joined(
                "give the workload: ",
                run_as("kt.bench_recorded(workload='W.json', toolchains=['A', 'B'])", "ktriage bench W.json -t A -t B"),
            ),
        )
    else:
        raise KtriageError(
            f"nothing to measure {workload} with: no toolchain and no bundle",
            f"compile it: ktriage bench {workload} -t A -t B (add --compile-only --bundle DIR on a CPU machine)",
        )
    tcs = list(recorded.bundle.toolchains)
    if compile_only:
        return RecordedBenchReport(recorded.name, recorded.bundle.path, tcs)
    run, cells = _measure(
        recorded, kernels, inputs, results_path, db, timing, l2_flush, max_time, min_samples, gpus, tell
    )
    return RecordedBenchReport(recorded.name, recorded.bundle.path, tcs, run, cells)


def _refuse_other_arch(recorded: RecordedBundle, arch: str | None) -> None:
    """``bench --bundle DIR --arch X`` of a recorded bundle: its cubins are the bundle's target's, and
    an ``--arch`` of another GPU was dropped without a word (docs/bench.md: refused before any GPU work),
    on any machine, before a worker starts."""
    built = recorded.bundle.target
    if arch is None or arch in built.split(","):
        return
    raise KtriageError(
        worded(
            lambda o: (
                f"bundle {recorded.bundle.path} holds cubins compiled for {built}, not {o('arch', '--arch', arch)}"
            )
        ),
        worded(
            lambda o: (
                f"drop {o('arch', '--arch')} (the bundle's own target is used) and measure it on an {built} GPU; for "
                f"{arch}, record the program on that GPU and bench its workload: ktriage record -o W.json -- COMMAND, "
                "then ktriage bench W.json -t OLD -t NEW"
            )
        ),
    )


def _compile(
    workload: str,
    toolchains: Sequence[str],
    kernels: Sequence[str] | None,
    inputs: Sequence[str] | None,
    bundle: Path | None,
    arch: str | None,
    jobs: int | None,
    compile_timeout: float,
    say: Say,
) -> RecordedBundle:
    """Compile the workload's selected kernel inputs with every toolchain into a bundle."""
    from ktriage.compile.compiler import Compiler
    from ktriage.home import home_subdir
    from ktriage.record.workload import load_workload
    from ktriage.workload.bundles.prune import bundle_cubins
    from ktriage.workload.recorded.bundle import (
        build_recorded_bundle,
        load_recorded_bundle,
        workload_entries,
        workload_name,
    )

    wl = load_workload(workload).require_kernels(workload)
    targets = sorted({i.spec.target for k in wl.kernels for i in k.inputs})
    if arch is not None and targets and arch not in targets:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('arch', '--arch', arch)} does not apply to {workload}: it was recorded on {', '.join(targets)}"
                )
            ),
            worded(
                lambda o: (
                    f"drop {o('arch', '--arch')} (the workload's kernels are compiled for the GPU they were recorded on)"
                )
            ),
        )
    chosen_k, chosen_i = list(kernels) if kernels else None, list(inputs) if inputs else None
    n = len(workload_entries(wl, chosen_k, chosen_i))
    tcs = resolve_toolchains(toolchains)
    name = workload_name(workload)
    out = bundle or home_subdir("bundles") / f"wl-{name}-{'-'.join(t.id.split('.')[0] + t.id[-8:] for t in tcs)}"
    before = bundle_cubins(Path(out))  # the bundle's writer removes those the new one does not use
    with (
        progress.task(f"compiling {plural(n, 'kernel input')} x {plural(len(tcs), 'toolchain')}"),
        Compiler(jobs=jobs, timeout_s=compile_timeout) as compiler,
    ):
        path = build_recorded_bundle(wl, tcs, Path(out), compiler=compiler, kernels=chosen_k, inputs=chosen_i)
    removed = len(before - bundle_cubins(path))
    recorded = load_recorded_bundle(path)
    failures = recorded.bundle.failure_lines()
    say(f"bundle: {path} ({len(recorded.entries)} kernel inputs; {recorded.bundle.compiled_text()})")
    if removed:
        say(f"  removed {plural(removed, 'cubin')} of the bundle built there before, which this one does not use")
    for line in failures:
        say(f"  {line}")
    say(f"measure it on the GPU machine: ktriage bench --bundle {path}")
    return recorded


def _measure(
    recorded: RecordedBundle,
    kernels: Sequence[str] | None,
    inputs: Sequence[str] | None,
    results_path: Path | None,
    db: str | None,
    timing: str,
    l2_flush: bool,
    max_time: float,
    min_samples: int,
    gpus: str | None,
    say: Say,
) -> tuple[RunInfo, list[Cell]]:
    """Measure the selected entries of the bundle on this host's GPUs, one after another."""
    from ktriage.api._bench import require_torch
    from ktriage.bench.plan import RecordedPlan
    from ktriage.bench.recorded import run_recorded
    from ktriage.measure.gpus import host_gpus

    entries = recorded.select(list(kernels) if kernels else None, list(inputs) if inputs else None)
    require_torch()
    placed = host_gpus(gpus)
    plan = RecordedPlan(
        bundle=str(recorded.bundle.path),
        name=recorded.name,
        entries=[e.id for e in entries],
        toolchains=list(recorded.bundle.toolchains),
        timing={"mode": timing, "l2_flush": l2_flush},
        min_samples=min_samples,
        max_time_s=max_time,
        target=recorded.bundle.target,
        workload=recorded.workload_path(),
    )

    def on_cell(cell: Cell) -> None:
        if cell.status != "ok":
            say(f"{cell.status} {cell.key.label()}: {str(cell.error or '')[:200]}")

    with progress.task(f"{recorded.name}: kernel inputs", total=len(entries)) as step:
        return run_recorded(
            plan,
            entries,
            store_url=db,
            results_path=results_path,
            toolchains=list(recorded.bundle.toolchains.values()),
            on_cell=on_cell,
            on_entry_done=step.callback,
            gpus=placed,
        )


def require_workload_path(workload: str) -> None:
    """Refuse a positional argument of ``bench`` that is no recorded workload, before anything else is
    checked: an operator's name there (``ktriage bench layer_norm --bwd``) is told to use ``--op``, not that
    ``--bwd`` does not apply to a recorded workload."""
    from ktriage.ops import registry

    if is_workload_path(workload):
        return
    operator = registry.operator(workload)
    if operator is not None:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{workload} is an operator, not a recorded workload: bench takes an operator as {o('op', '--op')}"
                )
            ),
            run_as(f"kt.bench(op={operator.name!r}, ...)", f"ktriage bench --op {operator.name} ..."),
        )
    refuse_trace_name(workload)
    raise KtriageError(
        f"{workload} is not a recorded workload (a .json file from `ktriage record`, or its journal)",
        joined(
            "give W.json written by ",
            run_as("kt.record(command=..., output='W.json')", "ktriage record -o W.json -- COMMAND"),
            ", or bench an op with ",
            run_as("kt.bench(op=...)", "ktriage bench --op OP"),
        ),
    )
