"""Line evidence: the source lines that carry a finding's change, in words.

Why: a finding says "LDL 111 -> 940"; the kernel engineer's next question is where. Each comparison
holds its line diff (``CompileDiff.lines``, from ``analyze/lines.py``); this module picks, for each
piece of a finding's evidence, the lines whose matching count moved most at the finding's worst input
and says them in one line:

    local memory (LDL/STL per main-loop iteration): liger_kernel/ops/layer_norm.py:126 (`dx = ...`) +283,
    :122 (`x_hat = ...`) +206, triton/language/standard.py:260 (`return a + b`) +236 (3 of 14 lines: +725 of +1150)

Which count: spills, stack and LDL/STL -> LDL/STL (those of the main loop, per iteration, when the
loop's moved); the main loop's length -> its instructions per line; an instruction class whose
modifiers changed (``instructions:shared``: LDS -> LDSM.16.M88) -> the lines where that class's full
opcodes changed, with what went and what came; ATOMG/REDG -> the atomic class. Registers and
occupancy have no line: no evidence for them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ktriage.analyze.artifact import cached_line_excerpt
from ktriage.analyze.lines import LineDelta, LineStats
from ktriage.explain.engine import CompileDiff, ExplainResult, KernelResult, toolchain_label
from ktriage.explain.findings import DetailFinding, Finding, FindingGroup
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import input_label

TOP_LINES = 4
TEXT_CHARS = 40

_LOCAL = {"spill_store_bytes", "spill_load_bytes", "stack_bytes", "LDL", "STL", "instructions:local"}
_ATOMIC = {"instructions:atomic", "ATOMG", "ATOM", "ATOMS", "REDG", "RED", "REDAS"}
_CLASS_WORDS = {
    "global": "global-memory",
    "shared": "shared-memory",
    "atomic": "atomic",
    "tensor": "tensor-core",
    "sync": "synchronization",
}


def _backticked(snippet: str) -> str:
    """A quoted source line as the terminal and the JSON's ``text`` show it: between backticks."""
    return f"`{snippet}`"


@dataclass(frozen=True)
class LineEvidence:
    """One count's top lines for one finding: what the reports print and the HTML links."""

    measure: str  # a LineStats count (analyze/lines.COUNTS) or "local" (LDL + STL)
    title: str  # "local memory (LDL/STL per main-loop iteration)"
    input: str  # the input whose comparison it is (the finding's worst)
    toolchain: str
    lines: tuple[LineDelta, ...]  # the top lines, largest |delta| first
    shown: int  # the sum of their deltas
    total: int  # the sum over every moved line
    moved: int  # how many lines moved in this count
    comparison: CompileDiff | None = field(default=None, compare=False, repr=False)  # where the lines are

    def delta(self, d: LineDelta) -> int:
        return _delta(d, self.measure)

    def change(self, d: LineDelta) -> str:
        """``+283`` for a count; ``LDS -1 -> LDSM.16.M88 +1`` for a class whose instructions changed."""
        if self.measure.startswith("class:"):
            ops = d.opcode_delta(self.measure.split(":", 1)[1])
            gone = ", ".join(f"{op} {n:+d}" for op, n in ops if n < 0)
            came = ", ".join(f"{op} {n:+d}" for op, n in ops if n > 0)
            return f"{gone} -> {came}" if gone and came else gone or came
        return f"{self.delta(d):+d}"

    def text(self, code: Callable[[str], str] = _backticked, plain: Callable[[str], str] = str) -> str:
        """The evidence in one line; ``code`` marks each quoted source line up and ``plain`` the rest, for
        the report's format (the terminal and JSON: backticks and the text as it is; markdown:
        ``md_code_span`` and ``md_text``, so that a quoted line renders as code, not escaped backticks)."""
        parts: list[str] = []
        previous = None
        for d in self.lines:
            where = f":{d.line}" if d.file == previous else d.where
            previous = d.file
            snippet = d.text if len(d.text) <= TEXT_CHARS else d.text[: TEXT_CHARS - 1] + "…"
            what = code(snippet) if snippet else ""
            if d.inlined_at:
                what += plain((", " if what else "") + f"inlined at {d.inlined_at[-1]}")
            parts.append(
                plain(where) + (f"{plain(' (')}{what}{plain(')')}" if what else "") + plain(f" {self.change(d)}")
            )
        if self.measure.startswith("class:"):
            tail = f" ({len(self.lines)} of {self.moved} lines)" if self.moved > len(self.lines) else ""
        else:
            tail = self._tail()
        return plain(f"{self.title}: ") + plain(", ").join(parts) + plain(tail)

    def _tail(self) -> str:
        """How much of the change the lines shown carry: ``(4 of 13 lines: +871 of +1161)`` where they all
        move the way the total does; else gross and net apart, ``(4 of 5 lines shown: +7 and -2, net +5; all 5
        lines: net +4)``, since "+5 of +4" read as more than all of it."""
        if self.moved <= len(self.lines):
            return ""
        deltas = [self.delta(d) for d in self.lines]
        if all(x * self.total > 0 for x in deltas):
            return f" ({len(self.lines)} of {self.moved} lines: {self.shown:+d} of {self.total:+d})"
        up, down = sum(x for x in deltas if x > 0), sum(x for x in deltas if x < 0)
        gross = " and ".join(f"{x:+d}" for x in (up, down) if x)
        return (
            f" ({len(self.lines)} of {self.moved} lines shown: {gross}, net {self.shown:+d};"
            f" all {self.moved} lines: net {self.total:+d})"
        )

    def to_json(self) -> JSONObject:
        return {
            "measure": self.measure,
            "title": self.title,
            "input": self.input,
            "toolchain": self.toolchain,
            "text": self.text(),
            "total": self.total,
            "moved_lines": self.moved,
            "lines": [
                {
                    "file": d.file,
                    "line": d.line,
                    "text": d.text,
                    "delta": self.delta(d),
                    "change": self.change(d),
                    "excerpt": self.excerpt(d),
                }
                for d in self.lines
            ],
        }

    def excerpt(self, d: LineDelta) -> JSONObject | None:
        """The PTX and SASS instructions of a cited line on each side (``{"ref": {"ptx", "sass"}, "new":
        ...}``, as ``explain --lines`` selects them; a side without the line is None): what a JSON report
        carries so that it stands alone, instead of pointing into this machine's artifact cache."""
        if self.comparison is None:
            return None
        return {
            side: _side_excerpt(result, stats)
            for side, result, stats in (("ref", self.comparison.ref, d.ref), ("new", self.comparison.new, d.new))
        }


def _side_excerpt(result: KernelResult, stats: LineStats | None) -> dict[str, str | None] | None:
    if stats is None:
        return None
    art = result.artifact
    return cached_line_excerpt(
        art.cubin,
        result.toolchain,
        art.kernel_name,
        lambda: art.frontend.text("ptx"),
        stats.path or stats.file,
        stats.line,
    )


def _delta(d: LineDelta, measure: str) -> int:
    if measure.startswith("class:"):
        return d.class_changed(measure.split(":", 1)[1])
    if measure == "local":
        return d.delta("local_loads") + d.delta("local_stores")
    return d.delta(measure)


def _measure(metric: str, lines: Sequence[LineDelta]) -> tuple[str, str] | None:
    if metric in _LOCAL:
        if any(d.delta("loop_local") for d in lines):
            return "loop_local", "local memory (LDL/STL per main-loop iteration)"
        return "local", "local memory (LDL/STL)"
    if metric.startswith("instructions:") and metric.split(":", 1)[1] in _CLASS_WORDS:
        cls = metric.split(":", 1)[1]
        return f"class:{cls}", f"{_CLASS_WORDS[cls]} instructions changed"
    if metric in _ATOMIC:
        return "atomic", "atomic instructions"
    if metric == "main_loop_instructions":
        return "loop_instructions", "main-loop instructions (per iteration)"
    return None


def evidence(
    lines: Sequence[LineDelta], metric: str, *, input: str = "", toolchain: str = "", top: int = TOP_LINES
) -> LineEvidence | None:
    """The top lines of ``lines`` for a finding on ``metric``; None when the metric has no line or no
    line moved in its count (a cubin without line info has no ``lines``)."""
    found = _measure(metric, lines)
    if found is None:
        return None
    measure, title = found
    moved = [d for d in lines if _delta(d, measure)]
    if not moved:
        return None
    moved.sort(key=lambda d: (-abs(_delta(d, measure)), d.file, d.line))
    chosen = tuple(moved[:top])
    return LineEvidence(
        measure,
        title,
        input,
        toolchain,
        chosen,
        sum(_delta(d, measure) for d in chosen),
        sum(_delta(d, measure) for d in moved),
        len(moved),
    )


def _worst(f: Finding) -> int:
    return max(range(len(f.examples)), key=lambda j: abs(f.examples[j].new - f.examples[j].ref))


def _comparison_for(result: ExplainResult, f: Finding, index: int) -> CompileDiff | None:
    """The comparison that made the finding's ``index``-th example: the one holding that Change
    (change and opcode findings), else the input's comparison against the finding's toolchain."""
    change = f.examples[index]
    label = f.inputs[index]
    fallback = None
    for item in result.specs:
        for c in item.comparisons:
            if not isinstance(f, DetailFinding) and any(ch is change for ch in (*c.changes, *c.opcode_changes)):
                return c
            if (
                fallback is None
                and toolchain_label(c.new.toolchain) == f.toolchain
                and toolchain_label(c.ref.toolchain) == f.reference
                and input_label(item.spec.meta, item.spec.name) == label
            ):
                fallback = c
    return fallback


def group_evidence(result: ExplainResult, group: FindingGroup, *, top: int = TOP_LINES) -> list[LineEvidence]:
    """One :class:`LineEvidence` per count the group's findings point at (each at its finding's worst
    input), the worst findings first, no count twice."""
    out: list[LineEvidence] = []
    seen: set[str] = set()
    for f in group.findings:
        i = _worst(f)
        comparison = _comparison_for(result, f, i)
        if comparison is None or not comparison.lines:
            continue
        ev = evidence(comparison.lines, f.metric, input=f.inputs[i], toolchain=f.toolchain, top=top)
        if ev is None or ev.measure in seen:
            continue
        seen.add(ev.measure)
        out.append(replace(ev, comparison=comparison))
    return sorted(out, key=lambda e: _ORDER.index(e.measure) if e.measure in _ORDER else len(_ORDER))


_ORDER = (
    "loop_local",
    "local",
    "atomic",
    "class:atomic",
    "class:global",
    "class:shared",
    "class:tensor",
    "class:sync",
    "loop_instructions",
)
