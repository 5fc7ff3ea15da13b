"""Which flagged cells of a triage the GPU step re-measures, and in which bench bundle (the plan).

Pure: no compile, no GPU. :func:`bench_target` maps a flagged cell to what ``ktriage bench`` can time
(None: it cannot); :func:`plan_measurement` groups the targets per (op, pass) into bundles named with a
token of the triage, so the results of another triage are refused when read back
(``ktriage.triage.measure_read``). The step itself is ``ktriage.triage.measure``.
"""

from __future__ import annotations

import hashlib
import json
import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

from ktriage.errors import KtriageError, spelled, worded
from ktriage.schema.jsontypes import JSONObject
from ktriage.triage.model import CellTriage, RecordedMatch, TriageOptions, TriageReport
from ktriage.wording import plural

MANIFEST = "triage-measure.json"
SCRIPT = "measure.sh"
RESULTS = "results"
AA_VARIANT = "+aa"  # the same toolchain's second copy in a bundle: "<toolchain id>+aa"
FIX_VARIANT = "+fix"  # the new toolchain with the proposed fixes' kernels: "<toolchain id>+fix"
MIN_SAMPLES = 20
# The GPU step's options as its messages and notes name them (ktriage.errors.worded): kt.triage(...) reads the
# keyword (a flag alone names an option a library caller cannot pass), `ktriage triage` prints the flag alone.
# A sentence names them with ``spelled(MEASURE, o)`` inside its own ``worded(lambda o: ...)``.
MEASURE = worded(lambda o: o("measure", "--measure", True))
MEASURED = worded(lambda o: o("measured", "--measured"))
WORKLOAD_GIVEN = worded(lambda o: o("workloads", "--workload", ["W.json"]))


class TimedFix(Protocol):
    """What the choice of the fixes to time reads of a proposed fix (``ktriage.explain.fixes.Fix``)."""

    @property
    def verified(self) -> bool: ...
    @property
    def recommended(self) -> bool: ...
    @property
    def description(self) -> str: ...


_FixT = TypeVar("_FixT", bound=TimedFix)
SLOWER_TIMED = "timing the fix predicted slower, since no recommended fix was verified"
# after such a fix's description in the +fix variant's label, which the measured column quotes
SLOWER_LABEL = " (predicted slower; timed since no recommended fix was verified)"


def fixes_to_time(fixes: Sequence[_FixT]) -> tuple[list[_FixT], str | None]:
    """The fixes the GPU step times in the ``+fix`` variant, and what to say of the choice: the verified
    recommended fixes; the verified ones predicted slower (``Fix.recommended`` False) only when no
    recommended one was verified, said so (None: nothing to say). Why: the variant timed every verified fix,
    so a fix the model predicts slower (maxnreg at +111 %) could be the one timed and read as "the fix"
    without a word; timing it when it is the only one still tells whether the model was right."""
    verified = [f for f in fixes if f.verified]
    recommended = [f for f in verified if f.recommended]
    if recommended or not verified:
        return recommended, None
    return verified, f"{SLOWER_TIMED} ({'; '.join(f.description for f in verified)})"


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
        from ktriage.workload.ops.replay import REPLAYS

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
        # a cell explained by catalog kernels (liger_rms): nothing here launches them, only a recording times it
        explained = (
            f" ({cell.catalog} explains it compile-side; ktriage has no bench workload of {cell.op})"
            if cell.catalog
            else ""
        )
        return worded(
            lambda o: (
                f"no replay for {cell.op}{explained} and no recorded kernels of {cell.backend}: give "
                f"{spelled(WORKLOAD_GIVEN, o)} (`ktriage record -o W.json -- python run.py --op {cell.op}"
                f"{' --bwd' if cell.mode == 'bwd' else ''} --only {cell.backend}`), "
                f"or run this triage with {spelled(MEASURE, o)} on a GPU host with TritonBench: it records the run itself"
            )
        )
    if cell.mode not in op.modes:
        return f"no replay for {cell.op} {cell.mode}: ktriage benches {plural(len(op.modes), 'pass', 'passes')}: {', '.join(op.modes)}"
    if cell.backend in op.artifact_backends:
        return f"no replay for {cell.backend} {cell.mode}: its replay times the forward pass only"
    return (
        f"no replay for {cell.backend}: ktriage re-measures {cell.op}'s toolchain artifacts "
        f"({', '.join(op.artifact_backends) or 'none'}) and its baseline {op.baseline}; {cell.backend} is one host "
        "copy for both toolchains, so a side-by-side run cannot tell them apart"
    )


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
        return (
            f"{ktriage} bench --bundle {shlex.quote(self.dirname)} --only {only} "
            f"--precision {self.precision} --min-samples {MIN_SAMPLES} --max-time {max_time_s:g} "
            f"-o {shlex.quote(self.results_name)}"
        )

    def to_json(self) -> JSONObject:
        return {
            "dir": self.dirname,
            "op": self.op,
            "mode": self.mode,
            "inputs": self.input_ids,
            "backends": self.backends,
            "baseline": self.baseline,
            "precision": self.precision,
            "results": self.results_name,
        }


@dataclass
class RecordedGroup:
    """One recorded bundle: the matched kernel inputs of one ``--workload`` file, for the flagged
    cells whose kernels came from it (``ktriage.workload.recorded.bundle``; benched by
    ``ktriage bench --bundle``, whose cells are keyed by the workload's name and entry number)."""

    workload: str  # the file given with --workload
    name: str  # the workload's name: the results cells' op
    kernels: list[str]  # workload kernel ids (K7)
    labels: list[str]  # their recorded inputs' labels (the builder's --input selection)
    entries: list[int]  # the bundle's entry numbers (the results cells' input_id)
    dirname: str  # "wl-<name>-<token>"

    @property
    def results_name(self) -> str:
        return f"{RESULTS}/{self.dirname}.json"

    def bench_command(self, max_time_s: float, ktriage: str = "ktriage") -> str:
        """``ktriage bench`` over this recorded bundle, as :func:`ktriage.triage.measure.run_measure` runs it."""
        return (
            f"{ktriage} bench --bundle {shlex.quote(self.dirname)} --min-samples {MIN_SAMPLES} --max-time {max_time_s:g} "
            f"-o {shlex.quote(self.results_name)}"
        )

    def to_json(self) -> JSONObject:
        return {
            "dir": self.dirname,
            "kind": "recorded",
            "workload": self.workload,
            "name": self.name,
            "kernels": self.kernels,
            "entries": self.entries,
            "results": self.results_name,
        }


@dataclass
class MeasurePlan:
    """Which flagged cells are re-measured, in which bundle; which are not, and why."""

    token: str
    old_toolchain: str
    new_toolchain: str
    groups: list[BenchGroup]
    targets: dict[int, BenchTarget]  # index into report.cells -> its target (bundled cells only)
    skipped: dict[int, str] = field(default_factory=dict)  # index -> why it is not re-measured
    recorded: list[RecordedGroup] = field(default_factory=list)  # bundles of recorded kernels (--workload)
    recorded_targets: dict[int, RecordedMatch] = field(default_factory=dict)  # index -> its recorded kernels

    @property
    def bundles(self) -> list[BenchGroup | RecordedGroup]:
        return [*self.groups, *self.recorded]

    def recorded_group(self, match: RecordedMatch) -> RecordedGroup:
        return next(g for g in self.recorded if g.workload == match.workload)

    @property
    def same_toolchain(self) -> bool:
        return self.old_toolchain == self.new_toolchain

    def group_of(self, target: BenchTarget) -> BenchGroup:
        return next(g for g in self.groups if (g.op, g.mode) == (target.op, target.mode))


def _token(old_tc: str, new_tc: str, targets: Sequence[BenchTarget], recorded: Sequence[RecordedMatch] = ()) -> str:
    """Names the triage a bundle answers: its toolchains and every benchable flagged cell (not the
    ``--limit`` cut, so a read-back with another limit still matches); recorded kernels, when some
    cells have them, by workload name and entry."""
    keys = sorted({(t.op, t.mode, t.input_id, t.backend) for t in targets})
    doc: JSONObject = {"old": old_tc, "new": new_tc, "cells": keys}
    if recorded:
        doc["recorded"] = sorted({(m.name, k.entry, k.backend) for m in recorded for k in m.kernels})
    text = json.dumps(doc, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def plan_measurement(report: TriageReport, options: TriageOptions) -> MeasurePlan:
    """The flagged cells' bench targets, worst first, cut to ``options.limit``, grouped per (op, pass)."""
    from ktriage.ops import registry
    from ktriage.workload.ops.opdef import bench_op, resolve_precision

    if report.old_toolchain is None or report.new_toolchain is None:
        raise KtriageError(
            "the GPU step needs both sides' toolchains, and the files do not say them",
            worded(
                lambda o: (
                    f"pass {o('old_toolchain', '--old-toolchain', 'triton==3.3.1')} and "
                    f"{o('new_toolchain', '--new-toolchain', 'triton==3.4.0')}"
                )
            ),
        )
    found: dict[int, BenchTarget] = {}
    matched: dict[int, RecordedMatch] = {}
    skipped: dict[int, str] = {}
    for i, c in enumerate(report.cells):
        t = bench_target(c)
        if t is not None:
            found[i] = t
        elif c.recorded is not None and c.recorded.kernels:  # a recorded bench times the cell's recorded kernels
            matched[i] = c.recorded
        else:
            skipped[i] = no_target_reason(c)
    token = _token(report.old_toolchain, report.new_toolchain, list(found.values()), list(matched.values()))
    order = sorted(
        [*found, *matched], key=lambda i: -abs(math.log(report.cells[i].ratio)) if report.cells[i].ratio > 0 else 0.0
    )
    if options.limit is not None:
        if options.limit < 1:
            raise KtriageError(
                worded(lambda o: f"{o('limit', '--limit', options.limit)} bundles nothing"),
                worded(lambda o: f"give {o('limit', '--limit', 1)} or more (or leave it out: every flagged cell)"),
            )
        for i in order[options.limit :]:
            skipped[i] = worded(lambda o: f"left out of the GPU re-run by {o('limit', '--limit', options.limit)}")
        order = order[: options.limit]
    targets = {i: found[i] for i in order if i in found}
    recorded_targets = {i: matched[i] for i in order if i in matched}
    recorded: dict[str, RecordedGroup] = {}
    for m in recorded_targets.values():
        rg = recorded.setdefault(m.workload, RecordedGroup(m.workload, m.name, [], [], [], f"wl-{m.name}-{token}"))
        for k in m.kernels:
            if k.entry not in rg.entries:
                rg.entries.append(k.entry)
                rg.kernels += [k.kernel] if k.kernel not in rg.kernels else []
                rg.labels += [k.label] if k.label not in rg.labels else []
    for rg in recorded.values():
        rg.entries.sort()
    groups: dict[tuple[str, str], BenchGroup] = {}
    for t in targets.values():
        g = groups.get((t.op, t.mode))
        if g is None:
            op = registry.operator(t.op)
            assert op is not None and op.baseline is not None  # bench_target checked it
            prec = resolve_precision(bench_op(t.op), None)
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
    return MeasurePlan(
        token,
        report.old_toolchain,
        report.new_toolchain,
        list(groups.values()),
        targets,
        skipped,
        list(recorded.values()),
        recorded_targets,
    )
