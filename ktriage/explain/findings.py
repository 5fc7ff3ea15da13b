"""Findings: the changes of a sweep grouped into ranges a person reads in one line.

Thirty shapes that each say "spills 0 -> 3712 B, frontend" are one finding: "N=4608..8192: spill
stores rise (up to 3712 B); the frontend is responsible". Consecutive specs of the sweep (in the order
the catalog or spec file gives them) with the same metric changing in the same direction and with the
same attribution form one finding.

A cell that failed is a finding too (``FailureFinding``): "triton==3.3.1 cannot compile N=..: <error>;
compared against triton==3.4.0 instead". A change finding names the reference of its own comparisons,
which is not the first toolchain where that one could not compile the kernel. `DetailFinding`s (the
main loop's length, memory/tensor/sync instructions whose modifiers changed: explain/sass_detail.py)
are merged the same way and come last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import TypeVar

from ktriage.brief import brief
from ktriage.compile.compiler import CompileFailure
from ktriage.explain.attribution import CrossCells
from ktriage.explain.engine import (
    Change,
    CompileDiff,
    ExplainResult,
    SpecExplain,
    opcode_delta_text,
    toolchain_label,
)
from ktriage.explain.failures import fix_for, not_loaded, one_line
from ktriage.explain.labels import input_names, input_places, kernel_name
from ktriage.explain.predicted import identical_toolchains, predicted_kind, prediction_text, same_predicted_kind, worst
from ktriage.explain.predicted import impact as predicted_impact
from ktriage.explain.sass_detail import CLASS_TITLES, OPCODE_MIN_CLASS_DELTA
from ktriage.predict.model import Prediction
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec, input_label
from ktriage.spec.ranges import input_place, input_range
from ktriage.spec.toml_file import not_loaded_line
from ktriage.toolchain.manager import Toolchain
from ktriage.wording import agree

# Metrics worth a finding of their own, most important first.
HEADLINE_METRICS = ("spill_store_bytes", "registers", "ctas_per_sm", "stack_bytes", "shared_bytes")
NOTABLE_OPCODES = ("ATOMG", "REDG", "ATOMS", "RED", "ATOM", "LDL", "STL", "HGMMA", "HMMA", "WGMMA", "LDGSTS", "UTMALDG")
# How a finding names who is responsible (all finding kinds share the wording).
_BLAME = {
    "frontend": "the frontend (Triton/LLVM PTX) is responsible",
    "ptxas": "ptxas is responsible",
    "both": "frontend and ptxas together",
    "unknown": "cause unknown (cross matrix incomplete)",
}


def sweep_key(spec: KernelSpec) -> tuple[str, ...]:
    """What makes specs inputs of ONE sweep: the same kernel source, op and pass, and the same shape
    keys. Findings merge consecutive inputs only within one sweep (two kernels of a spec file, or
    a matmul next to a softmax, are never one input range)."""
    shape = spec.meta.get("shape")
    keys = ",".join(sorted(shape)) if isinstance(shape, dict) else ""
    return (spec.source, str(spec.meta.get("op", kernel_name(spec))), str(spec.meta.get("mode", "")), keys)


def continues(before: KernelSpec | None, spec: KernelSpec) -> bool:
    """Whether a finding's run of inputs may go on from ``before`` to ``spec``: inputs of one sweep, with
    no input of the target between them that explain did not see. A printed range is read back by
    ``--input`` as every input from its first to its last in the target's listing
    (``spec.ranges``); merged across an input that ``--input`` or ``--input-id`` left out, the
    report's ``N=4608..8192`` claimed, and selected when copied, an input never compiled. Specs with
    input ids (a catalog op's TritonBench ids, a workload kernel's inputs) follow each other when the
    ids are equal (two kernels of one input) or consecutive; a spec file's kernels, which carry none,
    when the file lists them one after the other (``KernelSpec.file_position``: ``-i`` of its 1st and
    3rd kernel is two runs, not one that pasted back selects the 2nd too)."""
    if before is None or sweep_key(before) != sweep_key(spec):
        return False
    a, b = before.meta.get("input_id"), spec.meta.get("input_id")
    if isinstance(a, int) and isinstance(b, int):
        return b in (a, a + 1)
    if before.file_position is not None and spec.file_position is not None:
        return spec.file_position == before.file_position + 1
    return True


class _NamedInputs:
    """What a finding, a failure finding and a bullet share: their ``inputs`` (full labels, as the JSON
    keeps them), the ``kernel`` they are of (where the report holds several, else ""), and ``names``
    (full label -> the short one the reports show, explain/labels.py). One home for how they are shown,
    so a summary, a failure line and a bullet cannot name one input two ways."""

    inputs: list[str]
    kernel: str
    names: dict[str, str]

    @property
    def range(self) -> str:
        """The inputs' range by their full labels, as the JSON's ``range`` says it."""
        return input_range(self.inputs)

    def shown(self, label: str) -> str:
        """An input as the reports name it: its short label (explain/labels.py)."""
        return self.names.get(label, label)

    @property
    def place(self) -> str:
        """Where the inputs are, as a summary says it: ``kernel[X_ptr=4096x{4608..8192}]``."""
        return input_place(self.kernel, [self.shown(i) for i in self.inputs])


@dataclass
class Finding(_NamedInputs):
    toolchain: str
    reference: str
    metric: str
    direction: str  # "up" or "down"
    attribution: str
    inputs: list[str] = field(default_factory=list)
    examples: list[Change] = field(default_factory=list)
    predictions: list[Prediction | None] = field(
        default_factory=list, kw_only=True
    )  # per input: the cost model's (predicted.py)
    # the kernel's name where the report holds several (a workload's), else "": its inputs' labels
    # (a recorded launch's arguments) do not say which kernel they are of
    kernel: str = field(default="", kw_only=True)
    # full label -> the short one the reports show (explain/labels.py); the full ones stay in ``inputs``
    names: dict[str, str] = field(default_factory=dict, kw_only=True)

    def add(self, label: str, change: Change, prediction: Prediction | None, text: str) -> None:
        """One more input of the run: its label, its change and the cost model's prediction (``text``:
        what changed in words, kept by :class:`DetailFinding` only)."""
        self.inputs.append(label)
        self.examples.append(change)
        self.predictions.append(prediction)

    def summary(self) -> str:
        worst = max(self.examples, key=lambda c: abs(c.new - c.ref))
        verb = "rises" if self.direction == "up" else "falls"
        unit = " B" if self.metric.endswith("bytes") else ""
        blame = _BLAME.get(self.attribution, self.attribution)
        word = "worst" if element_kind(self.metric, self.direction) == "regression" else "largest"
        return (
            f"{self.place}: {self.metric} {verb} with {self.toolchain} vs {self.reference} "
            f"({word} {worst.ref:g}{unit} -> {worst.new:g}{unit} at {self.shown(self.inputs[self.examples.index(worst)])}); {blame}."
        )

    def to_json(self) -> JSONObject:
        return {
            "toolchain": self.toolchain,
            "reference": self.reference,
            "metric": self.metric,
            "direction": self.direction,
            "attribution": self.attribution,
            "kernel": self.kernel,
            "range": self.range,
            "inputs": self.inputs,
            "summary": self.summary(),
        }


def collect_findings(result: ExplainResult) -> list[Finding]:
    if len(result.toolchains) < 2:
        return []
    findings: list[Finding] = _merged_runs(result, result.toolchains[1:], Finding, _headline_changes)
    findings += _detail_findings(result)
    order = {m: i for i, m in enumerate(HEADLINE_METRICS + NOTABLE_OPCODES)}
    findings.sort(key=lambda f: (f.toolchain, order.get(f.metric, 99)))
    return findings


def _headline_changes(comparison: CompileDiff) -> list[tuple[Change, str, str]]:
    """(change, direction, text) for the headline metrics and notable opcodes (text unused)."""
    changes = [c for c in comparison.changes if c.metric in HEADLINE_METRICS] + [
        c for c in comparison.opcode_changes if c.metric in NOTABLE_OPCODES
    ]
    return [(c, "up" if c.new > c.ref else "down", "") for c in changes]


_F = TypeVar("_F", bound="Finding")


def _merged_runs(
    result: ExplainResult,
    toolchains: Sequence[Toolchain],
    kind: type[_F],
    changes_of: Callable[[CompileDiff], list[tuple[Change, str, str]]],
) -> list[_F]:
    """The one merge of change and detail findings: per toolchain, consecutive inputs of one sweep with
    the same metric changing in the same direction, with the same attribution, reference and
    predicted kind, form one finding (``kind``) of the ``changes_of`` each comparison."""
    findings: list[_F] = []
    # A run of inputs holds one reference: where the first toolchain could not compile a spec and
    # another served as reference, a finding of its own starts (and names that reference).
    same = identical_toolchains(result)  # reported once, as "identical to ..." (predicted.py)
    names = input_names([item.spec for item in result.specs])
    for toolchain in toolchains:
        if toolchain.id in same:
            continue
        name = toolchain_label(toolchain)
        open_runs: dict[str, _F] = {}
        before: KernelSpec | None = None
        for item, (kernel, short) in zip(result.specs, names, strict=True):
            if not continues(before, item.spec):  # another kernel, or an input left out: no run crosses it
                open_runs.clear()
            before = item.spec
            comparison = next((c for c in item.comparisons if c.new.toolchain.id == toolchain.id), None)
            label = input_label(item.spec.meta, item.spec.name)
            seen: set[str] = set()
            # the reference of this comparison (not the first toolchain where that one could not compile)
            ref_name = "" if comparison is None else toolchain_label(comparison.ref.toolchain)
            for change, direction, text in [] if comparison is None else changes_of(comparison):
                run = open_runs.get(change.metric)
                if (
                    run is None
                    or run.direction != direction
                    or run.attribution != change.attribution
                    or run.reference != ref_name
                    or not same_predicted_kind(run.predictions, comparison)
                ):
                    run = kind(name, ref_name, change.metric, direction, change.attribution, kernel=kernel)
                    findings.append(run)
                    open_runs[change.metric] = run
                run.add(label, change, None if comparison is None else comparison.prediction, text)
                run.names[label] = short
                seen.add(change.metric)
            for metric in list(open_runs):
                if metric not in seen:
                    del open_runs[metric]
    return findings


def _full_stop(text: str) -> str:
    """``text`` ended as a sentence: a fix that asks (``did you mean scaled_rows_kernel?``) or already
    ends with a stop keeps its own mark, where a blind ``+ "."`` printed ``...kernel?.``."""
    return text if text.endswith((".", "?", "!")) else text + "."


@dataclass
class FailureFinding(_NamedInputs):
    """One toolchain failing on a run of consecutive inputs with the same one-line error, or a kernel
    of a spec file that did not load (``toolchain`` None, stage :data:`~ktriage.explain.failures.NOT_LOADED`:
    the error is the file's, said once however many toolchains there are).

    ``fallback`` is the toolchain compared against instead when this toolchain was the requested
    reference (``""`` when nothing compiled, None when it was not the reference); ``alone``: that
    toolchain was the only one that compiled, so nothing was compared against it either."""

    toolchain: str | None
    stage: str
    kind: str
    message: str  # the one-line error (no fix)
    fix: str | None
    fallback: str | None
    inputs: list[str] = field(default_factory=list)
    alone: bool = False
    kernel: str = ""  # as Finding.kernel: where the report holds several kernels, the one that failed
    names: dict[str, str] = field(default_factory=dict)  # as Finding.names

    def summary(self) -> str:
        if self.toolchain is None:
            return _full_stop(f"{self.place}: {not_loaded_line(self.message, self.fix)}")
        verb = {"frontend": "cannot compile", "assemble": "cannot assemble", "analyze": "cannot analyze"}.get(
            self.stage, "cannot compile"
        )
        text = f"{self.toolchain} {verb} {self.place}: {self.message}"
        if self.fix:
            text += f" — fix: {self.fix}"
        if self.fallback and self.alone:
            text += f"; only {self.fallback} compiled it: nothing is compared"
        elif self.fallback:
            text += f"; compared against {self.fallback} instead"
        elif self.fallback == "":
            text += "; no toolchain compiled it"
        return _full_stop(text)

    def to_json(self) -> JSONObject:
        return {
            "toolchain": self.toolchain,
            "stage": self.stage,
            "kind": self.kind,
            "message": self.message,
            "fix": self.fix,
            "reference_fallback": self.fallback,
            "kernel": self.kernel,
            "range": self.range,
            "inputs": self.inputs,
            "summary": self.summary(),
        }


def collect_failure_findings(result: ExplainResult) -> list[FailureFinding]:
    """The failed cells grouped like the change findings: first each kernel of a spec file that did not
    load, once (its error is the file's, the same for every toolchain), in the file's order; then per
    toolchain, consecutive inputs with the same stage, error line and fallback form one finding; the
    toolchains in the order given."""
    names = input_names([item.spec for item in result.specs])
    findings = [
        _not_loaded_finding(item, kernel, short)
        for item, (kernel, short) in zip(result.specs, names, strict=True)
        if item.failures and all(not_loaded(f) for f in item.failures)
    ]
    first = result.toolchains[0].id if result.toolchains else None
    for toolchain in result.toolchains:
        run: FailureFinding | None = None
        before: KernelSpec | None = None
        for item, (kernel, short) in zip(result.specs, names, strict=True):
            failure = item.results.get(toolchain.id)
            if not continues(before, item.spec):
                run = None
            before = item.spec
            if not isinstance(failure, CompileFailure) or not_loaded(failure):
                run = None
                continue
            fallback: str | None = None
            alone = False
            if toolchain.id == first:
                ref = next((t for t in result.toolchains if t.id == item.reference), None)
                fallback = toolchain_label(ref) if ref is not None else ""
                alone = ref is not None and not item.comparisons
            message = one_line(failure.message, failure.kind)
            fix = fix_for(failure)
            if (
                run is None
                or run.stage != failure.stage
                or run.message != message
                or run.fix != fix
                or run.fallback != fallback
                or run.alone != alone
            ):
                run = FailureFinding(
                    toolchain_label(toolchain),
                    failure.stage,
                    failure.kind,
                    message,
                    fix,
                    fallback,
                    alone=alone,
                    kernel=kernel,
                )
                findings.append(run)
            label = input_label(item.spec.meta, item.spec.name)
            run.inputs.append(label)
            run.names[label] = short
    return findings


def _not_loaded_finding(item: SpecExplain, kernel: str, short: str) -> FailureFinding:
    """The one failure finding of a kernel that did not load: its error and fix, no toolchain."""
    failure = item.failures[0]
    label = input_label(item.spec.meta, item.spec.name)
    message = one_line(failure.message, failure.kind)
    finding = FailureFinding(None, failure.stage, failure.kind, message, fix_for(failure), None, kernel=kernel)
    finding.inputs.append(label)
    finding.names[label] = short
    return finding


def failure_json(failure: CompileFailure) -> JSONObject:
    """A failed cell for a kernel's ``failures`` list: one-line message; the full text stays in ``results``."""
    return {
        "toolchain": failure.toolchain.id,
        "toolchain_spec": str(failure.toolchain.spec),
        "stage": failure.stage,
        "kind": failure.kind,
        "message": one_line(failure.message, failure.kind),
        "fix": fix_for(failure),
    }


@dataclass
class DetailFinding(Finding):
    """A finding the base-opcode histogram hides: the main loop's length, or an instruction class
    whose modifiers changed (metric `main_loop_instructions` or `instructions:<class>`).

    `examples` hold a `Change` per input as for the other findings (for the loop: its instruction
    counts; for a class: 0 -> number of changed instructions), `texts` what changed in words.
    """

    texts: list[str] = field(default_factory=list)

    def add(self, label: str, change: Change, prediction: Prediction | None, text: str) -> None:
        super().add(label, change, prediction, text)
        self.texts.append(text)

    def summary(self) -> str:
        worst = max(range(len(self.examples)), key=lambda i: abs(self.examples[i].new - self.examples[i].ref))
        word = "worst" if element_kind(self.metric, self.direction) == "regression" else "largest"
        where = f" ({word} at {self.shown(self.inputs[worst])})" if len(self.inputs) > 1 else ""
        blame = _BLAME.get(self.attribution, self.attribution)
        return f"{self.place}: with {self.toolchain} vs {self.reference}, {self.texts[worst]}{where}; {blame}."


def _detail_changes(comparison: CompileDiff) -> list[tuple[Change, str, str]]:
    """(change, direction, text) for the main loop and each class worth a finding."""
    out: list[tuple[Change, str, str]] = []
    detail = comparison.sass_detail
    loop = detail.main_loop
    if loop is not None and loop.changed and loop.attribution != "none":
        direction = "up" if loop.delta > 0 else "down"
        out.append(
            (
                Change(
                    "main_loop_instructions", loop.cells.ref, loop.cells.new, loop.attribution, loop.cells, loop.text()
                ),
                direction,
                loop.text(),
            )
        )
    for cls in detail.classes:
        if cls.size < OPCODE_MIN_CLASS_DELTA or cls.attribution == "none":
            continue
        text = f"{CLASS_TITLES[cls.name]} instructions: {cls.text(limit=6)}"
        cells = CrossCells(0.0, float(cls.size), None, None)
        net = sum(d for _, d in cls.delta)  # more, fewer, or as many instructions of other kinds
        direction = "up" if net > 0 else "down" if net < 0 else "changed"
        out.append(
            (Change(f"instructions:{cls.name}", 0.0, float(cls.size), cls.attribution, cells, text), direction, text)
        )
    return out


def _detail_findings(result: ExplainResult) -> list[Finding]:
    """Detail findings, consecutive inputs with the same metric, direction and attribution merged."""
    if len(result.toolchains) < 2:
        return []
    return list(_merged_runs(result, result.toolchains, DetailFinding, _detail_changes))


# ------------------------------------------------------------------ one bullet per regression, ranked
# Which way is worse for each metric a finding can carry. Opcode counts: local memory (spills) and
# returning atomics (ATOMG instead of the fire-and-forget REDG) up is worse, tensor-core MMAs down
# is worse; other opcode moves are changes, neither better nor worse by themselves.
_WORSE_UP = {
    "spill_store_bytes",
    "registers",
    "stack_bytes",
    "shared_bytes",
    "LDL",
    "STL",
    "ATOMG",
    "ATOM",
    "ATOMS",
    "main_loop_instructions",
    "instructions:local",
}
_WORSE_DOWN = {"ctas_per_sm", "REDG", "RED", "HGMMA", "HMMA", "WGMMA"}
_METRIC_WORDS = {
    "spill_store_bytes": "spill stores",
    "registers": "registers",
    "ctas_per_sm": "CTAs/SM",
    "stack_bytes": "stack",
    "shared_bytes": "shared memory",
}


def element_kind(metric: str, direction: str) -> str:
    """ "regression", "improvement" or "change" for one metric moving in ``direction``."""
    if direction == "up":
        return "regression" if metric in _WORSE_UP else "improvement" if metric in _WORSE_DOWN else "change"
    if direction == "down":
        return "regression" if metric in _WORSE_DOWN else "improvement" if metric in _WORSE_UP else "change"
    return "change"


def _impact(f: Finding) -> float:
    """How much a worse metric likely costs, for ranking (higher first): new spills, then lost
    occupancy, more spills, local memory traffic, stack, returning atomics, a longer main loop,
    shared memory, and last register drift (1 register scores lowest)."""
    worst = max(f.examples, key=lambda c: abs(c.new - c.ref))
    ref, new = worst.ref, worst.new
    m = f.metric
    if m == "spill_store_bytes":
        return (1000.0 if ref == 0 else 700.0) + min(new - ref, 10**5) / 100
    if m == "ctas_per_sm":
        return 800.0 * (1 - new / ref) if ref else 800.0
    if m in ("LDL", "STL", "instructions:local"):
        return 300.0 + min(abs(new - ref), 1000) / 10
    if m == "stack_bytes":
        return 250.0 + min(new - ref, 10**4) / 100
    if m in ("ATOMG", "ATOM", "ATOMS", "REDG", "RED"):
        return 200.0 + min(abs(new - ref), 100)
    if m in ("HGMMA", "HMMA", "WGMMA"):
        return 600.0
    if m == "main_loop_instructions":
        return 100.0 + 100.0 * (new - ref) / max(ref, 1)
    if m == "shared_bytes":
        return 50.0 + min(new - ref, 10**5) / 1000
    if m == "registers":
        return 1.0 + min(new - ref, 255)
    return 0.0


@dataclass
class FindingGroup(_NamedInputs):
    """One bullet: every finding of one toolchain vs one reference over the same inputs (the
    evidence of one regression: registers, spills, stack, CTAs/SM, opcode and SASS-detail deltas).

    ``kind``: "regression" when any evidence is worse, else "improvement" when any is better, else
    "change". ``impact`` ranks regressions (see :func:`_impact`)."""

    __repr__ = brief  # short, for notebooks and the REPL (ktriage.brief)

    toolchain: str
    reference: str
    inputs: list[str]
    findings: list[Finding] = field(default_factory=list)
    kernel: str = ""  # as Finding.kernel
    names: dict[str, str] = field(default_factory=dict)  # as Finding.names

    @property
    def predictions(self) -> list[Prediction | None]:
        """Per input, the cost model's prediction (all findings of a bullet share its inputs)."""
        return self.findings[0].predictions if self.findings else []

    @property
    def kind(self) -> str:
        """By the predicted ratio's interval against the gate (predicted.py); by the evidence's
        sign rules only where an input has no prediction."""
        return predicted_kind(self.predictions) or self.evidence_kind

    @property
    def evidence_kind(self) -> str:
        """What the per-metric sign rules say (registers up = worse, ...): kept as evidence words."""
        kinds = {element_kind(f.metric, f.direction) for f in self.findings}
        return "regression" if "regression" in kinds else "improvement" if "improvement" in kinds else "change"

    @property
    def impact(self) -> float:
        if predicted_kind(self.predictions) is not None:
            return 1000.0 * predicted_impact(self.predictions)
        worse = [_impact(f) for f in self.findings if element_kind(f.metric, f.direction) == "regression"]
        return max(worse, default=0.0)

    def _evidence(self, f: Finding, where: bool) -> str:
        if isinstance(f, DetailFinding):
            i = max(range(len(f.examples)), key=lambda j: abs(f.examples[j].new - f.examples[j].ref))
            return f.texts[i] + (f" at {self.shown(f.inputs[i])}" if where else "")
        worst = max(f.examples, key=lambda c: abs(c.new - c.ref))
        unit = " B" if f.metric.endswith("bytes") else ""
        at = f" at {self.shown(f.inputs[f.examples.index(worst)])}" if where else ""
        return f"{_METRIC_WORDS.get(f.metric, f.metric)} {worst.ref:g}{unit} -> {worst.new:g}{unit}{at}"

    def _worst_input(self, f: Finding) -> str:
        return f.inputs[max(range(len(f.examples)), key=lambda j: abs(f.examples[j].new - f.examples[j].ref))]

    def summary(self) -> str:
        """``N=4608..8192 (5 inputs), triton==3.4.0 vs triton==3.3.1: spill stores 632 B -> 3712 B, ...
        (worst at N=4608); the frontend (Triton/LLVM PTX) is responsible.``"""
        ordered = sorted(self.findings, key=_evidence_order)
        many = len(self.inputs) > 1
        spots = {self._worst_input(f) for f in ordered}
        per_item = many and len(spots) > 1  # the worst inputs differ: say each one's
        blames = {f.attribution for f in ordered}
        parts = []
        for f in ordered:
            text = self._evidence(f, per_item)
            if len(blames) > 1:
                text += f" ({_SHORT_BLAME.get(f.attribution, f.attribution)})"
            parts.append(text)
        head = self.place + (f" ({len(self.inputs)} inputs)" if many else "")
        word = "worst" if self.kind == "regression" else "largest"
        tail = f" ({word} at {self.shown(next(iter(spots)))})" if many and not per_item else ""
        blame = _BLAME.get(next(iter(blames)), next(iter(blames))) if len(blames) == 1 else "attribution per item"
        predicted = prediction_text(self.predictions, [self.shown(i) for i in self.inputs])
        return f"{head}, {self.toolchain} vs {self.reference}: {'; '.join(parts)}{tail}; {blame}" + (
            f"; {predicted}." if predicted else "."
        )

    def to_json(self) -> JSONObject:
        w = worst(self.predictions)
        return {
            "kind": self.kind,
            "evidence_kind": self.evidence_kind,
            "impact": round(self.impact, 2),
            "toolchain": self.toolchain,
            "reference": self.reference,
            "kernel": self.kernel,
            "range": self.range,
            "inputs": self.inputs,
            "metrics": [f.metric for f in sorted(self.findings, key=_evidence_order)],
            "prediction": None if w is None else w.to_json(),
            "predicted_ratios": [
                None if p is None else {k: p.to_json()[k] for k in ("ratio", "low", "high", "kind")}
                for p in self.predictions
            ],
            "summary": self.summary(),
        }


_SHORT_BLAME = {"frontend": "frontend", "ptxas": "ptxas", "both": "frontend and ptxas", "unknown": "cause unknown"}


def _evidence_order(f: Finding) -> tuple[int, int]:
    """Within a bullet: the worse evidence first, then the headline metrics' order."""
    order = {m: i for i, m in enumerate(HEADLINE_METRICS + NOTABLE_OPCODES)}
    rank = {"regression": 0, "improvement": 1, "change": 2}[element_kind(f.metric, f.direction)]
    return rank if not isinstance(f, DetailFinding) else 3, order.get(f.metric, 99)


def group_findings(findings: list[Finding]) -> list[FindingGroup]:
    """The findings as bullets: one per (toolchain, reference, kernel, inputs); regressions first, by
    impact (highest first), then improvements, then other changes, each in sweep order."""
    groups: dict[tuple[str, str, str, tuple[str, ...]], FindingGroup] = {}
    for f in findings:
        key = (f.toolchain, f.reference, f.kernel, tuple(f.inputs))
        group = groups.get(key)
        if group is None:
            group = groups[key] = FindingGroup(
                f.toolchain, f.reference, list(f.inputs), kernel=f.kernel, names=dict(f.names)
            )
        group.findings.append(f)
    order = list(groups.values())
    kind_rank = {"regression": 0, "improvement": 1, "change": 2}
    return sorted(order, key=lambda g: (kind_rank[g.kind], -g.impact))  # stable: sweep order among equals


# ------------------------------------------------------------------ what no finding covers
NO_CHANGES = "No resource changes between the toolchains."
ONE_TOOLCHAIN = (
    "One toolchain: nothing to compare (its resources are above). To see what changed, give the reference "
    "first and the others after it, e.g. -t triton==3.3.1 -t triton==3.4.0."
)
# the section of the toolchains whose inputs no finding names, where silence would mislead (uncovered_lines)
WITHOUT_FINDING = "Without a finding"


def no_change_line(result: ExplainResult) -> str:
    """What to say when no change finding was made: "no change" only if nothing is missing, and
    never for one toolchain, which has nothing to change against."""
    if len(result.toolchains) < 2:
        return ONE_TOOLCHAIN
    if result.complete:
        return NO_CHANGES
    cells = len(result.specs) * len(result.toolchains)
    return (
        f"No resource changes among the toolchains that compiled; {len(result.failures)} of {cells} "
        f"cells failed (listed below)."
    )


def uncovered(result: ExplainResult, findings: Sequence[Finding]) -> dict[str, list[tuple[str, CompileDiff]]]:
    """toolchain id -> its (input as the report names it, comparison) pairs that no finding names, for toolchains not reported
    identical. Why: a finding needs a headline metric, a notable opcode or a detail class to move; a
    toolchain whose kernels changed below those bars (a few address instructions, only the PTX) would
    otherwise vanish from the report, and the user who asked "does 3.6.0 change anything?" gets no answer."""
    same = identical_toolchains(result)
    named = {(f.toolchain, f.kernel, i) for f in findings for i in f.inputs}
    specs = [item.spec for item in result.specs]
    names, places = input_names(specs), input_places(specs)
    out: dict[str, list[tuple[str, CompileDiff]]] = {}
    for toolchain in result.toolchains:
        if toolchain.id in same:
            continue
        name = toolchain_label(toolchain)
        for item, (kernel, _), place in zip(result.specs, names, places, strict=True):
            label = input_label(item.spec.meta, item.spec.name)
            for c in item.comparisons:
                if c.new.toolchain.id == toolchain.id and (name, kernel, label) not in named:
                    out.setdefault(toolchain.id, []).append((place, c))
    return out


def uncovered_lines(result: ExplainResult, findings: Sequence[Finding]) -> list[str]:
    """One line per toolchain that ``uncovered`` leaves without a word: a toolchain with no finding at all
    (what it changed and what that is predicted to cost, or that the model sees the same kernels), and a
    toolchain whose uncovered inputs carry a prediction beyond the gate (which no finding may hide). A
    toolchain with findings whose other inputs are predicted neutral gets no line: that would be noise."""
    lines: list[str] = []
    with_findings = {f.toolchain for f in findings}
    names = {t.id: toolchain_label(t) for t in result.toolchains}
    for tc_id, pairs in uncovered(result, findings).items():
        name = names[tc_id]
        refs = sorted({toolchain_label(c.ref.toolchain) for _, c in pairs})
        vs = f"vs {', '.join(refs)}"
        predictions = [c.prediction for _, c in pairs]
        beyond = [p for p in predictions if p is not None and p.kind != "neutral"]
        if name in with_findings and not beyond:
            continue
        moved = [(label, c) for label, c in pairs if not (c.prediction is not None and c.prediction.identical)]
        if not moved:
            lines.append(
                f"{name} {vs}: the same registers, occupancy and SASS instruction counts on every input "
                f"({_unpriced_difference(pairs)}): no change predicted."
            )
            continue
        labels = [label for label, _ in moved]
        where = ", ".join(labels) if len(labels) <= 3 else f"{len(labels)} of {len(pairs)} inputs"
        worst_pair = max(moved, key=lambda lc: lc[1].prediction.impact if lc[1].prediction is not None else 0.0)
        delta = opcode_delta_text(worst_pair[1], limit=4)
        what = f"SASS {delta}" if delta else "no resource or opcode change"
        verdict = prediction_text([c.prediction for _, c in moved])
        lines.append(f"{name} {vs}, {where}: below what a finding reports ({what}); {verdict or 'no prediction'}.")
    return lines


# Resources fields the cost model does not price, in words (``_unpriced_difference``)
_UNPRICED_WORDS = {
    "ptx_registers": "the PTX",
    "ptx_registers_total": "the PTX",
    "ptx_instructions": "the PTX",
    "source_lines": "the source lines of some instructions",
}


def _unpriced_difference(pairs: Sequence[tuple[str, CompileDiff]]) -> str:
    """What differs between kernels the cost model sees as the same, in words: "only the PTX differs" for
    a newer frontend whose PTX ptxas assembles to the same instruction counts; other fields by name."""
    differ = {
        f.name
        for _, c in pairs
        for f in fields(c.ref.resources)
        if f.name != "kernel_name" and getattr(c.ref.resources, f.name) != getattr(c.new.resources, f.name)
    }
    if not differ:
        return "nothing explain measures differs"
    words = list(dict.fromkeys(_UNPRICED_WORDS.get(name, name) for name in sorted(differ, key=_field_order)))
    return "only " + " and ".join(words) + agree(len(words), " differs", " differ")


def _field_order(name: str) -> tuple[int, str]:
    return (0 if name.startswith("ptx") else 1, name)
