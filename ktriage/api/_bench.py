"""``ktriage.api.bench(op=..., toolchains=[...], ...) -> BenchReport``: benchmark an operator like
TritonBench, every toolchain's Triton kernels compiled here into a bundle and timed side by side in
one GPU process (docs/bench.md).

Why an entry point: the plan (backends, baseline, metrics, timing protocol, the bundle's inputs)
was checked and built by the CLI, which also built the compiler and the bundle itself: 146 lines,
37 parameters. A GPU job script or a notebook now makes one call; ``compile_only=True`` stops
after the bundle (a CPU machine), ``bundle=DIR`` measures a bundle built elsewhere.

A recorded workload (``ktriage bench W.json``) is not an operator bench: see
:func:`is_recorded_bundle` (the CLI routes it).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from ktriage import progress
from ktriage.api import _args as args
from ktriage.api._toolchains import resolve_toolchains
from ktriage.api.paths import check_writable
from ktriage.bench.plan import BenchPlan, native_variants
from ktriage.brief import brief
from ktriage.errors import KtriageError, Worded, joined, option, run_as, separated, spelled, worded
from ktriage.errors import flag as flag_spelling
from ktriage.explain.session import DEFAULT_COMPILE_TIMEOUT_S
from ktriage.mdsafe import markdown_writer
from ktriage.measure.cells import Cell, RunInfo
from ktriage.measure.gpus import GPUS_HELP
from ktriage.report.bench import BenchRenders
from ktriage.wording import agree, plural

if TYPE_CHECKING:
    from ktriage.bench.torch_build import TorchBuild
    from ktriage.ops.inputs import InputCase
    from ktriage.schema.jsontypes import JSONObject
    from ktriage.workload.bundles.format import Bundle, Selection
    from ktriage.workload.ops.opdef import OpDef

Say = Callable[[str], None]
TIMINGS = ("auto", "events", "graph", "queued")
__all__ = [
    "BENCH_DEFAULTS",
    "GPUS_HELP",
    "TIMINGS",
    "BenchDefaults",
    "BenchReport",
    "bench",
    "is_recorded_bundle",
    "refuse_compiling_options",
    "refuse_what_compile_only_ignores",
    "require_torch",
]


@dataclass(frozen=True)
class BenchDefaults:
    """The defaults of the options only a measuring run reads, in one place: ``bench`` and
    ``bench_recorded`` take them as their keywords' defaults, ``ktriage bench`` as its flags', and
    :func:`refuse_what_compile_only_ignores` tells a value given from them (so the command and the
    library cannot disagree on what "given" means)."""

    metrics: str = "latency,speedup,accuracy"
    timing: str = "auto"
    max_time: float = 10.0
    min_samples: int = 10
    artifact_timing: str = "tritonbench"
    compile_mode: str = "max-autotune-no-cudagraphs"


BENCH_DEFAULTS = BenchDefaults()
# keyword -> (flag, default): what only a measuring run reads (how it times, where, what it writes), in the
# order a refusal names them. Not db (``$KTRIAGE_DB`` sets it for every verb), nor only/baseline (they choose
# the backends the bundle compiles, and the bundle keeps them).
_MEASURING: dict[str, tuple[str, object]] = {
    "results_path": ("-o", None),
    "timing": ("--timing", BENCH_DEFAULTS.timing),
    "l2_flush": ("--no-l2-flush", True),
    "max_time": ("--max-time", BENCH_DEFAULTS.max_time),
    "min_samples": ("--min-samples", BENCH_DEFAULTS.min_samples),
    "artifact_timing": ("--artifact-timing", BENCH_DEFAULTS.artifact_timing),
    "compile_mode": ("--compile-mode", BENCH_DEFAULTS.compile_mode),
    "host_artifacts": ("--host-artifacts", False),
    "gpus": ("--gpus", None),
    "profile": ("--profile", False),
    "metrics": ("--metrics", BENCH_DEFAULTS.metrics),
}


def refuse_what_compile_only_ignores(
    compile_only: bool,
    measuring: Mapping[str, object],
    *,
    given: Sequence[tuple[str, str | None]] = (),
    entry: str = "bench",
) -> None:
    """``compile_only`` measures nothing, so the options of measuring had no effect, exit 0: a results
    file (-o) was never written (a CI step's ``-o results.json`` left no file), and ``--max-time 5
    --timing graph --gpus 1 --profile`` were dropped without a word (the bundle keeps none of them).
    ``measuring``: the keywords of ``entry`` (``bench`` or ``bench_recorded``) as passed, each refused
    when off its default (other keys are not read); ``given``: a front end's own options of measuring as
    (flag, value), named first (the command's -o .csv/.md, ``--format json``, ``--tritonbench-json``,
    which the library never sees). Refused before the compile, the fix spelling out the measuring run with the same options.

    Why here: the library's ``bench(compile_only=True, max_time=5)`` is the same request as the command
    line's and ignored them the same way; the command calls this with its parsed flags (so one rule and
    one message, worded with the flags both read: how ``refuse_nothing_to_compile`` and
    ``_refuse_other_build`` word theirs). Why not carry them into the printed ``bench --bundle`` command
    instead: that line comes after the compile, read by whoever runs the GPU machine; exit 0 with the
    options "accepted" reads as if they were baked into the bundle, where a refusal costs nothing and says so."""
    if not compile_only:
        return
    spelled = [flag if value is None else f"{flag} {shlex.quote(value)}" for flag, value in given]
    keywords = []
    for keyword, (flag, default) in _MEASURING.items():
        value = measuring.get(keyword, default)
        if value is None or value == default:  # l2_flush=False is --no-l2-flush: off its default True
            continue
        shown = None if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)
        spelled.append(flag if shown is None else f"{flag} {shlex.quote(shown)}")
        keywords.append(keyword)
    if spelled:
        goes = agree(len(keywords), "goes", "go")
        library = f"; in the library, {', '.join(keywords)} {goes} to {entry}(bundle=DIR)" if keywords else ""
        raise KtriageError(
            f"{', '.join(spelled)}: --compile-only measures nothing, so there are no results to write and "
            "nothing to time (the bundle is its result)",
            "drop them here, and give them to the run that measures the bundle on the GPU machine: "
            f"ktriage bench --bundle DIR {' '.join(spelled)}{library}",
        )


@dataclass(frozen=True)
class BenchReport(BenchRenders):
    """An operator bench: what was asked (op, pass, precision, baseline, metrics), the bundle built
    or read, and, unless ``compile_only``, the run and its cells (every sample kept). The renderers
    are the ones ``ktriage bench`` writes with (the .csv/.md table, the .json results file)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    op: str
    mode: str
    precision: str
    baseline: str
    metrics: list[str]
    bundle: Path | None
    plan: BenchPlan | None  # None: compile_only (nothing measured)
    run: RunInfo | None = None
    cells: list[Cell] = field(default_factory=list)
    # the toolchains' records (Toolchain.to_json), as the bundle keeps them
    toolchains: list[JSONObject] = field(default_factory=list)
    measure_hint = "measure the bundle: bench(bundle=..., op=...)"

    @property
    def title(self) -> str:
        return f"{self.op} {self.mode} ({self.precision})"

    def table_rows(self) -> list[dict[str, str]]:
        from ktriage.report.bench import results_table
        from ktriage.workload.ops.opdef import bench_op

        labels = {str(t["id"]): str(t.get("spec") or t["id"]) for t in self.toolchains}
        return results_table(self.cells, bench_op(self.op), self.baseline, self.metrics, labels)

    @markdown_writer
    def verdicts_markdown(self) -> str:
        """Each toolchain against the reference, cell by cell (what ``compare --toolchains`` says of
        the run); "" when nothing was measured."""
        from ktriage.compare.pairing import compare_toolchains
        from ktriage.compare.report import CompareReport
        from ktriage.ops.registry import default_baselines
        from ktriage.report.markdown import to_markdown

        if self.run is None:
            return ""
        comparisons = compare_toolchains(
            self.cells, run=self.run, baseline=self.baseline, default_baselines=default_baselines()
        )
        return to_markdown(CompareReport(comparisons))

    def write_tritonbench_json(self, path: str | Path) -> list[Path]:
        """The run as TritonBench's JSON (what its dashboards read), one file per toolchain."""
        from ktriage.measure.tritonbench_format import write_tritonbench_json

        if self.run is None:
            raise KtriageError("a compile-only bench measured nothing", "measure the bundle first")
        return list(write_tritonbench_json(Path(path), self.run, self.cells))


def is_recorded_bundle(bundle: str | Path) -> bool:
    """``bundle`` holds a recorded workload's kernels (``bench W.json --compile-only``), not an op's."""
    from ktriage.workload.bundles.format import load_bundle
    from ktriage.workload.recorded.bundle import is_recorded_bundle as recorded

    return bool(recorded(load_bundle(Path(bundle))))


@args.entry_point
def bench(
    *,
    op: str | None = None,
    only: Sequence[str] | None = None,
    baseline: str | None = None,
    metrics: str = BENCH_DEFAULTS.metrics,
    mode: str | None = None,
    inputs: int | Sequence[str | int] | None = None,
    input_id: int | None = None,
    num_inputs: int | None = None,
    precision: str | None = None,
    toolchains: Sequence[str] = (),
    compile_only: bool = False,
    bundle: str | Path | None = None,
    arch: str | None = None,
    sm_count: int | None = None,
    results_path: str | Path | None = None,
    db: str | None = None,
    timing: str = BENCH_DEFAULTS.timing,
    l2_flush: bool = True,
    max_time: float = BENCH_DEFAULTS.max_time,
    min_samples: int = BENCH_DEFAULTS.min_samples,
    artifact_timing: str = BENCH_DEFAULTS.artifact_timing,
    compile_mode: str = BENCH_DEFAULTS.compile_mode,
    host_artifacts: bool = False,
    jobs: int | None = None,
    compile_timeout: float = DEFAULT_COMPILE_TIMEOUT_S,
    gpus: str | None = None,
    profile: bool = False,
    say: Say | None = None,
) -> BenchReport:
    """Bench TritonBench operator ``op`` (``layer_norm``...; default: the bundle's) with the
    backends ``only`` (default: all; measuring a ``bundle``, the ``only`` and ``baseline`` its compile
    kept), ``toolchains`` compiling the Triton backends (the first is the reference).
    ``results_path``: the results file, rewritten after each input while measuring. ``say``: the
    steps' messages (the bundle written, a failed cell, the profile).

    Raises :class:`~ktriage.errors.KtriageError` for a bad argument before anything is compiled or
    measured (with ``compile_only``, a keyword only measuring reads that is off its default, see
    :func:`refuse_what_compile_only_ignores`; without toolchains, ``jobs`` or ``compile_timeout``), and
    when measuring is asked on a machine without torch.

    A lone str where a list goes is one item (``inputs="7"``, ``toolchains="triton==3.4.0"``), except
    ``only``: a str is split on commas, as ``--only liger_layer_norm,torch_layer_norm`` is. ``arch``
    takes every spelling ``--arch`` does (``9.0``, ``90``, ``cuda:90``)."""
    from ktriage.report.bench import METRICS

    say = args.callback(say, "say")
    compile_only = args.switch(compile_only, "compile_only", "--compile-only")
    l2_flush = args.switch(l2_flush, "l2_flush", "--no-l2-flush")
    host_artifacts = args.switch(host_artifacts, "host_artifacts", "--host-artifacts")
    profile = args.switch(profile, "profile", "--profile")

    if isinstance(only, str):
        only = [b for b in only.split(",") if b.strip()]
    only = args.texts(only, "only", "--only") or None
    inputs = args.texts(inputs, "inputs", "--input", numbers=True)
    toolchains = args.texts(toolchains, "toolchains", "-t/--toolchain")
    input_id, num_inputs = args.INPUT_ID.optional(input_id), args.NUM_INPUTS.optional(num_inputs)
    jobs, compile_timeout = args.JOBS.optional(jobs), args.COMPILE_TIMEOUT(compile_timeout)
    max_time, min_samples = args.MAX_TIME(max_time), args.MIN_SAMPLES(min_samples)
    sm_count = args.SM_COUNT.optional(sm_count)
    # one-string arguments: op=["layer_norm"] was TypeError: unhashable type: 'list' from the op registry,
    # bundle=[...] a TypeError from pathlib, mode=["bwd"] "layer_norm has no mode ['bwd']"
    op = args.optional_text(op, "op", "--op", example="layer_norm")
    baseline = args.optional_text(baseline, "baseline", "--baseline", example="torch_layer_norm")
    mode = args.optional_text(mode, "mode", "--mode", example="bwd")
    precision = args.optional_text(precision, "precision", "--precision", example="bf16")
    db = args.db(db)
    timing = args.text(timing, "timing", "--timing", example=BENCH_DEFAULTS.timing)
    artifact_timing = args.text(artifact_timing, "artifact_timing", "--artifact-timing", example="kernel")
    compile_mode = args.text(compile_mode, "compile_mode", "--compile-mode", example=BENCH_DEFAULTS.compile_mode)
    gpus = args.optional_text(gpus, "gpus", "--gpus", example="0,1")
    bundle, results_path = (
        args.optional_path(bundle, "bundle", "--bundle"),
        args.optional_path(results_path, "results_path", "-o"),
    )
    # a list is the metrics, as the command's comma-separated --metrics (["latency"] was shown as its repr)
    metrics = ",".join(args.texts(metrics, "metrics", "--metrics"))
    refuse_what_compile_only_ignores(
        compile_only,
        {
            "results_path": results_path,
            "timing": timing,
            "l2_flush": l2_flush,
            "max_time": max_time,
            "min_samples": min_samples,
            "artifact_timing": artifact_timing,
            "compile_mode": compile_mode,
            "host_artifacts": host_artifacts,
            "gpus": gpus,
            "profile": profile,
            "metrics": metrics,
        },
    )
    if not toolchains and not compile_only:  # compile_only without toolchains: refuse_nothing_to_compile says it
        refuse_compiling_options(
            jobs,
            compile_timeout,
            why=f"when measuring bundle {bundle} (it was compiled where it was built)"
            if bundle is not None
            else "without -t/--toolchain (toolchains): the native backends run the host's own torch and Triton",
            example="ktriage bench --op OP -t OLD -t NEW --compile-only --bundle DIR",
        )
    arch = args.arch(arch) if arch is not None else None  # None: sm_90 to compile, a bundle's own to measure
    if bundle is not None and toolchains:  # the folder the bundle is written to (read: a folder or its manifest)
        check_writable(Path(bundle), option("bundle", "--bundle"), folder=True)
        from ktriage.workload.bundles.format import check_bundle_folder

        check_bundle_folder(Path(bundle))
    from ktriage.workload.ops.opdef import bench_op, check_mode, resolve_precision, select_op_inputs

    tell: Say = say or (lambda _m: None)
    wanted_metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    unknown = [m for m in wanted_metrics if m not in METRICS]
    if unknown:
        raise KtriageError(f"{plural(len(unknown), 'unknown metric')} {unknown}", f"use any of: {', '.join(METRICS)}")
    if compile_only and not toolchains and bundle is not None:  # a bundle built elsewhere: not read, refused
        refuse_nothing_to_compile("ktriage bench --op OP -t OLD -t NEW --compile-only --bundle DIR")
    loaded: Bundle | None = None
    if bundle is not None and not toolchains:
        from ktriage.workload.bundles.format import load_bundle

        loaded = load_bundle(Path(bundle))
        op = op or loaded.op
        if loaded.selection is not None:  # the backends its compile chose, unless this run chooses its own
            only = only or (list(loaded.selection.only) if loaded.selection.only else None)
            baseline = baseline or loaded.selection.baseline
    if op is None:
        fix = worded(lambda o: f"e.g. {o('op', '--op', 'layer_norm')}; ops: layer_norm, embedding, rope")
        if bundle is not None and toolchains:  # -t makes --bundle the folder to compile into, not one to measure
            tcs = option("toolchains", "-t")
            fix = worded(
                lambda o: (
                    f"{spelled(tcs, o)} compile into {o('bundle', '--bundle', str(bundle))}: to measure that bundle, "
                    f"drop {spelled(tcs, o)}; to compile, give what: {spelled(fix, o)}; or a recorded workload "
                    "(ktriage bench W.json -t OLD -t NEW --compile-only --bundle DIR)"
                )
            )
        raise KtriageError(worded(lambda o: f"no {o('op', '--op')} given"), fix)
    opdef = bench_op(op)
    mode_name = check_mode(opdef, mode or (loaded.mode if loaded is not None else "fwd"))
    prec = resolve_precision(opdef, precision if precision is not None else (loaded.precision if loaded else None))
    cases = select_op_inputs(opdef, input_id=input_id, num_inputs=num_inputs, selectors=list(inputs or []) or None)
    chosen = [b.strip() for b in only] if only else list(opdef.backends)
    base = baseline or opdef.baseline
    known = set(opdef.backends) | set(opdef.artifact_backends)
    bad = [b for b in chosen + [base] if b not in known]
    if bad:
        raise KtriageError(
            f"{op} has {plural(len(bad), 'unknown backend')} {bad}",
            f"TritonBench's backends of {op}: {', '.join(sorted(known))}",
        )
    if base not in chosen:
        chosen.insert(0, base)
    artifact = [b for b in chosen if b in opdef.artifact_backends] if (toolchains or loaded) else []
    if not only:  # the default set: a forward-only replay has nothing to build or time in another pass
        from ktriage.workload.ops.replay import REPLAYS

        artifact = [b for b in artifact if not (REPLAYS[b].fwd_only and mode_name != "fwd")]
    if timing not in TIMINGS:
        raise KtriageError(
            worded(lambda o: f"unknown {o('timing', '--timing', timing)}"),
            worded(lambda o: f"use auto, events, graph or queued, e.g. {o('timing', '--timing', 'auto')}"),
        )
    native = native_variants(chosen, set(opdef.backends), artifact, host_artifacts=host_artifacts)
    if compile_only and not toolchains:  # after every other check: a typo'd op or backend is named first
        refuse_nothing_to_compile(f"ktriage bench --op {op} -t OLD -t NEW --compile-only --bundle DIR")
    if toolchains and not artifact:
        _refuse_no_artifact_backend(opdef, mode_name)
    records: list[JSONObject] = []
    if toolchains and not compile_only:  # before the compile: no GPU here is said now, not after it
        require_gpu_before_compiling()
    if toolchains:
        from ktriage.workload.bundles.format import Selection

        selection = Selection(tuple(b.strip() for b in only) if only else None, baseline) if only or baseline else None
        loaded, records = _compile_bundle(
            op,
            mode_name,
            cases,
            toolchains,
            artifact,
            bundle,
            arch or "sm_90",
            sm_count,
            prec,
            jobs,
            compile_timeout,
            tell,
            selection,
        )
    elif loaded is not None:
        records = list(loaded.toolchains.values())
        if loaded.mode != mode_name or loaded.op != op:
            raise KtriageError(
                f"bundle {bundle} holds {loaded.op} {loaded.mode}, not {op} {mode_name}",
                worded(
                    lambda o: (
                        f"pass the op and pass of the bundle, or build a new one with {o('toolchains', '-t/--toolchain')}"
                    )
                ),
            )
        _refuse_other_build(loaded, prec if precision is not None else None, sm_count, arch)
        bundle_ids = {c.id for c in loaded.input_cases()}
        cases = [c for c in cases if c.id in bundle_ids]
        if not cases:
            raise KtriageError(
                f"no selected input is in bundle {bundle}", f"inputs in the bundle: {sorted(bundle_ids)}"
            )
    done = BenchReport(
        op, mode_name, prec, base, wanted_metrics, loaded.path if loaded else None, None, toolchains=list(records)
    )
    if compile_only:
        return done
    require_torch()
    from ktriage.measure.gpus import host_gpus

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
        toolchains=[str(t["id"]) for t in records] if artifact else [],
        timing={"mode": timing, "l2_flush": l2_flush},
        min_samples=min_samples,
        max_time_s=max_time,
        artifact_timing=artifact_timing,
        compile_mode=compile_mode,
    )
    run, cells = _measure(plan, db, Path(results_path) if results_path else None, records, placed, tell)
    if profile:
        _profile(run, cells, plan, db, tell)
    return BenchReport(op, mode_name, prec, base, wanted_metrics, done.bundle, plan, run, cells, records)


def _refuse_other_build(loaded: Bundle, precision: str | None, sm_count: int | None, arch: str | None = None) -> None:
    """A bundle is measured as it was compiled: its kernels' pointer types are the precision's and its
    grids the SM count's. ``--precision`` other than the bundle's was taken: the replay's tensors then
    do not match the kernels' specs, which the GPU worker finds only at each kernel's first launch
    (``check_args``); ``--sm-count`` and ``--arch`` were dropped without a word (the cubins are the
    bundle's target's). Refused here, on any machine, before a worker starts."""
    given = [
        (name, flag, value, built)
        for name, flag, value, built in (
            ("precision", "--precision", precision, loaded.precision),
            ("sm_count", "--sm-count", sm_count, loaded.sm_count),
            ("arch", "--arch", arch, loaded.target),
        )
        if value is not None and value != built
    ]
    if given:
        asked = separated(", ", (option(name, flag, value) for name, flag, value, _ in given))
        holds = separated(", ", (option(name, flag, built) for name, flag, _, built in given))
        flags = " ".join(f"{flag} {value}" for _, flag, value, _ in given)
        raise KtriageError(
            worded(lambda o: f"bundle {loaded.path} was compiled with {spelled(holds, o)}, not {spelled(asked, o)}"),
            worded(
                lambda o: (
                    f"drop {' and '.join(o(name, flag) for name, flag, _, _ in given)} (the bundle's own is used), or "
                    f"build another bundle with {spelled(asked, o)}: ktriage bench --op {loaded.op} --{loaded.mode.replace('_', '-')} "
                    f"{flags} -t OLD -t NEW --compile-only --bundle DIR"
                )
            ),
        )


def refuse_compiling_options(jobs: int | None, compile_timeout: float, *, why: str, example: str) -> None:
    """``jobs`` and ``compile_timeout`` set how the toolchains compile; a bench that compiles nothing
    (a bundle measured as built, or no toolchain at all) took ``bench --bundle DIR -j 8 --compile-timeout 60``
    and dropped both without a word, exit 0. Refused, each one given named (``why``: why nothing is compiled;
    ``example``: the compiling run they belong to). ``$KTRIAGE_COMPILE_TIMEOUT`` is no request to one run:
    the command passes the default when the flag did not come from its command line."""
    given = [
        (flag, keyword, value)
        for flag, keyword, value, on in (
            ("-j/--jobs", "jobs", jobs, jobs is not None),
            ("--compile-timeout", "compile_timeout", compile_timeout, compile_timeout != DEFAULT_COMPILE_TIMEOUT_S),
        )
        if on
    ]
    if given:
        them = agree(len(given), "it", "them")
        raise KtriageError(
            joined(separated(", ", (option(k, f, v) for f, k, v in given)), f": nothing is compiled {why}"),
            f"drop {them}, and give {them} to the run that compiles the bundle: {example} "
            + " ".join(flag_spelling(k, f.removeprefix("-j/"), v) for f, k, v in given),
        )


def refuse_nothing_to_compile(example: str) -> None:
    """``compile_only`` with no toolchain compiled nothing and returned an empty report (the command
    exited 0 without a word; with a bundle it said 'no bundle at DIR'). Why here and not in the command:
    a library call is the same request, and returned a report that looked like a finished compile."""
    raise KtriageError(
        worded(
            lambda o: (
                f"{o('compile_only', '--compile-only', True)} with no {o('toolchains', '-t/--toolchain')}: "
                "nothing to compile"
            )
        ),
        Worded(
            f"name the toolchains: toolchains=[...] ({example}); a bundle built elsewhere is measured without "
            "compile_only=True (--compile-only): kt.bench(bundle='DIR') (`ktriage bench --bundle DIR`)",
            f"name the toolchains: {example}; a bundle built elsewhere is measured without --compile-only: "
            "ktriage bench --bundle DIR",
        ),
    )


def require_torch() -> None:
    """torch must be there; whether a GPU is visible the worker checks while it starts (importing
    torch here would put its seconds before the worker's start instead of alongside it)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise KtriageError(
            "measuring needs torch and an NVIDIA GPU on this machine",
            worded(
                lambda o: (
                    f"measure on the GPU machine ({spelled(_MEASURE_BUNDLE, o)} there measures a bundle); with "
                    f"{o('toolchains', '-t')}, {spelled(_COMPILE_HERE, o)} to build the bundle here"
                )
            ),
        )


# Compile here, measure there, each step named both ways (errors.option): a Python caller of kt.bench was
# told only the flags.
_COMPILE_HERE = worded(
    lambda o: f"add {o('compile_only', '--compile-only', True)} and {o('bundle', '--bundle', 'DIR')}"
)
_MEASURE_BUNDLE = run_as("kt.bench(bundle='DIR')", "ktriage bench --bundle DIR")
COMPILE_THEN_MEASURE_FIX = worded(
    lambda o: (
        f"{spelled(_COMPILE_HERE, o)} to compile here (no GPU needed), then measure the bundle on the GPU machine: {spelled(_MEASURE_BUNDLE, o)}"
    )
)


def require_gpu_before_compiling() -> None:
    """A bench with toolchains compiles every kernel (minutes when the cache is cold) before its
    worker would find that there is no GPU here, or that its torch cannot use one: both asked first
    (the CUDA driver, in a child process, as ``ktriage record`` asks it; bounded; torch's build read
    from its files, not imported: ``ktriage.bench.torch_build``), so a CPU machine, or a GPU machine
    whose torch is a CPU-only build, is told at once instead of after the compile."""
    import sys

    from ktriage.bench.torch_build import installed_torch_build
    from ktriage.record.run import gpu_problem

    require_torch()
    refusal = refusal_before_compiling(gpu_problem(), installed_torch_build(), sys.executable)
    if refusal is not None:
        raise refusal


def refusal_before_compiling(driver_problem: str | None, build: TorchBuild | None, python: str) -> KtriageError | None:
    """What :func:`require_gpu_before_compiling` refuses, from the facts it read (pure, so each case is
    testable on any host): ``driver_problem`` (``gpu_problem()``: why the CUDA driver sees no GPU, None
    when it sees one or cannot tell), ``build`` (this Python's torch, None when it cannot be told) and
    ``python`` (the interpreter the measuring worker will run). No GPU: measure elsewhere, compile here.
    A GPU with a CPU-only torch: the worker's own refusal (``no_gpu_refusal``, the one home of its
    wording: install a CUDA torch in this Python). Whatever cannot be told lets the bench through."""
    from ktriage.bench.worker import no_gpu_refusal

    if driver_problem:
        return KtriageError(
            f"measuring needs an NVIDIA GPU on this machine: {driver_problem}", COMPILE_THEN_MEASURE_FIX
        )
    if build is not None and build.cuda is None:
        return no_gpu_refusal(build, None, COMPILE_THEN_MEASURE_FIX, python)
    return None


def _refuse_no_artifact_backend(opdef: OpDef, mode: str) -> NoReturn:
    """-t with no chosen backend that a toolchain compiles: the fix names this op's own artifact backends
    (it used to say liger_layer_norm for every op), or, for an op without any (rope), to drop -t."""
    from ktriage.ops.registry import bench_operators
    from ktriage.workload.ops.replay import REPLAYS

    own = [b for b in opdef.artifact_backends if not (REPLAYS[b].fwd_only and mode != "fwd")]
    tcs = option("toolchains", "-t/--toolchain")
    problem = worded(
        lambda o: f"{spelled(tcs, o)} given, but none of the chosen backends runs Triton kernels from a toolchain"
    )
    if own:
        raise KtriageError(
            problem,
            worded(
                lambda o: (
                    f"add {' or '.join(own)} to {o('only', '--only')} (the {opdef.name} backends a toolchain compiles)"
                )
            ),
        )
    others = ", ".join(
        f"{op.name} ({', '.join(op.artifact_backends)})" for op in bench_operators() if op.artifact_backends
    )
    raise KtriageError(
        problem + f": {opdef.name} {mode} has none (its backends run the host's own torch and Triton)",
        worded(
            lambda o: (
                f"drop {spelled(tcs, o)} and measure {opdef.name} on the GPU host; ops with toolchain backends: {others}"
            )
        ),
    )


def _compile_bundle(
    op: str,
    mode: str,
    cases: Sequence[InputCase],
    toolchains: Sequence[str],
    artifact: list[str],
    bundle: str | Path | None,
    arch: str,
    sm_count: int | None,
    prec: str,
    jobs: int | None,
    compile_timeout: float,
    say: Say,
    selection: Selection | None = None,
) -> tuple[Bundle, list[JSONObject]]:
    """The bundle of ``cases`` x ``toolchains`` (the artifact backends' kernels), under the ktriage
    home unless ``bundle`` names the folder; ``selection`` (--only/--baseline) is kept in it, so the
    printed measuring command, which does not repeat them, times the backends chosen here."""
    from ktriage.compile.compiler import Compiler
    from ktriage.home import home_subdir
    from ktriage.workload.bundles.build import build_bundle
    from ktriage.workload.bundles.format import load_bundle
    from ktriage.workload.bundles.prune import bundle_cubins

    tcs = resolve_toolchains(toolchains)
    out = bundle or home_subdir("bundles") / f"{op}-{mode}-{'-'.join(t.id.split('.')[0] + t.id[-8:] for t in tcs)}"
    before = bundle_cubins(Path(out))  # the bundle's writer removes those the new one does not use
    with (
        progress.task(f"compiling {plural(len(cases), 'input')} x {plural(len(tcs), 'toolchain')}"),
        Compiler(jobs=jobs, timeout_s=compile_timeout) as compiler,
    ):
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
            selection=selection,
        )
    removed = len(before - bundle_cubins(path))
    loaded = load_bundle(path)
    failures = loaded.failure_lines()
    say(f"bundle: {path} ({loaded.compiled_text()})")
    if removed:
        say(f"  removed {plural(removed, 'cubin')} of the bundle built there before, which this one does not use")
    for line in failures:
        say(f"  {line}")
    say(f"measure it on the GPU machine: ktriage bench --bundle {path} --op {op} --{mode.replace('_', '-')}")
    if selection is not None:
        say(f"  (the bundle keeps {selection.flags()}: that run times the same backends)")
    return loaded, [t.to_json() for t in tcs]


def _measure(
    plan: BenchPlan,
    db: str | None,
    results_path: Path | None,
    toolchains: list[JSONObject],
    gpus: list[int] | None,
    say: Say,
) -> tuple[RunInfo, list[Cell]]:
    from ktriage.bench.session import run_bench

    def on_cell(cell: Cell) -> None:
        if cell.status != "ok":
            say(f"{cell.status} {cell.key.label()}: {str(cell.error or '')[:200]}")

    with progress.task(f"{plan.op} {plan.mode}: inputs", total=len(plan.input_ids)) as step:
        return run_bench(
            plan,
            store_url=db,
            results_path=results_path,
            toolchains=toolchains,
            on_cell=on_cell,
            on_input_done=lambda _i: step.advance(),
            gpus=gpus,
        )


def _profile(run: RunInfo, cells: list[Cell], plan: BenchPlan, db: str | None, say: Say) -> None:
    """``profile``: ncu on the bundle after the timing (ktriage.profile.attach); the cells and the
    run get the counters in place (the results files are written after this), the store's run too."""
    from ktriage.profile.attach import attach_to_store, profile_measured

    if plan.bundle is None or not plan.artifact_backends:
        say(
            worded(
                lambda o: (
                    f"{o('profile', '--profile', True)}: no bundle with artifact backends in this bench: nothing profiled"
                )
            )
        )
        return
    profile_measured(run, cells, Path(plan.bundle), backends=plan.artifact_backends, input_ids=plan.input_ids, say=say)
    say(attach_to_store(db, run, cells))
