"""What the explain HTML report shows, computed: ranked findings with links to the lines that show
them, and per kernel the side-by-side PTX and SASS diffs, the cross matrix, occupancy and the
declared register classes. ``ktriage.report.explain_html`` only renders this.

Links: each finding's evidence points at an anchor in the section of its worst input: spills and
local memory at the first changed ``LDL``/``STL`` row of the SASS diff, an opcode at the first
changed row with that opcode, the main loop at its first changed row, registers at the register
table, CTAs/SM at the occupancy table, anything else at the kernel's cross matrix.

Which kernels get diffs: every input with a change when there are at most ``max_kernels``, else the
worst input of each finding (in finding order) up to that many; the rest are rows of the per-input
table (the markdown report's), so a 30-input sweep stays a page, not thirty.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ktriage.analyze.side_diff import SideDiff, ptx_side_diff, sass_side_diff
from ktriage.compile.compiler import CompileFailure
from ktriage.errors import KtriageError
from ktriage.explain.engine import Comparison, ExplainResult, KernelResult, SpecExplain, toolchain_label
from ktriage.explain.failures import describe
from ktriage.explain.findings import Finding, FindingGroup, collect_failure_findings, group_findings
from ktriage.spec.model import input_label

SPILL_METRICS = {"spill_store_bytes", "spill_load_bytes", "stack_bytes", "LDL", "STL", "instructions:local"}


@dataclass
class Link:
    text: str  # the evidence, in words
    href: str  # "#anchor"


@dataclass
class FindingView:
    kind: str  # regression, improvement, change, failed
    summary: str
    links: list[Link] = field(default_factory=list)


@dataclass
class CrossRow:
    metric: str
    ref: float
    new_ptx_ref_ptxas: float | None
    ref_ptx_new_ptxas: float | None
    new: float
    attribution: str


@dataclass
class ComparisonView:
    anchor: str
    ref: str
    new: str
    attribution: str
    cross: list[CrossRow]
    cross_errors: list[str]
    ptx: SideDiff | None
    sass: SideDiff | None
    ptx_decls: tuple[list[str], list[str]] = ([], [])
    loops: tuple[str | None, str | None] = (None, None)  # main loop spans (ref, new)
    diff_errors: list[str] = field(default_factory=list)


@dataclass
class ToolchainCell:
    label: str
    failed: str | None = None
    registers: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    stack_bytes: int | None = None
    shared_bytes: int | None = None
    local_loads: int | None = None
    local_stores: int | None = None
    sass_instructions: int | None = None
    occupancy: str = ""
    limiter: str = ""
    ctas_per_sm: int | None = None
    ptx_registers: dict[str, int] = field(default_factory=dict)


@dataclass
class KernelView:
    anchor: str
    input: str
    name: str
    kernel_name: str
    toolchains: list[ToolchainCell]
    reg_classes: list[str]
    comparisons: list[ComparisonView]
    reference_fallback: str | None = None


@dataclass
class ExplainView:
    title: str
    toolchains: list[str]
    findings: list[FindingView]
    kernels: list[KernelView]
    per_input: list[tuple[str, list[str], str]]  # input, per toolchain cell, anchor or ""
    omitted: int = 0  # inputs with changes but no diff section


def _cell(result: KernelResult | CompileFailure | None, label: str) -> ToolchainCell:
    if result is None:
        return ToolchainCell(label, failed="not compiled")
    if isinstance(result, CompileFailure):
        return ToolchainCell(label, failed=describe(result, fix=False))
    r, o = result.resources, result.occupancy
    return ToolchainCell(label, registers=r.registers, spill_store_bytes=r.spill_store_bytes,
                         spill_load_bytes=r.spill_load_bytes, stack_bytes=r.stack_bytes, shared_bytes=r.shared_bytes,
                         local_loads=r.local_loads, local_stores=r.local_stores, sass_instructions=r.sass_instructions,
                         occupancy=o.describe(), limiter=o.limiter.replace("_", " "), ctas_per_sm=o.ctas_per_sm,
                         ptx_registers=dict(r.ptx_registers))


def _short(result: KernelResult | CompileFailure | None) -> str:
    c = _cell(result, "")
    if c.failed:
        return f"error: {c.failed}"
    return f"{c.registers} regs, spill {c.spill_store_bytes if c.spill_store_bytes is not None else '?'} B, {c.occupancy}"


def _span(result: KernelResult) -> tuple[int, int] | None:
    loop = result.resources.main_loop
    return (loop.start, loop.end) if loop is not None else None


def _comparison_view(c: Comparison, anchor: str, *, context: int, max_run: int) -> ComparisonView:
    cross = [CrossRow(ch.metric, ch.ref, ch.cells.new_ptx_ref_ptxas, ch.cells.ref_ptx_new_ptxas, ch.new, ch.attribution)
             for ch in [*c.changes, *c.opcode_changes[:8]]]
    view = ComparisonView(anchor, toolchain_label(c.ref.toolchain), toolchain_label(c.new.toolchain), c.attribution(),
                          cross, list(c.cross_errors), None, None)
    a, b = c.ref.artifact, c.new.artifact
    try:
        view.ptx, ad, bd = ptx_side_diff(a.frontend.text("ptx"), b.frontend.text("ptx"), context=context, max_run=max_run)
        view.ptx_decls = (ad, bd)
    except (KtriageError, OSError) as exc:
        view.diff_errors.append(f"PTX diff: {exc}")
    try:
        from ktriage.analyze.cuobjdump import run_cuobjdump

        sa = run_cuobjdump(a.toolchain.cuobjdump, a.cubin.cubin_path, "-sass")
        sb = run_cuobjdump(b.toolchain.cuobjdump, b.cubin.cubin_path, "-sass")
        la, lb = c.ref.resources.main_loop, c.new.resources.main_loop
        view.loops = (la.span if la else None, lb.span if lb else None)
        view.sass = sass_side_diff(sa, sb, function=a.kernel_name, a_loop=_span(c.ref), b_loop=_span(c.new),
                                   context=context, max_run=max_run)
    except (KtriageError, OSError) as exc:
        view.diff_errors.append(f"SASS diff: {exc}")
    return view


def _row_anchor(cv: ComparisonView, kind: str, index: int | None) -> str | None:
    return None if index is None else f"{cv.anchor}-{kind}-r{index}"


def _evidence_anchor(f: Finding, kv: KernelView, cv: ComparisonView) -> str:
    metric = f.metric
    sass = cv.sass
    if sass is not None:
        if metric in SPILL_METRICS:
            found = _row_anchor(cv, "sass", sass.first(lambda r: r.tag != "equal" and r.tag != "skip" and bool(
                (r.a and r.a.spill) or (r.b and r.b.spill))))
            if found:
                return found
        if metric == "main_loop_instructions":
            found = _row_anchor(cv, "sass", sass.first(lambda r: r.tag not in ("equal", "skip") and bool(
                (r.a and r.a.main_loop) or (r.b and r.b.main_loop))))
            if found:
                return found
        if metric.startswith("instructions:"):
            cls = metric.split(":", 1)[1]
            found = _row_anchor(cv, "sass", sass.first(lambda r: r.tag not in ("equal", "skip") and bool(
                (r.a and r.a.cls == cls) or (r.b and r.b.cls == cls))))
            if found:
                return found
        if metric.isupper():
            found = _row_anchor(cv, "sass", sass.first(lambda r: r.tag not in ("equal", "skip") and bool(
                (r.a and r.a.opcode == metric) or (r.b and r.b.opcode == metric))))
            if found:
                return found
    if metric == "registers":
        return f"{kv.anchor}-regs"
    if metric in ("ctas_per_sm", "warps_per_sm"):
        return f"{kv.anchor}-occupancy"
    return f"{cv.anchor}-cross"


def _worst_input(f: Finding) -> str:
    return f.inputs[max(range(len(f.examples)), key=lambda j: abs(f.examples[j].new - f.examples[j].ref))]


_WORDS = {"spill_store_bytes": "spill stores", "registers": "registers", "ctas_per_sm": "CTAs/SM",
          "stack_bytes": "stack", "shared_bytes": "shared memory", "main_loop_instructions": "main loop",
          "instructions:local": "local-memory instructions", "instructions:atomic": "atomic instructions",
          "instructions:sync": "synchronization instructions", "instructions:global": "global-memory instructions",
          "instructions:shared": "shared-memory instructions", "instructions:tensor": "tensor-core instructions"}


def build_view(result: ExplainResult, findings: list[Finding], *, title: str = "ktriage explain", max_kernels: int = 4,
               context: int = 3, max_run: int = 400) -> ExplainView:
    groups: list[FindingGroup] = group_findings(findings)
    labels = {input_label(item.spec.meta, item.spec.name): i for i, item in enumerate(result.specs)}
    changed = [i for i, item in enumerate(result.specs) if any(c.changed for c in item.comparisons)]
    if len(result.specs) <= max_kernels:  # a few kernels: all of them, changed or not
        chosen = [i for i, item in enumerate(result.specs) if item.comparisons]
    elif len(changed) <= max_kernels:
        chosen = changed
    else:
        chosen = []
        for g in groups:
            for f in g.findings:
                i = labels.get(_worst_input(f))
                if i is not None and i not in chosen and len(chosen) < max_kernels:
                    chosen.append(i)
    kernels: dict[int, KernelView] = {}
    for i in sorted(chosen):
        item: SpecExplain = result.specs[i]
        anchor = f"k{i}"
        cells = [_cell(item.results.get(t.id), toolchain_label(t)) for t in result.toolchains]
        classes = sorted({k for c in cells for k in c.ptx_registers})
        ref = next((r for r in item.results.values() if isinstance(r, KernelResult)), None)
        comps = [_comparison_view(c, f"{anchor}-c{j}", context=context, max_run=max_run)
                 for j, c in enumerate(item.comparisons)]
        kernels[i] = KernelView(anchor, input_label(item.spec.meta, item.spec.name), item.spec.name,
                                ref.artifact.kernel_name if ref else item.spec.name, cells, classes, comps,
                                item.reference_fallback)
    views: list[FindingView] = []
    for g in groups:
        fv = FindingView(g.kind, g.summary())
        for f in g.findings:
            i = labels.get(_worst_input(f))
            kv = kernels.get(i) if i is not None else None
            if kv is None:
                continue
            cv = next((c for c in kv.comparisons if c.new == f.toolchain), kv.comparisons[0] if kv.comparisons else None)
            if cv is None:
                continue
            href, word = "#" + _evidence_anchor(f, kv, cv), _WORDS.get(f.metric, f.metric)
            same = next((x for x in fv.links if x.href == href), None)
            if same is not None:  # one line shows several pieces of evidence: one link naming them all
                same.text = same.text.replace(f" at {kv.input}", f", {word} at {kv.input}")
            else:
                fv.links.append(Link(f"{word} at {kv.input}", href))
        views.append(fv)
    views += [FindingView("failed", ff.summary()) for ff in collect_failure_findings(result)]
    per_input = [(input_label(item.spec.meta, item.spec.name),
                  [_short(item.results.get(t.id)) for t in result.toolchains],
                  kernels[i].anchor if i in kernels else "") for i, item in enumerate(result.specs)]
    return ExplainView(title, [toolchain_label(t) for t in result.toolchains], views,
                       [kernels[i] for i in sorted(kernels)], per_input, omitted=len(set(changed) - set(kernels)))
