"""The GPU step of a triage: re-measure the flagged cells with both toolchains side by side.

A TritonBench file has one p50 per cell and two files come from two processes (often two days), so a
moved cell with no compile-side change is noise, a moved baseline or a changed machine, and only
timing both toolchains interleaved in ONE GPU process tells which. This module turns a triage's
flagged cells into that measurement and its answer back into verdicts:

1. :func:`plan_measurement` (``ktriage.triage.measure_plan``): which flagged cells ktriage can
   bench (:func:`bench_target`, the seam for benches of other workloads), grouped per (op, pass)
   into bench bundles, each named with a token of the triage (its toolchains and benchable cells)
   so that results of another triage are refused;
2. :func:`write_bundle` (CPU machine): the bundles, compiled by ``ktriage.workload.bundles.build``
   with both toolchains (the same toolchain on both sides: a second, identical copy of its kernels
   as a bundle variant, so an A/A pair is timed as two variants too), a manifest of which triage cell
   each bundle input answers (``triage-measure.json``) and ``measure.sh``, the GPU host's one command;
   cells whose kernels came from a recorded workload (``--workload``) get a recorded bundle of
   those kernel inputs (``ktriage.workload.recorded.bundle``), benched by ``ktriage bench --bundle``;
3. :func:`run_measure` (GPU host): the same bench in-process (``ktriage.bench.session.run_bench``);
4. :func:`apply_measured` (``ktriage.triage.measure_read``): results files back
   (``ktriage.compare.sides.load_side``), each flagged cell's verdict from the side-by-side
   samples (``ktriage.compare.pairing.compare_toolchains``: regression / same = noise / improvement /
   unsure, with the interval and its confidence), and what the re-run says of the baseline.
"""

from __future__ import annotations

import datetime as _dt
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ktriage import progress
from ktriage.atomic import write_atomic
from ktriage.errors import KtriageError, failure_line, joined, spelled, worded
from ktriage.triage.measure_plan import (
    AA_VARIANT,
    FIX_VARIANT,
    MANIFEST,
    MEASURE,
    MEASURED,
    MIN_SAMPLES,
    RESULTS,
    SCRIPT,
    SLOWER_LABEL,
    WORKLOAD_GIVEN,
    BenchTarget,
    MeasurePlan,
    RecordedGroup,
    bench_target,
    fixes_to_time,
    plan_measurement,
)
from ktriage.triage.measure_read import apply_measured, check_results, describe, mark_not_measured, results_paths
from ktriage.triage.model import GpuStep, TriageOptions, TriageReport
from ktriage.wording import plural

__all__ = [
    "MANIFEST",
    "SCRIPT",
    "BenchTarget",
    "MeasurePlan",
    "apply_measured",
    "bench_target",
    "check_options",
    "describe",
    "gpu_step",
    "plan_measurement",
    "results_paths",
    "reusable",
    "run_measure",
    "write_bundle",
]

Say = Callable[[str], None]
FORMAT = 1


# ----------------------------------------------------------------------------------- the step
def check_options(options: TriageOptions) -> None:
    """Refuse contradictory GPU-step options before any compile runs."""
    if options.measure and options.measured:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(MEASURE, o)} re-measures here, {spelled(MEASURED, o)} reads results measured "
                    "elsewhere: not both"
                )
            ),
            worded(
                lambda o: (
                    f"drop one (on a GPU host: {spelled(MEASURE, o)}; on the CPU machine, after the GPU host "
                    f"ran the bundle: {spelled(MEASURED, o)})"
                )
            ),
        )
    if options.measured and options.bundle:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{o('bundle', '--bundle')} writes a new bundle, {spelled(MEASURED, o)} reads the results "
                    "of one: not both"
                )
            ),
            worded(
                lambda o: (
                    f"give {o('measured', '--measured', ['DIR'])} (the bundle folder, with its results/) or "
                    "the results files"
                )
            ),
        )
    if options.max_time_s <= 0:
        raise KtriageError(
            worded(lambda o: f"{o('max_time', '--max-time', options.max_time_s)} is not a time"),
            worded(lambda o: f"give the seconds of sampling per input, e.g. {o('max_time', '--max-time', 5)}"),
        )
    if options.measure:  # the GPU is asked now: the explain, bisect and bundle steps before it take minutes
        import importlib.util

        from ktriage.record.run import gpu_problem

        problem = (
            "torch is not installed in this Python" if importlib.util.find_spec("torch") is None else gpu_problem()
        )
        if problem:
            raise KtriageError(
                worded(lambda o: f"{spelled(MEASURE, o)} needs an NVIDIA GPU on this machine: {problem}"), NO_GPU_FIX
            )
    if options.measured:  # refused now, not after the compile-side steps; read, or with no flagged cell an
        # explain report given as --measured passed without a word
        check_results(results_paths(options.measured))


def gpu_step(report: TriageReport, options: TriageOptions, say: Say) -> None:
    """The GPU step the options ask for: write the bundle (``bundle``), bench it here (``measure``),
    or read results back (``measured``); nothing when none is asked."""
    if not (options.bundle or options.measure or options.measured):
        return
    if not report.cells:
        report.measured = GpuStep("nothing", note="no flagged cell: nothing to re-measure")
        return
    if options.measure:  # a GPU host: cells of ops with no replay and no workload get a recording of their own
        unplanned = [i for i, c in enumerate(report.cells) if bench_target(c) is None and c.recorded is None]
        if unplanned:
            from ktriage.home import home_subdir
            from ktriage.triage.measure_record import record_missing

            try:
                _require_gpu()
            except KtriageError as exc:  # recording needs the GPU; the plan still says why per cell
                for i in unplanned:
                    report.cells[i].notes.append(joined("not recorded for the GPU re-run: ", exc.problem))
            else:
                record_missing(report, unplanned, home_subdir("recordings"), say)
    plan = plan_measurement(report, options)
    for i, why in plan.skipped.items():
        report.cells[i].notes.append(joined("not re-measured: ", why))
    if not plan.bundles:  # nothing benchable: the report says why per cell, and nothing is written or read
        for i, why in plan.skipped.items():
            mark_not_measured(report.cells[i], why)
        report.measured = GpuStep(
            "nothing",
            token=plan.token,
            note=worded(
                lambda o: (
                    "no flagged cell can be re-measured by ktriage bench (layer_norm and embedding "
                    "cells have replays; the cells of any other TritonBench operator need their kernels "
                    f"from a recorded workload: {spelled(WORKLOAD_GIVEN, o)}, or {spelled(MEASURE, o)} on a GPU "
                    "host with TritonBench, which records the operator's run itself)"
                )
            ),
        )
        return
    if options.measured:
        apply_measured(report, plan, results_paths(options.measured), options)
        return
    from ktriage.home import home_subdir

    out = Path(options.bundle) if options.bundle else home_subdir("bundles") / f"tri-{plan.token}"
    if options.measure and reusable(plan, out, bundle_sm_count(report, options)):  # built on the CPU machine
        say(f"reusing the bundle in {out} (token {plan.token}): no compile")
    else:
        write_bundle(report, plan, out, options, say)
    commands = [f"bash {shlex.quote(str(out / SCRIPT))}"]
    report.measured = GpuStep(
        "bundled",
        token=plan.token,
        bundle=str(out),
        commands=commands,
        bench=[g.bench_command(options.max_time_s) for g in plan.bundles],
        note=bundled_line(report, plan, out),
    )
    # the folder is said once (the GPU re-run's line); a row says only what differs between rows: its bundle
    # when the folder holds several, its recorded entries
    several = len(plan.bundles) > 1
    for i, t in plan.targets.items():
        if several:
            report.cells[i].notes.append(f"bundled for the GPU re-run: {plan.group_of(t).dirname}")
    for i, m in plan.recorded_targets.items():
        entries = ", ".join(f"entry {k.entry} ({k.backend})" for k in m.kernels)
        where = f"{plan.recorded_group(m).dirname}, " if several else ""
        report.cells[i].notes.append(f"bundled for the GPU re-run: {where}{entries}")
    if options.measure:
        paths = run_measure(plan, out, options, say, report.failures)
        apply_measured(report, plan, paths, options)
        assert report.measured is not None  # apply_measured sets it
        report.measured.bundle, report.measured.commands = str(out), commands
        return
    report.gpu_needed.append(
        worded(
            lambda o: (
                f"re-measure the flagged cells side by side on the GPU host: `{commands[0]}` (copy {out} "
                f"there first; it writes {out / RESULTS}/*.json), then here the same triage with "
                f"{o('measured', '--measured', [str(out)])}"
            )
        )
    )


def bundled_line(report: TriageReport, plan: MeasurePlan, out: Path) -> str:
    """``12 of 12 flagged cells bundled in DIR (layer_norm-bwd-c83665a8a7)``: the bundle's folder, said once
    for the report (its rows said it each, twelve times the same path), with the bundles in it."""
    n = len(plan.targets) + len(plan.recorded_targets)
    names = [g.dirname for g in plan.bundles]
    rest = f"; the other {len(report.cells) - n} say why not in their notes" if n < len(report.cells) else ""
    return f"{n} of {plural(len(report.cells), 'flagged cell')} bundled in {out} ({', '.join(names)}){rest}"


# ----------------------------------------------------------------------------------- the bundle (CPU)
def bundle_sm_count(report: TriageReport, options: TriageOptions) -> int | None:
    """The SMs the catalog bundles are built for (a Liger layer_norm backward's grid and partial
    buffers are the SM count): the count the cells were priced for (``sm_count``, else the results'
    GPU; ``ktriage.triage.pricing``), None for the target's usual part."""
    return report.pricing.override if report.pricing is not None else options.sm_count


def reusable(plan: MeasurePlan, out_dir: Path, sm_count: int | None = None) -> bool:
    """Does ``out_dir`` already hold this plan's bundles (same token, every planned input, built for
    ``sm_count`` SMs; None: the target's usual part)? Then ``--measure`` benches them as they are: a
    bundle built on the CPU machine, measured on a GPU host without the toolchains."""
    from ktriage.spec.sms import priced_sm_count
    from ktriage.workload.bundles.format import load_bundle

    try:
        doc = json.loads((Path(out_dir) / MANIFEST).read_text())
        if not isinstance(doc, dict) or doc.get("token") != plan.token:
            return False
        for g in plan.groups:
            built = load_bundle(Path(out_dir) / g.dirname)
            if built.sm_count != (sm_count or priced_sm_count(built.target, {})):  # another GPU's grids
                return False
            if not set(g.input_ids) <= {c.id for c in built.input_cases()}:
                return False
        from ktriage.workload.recorded.bundle import load_recorded_bundle

        for r in plan.recorded:
            if not set(r.entries) <= {e.id for e in load_recorded_bundle(Path(out_dir) / r.dirname).entries}:
                return False
    except (OSError, ValueError, KtriageError):
        return False
    return True


def write_bundle(report: TriageReport, plan: MeasurePlan, out_dir: Path, options: TriageOptions, say: Say) -> Path:
    """Compile the plan's bundles into ``out_dir`` (one per (op, pass)), with the manifest and the
    GPU host's script; returns ``out_dir``. A same-toolchain pair gets a second copy of its kernels
    (a variant) so the bench times two variants of identical cubins side by side."""
    from ktriage.compile.compiler import Compiler
    from ktriage.toolchain.manager import ensure_toolchains
    from ktriage.workload.bundles.build import build_bundle

    if not plan.bundles:  # gpu_step checks first; a library caller gets the reasons
        why = "; ".join(sorted(set(plan.skipped.values())))[:600]
        raise KtriageError(
            f"no flagged cell can be re-measured by ktriage bench: {why}",
            "only layer_norm and embedding cells (their Liger backend or baseline) have replays today",
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = [plan.old_toolchain] if plan.same_toolchain else [plan.old_toolchain, plan.new_toolchain]
    toolchains = ensure_toolchains(specs)
    with Compiler(jobs=options.jobs) as compiler:
        for g in plan.groups:
            path = out_dir / g.dirname
            say(
                f"bundle {g.dirname}: {g.op} {g.mode} inputs {g.input_ids}, {', '.join(g.backends)} with {' and '.join(specs)}"
            )
            build_bundle(
                g.op,
                g.mode,
                g.input_ids,
                toolchains,
                path,
                target=options.arch,
                sm_count=bundle_sm_count(report, options),
                compiler=compiler,
                precision=g.precision,
                backends=g.backends,
            )
            if plan.same_toolchain:
                _aa_copy(path, toolchains[0], compiler)
            else:
                _fix_variant(path, report, g.op, g.mode, toolchains[-1], compiler, say)
        for r in plan.recorded:
            _write_recorded(r, out_dir, toolchains, compiler, plan.same_toolchain, say)
    (out_dir / RESULTS).mkdir(exist_ok=True)
    manifest = {
        "format_version": FORMAT,
        "kind": "ktriage triage measure",
        "token": plan.token,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "old": report.old,
        "new": report.new,
        "old_toolchain": plan.old_toolchain,
        "new_toolchain": plan.new_toolchain,
        "same_toolchain": plan.same_toolchain,
        "max_time_s": options.max_time_s,
        "bundles": [g.to_json() | {"command": g.bench_command(options.max_time_s)} for g in plan.bundles],
        "cells": [
            {
                "cell": report.cells[i].label(),
                "op": t.op,
                "mode": t.mode,
                "input_id": t.input_id,
                "backend": t.backend,
                "kind": t.kind,
                "bundle": plan.group_of(t).dirname,
                "old_ms": report.cells[i].old_ms,
                "new_ms": report.cells[i].new_ms,
            }
            for i, t in plan.targets.items()
        ]
        + [
            {
                "cell": report.cells[i].label(),
                "op": report.cells[i].op,
                "mode": report.cells[i].mode,
                "input_id": report.cells[i].input_id,
                "backend": report.cells[i].backend,
                "kind": "recorded",
                "bundle": plan.recorded_group(m).dirname,
                "workload": m.workload,
                "rule": m.rule,
                "entries": [
                    {"entry": k.entry, "backend": k.backend, "kernel": k.kernel, "input": k.input} for k in m.kernels
                ],
                "old_ms": report.cells[i].old_ms,
                "new_ms": report.cells[i].new_ms,
            }
            for i, m in plan.recorded_targets.items()
        ],
        "not_bundled": [{"cell": report.cells[i].label(), "reason": why} for i, why in sorted(plan.skipped.items())],
    }
    write_atomic(out_dir / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    lines = [
        "#!/usr/bin/env bash",
        f"# ktriage triage --bundle: re-measure {plural(len(plan.targets) + len(plan.recorded_targets), 'flagged cell')} of "
        f"{report.old} -> {report.new}",
        f"# ({plan.old_toolchain} vs {plan.new_toolchain}) side by side on the GPU host. Run it from anywhere;",
        "# KTRIAGE (default: python3 -m ktriage) is the ktriage command. Writes results/<bundle>.json here.",
        "set -u",
        'cd "$(dirname "$0")"',
        "KT=${KTRIAGE:-python3 -m ktriage}",
        f"mkdir -p {RESULTS}",
        "rc=0",
    ]
    lines += [g.bench_command(options.max_time_s, ktriage="$KT") + " || rc=$?" for g in plan.bundles]
    lines += ['exit "$rc"', ""]
    script = out_dir / SCRIPT
    write_atomic(script, "\n".join(lines))
    script.chmod(0o755)
    return out_dir


def _aa_copy(path: Path, tc: Any, compiler: Any) -> None:
    """An A/A pair: a second, identical copy of the bundle's kernels as the variant ``<id>+aa``."""
    from ktriage.compile.compiler import Artifact
    from ktriage.workload.bundles.format import load_bundle
    from ktriage.workload.bundles.merge import add_variant

    bundle = load_bundle(path)
    keys = list(bundle.specs)
    outcomes = compiler.compile_many([bundle.specs[k] for k in keys], [tc])
    copies = {k: a for k, a in zip(keys, outcomes, strict=True) if isinstance(a, Artifact)}
    add_variant(
        path, tc.id, tc.id + AA_VARIANT, "A/A copy", copies, absent="this kernel did not compile for the A/A copy"
    )


def fixed_spec(spec: Any, change: dict[str, Any]) -> Any:
    """``spec`` with a fix's machine-readable change applied (``explain --fixes``): a spill-free
    config (num_warps, num_stages, block sizes, the grid they imply), a ``maxnreg``, or the
    kernel's source rewritten with ``sem="relaxed"`` on its unused-result atomics (the bundle carries
    the rewritten copy's cubin, so the GPU host needs no source); None for a change a bundle cannot
    carry (a ptxas option, another toolchain)."""
    from ktriage.explain.fixes import RELAXED_ARGUMENT, relaxed_atomic_spec
    from ktriage.tune.space import TuneConfig, config_space

    if isinstance(change.get("config"), dict):
        cfg = change["config"]
        return config_space(spec).apply(
            TuneConfig.of(
                int(cfg["num_warps"]),
                int(cfg["num_stages"]),
                {str(k): int(v) for k, v in dict(cfg.get("constexprs") or {}).items()},
            )
        )
    if isinstance(change.get("maxnreg"), int):
        return spec.replace(maxnreg=int(change["maxnreg"]))
    if change.get("argument") == RELAXED_ARGUMENT:
        return relaxed_atomic_spec(spec)[0]
    return None


def _fix_variant(path: Path, report: TriageReport, op: str, mode: str, tc: Any, compiler: Any, say: Say) -> None:
    """The proposed fixes of the flagged cells of this bundle (verified compile-side; the recommended ones,
    those predicted slower only where none is: :func:`fixes_to_time`), as the variant ``<new
    toolchain>+fix``: the GPU step then times each fix interleaved with both toolchains, the step the
    original report's authors did by hand ("does the spill-free config recover it?"). A predicted-slower
    fix timed is said in the cell's notes and in the variant's label (SLOWER_LABEL), which the measured column quotes."""
    from ktriage.compile.compiler import Artifact
    from ktriage.explain.fixes import RELAXED_ARGUMENT
    from ktriage.workload.bundles.format import load_bundle
    from ktriage.workload.bundles.merge import add_variant

    bundle = load_bundle(path)
    by_name = {spec.name: (key, spec) for key, spec in bundle.specs.items()}
    fixed: dict[str, tuple[Any, str]] = {}
    for cell in report.cells:
        if (cell.op, cell.mode) != (op, mode):
            continue
        timed, said = fixes_to_time([f for f in cell.fixes if f.kernel in by_name])
        if said is not None:
            cell.notes.append(said)
        for fix in timed:
            hit = by_name[fix.kernel]
            change = dict(fix.change)
            # a config fixes the one kernel input explained; a source rewrite fixes the function,
            # so every bundled input of it (another shape's specialization) gets it too
            targets = (
                [hit]
                if change.get("argument") != RELAXED_ARGUMENT
                else [(k, s) for k, s in bundle.specs.items() if s.source == hit[1].source]
            )
            for key, original in targets:
                if key in fixed:
                    continue
                try:
                    spec = fixed_spec(original, change)
                except (KtriageError, KeyError, TypeError, ValueError) as exc:
                    say(f"bundle {path.name}: the fix {fix.description!r} cannot be bundled: {exc}")
                    continue
                if spec is not None:
                    fixed[key] = (spec, (fix.description or fix.kind) + ("" if fix.recommended else SLOWER_LABEL))
    if not fixed:
        return
    keys = list(fixed)
    outcomes = compiler.compile_many([fixed[k][0] for k in keys], [tc])
    artifacts = {k: a for k, a in zip(keys, outcomes, strict=True) if isinstance(a, Artifact)}
    label = "proposed fix: " + "; ".join(sorted({d for _, d in fixed.values()}))
    say(f"bundle {path.name}: + {tc.id}{FIX_VARIANT} ({plural(len(artifacts), 'kernel')} with the {label})")
    add_variant(
        path,
        tc.id,
        tc.id + FIX_VARIANT,
        label[:300],
        artifacts,
        absent="no proposed fix for this kernel (not timed in the fix variant)",
    )


def _write_recorded(
    r: RecordedGroup, out_dir: Path, toolchains: list[Any], compiler: Any, same: bool, say: Say
) -> None:
    """One recorded bundle: the matched kernel inputs of one workload file, built by the recorded
    bundle builder (``ktriage bench W.json -t A -t B --compile-only --bundle DIR`` builds the same)."""
    from ktriage.record.workload import load_workload
    from ktriage.workload.recorded.bundle import build_recorded_bundle

    path = out_dir / r.dirname
    say(f"bundle {r.dirname}: recorded {r.name} entries {r.entries} ({', '.join(r.kernels)})")
    build_recorded_bundle(
        load_workload(r.workload), toolchains, path, compiler=compiler, kernels=r.kernels, inputs=r.labels
    )
    if same:
        _aa_copy(path, toolchains[0], compiler)


# ----------------------------------------------------------------------------------- the bench (GPU host)
def run_measure(plan: MeasurePlan, out_dir: Path, options: TriageOptions, say: Say, failures: list[str]) -> list[Path]:
    """Bench every bundle of ``out_dir`` in this process (a GPU host), as ``measure.sh`` would; the
    results files, one per bundle. A bundle that fails to bench is added to ``failures`` (with
    what it measured before failing, if anything), the others go on."""
    from ktriage.bench.plan import BenchPlan
    from ktriage.bench.session import run_bench
    from ktriage.workload.bundles.format import load_bundle

    _require_gpu()
    paths: list[Path] = []
    for r in plan.recorded:
        done = _run_recorded(r, Path(out_dir), options, say, failures)
        paths += [done] if done is not None else []
    for g in plan.groups:
        path = Path(out_dir) / g.dirname
        bundle = load_bundle(path)
        records = list(bundle.toolchains.values())
        bench = BenchPlan(
            op=g.op,
            mode=g.mode,
            input_ids=g.input_ids,
            native_backends=[g.baseline],
            artifact_backends=g.backends,
            baseline=g.baseline,
            precision=g.precision,
            bundle=str(bundle.path),
            toolchains=[str(t["id"]) for t in records],
            timing={"mode": "events", "l2_flush": True},
            min_samples=MIN_SAMPLES,
            max_time_s=options.max_time_s,
        )
        results = Path(out_dir) / g.results_name
        results.parent.mkdir(parents=True, exist_ok=True)
        say(
            f"bench {g.dirname}: {plural(len(g.input_ids), 'input')}, {plural(len(records), 'toolchain variant')} side by side"
        )
        try:
            with progress.task(f"bench {g.dirname}: inputs", total=len(g.input_ids)) as step:
                run_bench(
                    bench, store_url=options.db, results_path=results, toolchains=records, on_input_done=step.callback
                )
        except KtriageError as exc:  # this bundle's cells stay unmeasured; the other bundles go on
            failures.append(failure_line(exc, f"bench {g.dirname}"))
            if not results.exists():
                continue
        paths.append(results)
    return paths


def _run_recorded(
    r: RecordedGroup, out_dir: Path, options: TriageOptions, say: Say, failures: list[str]
) -> Path | None:
    """Bench one recorded bundle in this process, as its line of ``measure.sh`` would."""
    from ktriage.bench.plan import RecordedPlan
    from ktriage.bench.recorded import run_recorded
    from ktriage.workload.recorded.bundle import load_recorded_bundle

    recorded = load_recorded_bundle(out_dir / r.dirname)
    entries = [e for e in recorded.entries if e.id in r.entries]
    bench = RecordedPlan(
        bundle=str(recorded.bundle.path),
        name=recorded.name,
        entries=[e.id for e in entries],
        toolchains=list(recorded.bundle.toolchains),
        timing={"mode": "events", "l2_flush": True},
        min_samples=MIN_SAMPLES,
        max_time_s=options.max_time_s,
    )
    results = out_dir / r.results_name
    results.parent.mkdir(parents=True, exist_ok=True)
    say(
        f"bench {r.dirname}: {plural(len(entries), 'recorded kernel input')}, {plural(len(bench.toolchains), 'toolchain variant')} side by side"
    )
    try:
        with progress.task(f"bench {r.dirname}: kernel inputs", total=len(entries)) as step:
            run_recorded(
                bench,
                entries,
                store_url=options.db,
                results_path=results,
                toolchains=list(recorded.bundle.toolchains.values()),
                on_entry_done=step.callback,
            )
    except KtriageError as exc:
        failures.append(failure_line(exc, f"bench {r.dirname}"))
        if not results.exists():
            return None
    return results


NO_GPU_FIX = worded(
    lambda o: (
        f"on a CPU machine use {o('bundle', '--bundle', 'DIR')}, run the printed command on the GPU host, "
        f"then {o('measured', '--measured', ['DIR/results'])}"
    )
)


def _require_gpu() -> None:
    fix = NO_GPU_FIX
    try:
        import torch
    except ImportError as exc:
        raise KtriageError(
            worded(lambda o: f"{spelled(MEASURE, o)} needs torch and an NVIDIA GPU on this machine"), fix
        ) from exc
    if not torch.cuda.is_available():
        raise KtriageError(worded(lambda o: f"{spelled(MEASURE, o)}: no CUDA GPU is visible on this machine"), fix)
