"""The GPU step of a triage: re-measure the flagged cells with both toolchains side by side.

A TritonBench file has one p50 per cell and two files come from two processes (often two days), so a
moved cell with no compile-side change is noise, a moved baseline or a changed machine, and only
timing both toolchains interleaved in ONE GPU process tells which. This module turns a triage's
flagged cells into that measurement and its answer back into verdicts:

1. :func:`plan_measurement`: which flagged cells ktriage can bench (:func:`bench_target`, the seam
   for benches of other workloads), grouped per (op, pass) into bench bundles, each named with a
   token of the triage (its toolchains and benchable cells) so results of another triage are refused;
2. :func:`write_bundle` (CPU machine): the bundles, compiled by ``ktriage.workload.bundle_build``
   with both toolchains (the same toolchain on both sides: a second, identical copy of its kernels
   as a bundle variant, so an A/A pair is timed as two variants too), a manifest of which triage cell
   each bundle input answers (``triage-measure.json``) and ``measure.sh``, the GPU host's one command;
3. :func:`run_measure` (GPU host): the same bench in-process (``ktriage.bench.session.run_bench``);
4. :func:`apply_measured`: results files back (``ktriage.bench.compare_sides.load_side``), each
   flagged cell's verdict from the side-by-side samples (``ktriage.stats.compare.compare_toolchains``:
   regression / same = noise / improvement / unsure, with the interval and its confidence), and what
   the re-run says of the baseline.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ktriage.errors import KtriageError
from ktriage.triage.model import CellTriage, Measured, TriageOptions, TriageReport

if TYPE_CHECKING:
    from ktriage.measure.cells import Cell, RunInfo
    from ktriage.stats.verdict import Verdict, VerdictConfig

Say = Callable[[str], None]
MANIFEST = "triage-measure.json"
SCRIPT = "measure.sh"
RESULTS = "results"
FORMAT = 1
AA_VARIANT = "+aa"  # the same toolchain's second copy: "<toolchain id>+aa"
MIN_SAMPLES = 20


@dataclass(frozen=True)
class BenchTarget:
    """What a flagged cell is re-measured as: an (op, pass, input) of ``ktriage bench`` and the
    backend, either a toolchain's artifacts (``artifact``: timed once per toolchain) or the op's
    baseline (``baseline``: the host's own, one copy for both toolchains)."""

    op: str
    mode: str
    input_id: int
    backend: str
    kind: Literal["artifact", "baseline"]


def bench_target(cell: CellTriage) -> BenchTarget | None:
    """The bench target of a flagged cell, or None when ktriage cannot bench it (its op has no bench
    workload, or its backend no replay: :func:`no_target_reason` says which).

    The seam for other benches (a recorded workload's bench): a new kind of target is added here,
    and :func:`plan_measurement` groups what this returns."""
    from ktriage.ops import registry

    op = registry.operator(cell.op)
    if op is None or not op.backends or op.module is None:
        return None
    if cell.mode not in op.modes:
        return None
    if cell.backend in op.artifact_backends:
        from ktriage.workload.replay import REPLAYS

        if REPLAYS[cell.backend].fwd_only and cell.mode != "fwd":
            return None
        return BenchTarget(cell.op, cell.mode, cell.input_id, cell.backend, "artifact")
    if cell.backend == op.baseline:
        return BenchTarget(cell.op, cell.mode, cell.input_id, cell.backend, "baseline")
    return None


def no_target_reason(cell: CellTriage) -> str:
    """Why :func:`bench_target` gave None, in the words the report shows."""
    from ktriage.ops import registry

    op = registry.operator(cell.op)
    if op is None or not op.backends or op.module is None:
        return f"no replay for {cell.op}: ktriage cannot bench this op yet (a recorded workload could)"
    if cell.mode not in op.modes:
        return f"no replay for {cell.op} {cell.mode}: ktriage benches its {', '.join(op.modes)} pass(es)"
    if cell.backend in op.artifact_backends:
        return f"no replay for {cell.backend} {cell.mode}: its replay times the forward pass only"
    return (f"no replay for {cell.backend}: ktriage re-measures {cell.op}'s toolchain artifacts "
            f"({', '.join(op.artifact_backends) or 'none'}) and its baseline {op.baseline}; {cell.backend} is one host "
            "copy for both toolchains, so a side-by-side run cannot tell them apart")


@dataclass
class BenchGroup:
    """One bench bundle: an (op, pass) over the flagged inputs, its artifact backends and baseline."""

    op: str
    mode: str
    input_ids: list[int]
    backends: list[str]  # artifact backends (bundled, timed per toolchain)
    baseline: str
    precision: str
    dirname: str  # "<op>-<mode>-<token>"

    @property
    def results_name(self) -> str:
        return f"{RESULTS}/{self.dirname}.json"

    def bench_command(self, max_time_s: float, ktriage: str = "ktriage") -> str:
        """``ktriage bench`` over this bundle, exactly as :func:`run_measure` plans it."""
        only = ",".join([self.baseline, *self.backends])
        return (f"{ktriage} bench --bundle {shlex.quote(self.dirname)} --only {only} --artifacts-only "
                f"--precision {self.precision} --min-samples {MIN_SAMPLES} --max-time {max_time_s:g} "
                f"-o {shlex.quote(self.results_name)}")

    def to_json(self) -> dict[str, Any]:
        return {"dir": self.dirname, "op": self.op, "mode": self.mode, "inputs": self.input_ids, "backends": self.backends,
                "baseline": self.baseline, "precision": self.precision, "results": self.results_name}


@dataclass
class MeasurePlan:
    """Which flagged cells are re-measured, in which bundle; which are not, and why."""

    token: str
    old_toolchain: str
    new_toolchain: str
    groups: list[BenchGroup]
    targets: dict[int, BenchTarget]  # index into report.cells -> its target (bundled cells only)
    skipped: dict[int, str] = field(default_factory=dict)  # index -> why it is not re-measured

    @property
    def same_toolchain(self) -> bool:
        return self.old_toolchain == self.new_toolchain

    def group_of(self, target: BenchTarget) -> BenchGroup:
        return next(g for g in self.groups if (g.op, g.mode) == (target.op, target.mode))


def _token(old_tc: str, new_tc: str, targets: Sequence[BenchTarget]) -> str:
    """Names the triage a bundle answers: its toolchains and every benchable flagged cell (not the
    ``--limit`` cut, so a read-back with another limit still matches)."""
    keys = sorted({(t.op, t.mode, t.input_id, t.backend) for t in targets})
    text = json.dumps({"old": old_tc, "new": new_tc, "cells": keys}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def plan_measurement(report: TriageReport, options: TriageOptions) -> MeasurePlan:
    """The flagged cells' bench targets, worst first, cut to ``options.limit``, grouped per (op, pass)."""
    from ktriage.ops import registry
    from ktriage.workload.ops import get_op, resolve_precision

    if report.old_toolchain is None or report.new_toolchain is None:
        raise KtriageError("the GPU step needs both sides' toolchains, and the files do not say them",
                           "pass --old-toolchain and --new-toolchain (e.g. triton==3.3.1 and triton==3.4.0)")
    found: dict[int, BenchTarget] = {}
    skipped: dict[int, str] = {}
    for i, c in enumerate(report.cells):
        t = bench_target(c)
        if t is None:
            skipped[i] = no_target_reason(c)
        else:
            found[i] = t
    token = _token(report.old_toolchain, report.new_toolchain, list(found.values()))
    order = sorted(found, key=lambda i: -abs(math.log(report.cells[i].ratio)) if report.cells[i].ratio > 0 else 0.0)
    if options.limit is not None:
        if options.limit < 1:
            raise KtriageError(f"--limit {options.limit} bundles nothing", "give --limit 1 or more (or leave it out: every flagged cell)")
        for i in order[options.limit:]:
            skipped[i] = f"left out of the GPU re-run by --limit {options.limit}"
        order = order[:options.limit]
    targets = {i: found[i] for i in order}
    groups: dict[tuple[str, str], BenchGroup] = {}
    for t in targets.values():
        g = groups.get((t.op, t.mode))
        if g is None:
            op = registry.operator(t.op)
            assert op is not None and op.baseline is not None  # bench_target checked it
            prec = resolve_precision(get_op(t.op), None)
            g = groups[(t.op, t.mode)] = BenchGroup(t.op, t.mode, [], [], op.baseline, prec, f"{t.op}-{t.mode}-{token}")
        if t.input_id not in g.input_ids:
            g.input_ids.append(t.input_id)
        if t.kind == "artifact" and t.backend not in g.backends:
            g.backends.append(t.backend)
    for g in groups.values():
        g.input_ids.sort()
        if not g.backends:  # only the baseline was flagged: the bundle still times the op's kernels
            op = registry.operator(g.op)
            assert op is not None
            g.backends = [op.artifact_backends[0]]
    return MeasurePlan(token, report.old_toolchain, report.new_toolchain, list(groups.values()), targets, skipped)


# ----------------------------------------------------------------------------------- the step
def check_options(options: TriageOptions) -> None:
    """Refuse contradictory GPU-step options before any compile runs."""
    if options.measure and options.measured:
        raise KtriageError("--measure re-measures here, --measured reads results measured elsewhere: not both",
                           "drop one (on a GPU host: --measure; on the CPU machine, after the GPU host ran the bundle: --measured)")
    if options.measured and options.bundle:
        raise KtriageError("--bundle writes a new bundle, --measured reads the results of one: not both",
                           "give --measured DIR (the bundle folder, with its results/) or the results files")
    if options.max_time_s <= 0:
        raise KtriageError(f"--max-time {options.max_time_s} is not a time", "give the seconds of sampling per input, e.g. 5")
    if options.measured:
        results_paths(options.measured)  # missing files are refused now, not after the compile-side steps


def gpu_step(report: TriageReport, options: TriageOptions, say: Say) -> None:
    """The GPU step the options ask for: write the bundle (``bundle``), bench it here (``measure``),
    or read results back (``measured``); nothing when none is asked."""
    if not (options.bundle or options.measure or options.measured):
        return
    if not report.cells:
        report.measured = {"bundle": None, "token": None, "commands": [], "results": [], "baseline": [],
                           "note": "no flagged cell: nothing to re-measure"}
        return
    plan = plan_measurement(report, options)
    for i, why in plan.skipped.items():
        report.cells[i].notes.append(f"not re-measured: {why}")
    if not plan.groups:  # nothing benchable: the report says why per cell, and nothing is written or read
        for i, why in plan.skipped.items():
            _not_measured(report.cells[i], why)
        report.measured = {"bundle": None, "token": plan.token, "commands": [], "results": [], "baseline": [],
                           "note": "no flagged cell can be re-measured by ktriage bench (only layer_norm and embedding "
                                   "cells, their Liger backend or baseline, have replays today)"}
        return
    if options.measured:
        apply_measured(report, plan, results_paths(options.measured), options)
        return
    from ktriage.home import home_subdir

    out = Path(options.bundle) if options.bundle else home_subdir("bundles") / f"tri-{plan.token}"
    if options.measure and reusable(plan, out):  # built on the CPU machine: the GPU host needs no toolchain
        say(f"reusing the bundle in {out} (token {plan.token}): no compile")
    else:
        write_bundle(report, plan, out, options, say)
    commands = [f"bash {shlex.quote(str(out / SCRIPT))}"]
    report.measured = {"bundle": str(out), "token": plan.token, "commands": commands, "results": [],
                       "bench": [g.bench_command(options.max_time_s) for g in plan.groups], "baseline": []}
    for i, t in plan.targets.items():
        report.cells[i].notes.append(f"bundled for the GPU re-run: {out / plan.group_of(t).dirname}")
    if options.measure:
        paths = run_measure(plan, out, options, say, report.failures)
        apply_measured(report, plan, paths, options)
        report.measured.update(bundle=str(out), commands=commands)
        return
    report.gpu_needed.append(f"re-measure the flagged cells side by side on the GPU host: `{commands[0]}` (copy {out} there "
                             f"first; it writes {out / RESULTS}/*.json), then here the same triage with --measured {out}")


# ----------------------------------------------------------------------------------- the bundle (CPU)
def reusable(plan: MeasurePlan, out_dir: Path) -> bool:
    """Does ``out_dir`` already hold this plan's bundles (same token, every planned input)? Then
    ``--measure`` benches them as they are: a bundle built on the CPU machine, measured on a GPU host
    without the toolchains."""
    from ktriage.workload.bundle import load_bundle

    try:
        doc = json.loads((Path(out_dir) / MANIFEST).read_text())
        if not isinstance(doc, dict) or doc.get("token") != plan.token:
            return False
        for g in plan.groups:
            have = {c.id for c in load_bundle(Path(out_dir) / g.dirname).input_cases()}
            if not set(g.input_ids) <= have:
                return False
    except (OSError, ValueError, KtriageError):
        return False
    return True


def write_bundle(report: TriageReport, plan: MeasurePlan, out_dir: Path, options: TriageOptions, say: Say) -> Path:
    """Compile the plan's bundles into ``out_dir`` (one per (op, pass)), with the manifest and the
    GPU host's script; returns ``out_dir``. A same-toolchain pair gets a second copy of its kernels
    (a variant) so the bench times two variants of identical cubins side by side."""
    from ktriage.compile.compiler import Artifact, Compiler
    from ktriage.toolchain.manager import ensure_toolchains
    from ktriage.workload.bundle import load_bundle
    from ktriage.workload.bundle_build import build_bundle
    from ktriage.workload.bundle_merge import add_variant

    if not plan.groups:
        raise KtriageError("no flagged cell can be re-measured by ktriage bench: " + "; ".join(sorted(set(plan.skipped.values())))[:600],
                           "only layer_norm and embedding cells (their Liger backend or baseline) have replays today")  # gpu_step checks first
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = [plan.old_toolchain] if plan.same_toolchain else [plan.old_toolchain, plan.new_toolchain]
    toolchains = ensure_toolchains(specs)
    with Compiler(jobs=options.jobs) as compiler:
        for g in plan.groups:
            path = out_dir / g.dirname
            say(f"bundle {g.dirname}: {g.op} {g.mode} inputs {g.input_ids}, {', '.join(g.backends)} with {' and '.join(specs)}")
            build_bundle(g.op, g.mode, g.input_ids, toolchains, path, target=options.arch, compiler=compiler,
                         precision=g.precision, backends=g.backends)
            if plan.same_toolchain:
                tc = toolchains[0]
                bundle = load_bundle(path)
                keys = list(bundle.specs)
                outcomes = compiler.compile_many([bundle.specs[k] for k in keys], [tc])
                copies = {k: a for k, a in zip(keys, outcomes, strict=True) if isinstance(a, Artifact)}
                add_variant(path, tc.id, tc.id + AA_VARIANT, "A/A copy", copies,
                            absent="this kernel did not compile for the A/A copy")
    (out_dir / RESULTS).mkdir(exist_ok=True)
    manifest = {
        "format_version": FORMAT, "kind": "ktriage triage measure", "token": plan.token,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "old": report.old, "new": report.new, "old_toolchain": plan.old_toolchain, "new_toolchain": plan.new_toolchain,
        "same_toolchain": plan.same_toolchain, "max_time_s": options.max_time_s,
        "bundles": [g.to_json() | {"command": g.bench_command(options.max_time_s)} for g in plan.groups],
        "cells": [{"cell": report.cells[i].label(), "op": t.op, "mode": t.mode, "input_id": t.input_id, "backend": t.backend,
                   "kind": t.kind, "bundle": plan.group_of(t).dirname, "old_ms": report.cells[i].old_ms,
                   "new_ms": report.cells[i].new_ms} for i, t in plan.targets.items()],
        "not_bundled": [{"cell": report.cells[i].label(), "reason": why} for i, why in sorted(plan.skipped.items())],
    }  # fmt: skip
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    lines = ["#!/usr/bin/env bash",
             f"# ktriage triage --bundle: re-measure {len(plan.targets)} flagged cell(s) of {report.old} -> {report.new}",
             f"# ({plan.old_toolchain} vs {plan.new_toolchain}) side by side on the GPU host. Run it from anywhere;",
             "# KTRIAGE (default: python3 -m ktriage) is the ktriage command. Writes results/<bundle>.json here.",
             "set -u", 'cd "$(dirname "$0")"', 'KT=${KTRIAGE:-python3 -m ktriage}', f"mkdir -p {RESULTS}", "rc=0"]
    lines += [g.bench_command(options.max_time_s, ktriage="$KT") + " || rc=$?" for g in plan.groups]
    lines += ['exit "$rc"', ""]
    script = out_dir / SCRIPT
    script.write_text("\n".join(lines))
    script.chmod(0o755)
    return out_dir


# ----------------------------------------------------------------------------------- the bench (GPU host)
def run_measure(plan: MeasurePlan, out_dir: Path, options: TriageOptions, say: Say, failures: list[str]) -> list[Path]:
    """Bench every bundle of ``out_dir`` in this process (a GPU host), as ``measure.sh`` would; the
    results files, one per bundle. A bundle that fails to bench is added to ``failures`` (with
    what it measured before failing, if anything), the others go on."""
    from ktriage.bench.plan import BenchPlan
    from ktriage.bench.session import run_bench
    from ktriage.workload.bundle import load_bundle

    _require_gpu()
    paths: list[Path] = []
    for g in plan.groups:
        path = Path(out_dir) / g.dirname
        bundle = load_bundle(path)
        records = list(bundle.toolchains.values())
        bench = BenchPlan(op=g.op, mode=g.mode, input_ids=g.input_ids, native_backends=[g.baseline], artifact_backends=g.backends,
                          baseline=g.baseline, precision=g.precision, bundle=str(bundle.path), toolchains=[str(t["id"]) for t in records],
                          timing={"mode": "events", "l2_flush": True}, min_samples=MIN_SAMPLES, max_time_s=options.max_time_s)  # fmt: skip
        results = Path(out_dir) / g.results_name
        results.parent.mkdir(parents=True, exist_ok=True)
        say(f"bench {g.dirname}: {len(g.input_ids)} input(s), {len(records)} toolchain variant(s) side by side")
        try:
            run_bench(bench, store_url=options.db, results_path=results, toolchains=records)
        except KtriageError as exc:  # this bundle's cells stay unmeasured; the other bundles go on
            failures.append(f"bench {g.dirname}: {exc.problem}")
            if not results.exists():
                continue
        paths.append(results)
    return paths


def _require_gpu() -> None:
    fix = "on a CPU machine use --bundle DIR, run the printed command on the GPU host, then --measured DIR/results"
    try:
        import torch
    except ImportError as exc:
        raise KtriageError("--measure needs torch and an NVIDIA GPU on this machine", fix) from exc
    if not torch.cuda.is_available():
        raise KtriageError("--measure: no CUDA GPU is visible on this machine", fix)


# ----------------------------------------------------------------------------------- reading results back
def results_paths(given: Sequence[str]) -> list[Path]:
    """``--measured`` values: results files, or folders (a bundle folder's ``results/``, else the
    ``*.json`` in the folder)."""
    out: list[Path] = []
    for text in given:
        p = Path(text)
        if p.is_dir():
            inner = p / RESULTS if (p / RESULTS).is_dir() else p
            found = sorted(inner.glob("*.json"))
            if not found:
                raise KtriageError(f"--measured {p}: no results file (*.json) in {inner}",
                                   f"run the bundle's {SCRIPT} on the GPU host first, then copy its {RESULTS}/ folder back")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise KtriageError(f"--measured {p}: no such file or folder",
                               "give the results file(s) `ktriage bench --bundle` wrote, or the bundle folder")
    return out


def _bundle_of(run: RunInfo, path: Path) -> tuple[str, str]:
    """The bundle a results file measured (its folder name) and the triage token in that name."""
    plan = run.settings.get("plan") if isinstance(run.settings, dict) else None
    bundle = plan.get("bundle") if isinstance(plan, dict) else None
    if not isinstance(bundle, str) or not bundle:
        raise KtriageError(f"--measured {path}: not the results of a bundle (the run has no bundle in its plan)",
                           "give the results `ktriage bench --bundle DIR/<bundle>` wrote for this triage's bundle")
    name = Path(bundle.rstrip("/")).name
    token = name.rsplit("-", 1)[-1]
    if not re.fullmatch(r"[0-9a-f]{10}", token):
        raise KtriageError(f"--measured {path}: the results of bundle {name}, which no triage wrote (its name has no triage token)",
                           "give the results of the bundle `ktriage triage OLD NEW ... --bundle DIR` wrote: DIR/results/*.json")
    return name, token


def _verdict_config(options: TriageOptions) -> VerdictConfig:
    from ktriage.stats.verdict import VerdictConfig

    return VerdictConfig(threshold=options.threshold, confidence=options.confidence)


def _from_verdict(v: Verdict, how: str, text: str, source: str) -> Measured:
    def num(x: float) -> float | None:
        return x if math.isfinite(x) else None

    return Measured(v.verdict, text, how, num(v.ratio), num(v.ci_low), num(v.ci_high), v.confidence, num(v.p_value),
                    v.n_ref, v.n_new, num(v.median_ref), num(v.median_new), source)


def describe(m: Measured) -> str:
    """``same 1.01x [0.98, 1.03] at 99%, 40/40 samples``: the measured column's text."""
    if m.ratio is None:
        return m.verdict.replace("_", " ") + (f": {m.text}" if m.text else "")
    ci = f" [{m.ci_low:.3f}, {m.ci_high:.3f}]" if m.ci_low is not None and m.ci_high is not None else ""
    conf = f" at {m.confidence:.0%}" if m.confidence else ""
    word = "noise (same)" if m.verdict == "same" else m.verdict
    what = " (the baseline: first vs second half of its samples)" if m.how == "baseline" else ""
    return f"{word} {m.ratio:.3f}x{ci}{conf}, {m.n_old}/{m.n_new} samples{what}"


def apply_measured(report: TriageReport, plan: MeasurePlan, paths: Sequence[Path], options: TriageOptions) -> None:
    """Give each flagged cell its measured verdict from the results files, note the baseline, and
    re-sort the report. A results file of another triage (bundle token) is refused."""
    from ktriage.bench.compare_sides import load_side
    from ktriage.ops.registry import default_baselines
    from ktriage.stats.compare import compare_toolchains, run_toolchains

    config = _verdict_config(options)
    loaded: dict[str, tuple[RunInfo, list[Cell], str]] = {}
    wanted = {g.dirname: g for g in plan.groups}
    for path in paths:
        run, cells, _label = load_side(str(path))
        name, token = _bundle_of(run, path)
        if token != plan.token:
            raise KtriageError(
                f"--measured {path} measured bundle {name} (token {token}), not this triage's (token {plan.token}: "
                f"{plan.old_toolchain} -> {plan.new_toolchain}, bundles {', '.join(wanted) or 'none'})",
                "give the results of the bundle `ktriage triage OLD NEW --bundle DIR` wrote for these same files, toolchains "
                "and --threshold (DIR/triage-measure.json names them), or bundle this triage again")  # fmt: skip
        if name in wanted:
            loaded[name] = (run, cells, path.name)
    pairs: dict[tuple[str, str, int, str], tuple[Any, str]] = {}
    samples: dict[tuple[str, str, int, str], tuple[Cell, str]] = {}
    for run, cells, source in loaded.values():
        tcs = run_toolchains(run, cells)
        if len(tcs) >= 2:
            for comp in compare_toolchains(cells, run=run, toolchains=tcs[:2], config=config, default_baselines=default_baselines()):
                for p in comp.pairs:
                    pairs[(p.op, p.mode, p.input_id, p.backend)] = (p, source)
        for c in cells:
            if c.key.toolchain is None:
                samples[(c.key.op, c.key.mode, c.key.input_id, c.key.backend)] = (c, source)
    for i, cell in enumerate(report.cells):
        target = plan.targets.get(i)
        if target is None:
            _not_measured(cell, plan.skipped.get(i, "not re-measured"))
            continue
        group = plan.group_of(target)
        key = (target.op, target.mode, target.input_id, target.backend)
        if group.dirname not in loaded:
            cell.measured = Measured("not_measured", f"no results for bundle {group.dirname} were given (--measured)")
            continue
        if target.kind == "artifact":
            cell.measured = _artifact_measured(pairs.get(key), plan, loaded[group.dirname][2])
        else:
            cell.measured = _baseline_measured(cell, samples.get(key), config, report, loaded[group.dirname][2])
        _settle(cell)
    report.measured = {"token": plan.token, "results": [str(p) for p in paths],
                       "bundles": [g.to_json() for g in plan.groups], "baseline": _baseline_notes(report)}
    from ktriage.triage.model import ORDER

    rank = {v: k for k, v in enumerate(ORDER)}
    report.cells.sort(key=lambda c: (rank[c.verdict], -c.ratio if c.ratio >= 1 else c.ratio))
    flagged = {(c.op, c.mode, c.input_id, c.backend): c.verdict for c in report.cells}
    for row in report.sweep:
        if row.get("verdict") is not None:
            row["verdict"] = flagged.get((row["op"], row["mode"], row["input_id"], row["backend"]), row["verdict"])
    undecided = [c for c in report.cells if c.verdict in ("unsure_measured", "unsure_no_replay", "unsure_no_gpu")]
    report.gpu_needed = [x for x in report.gpu_needed if not x.startswith(("TritonBench files give", "cells with no compile-side"))]
    if undecided:
        report.gpu_needed.append(f"{len(undecided)} flagged cell(s) are still unsure after the GPU re-run (no replay, failed, "
                                 "not bundled, or an interval across the gate): see their measured column")


def _not_measured(cell: CellTriage, why: str) -> None:
    cell.measured = Measured("not_measured", why)
    if cell.verdict not in ("regression", "improvement") and why.startswith("no replay"):
        cell.verdict = "unsure_no_replay"


def _artifact_measured(found: tuple[Any, str] | None, plan: MeasurePlan, source: str) -> Measured:
    if found is None:
        return Measured("failed", "the results have no side-by-side pair of this cell (not measured on the GPU)", source=source)
    pair, src = found
    if pair.verdict is None:
        return Measured("failed", f"on the GPU: {pair.problem or pair.status}", source=src)
    how = (f"{plan.old_toolchain} twice (two copies of the same kernels) interleaved in one GPU process"
           if plan.same_toolchain else f"{plan.old_toolchain} and {plan.new_toolchain} interleaved in one GPU process")
    return _from_verdict(pair.verdict, "side_by_side", f"measured side by side: {how}; {pair.verdict.reason}", src)


def _baseline_measured(cell: CellTriage, found: tuple[Cell, str] | None, config: VerdictConfig, report: TriageReport,
                       source: str) -> Measured:
    """The baseline does not depend on the toolchains: one host copy serves both sides of a side-by-side
    run, so across toolchains it is the same by construction. What the re-run can still say: is it
    stable within the run (the first half of its samples against the second), and where its level is
    against the two original values."""
    from ktriage.stats.verdict import compare_samples

    if found is None:
        return Measured("failed", "the results have no cell of the baseline at this input", "baseline", source=source)
    c, src = found
    if c.status != "ok" or len(c.samples_ms) < 2:
        return Measured("failed", f"the baseline on the GPU: {c.status} {c.error or ''}".strip(), "baseline", source=src)
    half = len(c.samples_ms) // 2
    v = compare_samples(c.samples_ms[:half], c.samples_ms[half:], config)
    import statistics

    level = statistics.median(c.samples_ms)
    nearer = "old" if abs(math.log(level / cell.old_ms)) <= abs(math.log(level / cell.new_ms)) else "new"
    text = (f"the baseline is one host copy for both toolchains, so across them it is the same by construction; in this "
            f"run it is {'stable' if v.verdict == 'same' else v.verdict} (first half of its samples vs the second: "
            f"{v.verdict} {v.ratio:.3f}x); re-measured at {level:.4f} ms, nearer the {nearer} file's value "
            f"({cell.old_ms:.4f} / {cell.new_ms:.4f}): it moved in the original files, so the machine or the environment "
            "changed between them, not the compiler")  # fmt: skip
    m = _from_verdict(v, "baseline", text, src)
    m.verdict = "same" if v.verdict == "same" else "unsure"
    return m


def _settle(cell: CellTriage) -> None:
    """The triage verdict after the re-run: the measurement decides whether the cell moved."""
    m = cell.measured
    if m is None:
        return
    if m.verdict == "regression" and cell.ratio > 1:
        cell.verdict = "regression" if cell.cause is not None else "measured_regression"
    elif m.verdict == "regression":  # faster in the files, slower side by side
        cell.verdict = "measured_regression"
        cell.notes.append("faster in the original files, but slower when measured side by side")
    elif m.verdict == "same":
        if cell.cause is not None:
            cell.notes.append(f"a compile-side change ({cell.cause.text}) that costs no measurable time here")
        cell.verdict = "noise"
    elif m.verdict == "improvement":
        cell.verdict = "improvement"
    elif cell.verdict != "regression":
        cell.verdict = "unsure_measured"


def _baseline_notes(report: TriageReport) -> list[str]:
    """What the re-run says of each op's baseline next to what the original files said."""
    out: list[str] = []
    status = report.baseline.get("status")
    base = [c for c in report.cells if c.measured is not None and c.measured.how == "baseline"]
    if status == "moved" or base:
        moved = f"in the original files the baseline moved ({report.baseline.get('message', '')})" if status == "moved" else \
            f"in the original files {len(base)} baseline cell(s) moved past the gate"
        same = sum(1 for c in base if c.measured is not None and c.measured.verdict == "same")
        out.append(f"{moved}; measured side by side it is one host copy for both toolchains (the same by construction), "
                   f"stable within the re-run at {same} of {len(base)} flagged input(s): the move was the machine or the "
                   "environment between the original runs")
    return out
