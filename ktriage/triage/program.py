"""``ktriage triage --run CMD --old-toolchain A --new-toolchain B``: from a program to one report, on a GPU host.

The steps are the split workflow's, run in one process, each timed (docs/triage.md):

1. **toolchains**: both built (or found) here (``triton=host`` on a host without network);
2. **record**: the program under the launch hook (``ktriage.record.run``) into ``W.json``;
3. **compile**: every recorded (kernel, input) with both toolchains into a bundle
   (``ktriage.workload.recorded.bundle``);
4. **bench**: both toolchains' kernels timed side by side in ONE GPU process
   (``ktriage.bench.recorded``), into ``results.json``;
5. **explain**: every benched kernel input compiled-side with both toolchains, the cost model's
   prediction per cell (``ktriage.explain``, ``ktriage.predict``), then the flagged cells' causes;
6. **compare** and **fixes**: the triage of the two sides (``ktriage.triage.pipeline``), its fixes
   verified by compiling (``explain --fixes``);
7. **bisect**: where both toolchains are releases and a cell is a real regression (slower in the
   side-by-side samples, with a compile-side cause); otherwise the report says why not.

A step that fails keeps the steps before it: the report lists every step with its status, wall time
and what it did or why it was skipped. Pure orchestration: each step is the library call its verb
makes, so the same steps stay splittable (:func:`split_commands`).
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import shlex
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ktriage.compare.sides import LoadedSide
from ktriage.errors import KtriageError, command, failure_line, spelled, worded
from ktriage.exit_status import ExitStatus, outcome
from ktriage.schema.jsontypes import JSONObject
from ktriage.stats.gate import check_gate, gate_band
from ktriage.toolchain.spec import ToolchainSpec, parse_toolchain
from ktriage.triage.model import CellTriage, TriageOptions, TriageReport
from ktriage.wording import agree, plural

if TYPE_CHECKING:
    from ktriage.compile.compiler import Compiler
    from ktriage.measure.cells import Cell, RunInfo
    from ktriage.predict.model import Prediction
    from ktriage.toolchain.manager import Toolchain

Say = Callable[[str], None]
FORMAT = 1
StepStatus = Literal["ok", "partial", "failed", "skipped"]
# The report's steps, in order (a step that never started is listed as skipped, with why).
STEPS = ("toolchains", "record", "compile", "bench", "explain", "compare", "fixes", "bisect")
BUNDLE, RESULTS = "bundle", "results.json"
REPORTS = ("report.md", "report.json")  # the run's reports in the work folder (api.triage_run)


def workload_file(argv: Sequence[str]) -> str:
    """The workload's file name in the work folder, after the program (``python train.py`` ->
    ``train.workload.json``): its name is the op of every cell, so the report says ``train``."""
    script = next((a for a in argv[1:] if a.endswith(".py")), argv[0] if argv else "program")
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(script).name.removesuffix(".py")) or "program"
    return f"{stem}.workload.json"


@dataclass
class Step:
    """One step of the run: ``partial`` = done, but part of it failed (the report is incomplete)."""

    name: str
    status: StepStatus = "ok"
    wall_s: float | None = None
    detail: str = ""

    def to_json(self) -> JSONObject:
        return {
            "name": self.name,
            "status": self.status,
            "wall_s": None if self.wall_s is None else round(self.wall_s, 3),
            "detail": self.detail,
        }


@dataclass
class RunToolchain:
    """One side's toolchain as the run built (or found) it."""

    side: str  # old | new
    spec: str
    id: str
    triton: str
    ptxas: str
    python: str  # its interpreter

    def to_json(self) -> JSONObject:
        return {
            "side": self.side,
            "spec": self.spec,
            "id": self.id,
            "triton": self.triton,
            "ptxas": self.ptxas,
            "python": self.python,
        }


@dataclass
class RunCell:
    """One benched (kernel, input) entry of the run: both toolchains' medians, the measured change
    and its statistics verdict, the cost model's prediction and what changed compile-side."""

    entry: int
    kernel: str
    function: str
    input: str
    launches: int
    old_ms: float | None
    new_ms: float | None
    measured_ratio: float | None
    measured_verdict: str | None
    measured_problem: str | None  # why there is no measured verdict
    predicted: Prediction | None
    compile_change: bool | None
    attribution: str | None
    compile_failed: list[str]

    def to_json(self) -> JSONObject:
        return {
            "entry": self.entry,
            "kernel": self.kernel,
            "function": self.function,
            "input": self.input,
            "launches": self.launches,
            "old_ms": self.old_ms,
            "new_ms": self.new_ms,
            "measured_ratio": self.measured_ratio,
            "measured_verdict": self.measured_verdict,
            "measured_problem": self.measured_problem,
            "predicted": self.predicted.to_json() if self.predicted is not None else None,
            "predicted_text": self.predicted.text() if self.predicted is not None else None,
            "compile_change": self.compile_change,
            "attribution": self.attribution,
            "compile_failed": self.compile_failed,
        }


@dataclass
class ProgramOptions:
    """What ``triage --run`` takes; ``workdir`` holds W.json, the bundle and results.json."""

    command: str
    old_toolchain: str
    new_toolchain: str
    workdir: Path
    threshold: float = 0.10
    jobs: int | None = None
    bisect: bool = True
    fixes: bool = True
    max_time_s: float = TriageOptions.max_time_s  # one default for the GPU re-run's sampling, --run or not
    db: str | None = None
    model: str | None = None  # the cost model's file (--model); None: $KTRIAGE_MODEL, else the shipped fit
    sm_count: int | None = None  # the SMs the predictions are priced for (--sm-count); None: the recording GPU's


@dataclass
class ProgramReport:
    """The whole run: steps with wall times, one row per benched cell (measured and predicted), and
    the triage of the two sides (``TriageReport``), when the run got that far."""

    command: str
    old_toolchain: str
    new_toolchain: str
    workdir: str
    workload: str = "W.json"  # its file name in workdir (workload_file)
    steps: list[Step] = field(default_factory=list)
    toolchains: list[RunToolchain] = field(default_factory=list)
    cells: list[RunCell] = field(default_factory=list)
    triage: TriageReport | None = None
    failures: list[str] = field(default_factory=list)

    def step(self, name: str) -> Step | None:
        return next((s for s in self.steps if s.name == name), None)

    @property
    def total_s(self) -> float:
        return sum(s.wall_s or 0.0 for s in self.steps)

    @property
    def complete(self) -> bool:
        return (
            not self.failures
            and all(s.status in ("ok", "skipped") for s in self.steps)
            and (self.triage is not None and self.triage.complete)
        )

    def exit_code(self, allow_failures: bool = False) -> ExitStatus:
        """FINDING a regression, OK none, INCOMPLETE a step failed or was partial (unless
        ``allow_failures``); ``ktriage.exit_status``."""
        finding = self.triage is not None and bool(self.triage.regressions)
        return outcome(finding=finding, complete=self.complete, allow_failures=allow_failures)

    def headline(self) -> str:
        if self.triage is None:
            failed = next((s for s in self.steps if s.status == "failed"), None)
            return f"stopped at {failed.name}: {failed.detail}" if failed else "stopped before the triage"
        return self.triage.headline()

    def files(self) -> dict[str, str]:
        root = Path(self.workdir)
        return {"workload": str(root / self.workload), "bundle": str(root / BUNDLE), "results": str(root / RESULTS)}

    def to_json(self) -> JSONObject:
        return {
            "format": FORMAT,
            "kind": "triage-run",
            "command": self.command,
            "old_toolchain": self.old_toolchain,
            "new_toolchain": self.new_toolchain,
            "toolchains": [t.to_json() for t in self.toolchains],
            "workdir": self.workdir,
            "files": self.files(),
            "headline": self.headline(),
            "complete": self.complete,
            "steps": [s.to_json() for s in self.steps],
            "total_s": round(self.total_s, 3),
            "cells": [c.to_json() for c in self.cells],
            "failures": self.failures,
            "split": split_commands(self.command, self.old_toolchain, self.new_toolchain),
            "triage": self.triage.to_json() if self.triage is not None else None,
        }


# ------------------------------------------------------------------------------- the split
def split_commands(command: str, old: str, new: str) -> list[dict[str, str]]:
    """The same steps as separate commands, each on the machine it needs (docs/triage.md)."""
    q = shlex.quote
    return [
        {"where": "GPU host", "step": "record", "command": f"ktriage record -o W.json -- {command}"},
        {
            "where": "CPU machine (toolchains)",
            "step": "compile",
            "command": f"ktriage bench W.json -t {q(old)} -t {q(new)} --compile-only --bundle B",
        },
        {"where": "GPU host (no toolchains)", "step": "bench", "command": "ktriage bench --bundle B -o results.json"},
        {
            "where": "anywhere (toolchains for explain)",
            "step": "compare, explain, bisect, fixes",
            "command": "ktriage triage results.json results.json --workload W.json",
        },
    ]


def no_gpu_fix(command: str, old: str, new: str) -> str:
    """The fix of a --run on a host without a GPU: the split workflow, step by step."""
    steps = split_commands(command, old, new)
    return "run it on a GPU host, or split the steps: " + "; ".join(f"{s['where']}: `{s['command']}`" for s in steps)


def gpu_problem_here() -> str | None:
    """Why this host cannot record and bench (no torch, no CUDA driver, no GPU), or None."""
    from ktriage.record.run import gpu_problem

    if importlib.util.find_spec("torch") is None:
        return "torch is not installed in this Python (the bench times the kernels through it)"
    return gpu_problem()


def _check_nothing_replaced(workdir: Path, workload: str) -> None:
    """Refuse a work folder that already holds a file the run writes by name (the bundle, the results,
    the reports): ``--workdir .`` in a project replaced its ``report.md`` without a word, a file the
    user never named. Files of other names in it are left alone."""
    names = (BUNDLE, RESULTS, *REPORTS)
    held = [n for n in names if os.path.lexists(workdir / n)]
    if held:
        raise KtriageError(
            f"--workdir {workdir} already holds {', '.join(held)}, which this run would replace (it writes"
            f" {workload}, {', '.join(names)} there)",
            f"give a new folder (it is created), or move {', '.join(held)} out of {workdir}",
        )


def preflight(options: ProgramOptions) -> list[str]:
    """Everything checkable before minutes of work: the command splits, both toolchain specs parse,
    the workdir is usable, and this host has a GPU. Returns the program's argv."""
    try:
        argv = shlex.split(options.command)
    except ValueError as exc:
        raise KtriageError(
            f"--run {options.command!r} cannot be split into words: {exc}",
            "close the quote, e.g. --run \"python train.py --name 'a b'\"",
        ) from None
    if not argv:
        raise KtriageError(
            "--run is empty: no program to record", 'give the program, e.g. --run "python train.py --steps 3"'
        )
    for flag, text in (("--old-toolchain", options.old_toolchain), ("--new-toolchain", options.new_toolchain)):
        if not text:
            raise KtriageError(
                f"--run needs {flag}",
                "give both sides, e.g. --old-toolchain triton==3.5.1 --new-toolchain triton==3.6.0",
            )
        parse_toolchain(text)  # a typo is reported before anything runs
    if options.workdir.exists() and not options.workdir.is_dir():
        raise KtriageError(f"--workdir {options.workdir} is a file", "give a folder (it is created)")
    if (options.workdir / workload_file(argv)).exists():
        raise KtriageError(
            f"--workdir {options.workdir} already holds a run ({workload_file(argv)})",
            "give a new folder, or remove that one",
        )
    _check_nothing_replaced(options.workdir, workload_file(argv))
    check_gate(options.threshold, flag_percent=True)
    if not (math.isfinite(options.max_time_s) and options.max_time_s > 0):
        raise KtriageError(
            f"--max-time {options.max_time_s} is not a time", "give the seconds of sampling per input, e.g. 5"
        )
    problem = gpu_problem_here()
    if problem:
        raise KtriageError(
            f"no GPU to record and bench on here: {problem}; `triage --run` runs the program and times "
            "its kernels on this host",
            no_gpu_fix(options.command, options.old_toolchain, options.new_toolchain),
        )
    return argv


# ------------------------------------------------------------------------------- the run
class _Clock:
    """The report's steps, timed as they run; a KtriageError in a step marks it failed and goes up."""

    def __init__(self, report: ProgramReport, say: Say, on_step: Callable[[ProgramReport], None] | None = None) -> None:
        self.report, self.say, self.on_step = report, say, on_step

    def _done(self) -> None:
        if self.on_step is not None:  # e.g. the CLI rewrites report.md/.json: a run killed later keeps what it did
            self.on_step(self.report)

    @contextmanager
    def step(self, name: str, what: str) -> Iterator[Step]:
        step = Step(name)
        self.report.steps.append(step)
        self.say(f"{name}: {what}")
        started = time.perf_counter()
        try:
            yield step
        except KtriageError as exc:
            step.status, step.detail = "failed", exc.problem
            raise
        finally:
            step.wall_s = time.perf_counter() - started
            self._done()

    def timed(self, name: str, wall_s: float | None, detail: str, status: StepStatus = "ok") -> None:
        self.report.steps.append(Step(name, status, wall_s, detail))
        self._done()

    def skip_rest(self, why: str) -> None:
        done = {s.name for s in self.report.steps}
        self.report.steps += [Step(n, "skipped", None, why) for n in STEPS if n not in done]
        self._done()


def run_program(
    options: ProgramOptions, say: Say | None = None, on_step: Callable[[ProgramReport], None] | None = None
) -> ProgramReport:
    """Record, compile, bench, explain, compare, fix and bisect; one report (see the module docstring).

    Raises a KtriageError (exit 2) before anything runs when the input is bad or this host has no GPU;
    after that, a failing step ends the run with a report that says which step and why. ``on_step``
    gets the report after each step (what is done so far)."""
    speak = say or (lambda _m: None)
    argv = preflight(options)
    options.workdir.mkdir(parents=True, exist_ok=True)
    report = ProgramReport(
        options.command,
        options.old_toolchain,
        options.new_toolchain,
        str(options.workdir.resolve()),
        workload_file(argv),
    )
    clock = _Clock(report, speak, on_step)
    try:
        _run(argv, options, report, clock, speak)
    except KtriageError as exc:
        report.failures.append(failure_line(exc))
        clock.skip_rest(f"not run: the {report.steps[-1].name if report.steps else 'first'} step failed")
    return report


def _run(argv: list[str], options: ProgramOptions, report: ProgramReport, clock: _Clock, say: Say) -> None:
    from ktriage.toolchain.manager import ensure_toolchains

    with clock.step("toolchains", f"{options.old_toolchain} and {options.new_toolchain}") as step:
        tcs = ensure_toolchains([options.old_toolchain, options.new_toolchain])
        report.toolchains = [
            RunToolchain(side, str(t.spec), t.id, t.triton_version, t.ptxas_version, str(t.python))
            for side, t in zip(("old", "new"), tcs)
        ]
        step.detail = "; ".join(f"{t.id} (Triton {t.triton_version}, ptxas {t.ptxas_version})" for t in tcs)
    workload = _record(argv, options, report, clock)
    if workload is None:
        return
    recorded = _compile(workload, tcs, options, clock)
    run, cells = _bench(recorded, options, clock, say)
    _explain_all(recorded, tcs, cells, options, report, clock)
    _triage(run, cells, tcs, options, report, clock, say)


def _record(argv: list[str], options: ProgramOptions, report: ProgramReport, clock: _Clock) -> Any:
    """Record the program; None (the rest skipped) when it launched no kernel."""
    from ktriage.record.run import record
    from ktriage.record.workload import load_workload
    from ktriage.workload.recorded.bundle import bench_blockers

    path = options.workdir / workload_file(argv)
    with clock.step("record", shlex.join(argv)) as step:
        try:
            result = record(argv, path)
        except KtriageError as exc:  # refused (no GPU here, so nothing launched): a failed step, not a crash
            step.status, step.detail = "failed", exc.problem
            report.failures.append(failure_line(exc))
            clock.skip_rest("not run: nothing was recorded")
            return None
        w = result.workload
        inputs = sum(len(k.inputs) for k in w.kernels)
        step.detail = (
            f"{plural(len(w.kernels), 'kernel')}, {plural(inputs, 'input')}, "
            f"{plural(sum(k.launches for k in w.kernels), 'launch', 'launches')}; "
            f"the program {result.exit_note}"
        )
        if w.not_captured:
            step.detail += (
                f"; {len(w.not_captured)} not captured ("
                + "; ".join(f"{n.function}: {n.why}" for n in w.not_captured[:3])
                + ")"
            )
        blocked = bench_blockers(w) if w.kernels else []
        if blocked:
            step.detail += (
                f"; {plural(len(blocked), 'input')} cannot be benched ("
                + "; ".join(f"{b.kernel} {b.function} input {b.input}: {b.why}" for b in blocked[:3])
                + ")"
            )
        if result.interrupted is not None or result.returncode != 0:
            step.status = "partial" if w.kernels else "failed"
        if not w.kernels:
            step.status = "failed"
            try:
                w.require_kernels(str(path))
            except KtriageError as exc:
                step.detail += f": {exc.problem}" + (f" ({result.gpu_problem})" if result.gpu_problem else "")
                report.failures.append(failure_line(exc))
            clock.skip_rest("not run: nothing was recorded")
            return None
        if result.interrupted is not None:
            report.failures.append(f"the recording was interrupted ({result.exit_note})")
            clock.skip_rest("not run: the recording was interrupted")
            return None
    return load_workload(path)  # as a later `bench W.json` reads it: snapshots materialized


def _compile(workload: Any, tcs: Sequence[Toolchain], options: ProgramOptions, clock: _Clock) -> Any:
    from ktriage.compile.compiler import Compiler
    from ktriage.workload.bundles.format import BundleFailure
    from ktriage.workload.recorded.bundle import build_recorded_bundle, load_recorded_bundle

    with clock.step("compile", "every recorded kernel input with both toolchains into a bundle") as step:
        with Compiler(jobs=options.jobs) as compiler:
            require_packages(workload, tcs, compiler)
            path = build_recorded_bundle(workload, list(tcs), options.workdir / BUNDLE, compiler=compiler)
        recorded = load_recorded_bundle(path)
        failed = [a for a in recorded.bundle.artifacts.values() if isinstance(a, BundleFailure)]
        n = len(recorded.bundle.artifacts)
        step.detail = (
            f"{plural(len(recorded.entries), 'kernel input')}, {n - len(failed)} of {plural(n, 'compile')} ok -> {path}"
        )
        if failed:
            step.status = "partial"
            step.detail += "; failed: " + "; ".join(f"{f.toolchain_id}: {f.message}"[:200] for f in failed[:3])
    return recorded


def require_packages(workload: Any, tcs: Sequence[Toolchain], compiler: Compiler) -> None:
    """The packages the recorded kernels' modules need (their source snapshots, the helpers they
    import), got for each toolchain before any compile. A toolchain that can get none of them (a
    release toolchain on a host without network, say) would compile nothing, and the rest of the run
    could compare nothing: the step fails with the package and the fix instead of a partial run of
    failed cells. One package missing among others still compiles the rest (their cells say why)."""
    from ktriage.workload.recorded.bundle import workload_entries

    specs = list({spec.package: spec for _, spec in workload_entries(workload)}.values())
    for tc in tcs:
        errors: list[KtriageError] = []
        for spec in specs:
            try:
                compiler.kernel_sys_path(spec, tc)
            except KtriageError as exc:
                errors.append(exc)
        if errors and len(errors) == len(specs):
            raise KtriageError(
                f"toolchain {tc.id} ({tc.spec}) can compile none of the recorded kernels: {errors[0].problem}",
                errors[0].fix,
            )


def _bench(recorded: Any, options: ProgramOptions, clock: _Clock, say: Say) -> tuple[RunInfo, list[Cell]]:
    from ktriage import progress
    from ktriage.bench.plan import RecordedPlan
    from ktriage.bench.recorded import run_recorded
    from ktriage.triage.measure_plan import MIN_SAMPLES

    entries = list(recorded.entries)
    toolchains = list(recorded.bundle.toolchains)
    with clock.step(
        "bench",
        f"{plural(len(entries), 'kernel input')}, {plural(len(toolchains), 'toolchain')} side by side in one GPU process",
    ) as step:
        plan = RecordedPlan(
            bundle=str(recorded.bundle.path),
            name=recorded.name,
            entries=[e.id for e in entries],
            toolchains=toolchains,
            timing={"mode": "events", "l2_flush": True},
            min_samples=MIN_SAMPLES,
            max_time_s=options.max_time_s,
        )
        with progress.task("bench: kernel inputs", total=len(entries)) as task:
            run, cells = run_recorded(
                plan,
                entries,
                store_url=options.db,
                results_path=options.workdir / RESULTS,
                toolchains=list(recorded.bundle.toolchains.values()),
                on_entry_done=lambda _e: task.callback(None),
            )
        bad = [c for c in cells if c.status != "ok"]
        step.detail = f"{len(cells) - len(bad)} of {plural(len(cells), 'cell')} timed (run {run.run_id}) -> {options.workdir / RESULTS}"
        if bad:
            step.status = "partial"
            step.detail += "; " + "; ".join(f"{c.key.label()}: {c.status} {str(c.error or '')[:120]}" for c in bad[:3])
    return run, cells


def _explain_all(
    recorded: Any,
    tcs: Sequence[Toolchain],
    cells: Sequence[Cell],
    options: ProgramOptions,
    report: ProgramReport,
    clock: _Clock,
) -> None:
    """Every benched kernel input explained with both toolchains: per cell, the measured change next to
    the cost model's prediction and the compile-side change (the flagged cells' causes come after)."""
    from ktriage.compile.compiler import Compiler
    from ktriage.explain.engine import Explainer
    from ktriage.predict.model import load_params
    from ktriage.spec.sms import price_for

    keys = list(dict.fromkeys(e.spec_key for e in recorded.entries))
    with clock.step(
        "explain", f"{plural(len(keys), 'kernel input')} compile-side with both toolchains, the cost model per cell"
    ) as step:
        # priced for the recording GPU (its SMs in the specs' meta), or for sm_count's (--sm-count)
        specs = [price_for(recorded.bundle.specs[k], options.sm_count) for k in keys]
        with Compiler(jobs=options.jobs) as compiler:
            # each row's prediction at the run's gate, the one its measured verdicts and its triage use
            result = Explainer(compiler, params=load_params(options.model), threshold=options.threshold).run(
                specs, list(tcs)
            )
        by_key = {k: item for k, item in zip(keys, result.specs, strict=True)}
        report.cells = cell_rows(recorded.entries, by_key, cells, [t.id for t in tcs])
        step.detail = f"{plural(len(result.specs), 'kernel input')} explained, {sum(1 for r in report.cells if r.compile_change)} changed compile-side"
        if not result.complete:
            step.status = "partial"
            step.detail += f"; {plural(len(result.failures), 'compile')} failed"


def cell_rows(
    entries: Sequence[Any], explained: Mapping[str, Any], cells: Sequence[Cell], ids: Sequence[str]
) -> list[RunCell]:
    """One row per benched entry: both toolchains' medians, the measured change and its stats verdict
    (``compare_toolchains`` on the side-by-side samples), the predicted change and what changed."""
    from ktriage.compare.pairing import compare_cells
    from ktriage.stats.verdict import VerdictConfig

    old, new = ids
    by_side = {tc: [c for c in cells if c.key.toolchain == tc] for tc in ids}
    comparison = compare_cells(
        by_side[old],
        by_side[new],
        ref_label=old,
        new_label=new,
        config=VerdictConfig(),
        same_run=True,
        default_baselines={},
        cliffs=False,
    )
    pairs = {(p.input_id, p.backend): p for p in comparison.pairs}
    rows = []
    for e in entries:
        p = pairs.get((e.id, e.backend))
        v = p.verdict if p is not None else None
        item = explained.get(e.spec_key)
        comp = item.comparisons[0] if item is not None and item.comparisons else None
        pred = comp.prediction if comp is not None else None
        rows.append(
            RunCell(
                entry=e.id,
                kernel=e.kernel,
                function=e.function,
                input=e.label,
                launches=e.count,
                old_ms=v.median_ref if v else None,
                new_ms=v.median_new if v else None,
                measured_ratio=v.ratio if v and math.isfinite(v.ratio) else None,
                measured_verdict=v.verdict if v else None,
                measured_problem=(p.problem if p is not None and v is None else None) or (None if p else "not timed"),
                predicted=pred,
                compile_change=comp.changed if comp is not None else None,
                attribution=comp.attribution() if comp is not None and comp.changed else None,
                compile_failed=[f"{f.toolchain.id}: {f.message}"[:200] for f in item.failures]
                if item is not None
                else [],
            )
        )
    return rows


def _triage(
    run: RunInfo,
    cells: Sequence[Cell],
    tcs: Sequence[Toolchain],
    options: ProgramOptions,
    report: ProgramReport,
    clock: _Clock,
    say: Say,
) -> None:
    """The triage of the two sides (compare, explain the flagged cells, fixes), then the bisect of
    the real regressions; their wall times join the report's steps."""
    from ktriage.triage.pipeline import _Triage, triage

    old, new = tcs
    sides = split_toolchains(run, list(cells), old.id, new.id)
    topts = TriageOptions(
        old_toolchain=str(old.spec),
        new_toolchain=str(new.spec),
        threshold=options.threshold,
        jobs=options.jobs,
        bisect=False,
        fixes=options.fixes,
        db=None,
        workloads=[str(Path(report.workdir) / report.workload)],
        model=options.model,  # the triage's predictions priced as the run's rows were
        sm_count=options.sm_count,
    )
    timings: dict[str, float] = {}
    started = time.perf_counter()
    try:
        result = triage(sides[0], sides[1], topts, say=say, timings=timings)
    except KtriageError as exc:
        clock.timed("compare", time.perf_counter() - started, exc.problem, "failed")
        raise
    report.triage = result
    result.options.bisect = options.bisect  # asked of the run: its bisect step follows, on the real regressions only
    settle_side_by_side(result, sides[0].cells, sides[1].cells, str(Path(report.workdir) / RESULTS))
    flagged = len(result.cells)
    clock.timed(
        "compare",
        timings.get("compare"),
        f"{plural(result.compared, 'cell')} compared, {flagged} past the "
        f"{gate_band(options.threshold)} gate (both sides from one GPU process)",
    )
    explain = report.step("explain")
    if explain is not None and "explain" in timings:
        explain.wall_s = (explain.wall_s or 0.0) + timings["explain"]
        explain.detail += f"; causes of the {plural(flagged, 'flagged cell')}"
    if not options.fixes:
        clock.timed("fixes", None, worded(lambda o: f"not asked: {o('fixes', '--no-fixes', False)}"), "skipped")
    elif "fixes" in timings:
        proposed = sum(len(c.fixes) for c in result.cells)
        clock.timed(
            "fixes",
            timings["fixes"],
            f"{plural(proposed, 'fix', 'fixes')} proposed and verified by compiling"
            if proposed
            else "no fix proposed: no flagged cell changed for the worse compile-side (what explain --fixes works from)",
        )
    else:
        clock.timed("fixes", None, "no flagged cell with a compile-side change to fix", "skipped")
    real = real_regressions(result.cells)
    why = bisect_skip_reason(options.bisect, [t.spec for t in tcs], result.cells)
    if why is not None:
        clock.timed("bisect", None, why, "skipped")
        result.notes.append(worded(lambda o: f"bisect: {spelled(why, o)}"))
        return
    work = _Triage(topts, say)
    work.toolchains = list(tcs)
    started = time.perf_counter()
    work.bisect(real)
    result.failures += work.failures
    found = [c.culprit for c in real if c.culprit is not None and c.culprit.found]
    clock.timed(
        "bisect",
        time.perf_counter() - started,
        f"{plural(len(real), 'real regression')} bisected, {plural(len(found), 'culprit')} found",
        "partial" if work.failures else "ok",
    )


def real_regressions(cells: Sequence[CellTriage]) -> list[CellTriage]:
    """The cells a bisect is for: slower in the side-by-side samples AND changed for the worse compile-side."""
    return [c for c in cells if c.ratio > 1 and c.stats_verdict == "regression" and c.cause is not None]


def bisect_skip_reason(asked: bool, specs: Sequence[ToolchainSpec], cells: Sequence[CellTriage]) -> str | None:
    """Why the bisect step does not run (None: it runs): not asked, a side that is no release (a wheel,
    ``triton=host``, a ptxas path: no release range to search), or no real regression."""
    if not asked:
        return worded(lambda o: f"not asked: {o('bisect', '--no-bisect', False)}")
    not_release = [str(s) for s in specs if not s.is_release]
    if not_release:
        return (
            f"{', '.join(not_release)} {agree(len(not_release), 'is', 'are')} not a release: a bisect searches Triton "
            "or ptxas releases (give triton==X[,ptxas==Y] on both sides)"
        )
    if real_regressions(cells):
        return None
    slower = [c for c in cells if c.ratio > 1 and c.stats_verdict == "regression"]
    if not slower:
        return "no real regression: no cell is slower in the side-by-side samples"
    return worded(
        lambda o: (
            f"{plural(len(slower), 'cell')} slower side by side, none with a compile-side cause: a compile-only bisect "
            f"would find nothing (bisect by timing on the GPU host: {command('bisect', o, ('metric', '--metric', 'latency'))})"
        )
    )


def settle_side_by_side(result: TriageReport, old: Sequence[Cell], new: Sequence[Cell], source: str) -> None:
    """Both sides of a --run come from one GPU process, interleaved: the samples' verdict IS the
    side-by-side measurement a triage of two files asks a GPU re-run for. Each flagged cell gets it
    as its measured verdict (as ``--measured`` would give), and the "needs a GPU" lines go."""
    from ktriage.compare.pairing import compare_cells
    from ktriage.stats.verdict import VerdictConfig
    from ktriage.triage.measure_read import _from_verdict, _settle
    from ktriage.triage.model import ORDER, SETTLED_BY_A_RERUN, GpuStep

    config = VerdictConfig(threshold=result.options.threshold, confidence=result.options.confidence)
    comparison = compare_cells(old, new, config=config, same_run=True, default_baselines={}, cliffs=False)
    verdicts = {(p.op, p.mode, p.input_id, p.backend): p.verdict for p in comparison.pairs if p.verdict is not None}
    for c in result.cells:
        v = verdicts.get((c.op, c.mode, c.input_id, c.backend))
        if v is None:
            continue
        c.measured = _from_verdict(v, "side_by_side", "both toolchains interleaved in this run's GPU process", source)
        _settle(c)
    rank = {v: k for k, v in enumerate(ORDER)}
    result.cells.sort(key=lambda c: (rank[c.verdict], -c.ratio if c.ratio >= 1 else c.ratio))
    result.measured = GpuStep(
        "side_by_side",
        results=[source],
        note="one results file as both sides (or triage --run): its two toolchains' samples, interleaved in one "
        "GPU process, are the side-by-side measurement",
    )
    # the run timed the op's baseline once, for both toolchains (its host cells are in neither half): the
    # check is "shared", not compare's "none: pass --baseline" (an option triage does not have)
    result.baseline = replace(comparison.baseline, per_op=dict(result.baseline.per_op) if result.baseline else {})
    result.gpu_needed = [x for x in result.gpu_needed if not x.startswith(SETTLED_BY_A_RERUN)]


def split_toolchains(
    run: RunInfo, cells: list[Cell], old: str | None, new: str | None
) -> tuple[LoadedSide, LoadedSide]:
    """One results file that timed two toolchains side by side, as the two sides of a triage: each
    side the cells of its toolchain. ``old``/``new``: a toolchain id (or its prefix) or spec as the
    run records it; None: the run's order (the reference first, as ``bench -t OLD -t NEW`` puts it)."""
    records = [t for t in run.toolchains if t.get("id")]
    ids = [str(t["id"]) for t in records]
    if len(ids) < 2:
        raise KtriageError(
            f"run {run.run_id} timed {plural(len(ids), 'toolchain')}: one results file is two sides only when it "
            "timed two toolchains side by side",
            "give two results files (OLD NEW), or bench both toolchains in one run: ktriage bench --bundle B",
        )

    def pick(text: str | None, default: str, flag: str) -> str:
        if text is None:
            return default
        try:
            canonical = str(parse_toolchain(text, check_files=False))
        except KtriageError:
            canonical = text
        hits = [
            str(t["id"])
            for t in records
            if text == t["id"] or canonical == t.get("spec") or str(t["id"]).startswith(text)
        ]
        if len(hits) != 1:
            raise KtriageError(
                f"{flag} {text} names {'no' if not hits else 'more than one'} toolchain of run {run.run_id}",
                "give one of its toolchains: " + ", ".join(f"{t['id']} ({t.get('spec')})" for t in records),
            )
        return hits[0]

    a = pick(old, ids[0], "--old-toolchain")
    b = pick(new, ids[1] if ids[0] == a else ids[0], "--new-toolchain")
    if a == b:
        raise KtriageError(f"both sides name the toolchain {a}", "give two different toolchains of the run")
    spec = {str(t["id"]): str(t.get("spec") or t["id"]) for t in records}
    return (
        LoadedSide(run, [c for c in cells if c.key.toolchain == a], spec[a]),
        LoadedSide(run, [c for c in cells if c.key.toolchain == b], spec[b]),
    )
