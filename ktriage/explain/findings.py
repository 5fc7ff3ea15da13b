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

from dataclasses import dataclass, field
from typing import Any

from ktriage.compile.compiler import CompileFailure
from ktriage.explain.attribution import CrossCells
from ktriage.explain.engine import Change, Comparison, ExplainResult, toolchain_label
from ktriage.explain.failures import fix_for, one_line
from ktriage.explain.sass_detail import CLASS_TITLES, OPCODE_MIN_CLASS_DELTA
from ktriage.spec.model import input_label

# Metrics worth a finding of their own, most important first.
HEADLINE_METRICS = ("spill_store_bytes", "registers", "ctas_per_sm", "stack_bytes", "shared_bytes")
NOTABLE_OPCODES = ("ATOMG", "REDG", "ATOMS", "RED", "ATOM", "LDL", "STL", "HGMMA", "HMMA", "WGMMA", "LDGSTS", "UTMALDG")
# How a finding names who is responsible (all finding kinds share the wording).
_BLAME = {"frontend": "the frontend (Triton/LLVM PTX) is responsible", "ptxas": "ptxas is responsible",
          "both": "frontend and ptxas together", "unknown": "cause unknown (cross matrix incomplete)"}


def input_range(inputs: list[str]) -> str:
    """``N=4608..8192`` for consecutive inputs of one shape key, ``a .. b`` otherwise."""
    if len(inputs) == 1:
        return inputs[0]
    first, last = inputs[0], inputs[-1]
    key_a, _, val_a = first.partition("=")
    key_b, _, val_b = last.partition("=")
    if val_a and key_a == key_b and "," not in first:
        return f"{key_a}={val_a}..{val_b}"
    return f"{first} .. {last}"


@dataclass
class Finding:
    toolchain: str
    reference: str
    metric: str
    direction: str  # "up" or "down"
    attribution: str
    inputs: list[str] = field(default_factory=list)
    examples: list[Change] = field(default_factory=list)

    @property
    def range(self) -> str:
        return input_range(self.inputs)

    def summary(self) -> str:
        worst = max(self.examples, key=lambda c: abs(c.new - c.ref))
        verb = "rises" if self.direction == "up" else "falls"
        unit = " B" if self.metric.endswith("bytes") else ""
        blame = _BLAME.get(self.attribution, self.attribution)
        return (f"{self.range}: {self.metric} {verb} with {self.toolchain} vs {self.reference} "
                f"(worst {worst.ref:g}{unit} -> {worst.new:g}{unit} at {self.inputs[self.examples.index(worst)]}); {blame}.")

    def to_json(self) -> dict[str, Any]:
        return {
            "toolchain": self.toolchain,
            "reference": self.reference,
            "metric": self.metric,
            "direction": self.direction,
            "attribution": self.attribution,
            "range": self.range,
            "inputs": self.inputs,
            "summary": self.summary(),
        }


def collect_findings(result: ExplainResult) -> list[Finding]:
    findings: list[Finding] = []
    if len(result.toolchains) < 2:
        return findings
    # A run of inputs holds one reference: where the first toolchain could not compile a spec and
    # another served as reference, a finding of its own starts (and names that reference).
    for toolchain in result.toolchains[1:]:
        name = toolchain_label(toolchain)
        open_runs: dict[str, Finding] = {}
        for item in result.specs:
            comparison = next((c for c in item.comparisons if c.new.toolchain.id == toolchain.id), None)
            label = input_label(item.spec.meta, item.spec.name)
            seen: set[str] = set()
            changes = [] if comparison is None else [
                c for c in comparison.changes if c.metric in HEADLINE_METRICS
            ] + [c for c in comparison.opcode_changes if c.metric in NOTABLE_OPCODES]
            ref_name = "" if comparison is None else toolchain_label(comparison.ref.toolchain)
            for change in changes:
                direction = "up" if change.new > change.ref else "down"
                run = open_runs.get(change.metric)
                if (run is None or run.direction != direction or run.attribution != change.attribution
                        or run.reference != ref_name):
                    run = Finding(name, ref_name, change.metric, direction, change.attribution)
                    findings.append(run)
                    open_runs[change.metric] = run
                run.inputs.append(label)
                run.examples.append(change)
                seen.add(change.metric)
            for metric in list(open_runs):
                if metric not in seen:
                    del open_runs[metric]
    findings += _detail_findings(result)
    order = {m: i for i, m in enumerate(HEADLINE_METRICS + NOTABLE_OPCODES)}
    findings.sort(key=lambda f: (f.toolchain, order.get(f.metric, 99)))
    return findings


@dataclass
class FailureFinding:
    """One toolchain failing on a run of consecutive inputs with the same one-line error.

    ``fallback`` is the toolchain compared against instead when this toolchain was the requested
    reference (``""`` when nothing compiled, None when it was not the reference)."""

    toolchain: str
    stage: str
    kind: str
    message: str  # the one-line error (no fix)
    fix: str | None
    fallback: str | None
    inputs: list[str] = field(default_factory=list)

    @property
    def range(self) -> str:
        return input_range(self.inputs)

    def summary(self) -> str:
        verb = {"frontend": "cannot compile", "assemble": "cannot assemble",
                "analyze": "cannot analyze"}.get(self.stage, "cannot compile")
        text = f"{self.toolchain} {verb} {self.range}: {self.message}"
        if self.fix:
            text += f" — fix: {self.fix}"
        if self.fallback:
            text += f"; compared against {self.fallback} instead"
        elif self.fallback == "":
            text += "; no toolchain compiled it"
        return text + "."

    def to_json(self) -> dict[str, Any]:
        return {
            "toolchain": self.toolchain,
            "stage": self.stage,
            "kind": self.kind,
            "message": self.message,
            "fix": self.fix,
            "reference_fallback": self.fallback,
            "range": self.range,
            "inputs": self.inputs,
            "summary": self.summary(),
        }


def collect_failure_findings(result: ExplainResult) -> list[FailureFinding]:
    """The failed cells grouped like the change findings: per toolchain, consecutive inputs with the
    same stage, error line and fallback form one finding; the toolchains in the order given."""
    findings: list[FailureFinding] = []
    first = result.toolchains[0].id if result.toolchains else None
    for toolchain in result.toolchains:
        run: FailureFinding | None = None
        for item in result.specs:
            failure = item.results.get(toolchain.id)
            if not isinstance(failure, CompileFailure):
                run = None
                continue
            fallback: str | None = None
            if toolchain.id == first:
                ref = next((t for t in result.toolchains if t.id == item.reference), None)
                fallback = toolchain_label(ref) if ref is not None else ""
            message = one_line(failure.message, failure.kind)
            fix = fix_for(failure)
            if (run is None or run.stage != failure.stage or run.message != message or run.fix != fix
                    or run.fallback != fallback):
                run = FailureFinding(toolchain_label(toolchain), failure.stage, failure.kind, message, fix, fallback)
                findings.append(run)
            run.inputs.append(input_label(item.spec.meta, item.spec.name))
    return findings


def failure_json(failure: CompileFailure) -> dict[str, Any]:
    """A failed cell for a kernel's ``failures`` list: one-line message; the full text stays in ``results``."""
    return {"toolchain": failure.toolchain.id, "toolchain_spec": str(failure.toolchain.spec), "stage": failure.stage,
            "kind": failure.kind, "message": one_line(failure.message, failure.kind), "fix": fix_for(failure)}


@dataclass
class DetailFinding(Finding):
    """A finding the base-opcode histogram hides: the main loop's length, or an instruction class
    whose modifiers changed (metric `main_loop_instructions` or `instructions:<class>`).

    `examples` hold a `Change` per input as for the other findings (for the loop: its instruction
    counts; for a class: 0 -> number of changed instructions), `texts` what changed in words.
    """

    texts: list[str] = field(default_factory=list)

    def summary(self) -> str:
        worst = max(range(len(self.examples)), key=lambda i: abs(self.examples[i].new - self.examples[i].ref))
        where = f" (worst at {self.inputs[worst]})" if len(self.inputs) > 1 else ""
        blame = _BLAME.get(self.attribution, self.attribution)
        return f"{self.range}: with {self.toolchain} vs {self.reference}, {self.texts[worst]}{where}; {blame}."


def _detail_changes(comparison: Comparison) -> list[tuple[Change, str, str]]:
    """(change, direction, text) for the main loop and each class worth a finding."""
    out: list[tuple[Change, str, str]] = []
    detail = comparison.sass_detail
    loop = detail.main_loop
    if loop is not None and loop.changed and loop.attribution != "none":
        direction = "up" if loop.delta > 0 else "down"
        out.append((Change("main_loop_instructions", loop.cells.ref, loop.cells.new, loop.attribution, loop.cells,
                           loop.text()), direction, loop.text()))
    for cls in detail.classes:
        if cls.size < OPCODE_MIN_CLASS_DELTA or cls.attribution == "none":
            continue
        text = f"{CLASS_TITLES[cls.name]} instructions: {cls.text(limit=6)}"
        cells = CrossCells(0.0, float(cls.size), None, None)
        net = sum(d for _, d in cls.delta)  # more, fewer, or as many instructions of other kinds
        direction = "up" if net > 0 else "down" if net < 0 else "changed"
        out.append((Change(f"instructions:{cls.name}", 0.0, float(cls.size), cls.attribution, cells, text),
                    direction, text))
    return out


def _detail_findings(result: ExplainResult) -> list[Finding]:
    """Detail findings, consecutive inputs with the same metric, direction and attribution merged."""
    findings: list[Finding] = []
    if len(result.toolchains) < 2:
        return findings
    for toolchain in result.toolchains:
        name = toolchain_label(toolchain)
        open_runs: dict[str, DetailFinding] = {}
        for item in result.specs:
            comparison = next((c for c in item.comparisons if c.new.toolchain.id == toolchain.id), None)
            label = input_label(item.spec.meta, item.spec.name)
            seen: set[str] = set()
            # the reference of this comparison (not the first toolchain where that one could not compile)
            ref_name = toolchain_label(comparison.ref.toolchain) if comparison is not None else ""
            for change, direction, text in [] if comparison is None else _detail_changes(comparison):
                run = open_runs.get(change.metric)
                if (run is None or run.direction != direction or run.attribution != change.attribution
                        or run.reference != ref_name):
                    run = DetailFinding(name, ref_name, change.metric, direction, change.attribution)
                    findings.append(run)
                    open_runs[change.metric] = run
                run.inputs.append(label)
                run.examples.append(change)
                run.texts.append(text)
                seen.add(change.metric)
            for metric in list(open_runs):
                if metric not in seen:
                    del open_runs[metric]
    return findings
