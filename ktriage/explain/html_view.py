"""What the explain HTML report shows, computed: ranked findings with links to the lines that show
them, and per kernel the side-by-side PTX and SASS diffs, the cross matrix, occupancy and the
declared register classes. ``ktriage.report.explain_html`` only renders this.

Links: each finding's evidence points at an anchor in the section of its worst input: spills and
local memory at the first changed ``LDL``/``STL`` row of the SASS diff, an opcode at the first
changed row with that opcode, the main loop at its first changed row, registers at the register
table, CTAs/SM at the occupancy table, anything else at the kernel's cross matrix. Of the diff rows
and source lines, only those a link points at carry an id (``ExplainView.linked``): a sweep's diffs
are thousands of rows, and an id on each was a tenth of the page.

Source view (per comparison): every source line of either cubin with its counts for both toolchains
side by side (instructions, LDL/STL, memory instructions, the main loop's share per iteration) and
the deltas; each line expands to its SASS in both cubins (a ``<details>``: the page has no script).
Findings link to the top line of each piece of their line evidence (``explain/line_evidence.py``).

Which kernels get diffs: every input with a change when there are at most ``max_kernels``, else the
worst input of each finding (in finding order) up to that many; the rest are rows of the per-input
table (the markdown report's), so a 30-input sweep stays a page, not thirty.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from ktriage.analyze.artifact import cached_line_map
from ktriage.analyze.lines import (
    COUNTS,
    LineMap,
    LineStats,
    instruction_text,
    line_key,
    loc_key,
    match_key,
    pair_lines,
)
from ktriage.analyze.side_diff import SideDiff, ptx_side_diff, sass_side_diff
from ktriage.compile.compiler import CompileFailure
from ktriage.errors import KtriageError
from ktriage.explain.engine import CompileDiff, ExplainResult, KernelResult, SpecExplain, toolchain_label
from ktriage.explain.failures import describe
from ktriage.explain.findings import (
    Finding,
    FindingGroup,
    collect_failure_findings,
    group_findings,
    no_change_line,
    uncovered_lines,
)
from ktriage.explain.fixes import Fix
from ktriage.explain.labels import input_names, input_places
from ktriage.explain.line_evidence import group_evidence
from ktriage.explain.predicted import gate_line
from ktriage.explain.toolchain_text import TOOLCHAINS_HEAD, toolchain_line
from ktriage.spec.model import input_label
from ktriage.spec.sms import pricing_text
from ktriage.toolchain.manager import Toolchain

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
    lines: list[str] = field(default_factory=list)  # line evidence, in words (explain/line_evidence.py)


@dataclass
class CrossRow:
    metric: str
    ref: float
    new_ptx_ref_ptxas: float | None
    ref_ptx_new_ptxas: float | None
    new: float
    attribution: str


@dataclass
class SourceLineView:
    """One source line of the source view: its counts in both cubins and its SASS in each."""

    anchor: str
    where: str  # file:line
    text: str
    inlined_at: str
    ref: dict[str, int] | None  # analyze/lines.COUNTS; None: no instruction of this line in that cubin
    new: dict[str, int] | None
    delta: dict[str, int]
    ref_sass: list[str] = field(default_factory=list)
    new_sass: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(self.delta.values()) or (self.ref is None) != (self.new is None)

    @property
    def spill(self) -> bool:
        return bool(self.delta.get("local_loads") or self.delta.get("local_stores"))

    @property
    def in_loop(self) -> bool:
        return bool((self.ref or {}).get("loop_instructions") or (self.new or {}).get("loop_instructions"))

    def pair(self, name: str) -> tuple[int | None, int | None, int]:
        """(ref, new, delta) of one count; LDL/STL together as ``local``, memory classes as ``memory``."""
        parts = {"local": ("local_loads", "local_stores"), "memory": ("global_mem", "shared_mem", "atomic")}.get(
            name, (name,)
        )

        def total(side: dict[str, int] | None) -> int | None:
            return None if side is None else sum(side.get(p, 0) for p in parts)

        a, b = total(self.ref), total(self.new)
        return a, b, (b or 0) - (a or 0)


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
    source: list[SourceLineView] = field(default_factory=list)  # the source view (module docstring)
    source_note: str | None = None  # why there is no source view
    line_anchors: dict[tuple[str, int], str] = field(default_factory=dict)  # (file, line) -> anchor
    # (input, anchor) of an earlier comparison of the same compiled kernels (identical PTX and cubins
    # with both toolchains): its diffs and source lines are this one's, so the page shows them once
    same_as: tuple[str, str] | None = None


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
    # input as the findings name it, its full label where that is longer ("" else), per toolchain cell, anchor or ""
    per_input: list[tuple[str, str, list[str], str]]
    omitted: int = 0  # inputs with changes but no diff section
    no_change: str = ""  # the no-change line, where no change finding was made (findings.no_change_line)
    targets: list[str] = field(default_factory=list)  # the GPU architectures the cubins are for
    pricing: str = ""  # the SMs the predictions are priced for (spec.sms.pricing_text)
    gate: str = ""  # the gate the findings were sorted by (predicted.gate_line)
    # what each toolchain resolved to (toolchain_text.toolchain_line), escaped piece by piece (_resolved_line)
    resolved: list[Markup] = field(default_factory=list)
    toolchains_head: str = TOOLCHAINS_HEAD
    model: str = ""  # the model that priced the predictions (ModelUsed.line)
    # the verified fixes (explain --fixes); None: not asked for, so the page has no Fixes section
    fixes: list[Fix] | None = None
    # every anchor a link of the page points at: a diff row or source line carries its id only if here,
    # as the 7000 rows of a sweep's diffs each carrying one made 155 KB of ids nothing used
    linked: frozenset[str] = frozenset()


def _cell(result: KernelResult | CompileFailure | None, label: str) -> ToolchainCell:
    if result is None:
        return ToolchainCell(label, failed="not compiled")
    if isinstance(result, CompileFailure):
        return ToolchainCell(label, failed=describe(result, fix=False))
    r, o = result.resources, result.occupancy
    return ToolchainCell(
        label,
        registers=r.registers,
        spill_store_bytes=r.spill_store_bytes,
        spill_load_bytes=r.spill_load_bytes,
        stack_bytes=r.stack_bytes,
        shared_bytes=r.shared_bytes,
        local_loads=r.local_loads,
        local_stores=r.local_stores,
        sass_instructions=r.sass_instructions,
        occupancy=o.describe(),
        limiter=o.limiter.replace("_", " "),
        ctas_per_sm=o.ctas_per_sm,
        ptx_registers=dict(r.ptx_registers),
    )


def _short(result: KernelResult | CompileFailure | None) -> str:
    c = _cell(result, "")
    if c.failed:
        return f"error: {c.failed}"
    return (
        f"{c.registers} regs, spill {c.spill_store_bytes if c.spill_store_bytes is not None else '?'} B, {c.occupancy}"
    )


def _span(result: KernelResult) -> tuple[int, int] | None:
    loop = result.resources.main_loop
    return (loop.start, loop.end) if loop is not None else None


def _comparison_view(c: CompileDiff, anchor: str, *, context: int, max_run: int) -> ComparisonView:
    cross = [
        CrossRow(ch.metric, ch.ref, ch.cells.new_ptx_ref_ptxas, ch.cells.ref_ptx_new_ptxas, ch.new, ch.attribution)
        for ch in [*c.changes, *c.opcode_changes[:8]]
    ]
    view = ComparisonView(
        anchor,
        toolchain_label(c.ref.toolchain),
        toolchain_label(c.new.toolchain),
        c.attribution(),
        cross,
        list(c.cross_errors),
        None,
        None,
    )
    a, b = c.ref.artifact, c.new.artifact
    try:
        view.ptx, ad, bd = ptx_side_diff(
            a.frontend.text("ptx"), b.frontend.text("ptx"), context=context, max_run=max_run
        )
        view.ptx_decls = (ad, bd)
    except (KtriageError, OSError) as exc:
        view.diff_errors.append(f"PTX diff: {exc}")
    try:
        from ktriage.analyze.cuobjdump import run_cuobjdump

        sa = run_cuobjdump(a.toolchain.cuobjdump, a.cubin.cubin_path, "-sass")
        sb = run_cuobjdump(b.toolchain.cuobjdump, b.cubin.cubin_path, "-sass")
        la, lb = c.ref.resources.main_loop, c.new.resources.main_loop
        view.loops = (la.span if la else None, lb.span if lb else None)
        view.sass = sass_side_diff(
            sa, sb, function=a.kernel_name, a_loop=_span(c.ref), b_loop=_span(c.new), context=context, max_run=max_run
        )
    except (KtriageError, OSError) as exc:
        view.diff_errors.append(f"SASS diff: {exc}")
    view.source, view.source_note = _source_view(c, anchor)
    for row in view.source:
        file, _, line = row.where.rpartition(":")
        if line.isdigit():
            view.line_anchors.setdefault((file, int(line)), row.anchor)
    return view


def _source_view(c: CompileDiff, anchor: str) -> tuple[list[SourceLineView], str | None]:
    """The rows of the source view: every line of either cubin (source order), its counts and SASS."""
    ref_lines, new_lines = c.ref.resources.source_lines, c.new.resources.source_lines
    if not ref_lines and not new_lines:
        return (
            [],
            "no source lines: the SASS listing had no line table (cuobjdump without nvdisasm, or a cubin built without -lineinfo)",
        )
    maps: list[LineMap | None] = []
    for result in (c.ref, c.new):
        try:
            maps.append(cached_line_map(result.artifact.cubin, result.toolchain, result.artifact.kernel_name))
        except (KtriageError, OSError):
            maps.append(None)
    pairs = pair_lines(ref_lines, new_lines)
    row_of: dict[tuple[str, str | int, tuple[str, ...]], int] = {}
    rows: list[SourceLineView] = []
    for i, (a, b) in enumerate(pairs):
        shown = b if b is not None else a
        assert shown is not None
        row_of[match_key(shown)] = i

        def counts(s: LineStats | None) -> dict[str, int] | None:
            return None if s is None else {k: int(getattr(s, k)) for k in COUNTS}

        ca, cb = counts(a), counts(b)
        delta = {k: (cb or {}).get(k, 0) - (ca or {}).get(k, 0) for k in COUNTS}
        rows.append(
            SourceLineView(
                f"{anchor}-L{i}",
                shown.where.split(" (inlined")[0],
                shown.text,
                " <- ".join(shown.inlined_at),
                ca,
                cb,
                delta,
            )
        )
    for side, stats, line_map in ((0, ref_lines, maps[0]), (1, new_lines, maps[1])):
        if line_map is None:
            continue
        by_key = {line_key(s): s for s in stats}
        for item in line_map.instructions:
            found = by_key.get(loc_key(item.loc))
            row = row_of.get(match_key(found)) if found is not None else None
            if row is not None:
                (rows[row].ref_sass if side == 0 else rows[row].new_sass).append(instruction_text(item.instruction))
    note = None if all(maps) else "the SASS of each line is missing for a cubin that could not be disassembled again"
    return rows, note


def _compiled_key(c: CompileDiff) -> tuple[str, ...] | None:
    """What the comparison's diffs and source lines are made of: both toolchains' PTX and cubin, by
    digest. Two inputs that compile to the same kernels (N=4608 and N=5120 with BLOCK_SIZE 8192: N
    is a runtime argument) share it, and their 1.3 MB of diffs need showing once. None: a file
    could not be read, so the comparison is shown in full."""
    key: list[str] = []
    for result in (c.ref, c.new):
        try:
            ptx = result.artifact.frontend.text("ptx").encode()
            cubin = result.artifact.cubin.cubin_path.read_bytes()
        except (KtriageError, OSError):
            return None
        key += [result.toolchain.id, hashlib.sha256(ptx).hexdigest(), hashlib.sha256(cubin).hexdigest()]
    return tuple(key)


def _shown_anchor(anchor: str, cv: ComparisonView) -> str:
    """An anchor inside ``cv`` as the page has it: in the comparison it repeats, where ``cv`` is one."""
    if cv.same_as is not None and anchor.startswith(cv.anchor + "-"):
        return cv.same_as[1] + anchor[len(cv.anchor) :]
    return anchor


def _row_anchor(cv: ComparisonView, kind: str, index: int | None) -> str | None:
    return None if index is None else f"{cv.anchor}-{kind}-r{index}"


def _evidence_anchor(f: Finding, kv: KernelView, cv: ComparisonView) -> str:
    metric = f.metric
    sass = cv.sass
    if sass is not None:
        if metric in SPILL_METRICS:
            found = _row_anchor(
                cv,
                "sass",
                sass.first(
                    lambda r: r.tag != "equal" and r.tag != "skip" and bool((r.a and r.a.spill) or (r.b and r.b.spill))
                ),
            )
            if found:
                return found
        if metric == "main_loop_instructions":
            found = _row_anchor(
                cv,
                "sass",
                sass.first(
                    lambda r: (
                        r.tag not in ("equal", "skip") and bool((r.a and r.a.main_loop) or (r.b and r.b.main_loop))
                    )
                ),
            )
            if found:
                return found
        if metric.startswith("instructions:"):
            cls = metric.split(":", 1)[1]
            found = _row_anchor(
                cv,
                "sass",
                sass.first(
                    lambda r: (
                        r.tag not in ("equal", "skip") and bool((r.a and r.a.cls == cls) or (r.b and r.b.cls == cls))
                    )
                ),
            )
            if found:
                return found
        if metric.isupper():
            found = _row_anchor(
                cv,
                "sass",
                sass.first(
                    lambda r: (
                        r.tag not in ("equal", "skip")
                        and bool((r.a and r.a.opcode == metric) or (r.b and r.b.opcode == metric))
                    )
                ),
            )
            if found:
                return found
    if metric == "registers":
        return f"{kv.anchor}-regs"
    if metric in ("ctas_per_sm", "warps_per_sm"):
        return f"{kv.anchor}-occupancy"
    return f"{cv.anchor}-cross"


def _worst_input(f: Finding) -> str:
    return f.inputs[max(range(len(f.examples)), key=lambda j: abs(f.examples[j].new - f.examples[j].ref))]


_WORDS = {
    "spill_store_bytes": "spill stores",
    "registers": "registers",
    "ctas_per_sm": "CTAs/SM",
    "stack_bytes": "stack",
    "shared_bytes": "shared memory",
    "main_loop_instructions": "main loop",
    "instructions:local": "local-memory instructions",
    "instructions:atomic": "atomic instructions",
    "instructions:sync": "synchronization instructions",
    "instructions:global": "global-memory instructions",
    "instructions:shared": "shared-memory instructions",
    "instructions:tensor": "tensor-core instructions",
}


def build_view(
    result: ExplainResult,
    findings: list[Finding],
    *,
    title: str = "ktriage explain",
    max_kernels: int = 4,
    context: int = 3,
    max_run: int = 400,
    fixes: Sequence[Fix] | None = None,
) -> ExplainView:
    groups: list[FindingGroup] = group_findings(findings)
    labels = {input_label(item.spec.meta, item.spec.name): i for i, item in enumerate(result.specs)}
    # how the findings name them: the short label, inside the kernel's name where the report holds several
    names = input_names([item.spec for item in result.specs])
    places = input_places([item.spec for item in result.specs])
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
    shown: dict[tuple[str, ...], tuple[str, str]] = {}  # compiled kernels -> (input, anchor) showing them
    for i in sorted(chosen):
        item: SpecExplain = result.specs[i]
        anchor = f"k{i}"
        cells = [_cell(item.results.get(t.id), toolchain_label(t)) for t in result.toolchains]
        classes = sorted({k for c in cells for k in c.ptx_registers})
        ref = next((r for r in item.results.values() if isinstance(r, KernelResult)), None)
        comps = [
            _comparison_view(c, f"{anchor}-c{j}", context=context, max_run=max_run)
            for j, c in enumerate(item.comparisons)
        ]
        for diff, comp in zip(item.comparisons, comps, strict=True):
            key = _compiled_key(diff)
            if key is not None:
                comp.same_as = shown.get(key)
                shown.setdefault(key, (places[i], comp.anchor))
        kernels[i] = KernelView(
            anchor,
            places[i],
            item.spec.name,
            ref.artifact.kernel_name if ref else item.spec.name,
            cells,
            classes,
            comps,
            item.reference_fallback,
        )
    views: list[FindingView] = []
    for g in groups:
        fv = FindingView(g.kind, g.summary())
        for f in g.findings:
            i = labels.get(_worst_input(f))
            kv = kernels.get(i) if i is not None else None
            if kv is None:
                continue
            cv = next(
                (c for c in kv.comparisons if c.new == f.toolchain), kv.comparisons[0] if kv.comparisons else None
            )
            if cv is None:
                continue
            href, word = "#" + _shown_anchor(_evidence_anchor(f, kv, cv), cv), _WORDS.get(f.metric, f.metric)
            same = next((x for x in fv.links if x.href == href), None)
            if same is not None:  # one line shows several pieces of evidence: one link naming them all
                same.text = same.text.replace(f" at {kv.input}", f", {word} at {kv.input}")
            else:
                fv.links.append(Link(f"{word} at {kv.input}", href))
        for ev in group_evidence(result, g):
            kv = kernels.get(labels.get(ev.input, -1))
            cv = next((c for c in kv.comparisons if c.new == ev.toolchain), None) if kv is not None else None
            top = ev.lines[0] if ev.lines else None
            target = cv.line_anchors.get((top.file, top.line)) if cv is not None and top is not None else None
            if target is not None and top is not None and kv is not None and cv is not None:
                fv.links.append(
                    Link(
                        f"{ev.title.split(' (')[0]} at {top.where} ({ev.change(top)}), {kv.input}",
                        f"#{_shown_anchor(target, cv)}-sass",
                    )
                )
            fv.lines.append(ev.text())
        views.append(fv)
    views += [FindingView("change", line) for line in uncovered_lines(result, findings)]
    views += [FindingView("failed", ff.summary()) for ff in collect_failure_findings(result)]
    per_input = [
        (
            places[i],
            ""
            if names[i][1] == input_label(item.spec.meta, item.spec.name)
            else input_label(item.spec.meta, item.spec.name),
            [_short(item.results.get(t.id)) for t in result.toolchains],
            kernels[i].anchor if i in kernels else "",
        )
        for i, item in enumerate(result.specs)
    ]
    return ExplainView(
        title,
        [toolchain_label(t) for t in result.toolchains],
        views,
        [kernels[i] for i in sorted(kernels)],
        per_input,
        omitted=len(set(changed) - set(kernels)),
        no_change="" if groups else no_change_line(result),
        targets=sorted({item.spec.target for item in result.specs}),
        pricing=pricing_text([item.spec for item in result.specs]),
        gate=gate_line(result.threshold, result.model),
        resolved=[_resolved_line(t, result) for t in result.toolchains],
        model=result.model.line() if result.model is not None else "",
        fixes=list(fixes) if fixes is not None else None,
        linked=_linked(views, per_input, kernels.values()),
    )


def _resolved_line(toolchain: Toolchain, result: ExplainResult) -> Markup:
    """The toolchain's line as the terminal and the markdown say it, its spec and id in ``<code>``. Why
    Markup: the template escapes every string it is given, which would show the tags as text; here each
    piece from the input (spec, versions, ptxas options) is escaped, and only the ``<code>`` tags are markup."""
    return Markup(toolchain_line(toolchain, result, code=lambda s: Markup("<code>{}</code>").format(s), text=escape))


def _linked(
    findings: Sequence[FindingView], per_input: Sequence[tuple[str, str, list[str], str]], kernels: Iterable[KernelView]
) -> frozenset[str]:
    """The anchors the page's links point at (each ``href="#..."`` the template writes): the findings'
    evidence, the per-input table's sections and a repeated comparison's note to the one shown."""
    anchors = {link.href.removeprefix("#") for f in findings for link in f.links}
    anchors |= {row[3] for row in per_input if row[3]}
    anchors |= {c.same_as[1] for k in kernels for c in k.comparisons if c.same_as is not None}
    return frozenset(anchors)
