"""``triage(old, new, options) -> TriageReport``: the seed thread's chain, done without a GPU.

1. diff: compare the two result sets (TritonBench CSV/JSON or ktriage results files) and rank every
   (op, mode, input, backend) cell past the gate, worst first;
2. explain: the flagged cells' kernels from the catalog (backend -> catalog op through
   ``ktriage.ops``; input by id), or, for a backend without catalog kernels, the recorded kernels
   its TritonBench input launched (``--workload W.json``, matched by shape: ``recorded_match``),
   compiled with both toolchains (the explain engine, one call for both kinds): no
   compile-side change means noise, the baseline or the environment;
3. baseline: a cell whose op's baseline backend moved as much is noted "the baseline moved";
4. bisect: each compile-side regression compile-only over the releases between the toolchains
   (Triton releases when the frontend is blamed, ptxas releases when ptxas is);
5. fixes: what ``explain --fixes`` proposes, verified by compiling;
6. the report (``ktriage.report.triage`` renders it).

7. the GPU step, when asked (``ktriage.triage.measure``): a bench bundle of the flagged cells for
   the GPU host, the bench itself on a GPU host, or its results read back: each flagged cell gets a
   verdict from both toolchains timed side by side.

Without the GPU step it does not re-measure: a slower cell with one number a side and no
compile-side change stays "unsure without a GPU re-run".
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ktriage.compare.pairing import BaselineCheck, Comparison, PairResult, check_shared, compare_cells
from ktriage.compare.sides import LoadedSide, Side, resolve_side
from ktriage.errors import KtriageError, Worded, command, failure_line, flag, joined, option, spelled, worded
from ktriage.measure.cells import Cell, RunInfo
from ktriage.measure.tritonbench_format import is_single_value
from ktriage.ops import registry
from ktriage.predict.model_used import model_used
from ktriage.spec.model import KernelSpec
from ktriage.spec.sms import price_for
from ktriage.stats.gate import check_gate, gate_band
from ktriage.stats.verdict import VerdictConfig
from ktriage.triage.model import (
    BaselineMove,
    BaselineMoves,
    Cause,
    CellTriage,
    Culprit,
    SweepRow,
    TriageOptions,
    TriageReport,
    attach_counters,
)
from ktriage.triage.pricing import Pricing
from ktriage.triage.pricing import choose as choose_pricing
from ktriage.triage.recorded_match import Loaded, describe, load_workloads, match_cell
from ktriage.wording import fmt_pct, plural

# The recorded workloads as triage's notes name them (errors.worded): kt.triage(workloads=[...]), --workload.
_WORKLOADS = worded(lambda o: o("workloads", "--workload"))
_WORKLOAD_GIVEN = worded(lambda o: o("workloads", "--workload", ["W.json"]))

if TYPE_CHECKING:
    from ktriage.explain.fixes import Fix
    from ktriage.predict.model import Prediction

Say = Callable[[str], None]

# Evidence kinds, most telling first: (metric prefix, words). A finding group's first match names the cause.
_KINDS: tuple[tuple[str, str], ...] = (
    ("spill_store_bytes", "spills"),
    ("spill_load_bytes", "spills"),
    ("local_", "spills"),
    ("LDL", "spills"),
    ("STL", "spills"),
    ("ATOMG", "REDG→ATOMG"),
    ("REDG", "REDG→ATOMG"),
    ("instructions:atomic", "REDG→ATOMG"),
    ("ctas_per_sm", "occupancy"),
    ("warps_per_sm", "occupancy"),
    ("stack_bytes", "stack"),
    ("registers", "registers"),
    ("main_loop_instructions", "longer main loop"),
    ("shared_bytes", "shared memory"),
)
_BISECT_METRIC = {
    "spills": "spill_store_bytes",
    "REDG→ATOMG": "sass:ATOMG",
    "occupancy": "ctas_per_sm",
    "stack": "stack_bytes",
    "registers": "registers",
    "shared memory": "shared_bytes",
    "longer main loop": "sass_instructions",
}


# Per cause kind, the bisectable metrics that show it, most telling first: the first that the cause's
# evidence actually moved is bisected (a spill cause read from LDL counts, with the spill stores
# unchanged, would find "endpoints do not differ" on spill_store_bytes).
_BISECT_PREFERENCE: dict[str, tuple[str, ...]] = {
    "spills": ("spill_store_bytes", "spill_load_bytes", "STL", "LDL", "stack_bytes"),
    "REDG→ATOMG": ("ATOMG", "REDG"),
}


def bisect_metric(cause: Cause) -> str:
    """The metric a compile-only bisect of ``cause`` tests: the kind's most telling metric among
    those the cause's evidence moved (SASS opcodes as ``sass:OP``), else the kind's default."""
    for name in _BISECT_PREFERENCE.get(cause.kind, ()):
        if name in cause.metrics:
            return f"sass:{name}" if name.isupper() else name
    return _BISECT_METRIC.get(cause.kind, "spill_store_bytes")


def _load(side: Side, options: TriageOptions) -> tuple[RunInfo, list[Cell], str]:
    """A side as compare loads it (``ktriage.compare.sides``: a results file, a TritonBench file or a
    run id in the store ``options.db``), named by its file name (a run by its id), in the toolchain
    view; a ``LoadedSide`` keeps the label its caller gave it."""
    loaded = resolve_side(side, options.db, op=options.op, mode=options.mode)
    label = loaded.label if isinstance(side, LoadedSide) or loaded.path is None else loaded.path.name
    return loaded.run, _toolchain_view(loaded.cells), label


def _toolchain_view(cells: Sequence[Cell]) -> list[Cell]:
    """A ktriage run that timed a backend's kernels from a toolchain (artifact cells) also has the
    host's own copy of that backend: triage compares the toolchains, so the host copy is left out
    (as ``compare --toolchains`` does), and the artifact cells pair across the two sides."""
    artifact = {(c.key.op, c.key.backend) for c in cells if c.key.toolchain is not None}
    return [c for c in cells if c.key.toolchain is not None or (c.key.op, c.key.backend) not in artifact]


def side_toolchain(run: RunInfo, cells: Sequence[Cell]) -> str | None:
    """The toolchain a side was built with, when the file says: the single toolchain of a ktriage
    run (or of its cells), the ``ktriage_toolchain`` of a TritonBench JSON's env (ktriage wrote it)."""
    ids = {c.key.toolchain for c in cells if c.key.toolchain}
    records = [t for t in run.toolchains if not ids or t.get("id") in ids]
    specs = {str(t.get("spec") or t.get("id")) for t in records if t.get("spec") or t.get("id")}
    return specs.pop() if len(specs) == 1 else None


def _gate(ratio: float, threshold: float) -> int:
    """+1 slower past the gate, -1 faster past it, 0 inside (symmetric in log space)."""
    if not math.isfinite(ratio) or ratio <= 0:
        return 0
    g = math.log1p(threshold)
    return 1 if math.log(ratio) > g else -1 if math.log(ratio) < -g else 0


def _flagged(pair: PairResult, threshold: float) -> int:
    v = pair.verdict
    if v is None:
        return 0
    if v.verdict == "regression":
        return 1
    if v.verdict == "improvement":
        return -1
    return _gate(v.ratio, threshold) if v.verdict == "unsure" else 0


def _cause(group: Any) -> Cause:
    regress = [f for f in group.findings if _is_worse(f)] or list(group.findings)
    metrics = [f.metric for f in regress]
    kind = next(
        (w for prefix, w in _KINDS for m in metrics if m.startswith(prefix)), metrics[0] if metrics else "change"
    )
    blames = {f.attribution for f in regress}
    attribution = (
        blames.pop()
        if len(blames) == 1
        else "frontend and ptxas"
        if blames <= {"frontend", "ptxas", "both"}
        else "mixed"
    )
    if attribution == "both":
        attribution = "frontend and ptxas"
    return Cause(kind, attribution, group.summary(), metrics)


def _is_worse(finding: Any) -> bool:
    from ktriage.explain.findings import element_kind

    return bool(element_kind(finding.metric, finding.direction) == "regression")


class _Triage:
    def __init__(self, options: TriageOptions, say: Say, pricing: Pricing | None = None) -> None:
        self.options, self.say = options, say
        # the SMs the catalog cells are priced for (None: the target's usual part), and the kernels priced
        self.sm_count = pricing.override if pricing is not None else options.sm_count
        self.priced: list[KernelSpec] = []
        self.failures: list[str] = []
        self.notes: list[str] = []
        self.workloads: dict[str, Loaded] = {}
        self.timings: dict[str, float] = defaultdict(float)  # wall seconds per step (compare, explain, fixes, bisect)

    # ------------------------------------------------------------------ step (b): explain
    def explain(self, cells: list[CellTriage], old: str, new: str) -> None:
        if (
            old == new
        ):  # whatever Triton kernels a backend has (catalog, inductor, a library's), one toolchain compiles them alike
            for c in cells:
                c.compile_change = False
                c.notes.append(f"same toolchain on both sides ({old}): the artifacts are identical by construction")
            return
        from ktriage.catalog.resolve import resolve_specs
        from ktriage.toolchain.manager import ensure_toolchains

        try:
            toolchains = ensure_toolchains([old, new])
        except KtriageError as exc:
            self.failures.append(failure_line(exc, f"toolchains {old} / {new}"))
            return
        self.toolchains = toolchains
        by_target: dict[tuple[str, str], list[CellTriage]] = defaultdict(list)
        by_workload: dict[str, list[CellTriage]] = defaultdict(list)
        for c in cells:
            if c.catalog:
                by_target[(c.catalog, c.mode)].append(c)
            elif c.recorded is not None:
                by_workload[c.recorded.workload].append(c)
        for (catalog, mode), group in by_target.items():
            ids = sorted({c.input_id for c in group})
            self.say(f"explain {catalog} {mode} inputs {ids}: {old} vs {new}")
            what = f"explain {catalog} {mode}"
            try:
                specs = resolve_specs(
                    catalog,
                    mode=mode,
                    inputs=[str(i) for i in ids],
                    target_arch=self.options.arch,
                    sm_count=self.sm_count,
                )
            except KtriageError as exc:
                self.failures.append(failure_line(exc, what))
                continue
            done = self._engine(specs, toolchains, what)
            if done is None:
                continue
            for c in group:
                self._judge(c, [s for s in done[0].specs if s.spec.meta.get("input_id") == c.input_id], *done)
        for path, group in by_workload.items():
            # the recorded kernels of these cells (recorded_match), compiled by the same engine as catalog kernels
            specs_by_key = {k.spec_key: k.spec_name for c in group for k in (c.recorded.kernels if c.recorded else [])}
            loaded = self.workloads[path]
            # priced for the recording GPU's SMs (its spec's meta) unless sm_count (--sm-count) asks for another
            specs = [
                price_for(i.spec, self.options.sm_count)
                for k in loaded.workload.kernels
                for i in k.inputs
                if i.spec.key() in specs_by_key
            ]
            self.say(
                f"explain recorded {loaded.name}: {plural(len(specs), 'kernel input')} of {plural(len(group), 'cell')}: {old} vs {new}"
            )
            done = self._engine(specs, toolchains, f"explain recorded workload {path}")
            if done is None:
                continue
            for c in group:
                keys = {k.spec_key for k in (c.recorded.kernels if c.recorded else [])}
                self._judge(c, [s for s in done[0].specs if s.spec.key() in keys], *done)

    def _engine(self, specs: list[Any], toolchains: list[Any], what: str) -> tuple[Any, list[Any], list[Fix]] | None:
        """The explain engine over ``specs`` with both toolchains: the result, its finding groups and
        the fixes (``explain --fixes``) when asked; None (a failure noted) when it could not run."""
        from ktriage.explain.session import explain_specs

        self.priced += [s for s in specs if isinstance(s, KernelSpec)]
        try:
            # the predictions at triage's own gate: a report has one gate, and "beyond the gate" says the same
            # of a prediction as of a measurement (explain's default, 5 %, under a 10 % gate called +7 % a cause)
            done = explain_specs(
                specs,
                toolchains,
                jobs=self.options.jobs,
                fixes=self.options.fixes,
                threshold=self.options.threshold,
                model=self.options.model,
                sm_count=self.options.sm_count,  # the fixes' spill-free search (the specs carry the rest)
            )
        except KtriageError as exc:
            self.failures.append(failure_line(exc, what))
            return None
        self.timings["fixes"] += done.fixes_s
        result = done.result
        if not result.complete:
            self.failures.append(f"{what}: {plural(len(result.failures), 'compile')} failed")
        return result, done.groups, list(done.fixes or [])

    @staticmethod
    def _judge(c: CellTriage, items: list[Any], result: Any, groups: list[Any], fixes: list[Fix]) -> None:
        """A cell's compile-side verdict from its kernels' explained items: a regression finding
        group covering them is the cause; any other change is noted."""
        from ktriage.spec.model import input_label

        if not items or any(not s.comparisons for s in items):
            c.notes.append("not compared compile-side (a compile failed)")
            return
        labels = {input_label(s.spec.meta, s.spec.name) for s in items}
        worse = [g for g in groups if g.kind == "regression" and labels & set(g.inputs)]
        c.compile_change = bool(worse) or any(s.comparisons[0].changed for s in items)
        model = result.model.path if result.model is not None else None
        _predicted_note(c, [s.comparisons[0].prediction for s in items], result.threshold, model)
        if worse:
            c.cause = _cause(worse[0])
            names = {str(s.spec.name) for s in items}
            c.fixes = [f for f in fixes if f.kernel in names] or fixes
        elif c.compile_change:
            # changes that make no finding (a few opcodes moved) belong to no group: say so, not an empty list.
            # Cells of one explain share the sentence: the report says it once and the rows refer to it
            covered = [g.summary() for g in groups if labels & set(g.inputs)]
            c.changes = (
                "; ".join(covered)
                if covered
                else "SASS instruction counts only, no finding (explain's per-input table lists them)"
            )
        elif c.recorded is not None:
            c.notes.append(f"no compile-side change in its {plural(len(items), 'recorded kernel input')}")

    # ------------------------------------------------------------------ step (d): bisect
    def bisect(self, cells: list[CellTriage]) -> None:
        from ktriage.bisect.run import BisectOptions, run_bisect

        old, new = self.toolchains
        not_release = [t for t in (old, new) if not t.spec.is_release]
        if not_release:  # a wheel, the host's Triton or a ptxas path has no release range to search
            why = ", ".join(f"{t.spec} is not a release" for t in not_release)
            for c in cells:
                c.notes.append(
                    f"not bisected: {why} (a bisect runs over Triton or ptxas releases: give both sides as "
                    "triton==X[,ptxas==Y], or bisect git commits with `ktriage bisect --source git:...`)"
                )
            return
        done: dict[tuple[str, str, str, str], Culprit] = {}
        for c in sorted(cells, key=lambda c: -c.ratio):
            if c.cause is None or (c.catalog is None and c.recorded is None):
                continue
            # The range follows who is responsible: Triton releases for the frontend, ptxas releases
            # for ptxas; "both" tries Triton first (its releases bundle their ptxas).
            blamed = c.cause.attribution
            triton_range = old.triton_version != new.triton_version
            ptxas_range = old.ptxas_version != new.ptxas_version
            if blamed != "ptxas" and triton_range:
                source, good, bad, fixed = "pypi:triton", old.triton_version, new.triton_version, None
            elif blamed in ("ptxas", "frontend and ptxas") and ptxas_range:
                source, good, bad, fixed = (
                    "ptxas",
                    old.ptxas_version,
                    new.ptxas_version,
                    f"triton=={new.triton_version}",
                )
            else:
                c.notes.append(
                    f"no release range to bisect: the change is blamed on {blamed}, and the toolchains do not "
                    f"differ there (Triton {old.triton_version} / {new.triton_version}, ptxas "
                    f"{old.ptxas_version} / {new.ptxas_version})"
                )
                continue
            metric = bisect_metric(c.cause)
            # a recorded cell's kernel is named by its spec in the workload file (as `bisect --spec W.json` takes it)
            rec = c.recorded.kernels[0] if c.recorded is not None and c.catalog is None else None
            if rec is None or c.recorded is None:
                kernels: dict[str, Any] = {"op": c.catalog, "mode": c.mode, "inputs": (str(c.input_id),)}
                key = (str(c.catalog), c.mode, source, c.cause.kind)
                what = f"{c.catalog} {c.mode} input {c.input_id}"
            else:
                kernels = {"spec": c.recorded.workload, "inputs": (rec.spec_name,)}
                key = (c.recorded.workload, rec.kernel, source, c.cause.kind)
                what = f"recorded {rec.kernel} {rec.function} of {c.recorded.name}"
            if key not in done:
                self.say(f"bisect {source} {good}..{bad} on {what} ({metric})")
                culprit = Culprit(source, good, bad, metric, c.input_label, False)
                try:
                    report = run_bisect(
                        BisectOptions(
                            source=source,
                            good=good,
                            bad=bad,
                            metric=metric,
                            toolchain=fixed,
                            arch=self.options.arch,
                            jobs=self.options.jobs,
                            explain=False,
                            **kernels,
                        )
                    )
                    final = report.final
                    culprit.found = report.found
                    culprit.culprit = final.culprit.label if final.culprit else None
                    culprit.predecessor = final.predecessor.label if final.predecessor else None
                    culprit.tested, culprit.candidates = final.tested, len(final.candidates)
                    culprit.summary = (
                        f"first bad: {culprit.culprit} (after {culprit.predecessor}), {metric}, "
                        f"{final.tested} tested of {len(final.candidates)}"
                        if report.found
                        else "no single culprit: " + ", ".join(x.label for x in final.range)
                    )
                except KtriageError as exc:
                    culprit.error = exc.problem
                    self.failures.append(failure_line(exc, f"bisect {source} {good}..{bad} ({what})"))
                done[key] = culprit
            c.culprit = done[key]


def _match_recorded(
    cells: list[CellTriage],
    results: Sequence[Cell],
    workloads: Sequence[Loaded],
    options: TriageOptions,
    baselines: Mapping[str, str | None],
) -> None:
    """Give each flagged cell that no replay times its recorded kernels (``recorded_match``), worst
    first; ``--limit N`` caps how many (each is compiled twice, so a long report stays cheap). A cell
    whose backend has catalog kernels but no replay (``liger_rms``) is among them: the recording is
    what the backend launched and what the GPU step can time, so a match replaces the catalog's
    kernels (explain, bisect and the GPU step then all use the recorded ones); without a match the
    catalog's kernels still explain it."""
    x_vals = {
        (c.key.op, c.key.mode, c.key.input_id, c.key.backend): str(c.extra.get("x_val"))
        for c in results
        if c.extra.get("x_val") is not None
    }
    wanted = [c for c in cells if not _replayed(c) and c.backend != baselines.get(c.op)]
    wanted.sort(key=lambda c: -abs(math.log(c.ratio)) if c.ratio > 0 and math.isfinite(c.ratio) else 0.0)
    tried = 0
    for c in wanted:
        if options.limit is not None and tried >= options.limit:
            c.notes.append(
                worded(lambda o: f"recorded workloads not searched: left out by {o('limit', '--limit', options.limit)}")
            )
            continue
        match, notes = match_cell(c, x_vals.get((c.op, c.mode, c.input_id, c.backend)), workloads)
        c.notes += notes
        if match is not None:
            tried += 1
            c.recorded, c.catalog = match, None
            c.notes.append(describe(match))
            c.notes += [f"left out: {why}" for why in match.left_out]


def _replayed(c: CellTriage) -> bool:
    """The cell's catalog kernels have a replay (a bench times them): no recording needed."""
    op = registry.operator(c.op)
    return c.catalog is not None and op is not None and c.backend in op.artifact_backends


BISECT_BY_TIMING = worded(lambda o: f"bisect by timing ({command('bisect', o, ('metric', '--metric', 'latency'))})")
"""Where a slowdown no compile-side change explains is found: ``ktriage bisect --metric latency`` to the command
line's user, ``kt.bisect with metric='latency' (--metric latency)`` to a Python caller of ``kt.triage``."""
TIMING_NEXT = worded(lambda o: f"profile the kernels ({command('profile', o)}); {spelled(BISECT_BY_TIMING, o)}")
TIMING_NEXT_FIRST = worded(
    lambda o: f"profile the kernels ({command('profile', o)}) before looking elsewhere; {spelled(BISECT_BY_TIMING, o)}"
)


def _predicted_note(
    c: CellTriage, predictions: Sequence[Prediction | None], threshold: float, model: str | None = None
) -> None:
    """The cost model next to the measurement (docs/model.md): "the compile-side change predicts +X %
    [lo, hi] (measured +Y %)", "... leans toward the slowdown" (a neutral prediction whose point is beyond the
    gate), or, for a slowdown the compiled kernels do not predict, where to look instead. The worst of the
    cell's kernels' predictions speaks for the cell. ``model``: the file that priced them (None: $KTRIAGE_MODEL,
    else the shipped fit), whose calibration the improvement note quotes."""
    have = [p for p in predictions if p is not None]
    if not have:
        return
    worst = max(have, key=lambda p: p.impact)
    c.predicted = worst
    # the change column's own text (fmt_pct): "measured +53%" next to a "+53.2%" column read as two numbers
    measured = f"measured {fmt_pct(c.ratio)}" if math.isfinite(c.ratio) else "no measured ratio"
    if worst.kind == "regression":
        c.notes.append(f"the compile-side change predicts {worst.percent()} {worst.interval_text()} ({measured})")
    elif math.isfinite(c.ratio) and c.ratio > 1.0 + threshold:
        why = _why_neutral(have, worst, threshold)
        leaning = max((p for p in have if p.lean == "regression"), key=lambda p: p.ratio, default=None)
        if leaning is not None:  # its point says slower, its interval is not sure: the kernel stays a suspect
            said = (
                f"the compile-side change leans toward the slowdown ({measured}; predicted {leaning.percent()} "
                f"{leaning.interval_text()}: its point beyond the {gate_band(threshold)} gate, its "
                "interval reaching inside it)"
            )
            c.notes.append(joined(said, ": ", TIMING_NEXT))
            return
        spot = next((p.blind_spot for p in have if p.blind_spot), None)
        if spot is not None:  # the model's known blind spot is in play: the kernel stays the suspect
            said = (
                f"the compile-side change predicts no slowdown ({measured}; {why}), but the kernels' "
                f"shared-memory accesses changed, which the model cannot price ({spot})"
            )
            c.notes.append(joined(said, ": ", TIMING_NEXT_FIRST))
            return
        said = (
            f"no compile-side change predicts the measured slowdown ({measured}; {why}): "
            "look at the host side, the baseline, the environment; a compile-only bisect would find "
            "nothing here, "
        )
        c.notes.append(joined(said, BISECT_BY_TIMING, " if the kernel is the suspect"))
    elif math.isfinite(c.ratio) and c.ratio < 1.0 / (1.0 + threshold) and worst.kind != "improvement":
        # the mirror of the slowdown above: a speedup no compile-side change predicts is no more the compiler's
        # than such a slowdown (an A/A pair of TritonBench files shows -59 % "improvements" on changed kernels)
        why = _why_neutral(have, worst, threshold)
        lean = " (its point leans that way)" if any(p.lean == "improvement" for p in have) else ""
        c.notes.append(
            f"no compile-side change predicts the measured speedup ({measured}; {why}{lean}): noise, the baseline "
            f"or the environment, or a gain the model does not see{_improvement_recall(model)}; timing both "
            "toolchains side by side decides"
        )
    else:
        c.notes.append(f"the compile-side change predicts {worst.percent()} ({worst.kind}; {measured})")


def _why_neutral(have: Sequence[Prediction], worst: Prediction, threshold: float) -> str:
    """Why a measured change past the gate is not the compile-side change's: identical kernels, or the worst
    prediction and its interval within the gate."""
    if all(p.identical for p in have):
        return "the kernels are identical"
    return f"predicted {worst.percent()} {worst.interval_text()}, within the {gate_band(threshold)} gate"


def _improvement_recall(model: str | None) -> str:
    """ " (it calls 50% of the measured improvements of its calibration, docs/model.md)", from the model in use."""
    from ktriage.predict.model import load_params

    recall = (load_params(model).cv.get("improvement") or {}).get("recall")
    if not isinstance(recall, (int, float)):
        return ""
    return f" (it calls {round(recall * 100)}% of the measured improvements of its calibration, docs/model.md)"


def _unpredicted(c: CellTriage) -> bool:
    """A faster cell whose kernels' prediction is not an improvement: with one value a side (TritonBench) it is
    as unsure as a slowdown no compile-side change predicts."""
    return c.predicted is not None and c.predicted.kind != "improvement"


def _classify(c: CellTriage, is_baseline: bool) -> None:
    """Slower with a compile-side regression: regression; faster with a compile-side change:
    improvement, except with one value a side where the change is not predicted an improvement (as
    unsure as the mirror slowdown); no compile-side change either way: noise, the baseline or the environment
    (unsure without a GPU when one value a side); a backend ktriage cannot compile: unexplained
    (the op's baseline is evidence about the environment, so it counts as no compile-side change)."""
    if c.ratio > 1 and c.cause is not None:
        c.verdict = "regression"
    elif c.ratio < 1 and c.compile_change and not (c.single_value and _unpredicted(c)):
        c.verdict = "improvement"
    elif not is_baseline and c.compile_change is None:
        c.verdict = "unexplained"
    elif c.single_value:
        c.verdict = "unsure_no_gpu"
    else:
        c.verdict = "not_compile_side"


@dataclass
class _Sides:
    """The two result sets as triage compares them: each side's run, cells (the toolchain view) and
    label, and the toolchain each was built with (the options', else what the file says; None: unknown)."""

    old_run: RunInfo
    old_cells: list[Cell]
    old_label: str
    new_run: RunInfo
    new_cells: list[Cell]
    new_label: str
    old_tc: str | None
    new_tc: str | None

    @property
    def all_cells(self) -> list[Cell]:
        return [*self.old_cells, *self.new_cells]

    @property
    def same_toolchain(self) -> bool:
        return self.old_tc is not None and self.old_tc == self.new_tc


def _baseline_for_triage(check: BaselineCheck, defaults: Mapping[str, str]) -> BaselineCheck:
    """compare's baseline check, in triage's words where they differ: with no baseline backend in
    either side, compare's fix is "pass --baseline", an option triage does not have (it takes each
    op's own baseline, TritonBench's); the fix is to keep that backend in the runs."""
    if check.status != "none":
        return check
    wanted = [f"{op}'s {defaults[op]}" for op in sorted(check.per_op) if op in defaults]
    message = (
        f"no baseline backend in either side ({', '.join(wanted)} not measured): whether the machine or "
        "the environment changed between the runs cannot be checked; keep the op's baseline in the "
        "runs (TritonBench and ktriage bench run it unless --only leaves it out)"
        if wanted
        else "no baseline backend known for these ops: whether the machine or the environment changed "
        "between the runs cannot be checked"
    )
    return replace(check, message=message)


def _check(options: TriageOptions) -> None:
    """Refuse bad options before anything is read or compiled: a triage can run for minutes, and an
    error after the compiles would waste them."""
    check_gate(options.threshold, flag_percent=True)
    if options.limit is not None and options.limit < 1:
        raise KtriageError(
            worded(lambda o: f"{o('limit', '--limit', options.limit)} bundles no cell"),
            worded(lambda o: f"give the number of flagged cells to re-measure, e.g. {o('limit', '--limit', 5)}"),
        )
    from ktriage.arch import parse_arch
    from ktriage.toolchain.manager import check_releases_exist
    from ktriage.toolchain.spec import parse_toolchain
    from ktriage.triage import measure as gpu

    parse_arch(options.arch)  # a typo in the target or a toolchain is the user's (exit 2), not a failed step (4)
    for name, text in (("old_toolchain", options.old_toolchain), ("new_toolchain", options.new_toolchain)):
        if text and "=" in text:  # a spec (an id or its prefix names a toolchain of one run: checked there)
            # a release that does not exist is refused now, not only once a flagged cell compiles with it
            said = "--" + name.replace("_", "-")  # the command's flag; kt.triage's keyword is the name
            named = Worded(option(name, said), flag(name, said))
            check_releases_exist(parse_toolchain(text, check_files=False), named)
    gpu.check_options(options)


def _load_sides(old: Side, new: Side, options: TriageOptions) -> _Sides:
    """Step 1a: read both sides and name their toolchains, so every later step asks one object."""
    run_a, cells_a, label_a = _load(old, options)
    run_b, cells_b, label_b = _load(new, options)
    return _Sides(
        run_a,
        cells_a,
        label_a,
        run_b,
        cells_b,
        label_b,
        options.old_toolchain or side_toolchain(run_a, cells_a),
        options.new_toolchain or side_toolchain(run_b, cells_b),
    )


def _compare(sides: _Sides, options: TriageOptions) -> Comparison:
    """Step 1b: the statistics' comparison of the two sides at the triage's gate; two sides with no
    cell in common are refused here (``check_shared``), not reported as "nothing past the gate"."""
    comparison = compare_cells(
        sides.old_cells,
        sides.new_cells,
        ref_label=sides.old_label,
        new_label=sides.new_label,
        ref_run=sides.old_run,
        new_run=sides.new_run,
        config=VerdictConfig(threshold=options.threshold, confidence=options.confidence),
        default_baselines=registry.default_baselines(),
        cliffs=False,
    )
    check_shared(comparison, sides.old_label, sides.new_label)
    return comparison


CellKey = tuple[str, str, int, str]  # (op, mode, input_id, backend)


def _single_values(sides: _Sides) -> set[CellKey]:
    """Cells with one number a side (TritonBench): no interval, so only a GPU re-run can decide them."""
    return {(c.key.op, c.key.mode, c.key.input_id, c.key.backend) for c in sides.all_cells if is_single_value(c)}


def _flag(
    comparison: Comparison, sides: _Sides, singles: set[CellKey], options: TriageOptions, workloads: bool
) -> list[CellTriage]:
    """Step 1c: every cell past the gate, with its catalog op (the kernels step 2 compiles) and the
    notes that only the comparison can give: the baseline moved itself or as much, an input none of
    the catalog's, a backend with no catalog kernels. ``workloads``: --workload was given (the
    notes say where its kernels are looked for)."""
    # TritonBench rows whose x_val is none of ktriage's inputs: their ids are no catalog input's
    unmatched = {
        (c.key.op, c.key.mode, c.key.input_id) for c in sides.all_cells if c.extra.get("x_val_matched") is False
    }
    baselines = comparison.baseline.per_op
    base_dir = {(p.op, p.mode, p.input_id): _flagged(p, options.threshold) for p in comparison.pairs if p.is_baseline}
    flagged: list[CellTriage] = []
    # where the kernels of a cell without catalog kernels come from (--workload given), or could
    looked_for = (
        joined(": its kernels are looked for in the recorded workloads (", _WORKLOADS, ")") if workloads else ""
    )
    could_say = joined(" (a recorded workload of it could say: ", _WORKLOAD_GIVEN, ")")
    for p in comparison.pairs:
        direction = _flagged(p, options.threshold)
        if not direction or p.verdict is None:
            continue
        op = registry.operator(p.op)
        catalog = op.catalog_ops.get(p.backend) if op is not None else None
        off_catalog = catalog is not None and (p.op, p.mode, p.input_id) in unmatched
        catalog = None if off_catalog else catalog
        cell = CellTriage(
            p.op,
            p.mode,
            p.input_id,
            p.input_label,
            p.backend,
            p.verdict.median_ref,
            p.verdict.median_new,
            p.verdict.ratio,
            "unexplained",
            p.verdict.verdict,
            (p.op, p.mode, p.input_id, p.backend) in singles,
            catalog,
        )
        if p.is_baseline:  # its verdict says so (model.BASELINE_WORDS); a note would say it again
            cell.is_baseline = True
        elif base_dir.get((p.op, p.mode, p.input_id)) == direction:
            cell.baseline_moved = True
            cell.notes.append(f"the baseline moved: {baselines.get(p.op)} changed as much at this input")
        if off_catalog:
            cell.notes.append(
                joined(
                    f"x_val {p.input_label} is none of ktriage's {p.op} inputs, so its catalog kernels are not "
                    "compiled for it",
                    looked_for or could_say,
                )
            )
        elif catalog is None and not p.is_baseline:
            cell.notes.append(
                joined(
                    f"{p.backend} has no kernels in ktriage's catalog",
                    looked_for or joined(": nothing to compile", could_say),
                )
            )
        flagged.append(cell)
    return flagged


def _explain_and_bisect(work: _Triage, flagged: list[CellTriage], sides: _Sides) -> None:
    """Steps 2 and 4: explain the flagged cells that have kernels (all of them when both sides name
    one toolchain: the artifacts are then identical by construction), then bisect the compile-side
    regressions. Nothing is compiled without both toolchains: an unknown one is a failure that says
    how to name it."""
    slower = [c for c in flagged if c.ratio > 1 and (c.catalog or c.recorded)]
    faster = [c for c in flagged if c.ratio < 1 and (c.catalog or c.recorded)]
    if not (slower or faster or (flagged and sides.same_toolchain)):
        return
    old_tc, new_tc = sides.old_tc, sides.new_tc
    if old_tc is None or new_tc is None:
        unknown = [n for n, t in (("old", old_tc), ("new", new_tc)) if t is None]
        fix = worded(
            lambda o: (
                f"the {' and '.join(unknown)} side's toolchain is unknown (the files do not say): pass "
                + " and ".join(o(f"{n}_toolchain", f"--{n}-toolchain") for n in unknown)
            )
        )
        work.failures.append(fix)
        # the cells that have kernels say so themselves: their verdict ("not explained") is this, not a
        # backend without kernels
        for c in [*slower, *faster]:
            c.notes.append(joined("not compiled: ", fix))
        return
    started = time.perf_counter()
    work.explain(flagged if sides.same_toolchain else slower + faster, old_tc, new_tc)
    work.timings["explain"] += time.perf_counter() - started - work.timings["fixes"]
    if work.options.bisect and any(c.cause for c in slower) and hasattr(work, "toolchains"):
        started = time.perf_counter()
        work.bisect([c for c in slower if c.cause])
        work.timings["bisect"] += time.perf_counter() - started


# the first triage's verdicts, in report order (the GPU step re-sorts by ORDER when it changes them)
_FIRST_ORDER = {
    v: i for i, v in enumerate(("regression", "not_compile_side", "unsure_no_gpu", "unexplained", "improvement"))
}


def _decide(flagged: list[CellTriage], baselines: Mapping[str, str | None]) -> None:
    """Step 3 and the verdicts: classify each cell (the op's baseline counts as evidence about the
    environment) and sort worst first within each verdict."""
    for c in flagged:
        _classify(c, c.backend == baselines.get(c.op))
    flagged.sort(key=lambda c: (_FIRST_ORDER[c.verdict], -c.ratio if c.ratio >= 1 else c.ratio))


def _sweep(comparison: Comparison, flagged: Sequence[CellTriage]) -> list[SweepRow]:
    """Every compared cell with its triage verdict (None: not flagged): what the HTML plots."""
    verdicts = {(c.op, c.mode, c.input_id, c.backend): c.verdict for c in flagged}
    return [
        SweepRow(
            p.op,
            p.mode,
            p.input_id,
            p.input_label,
            p.backend,
            p.verdict.median_ref,
            p.verdict.median_new,
            p.verdict.ratio if math.isfinite(p.verdict.ratio) else None,
            p.verdict.verdict,
            verdicts.get((p.op, p.mode, p.input_id, p.backend)),
        )
        for p in comparison.pairs
        if p.verdict is not None
    ]


def _gpu_needed(report: TriageReport, singles: set[CellKey], sides: _Sides) -> None:
    """What only a GPU re-run can decide, said in the report (the GPU step, when it runs, takes the
    lines it settles back out), and the note that one toolchain on both sides is not the compiler."""
    if singles:
        options = report.options
        # the triage's own GPU step, not `ktriage bench` by hand: --bundle plans the flagged cells, their
        # baseline and both toolchains' kernels, and --measured reads the results back into these verdicts
        asked = not report.cells or options.bundle or options.measure or options.measured
        report.gpu_needed.append(
            worded(
                lambda o: (
                    "TritonBench files give one number per cell: no confidence interval, so no "
                    "statistical verdict; a side-by-side re-run (both toolchains timed in one GPU process) "
                    "decides the cells marked unsure"
                    + (
                        ""
                        if asked
                        else f": this triage again with {o('bundle', '--bundle', 'DIR')} builds it for the GPU host "
                        f"(then `bash DIR/measure.sh` there and this triage with {o('measured', '--measured', ['DIR'])}), "
                        f"or with {o('measure', '--measure', True)} on a GPU host that can build both toolchains"
                    )
                )
            )
        )
    left = report.of("not_compile_side") + report.of("unsure_no_gpu")
    if left:
        report.gpu_needed.append(_left_unsure(left, report.options.threshold))
    if sides.same_toolchain:
        report.notes.append(
            f"both sides name the same toolchain ({sides.old_tc}): any difference is not the compiler's"
        )


def _left_unsure(cells: Sequence[CellTriage], threshold: float) -> str:
    """What the cells left for a GPU re-run are, by what is true of each (their kernels changed but the
    cost model predicts it neutral, their kernels did not change, or the baseline that no toolchain
    compiles), not one sentence that calls them all unchanged. Starts with ``SETTLED_BY_A_RERUN``'s words."""
    base = [c for c in cells if c.is_baseline]
    changed = [c for c in cells if not c.is_baseline and c.compile_change]
    same = [c for c in cells if not c.is_baseline and not c.compile_change]
    parts = []
    if changed:
        parts.append(
            f"{len(changed)} whose kernels changed compile-side, predicted neutral (within the "
            f"{gate_band(threshold)} gate): noise, the machine or the environment, or a cost the model does not price"
        )
    if same:
        parts.append(f"{len(same)} with no compile-side change: noise, the baseline or the environment")
    if base:
        parts.append(f"{len(base)} of the op's baseline, which no toolchain compiles: the machine or the environment")
    return (
        f"cells left unsure ({len(cells)}): {'; '.join(parts)}; only re-measuring both toolchains side by side "
        "on the GPU tells which"
    )


def _size(ratio: float) -> float:
    """How far a ratio is from 1, either way (x2 as far as /2); a ratio that is no number: farthest."""
    return abs(math.log(ratio)) if ratio > 0 and math.isfinite(ratio) else math.inf


def _baseline_moves(comparison: Comparison, flagged: Sequence[CellTriage], threshold: float) -> list[BaselineMoves]:
    """Per (op, mode): the inputs where its baseline itself moved past the gate, flagged by triage's own rule
    (one value a side counts, as for every cell), and how many of the other flagged cells are at them."""
    base: dict[tuple[str, str], list[PairResult]] = defaultdict(list)
    for p in comparison.pairs:
        if p.is_baseline and p.verdict is not None:
            base[(p.op, p.mode)].append(p)
    out = []
    for (op, mode), pairs in base.items():
        moved = {p.input_id: (p, d) for p in pairs if (d := _flagged(p, threshold))}
        if not moved:
            continue
        others = [c for c in flagged if (c.op, c.mode) == (op, mode) and not c.is_baseline]
        here = [c for c in others if c.input_id in moved]
        ranked = sorted(moved.values(), key=lambda x: -_size(x[0].verdict.ratio if x[0].verdict else 1.0))
        out.append(
            BaselineMoves(
                pairs[0].backend,
                op,
                mode,
                len(pairs),
                [BaselineMove(p.input_id, p.input_label, p.verdict.ratio) for p, _ in ranked if p.verdict],
                len(others),
                len(here),
                sum(1 for c in here if (c.ratio > 1) == (moved[c.input_id][1] > 0)),
                threshold,
            )
        )
    return out


def triage(
    old: Side,
    new: Side,
    options: TriageOptions | None = None,
    say: Say | None = None,
    timings: dict[str, float] | None = None,
) -> TriageReport:
    """Diff, explain, check the baseline, bisect and fix; one report (docs/triage.md). ``timings``,
    when given, gets the wall seconds of each step (compare, explain, fixes, bisect) that ran."""
    options = options or TriageOptions()
    started = time.perf_counter()
    speak = say or (lambda _m: None)
    _check(options)
    workloads = load_workloads(options.workloads)  # a bad --workload file is refused before any compile
    sides = _load_sides(old, new, options)
    pricing = choose_pricing(options.sm_count, options.arch, sides.old_run, sides.new_run)
    comparison = _compare(sides, options)
    singles = _single_values(sides)
    baselines = comparison.baseline.per_op
    flagged = _flag(comparison, sides, singles, options, bool(workloads))
    attach_counters(flagged, sides.old_cells, sides.new_cells)  # Nsight Compute counters, where the results carry them
    work = _Triage(options, speak, pricing)
    work.timings["compare"] = time.perf_counter() - started
    work.workloads = {w.path: w for w in workloads}
    if workloads:
        _match_recorded(flagged, sides.old_cells + sides.new_cells, workloads, options, baselines)
    _explain_and_bisect(work, flagged, sides)
    pricing.explained(work.priced, options.arch)
    _decide(flagged, baselines)
    report = TriageReport(
        sides.old_label,
        sides.new_label,
        sides.old_tc,
        sides.new_tc,
        options,
        flagged,
        compared=sum(1 for p in comparison.pairs if p.verdict is not None),
        not_compared=comparison.not_compared_cells(),
        baseline=_baseline_for_triage(comparison.baseline, registry.default_baselines()),
        failures=work.failures,
        notes=work.notes,
        sweep=_sweep(comparison, flagged),
        model=model_used(
            options.model
        ),  # the one explain_specs priced the cells with (--model, $KTRIAGE_MODEL, shipped)
        pricing=pricing,
    )
    report.baseline_moves = _baseline_moves(comparison, flagged, options.threshold)
    _gpu_needed(report, singles, sides)
    from ktriage.triage import measure as gpu

    gpu.gpu_step(report, options, speak)  # 7. the GPU step, when asked: bundle, bench, read back
    if timings is not None:
        timings.update(work.timings)
    return report
