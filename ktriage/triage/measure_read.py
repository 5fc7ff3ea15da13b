"""The GPU step's results read back: each flagged cell's measured verdict from the side-by-side samples.

Results files (or a bundle folder's ``results/``) go through the results reader
(``ktriage.compare.sides.load_side``); a toolchain artifact's verdict is
``ktriage.compare.pairing.compare_toolchains`` on its two variants, the baseline's is its stability
within the run (it is one host copy for both toolchains). The triage verdict follows the measurement
(:func:`_settle`), and a results file of another triage's bundle is refused by its token.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktriage.errors import KtriageError, joined, spelled, worded
from ktriage.triage.measure_plan import FIX_VARIANT, MEASURED, RESULTS, SCRIPT, MeasurePlan
from ktriage.triage.model import (
    BASELINE_WORDS,
    CellTriage,
    FixSide,
    GpuStep,
    Measured,
    MeasuredFix,
    RecordedMatch,
    TriageOptions,
    TriageReport,
)
from ktriage.wording import agree, fmt_interval, fmt_pct, plural

if TYPE_CHECKING:
    from ktriage.measure.cells import Cell, RunInfo
    from ktriage.stats.verdict import Verdict, VerdictConfig


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
                raise KtriageError(
                    joined(MEASURED, f" {p}: no results file (*.json) in {inner}"),
                    f"run the bundle's {SCRIPT} on the GPU host first, then copy its {RESULTS}/ folder back",
                )
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise KtriageError(
                joined(MEASURED, f" {p}: no such file or folder"),
                "give each results file `ktriage bench --bundle` wrote, or the bundle folder",
            )
    return out


def check_results(paths: Sequence[Path]) -> None:
    """Refuse, before any compile, a ``--measured`` file that no triage's bundle could have written: one
    that is no results file, or the results of no bundle or of a bundle without a triage token (a plain
    ``ktriage bench`` run, a TritonBench file). Which triage's token it must carry is known only once the
    flagged cells are (``apply_measured`` checks that); these errors were raised there too, after the
    explain step had compiled every flagged cell with both toolchains (minutes, for nothing)."""
    from ktriage.compare.sides import load_side

    for path in paths:
        _bundle_of(load_side(path).run, path)


def _bundle_of(run: RunInfo, path: Path) -> tuple[str, str]:
    """The bundle a results file measured (its folder name) and the triage token in that name."""
    settings = run.settings if isinstance(run.settings, dict) else {}
    plan = settings.get("plan") or settings.get("recorded_plan")  # an op bench's plan, or a recorded bench's
    bundle = plan.get("bundle") if isinstance(plan, dict) else None
    if not isinstance(bundle, str) or not bundle:
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(MEASURED, o)} {path}: not the results of a bundle (the run has no bundle in its plan)"
                )
            ),
            "give the results `ktriage bench --bundle DIR/<bundle>` wrote for this triage's bundle",
        )
    name = Path(bundle.rstrip("/")).name
    token = name.rsplit("-", 1)[-1]
    if not re.fullmatch(r"[0-9a-f]{10}", token):
        raise KtriageError(
            worded(
                lambda o: (
                    f"{spelled(MEASURED, o)} {path}: the results of bundle {name}, which no triage wrote "
                    "(its name has no triage token)"
                )
            ),
            "give the results of the bundle `ktriage triage OLD NEW ... --bundle DIR` wrote: DIR/results/*.json",
        )
    return name, token


def _verdict_config(options: TriageOptions) -> VerdictConfig:
    from ktriage.stats.verdict import VerdictConfig

    return VerdictConfig(threshold=options.threshold, confidence=options.confidence)


def _from_verdict(v: Verdict, how: str, text: str, source: str) -> Measured:
    def num(x: float) -> float | None:
        return x if math.isfinite(x) else None

    return Measured(
        v.verdict,
        text,
        how,
        num(v.ratio),
        num(v.ci_low),
        num(v.ci_high),
        v.confidence,
        num(v.p_value),
        v.n_ref,
        v.n_new,
        num(v.median_ref),
        num(v.median_new),
        source,
    )


def describe(m: Measured) -> str:
    """``noise (same) +1.3% [-1.8%, +3.1%] at 99%, 40/40 samples``: the measured column's text, the change and
    its interval as compare writes them (``fmt_pct``, ``fmt_interval``): it read ``1.013x [0.982, 1.031]``,
    so one measurement read as a ratio in triage and as a percent in compare (and in triage's own change
    column, next to it)."""
    if m.ratio is None:  # why not measured may name an option (left out by limit): a Worded keeps both spellings
        return worded(lambda o: m.verdict.replace("_", " ") + (f": {spelled(m.text, o)}" if m.text else ""))
    if m.ci_low is not None or m.ci_high is not None:  # a bound JSON could not hold (infinite) is None
        ci = " " + fmt_interval(m.ci_low or 0.0, math.inf if m.ci_high is None else m.ci_high)
    else:
        ci = ""
    conf = f" at {m.confidence:.0%}" if m.confidence else ""
    word = "noise (same)" if m.verdict == "same" else m.verdict
    what = " (the baseline: first vs second half of its samples)" if m.how == "baseline" else ""
    fix = f"; {m.fix.text}" if m.fix and m.fix.text else ""
    return f"{word} {fmt_pct(m.ratio)}{ci}{conf}, {m.n_old}/{m.n_new} samples{what}{fix}"


def apply_measured(report: TriageReport, plan: MeasurePlan, paths: Sequence[Path], options: TriageOptions) -> None:
    """Give each flagged cell its measured verdict from the results files, note the baseline, and
    re-sort the report. A results file of another triage (bundle token) is refused."""
    from ktriage.compare.pairing import compare_toolchains, run_toolchains
    from ktriage.compare.sides import load_side
    from ktriage.ops.registry import default_baselines

    config = _verdict_config(options)
    loaded: dict[str, tuple[RunInfo, list[Cell], str]] = {}
    wanted = {g.dirname: g for g in plan.bundles}
    for path in paths:
        side = load_side(path)
        run, cells = side.run, side.cells
        name, token = _bundle_of(run, path)
        if token != plan.token:
            raise KtriageError(
                joined(
                    MEASURED,
                    f" {path} measured bundle {name} (token {token}), not this triage's (token {plan.token}: "
                    f"{plan.old_toolchain} -> {plan.new_toolchain}, bundles {', '.join(wanted) or 'none'})",
                ),
                worded(
                    lambda o: (
                        "give the results of the bundle `ktriage triage OLD NEW --bundle DIR` wrote for these "
                        f"same files, toolchains and {o('threshold', '--threshold')} (DIR/triage-measure.json names them), "
                        "or bundle this triage again"
                    )
                ),
            )
        if name in wanted:
            loaded[name] = (run, cells, path.name)
    pairs: dict[tuple[str, str, int, str], tuple[Any, str]] = {}
    fixes: dict[tuple[str, str, int, str], MeasuredFix] = {}
    samples: dict[tuple[str, str, int, str], tuple[Cell, str]] = {}
    for run, cells, source in loaded.values():
        tcs = run_toolchains(run, cells)
        if len(tcs) >= 2:
            for comp in compare_toolchains(
                cells, run=run, toolchains=tcs[:2], config=config, default_baselines=default_baselines()
            ):
                for p in comp.pairs:
                    pairs[(p.op, p.mode, p.input_id, p.backend)] = (p, source)
            fix_tc = next((t for t in tcs if t.endswith(FIX_VARIANT)), None)
            if fix_tc is not None:
                _fix_pairs(fixes, cells, run, tcs[0], tcs[1], fix_tc, config, default_baselines())
        for c in cells:
            if c.key.toolchain is None:
                samples[(c.key.op, c.key.mode, c.key.input_id, c.key.backend)] = (c, source)
    for i, cell in enumerate(report.cells):
        target = plan.targets.get(i)
        match = plan.recorded_targets.get(i)
        if match is not None:
            rgroup = plan.recorded_group(match)
            if rgroup.dirname not in loaded:
                cell.measured = Measured(
                    "not_measured",
                    joined(f"no results for bundle {rgroup.dirname} were given (", MEASURED, ")"),
                )
                continue
            cell.measured = _recorded_measured(match, pairs, plan, loaded[rgroup.dirname][2])
            _settle(cell)
            continue
        if target is None:
            mark_not_measured(cell, plan.skipped.get(i, "not re-measured"))
            continue
        group = plan.group_of(target)
        key = (target.op, target.mode, target.input_id, target.backend)
        if group.dirname not in loaded:
            cell.measured = Measured(
                "not_measured",
                joined(f"no results for bundle {group.dirname} were given (", MEASURED, ")"),
            )
            continue
        if target.kind == "artifact":
            cell.measured = _artifact_measured(pairs.get(key), plan, loaded[group.dirname][2])
            if key in fixes:
                cell.measured.fix = fixes[key]
                cell.measured.text += "; " + fixes[key].text
        else:
            cell.measured = _baseline_measured(cell, samples.get(key), config, report, loaded[group.dirname][2])
        _settle(cell)
    report.measured = GpuStep(
        "measured",
        token=plan.token,
        results=[str(p) for p in paths],
        bundles=list(plan.bundles),
        baseline=_baseline_notes(report),
    )
    from ktriage.triage.model import ORDER, SETTLED_BY_A_RERUN

    rank = {v: k for k, v in enumerate(ORDER)}
    report.cells.sort(key=lambda c: (rank[c.verdict], -c.ratio if c.ratio >= 1 else c.ratio))
    flagged = {(c.op, c.mode, c.input_id, c.backend): c.verdict for c in report.cells}
    for row in report.sweep:
        if row.verdict is not None:
            row.verdict = flagged.get((row.op, row.mode, row.input_id, row.backend), row.verdict)
    undecided = [c for c in report.cells if c.verdict in ("unsure_measured", "unsure_no_replay", "unsure_no_gpu")]
    report.gpu_needed = [x for x in report.gpu_needed if not x.startswith(SETTLED_BY_A_RERUN)]
    if undecided:
        report.gpu_needed.append(
            f"{plural(len(undecided), 'flagged cell')} {agree(len(undecided), 'is', 'are')} still unsure after the GPU re-run (no replay, failed, "
            "not bundled, or an interval across the gate): see their measured column"
        )


def _fix_pairs(
    out: dict[tuple[str, str, int, str], MeasuredFix],
    cells: list[Cell],
    run: RunInfo,
    old: str,
    new: str,
    fix: str,
    config: VerdictConfig,
    baselines: Any,
) -> None:
    """The proposed fix (the ``+fix`` variant) against the old toolchain (does it recover the
    regression?) and against the new one (does it help at all?), per cell it was timed for."""
    from ktriage.compare.pairing import compare_toolchains

    label = str(next((t.get("variant") for t in run.toolchains if t.get("id") == fix), "") or "the proposed fix")
    found: dict[tuple[str, str, int, str], MeasuredFix] = {}
    for side, ref in (("vs_old", old), ("vs_new", new)):
        for comp in compare_toolchains(
            cells, run=run, toolchains=[ref, fix], config=config, default_baselines=baselines
        ):
            for p in comp.pairs:
                if p.verdict is None:
                    continue
                v = p.verdict
                entry = found.setdefault((p.op, p.mode, p.input_id, p.backend), MeasuredFix(label))
                setattr(entry, side, FixSide(v.verdict, _finite(v.ratio), _finite(v.ci_low), _finite(v.ci_high)))
    for key, entry in found.items():
        parts = [
            f"{name} toolchain {fmt_pct(s.ratio)} ({s.verdict})"
            for name, s in (("vs the old", entry.vs_old), ("vs the new", entry.vs_new))
            if s is not None and s.ratio is not None
        ]
        entry.text = f"with {label}: " + ", ".join(parts) if parts else f"with {label}: not compared"
        out[key] = entry


def _finite(x: float) -> float | None:
    """JSON has no NaN or infinity: a ratio or bound that is not a number is written as null."""
    return x if math.isfinite(x) else None


def mark_not_measured(cell: CellTriage, why: str) -> None:
    cell.measured = Measured("not_measured", why)
    if cell.verdict not in ("regression", "improvement") and why.startswith("no replay"):
        cell.verdict = "unsure_no_replay"


def _artifact_measured(found: tuple[Any, str] | None, plan: MeasurePlan, source: str) -> Measured:
    if found is None:
        return Measured(
            "failed", "the results have no side-by-side pair of this cell (not measured on the GPU)", source=source
        )
    pair, src = found
    if pair.verdict is None:
        return Measured("failed", f"on the GPU: {pair.problem or pair.status}", source=src)
    how = (
        f"{plan.old_toolchain} twice (two copies of the same kernels) interleaved in one GPU process"
        if plan.same_toolchain
        else f"{plan.old_toolchain} and {plan.new_toolchain} interleaved in one GPU process"
    )
    return _from_verdict(pair.verdict, "side_by_side", f"measured side by side: {how}; {pair.verdict.reason}", src)


def _recorded_measured(
    match: RecordedMatch, pairs: dict[tuple[str, str, int, str], tuple[Any, str]], plan: MeasurePlan, source: str
) -> Measured:
    """A cell measured through its recorded kernels: the recorded bench's cells are keyed by the
    workload's name, mode ``recorded``, the bundle entry and ``K7:function``; each kernel's
    side-by-side verdict, and the cell's is the kernel that moved the most slower (a regression),
    else the one launched the most (the pass's main kernel), the others named in the text."""
    from ktriage.workload.recorded.bundle import RECORDED_MODE

    measured = [
        (k, _artifact_measured(pairs.get((match.name, RECORDED_MODE, k.entry, k.backend)), plan, source))
        for k in match.kernels
    ]
    k0, m0 = min(
        measured,
        key=lambda km: (
            km[1].verdict != "regression",
            -(km[1].ratio or 0.0) if km[1].verdict == "regression" else -km[0].launches,
        ),
    )
    m0.text = f"recorded {match.name} {k0.backend} (entry {k0.entry}): {m0.text}"
    others = [f"{k.backend} (entry {k.entry}): {describe(m)}" for k, m in measured if k is not k0]
    if others:
        m0.text += "; the cell's other recorded kernels: " + "; ".join(others)
    return m0


def _baseline_measured(
    cell: CellTriage, found: tuple[Cell, str] | None, config: VerdictConfig, report: TriageReport, source: str
) -> Measured:
    """The baseline does not depend on the toolchains: one host copy serves both sides of a side-by-side
    run, so across toolchains it is the same by construction. What the re-run can still say: is it
    stable within the run (the first half of its samples against the second), and where its level is
    against the two original values."""
    from ktriage.stats.verdict import compare_samples

    if found is None:
        return Measured("failed", "the results have no cell of the baseline at this input", "baseline", source=source)
    c, src = found
    if c.status != "ok" or len(c.samples_ms) < 2:
        return Measured(
            "failed", f"the baseline on the GPU: {c.status} {c.error or ''}".strip(), "baseline", source=src
        )
    half = len(c.samples_ms) // 2
    v = compare_samples(c.samples_ms[:half], c.samples_ms[half:], config)
    import statistics

    level = statistics.median(c.samples_ms)
    nearer = "old" if abs(math.log(level / cell.old_ms)) <= abs(math.log(level / cell.new_ms)) else "new"
    text = (
        f"the baseline is one host copy for both toolchains, so across them it is the same by construction; in this "
        f"run it is {'stable' if v.verdict == 'same' else v.verdict} (first half of its samples vs the second: "
        f"{v.verdict} {fmt_pct(v.ratio)}); re-measured at {level:.4f} ms, nearer the {nearer} file's value "
        f"({cell.old_ms:.4f} / {cell.new_ms:.4f}): it moved in the original files, so the machine or the environment "
        "changed between them, not the compiler"
    )
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
        elif cell.compile_change:  # a change the cost model predicts no regression of, and the GPU agrees
            predicted = f": {cell.predicted.text()}" if cell.predicted and cell.predicted.text() else ""
            cell.notes.append(
                f"a compile-side change with no predicted regression{predicted}, that costs no measurable time here"
            )
        cell.verdict = "noise"
    elif m.verdict == "improvement":
        cell.verdict = "improvement"
    elif cell.verdict != "regression":
        cell.verdict = "unsure_measured"
    if cell.is_baseline and cell.verdict not in BASELINE_WORDS:  # its verdict's words no longer say it
        cell.notes.append(f"{cell.backend} is {cell.op}'s baseline: no toolchain compiles it")


def _baseline_notes(report: TriageReport) -> list[str]:
    """What the re-run says of each op's baseline next to what the original files said."""
    out: list[str] = []
    status = report.baseline.status if report.baseline is not None else None
    base = [c for c in report.cells if c.measured is not None and c.measured.how == "baseline"]
    if status == "moved" or base:
        moved = (
            f"in the original files, {report.baseline.message}"  # it names the baseline: said once
            if report.baseline is not None and status == "moved"
            else f"in the original files {plural(len(base), 'baseline cell')} moved past the gate"
        )
        same = sum(1 for c in base if c.measured is not None and c.measured.verdict == "same")
        out.append(
            f"{moved}; measured side by side it is one host copy for both toolchains (the same by construction), "
            f"stable within the re-run at {same} of {plural(len(base), 'flagged input')}: the move was the machine or the "
            "environment between the original runs"
        )
    return out
