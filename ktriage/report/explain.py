"""Render an ExplainResult as JSON (for tools), markdown (for CI summaries and issues) or a rich table.

Rendering only: the findings are computed by the caller (``ktriage.explain.findings.collect_findings``)
and passed in.

A failed cell is shown as what it is everywhere: the table cell carries the stage and the one-line
error, the findings carry a line per failing toolchain and input range, and "no resource changes" is
only said when every cell has resources (otherwise: among those that compiled, with the count).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from typing import TypeVar

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import ktriage
from ktriage.compile.compiler import CompileFailure
from ktriage.explain.engine import (
    CompileDiff,
    ExplainResult,
    KernelResult,
    SpecExplain,
    opcode_delta_text,
    toolchain_label,
)
from ktriage.explain.failures import describe, fix_for, not_loaded, one_line
from ktriage.explain.findings import (
    WITHOUT_FINDING,
    FailureFinding,
    Finding,
    collect_failure_findings,
    failure_json,
    group_findings,
    no_change_line,
    uncovered_lines,
)
from ktriage.explain.fixes import Fix
from ktriage.explain.labels import input_places, short_labels
from ktriage.explain.line_evidence import LineEvidence, group_evidence
from ktriage.explain.predicted import gate_line, identical_toolchains
from ktriage.explain.toolchain_text import TOOLCHAINS_HEAD, assembler_label, toolchain_line
from ktriage.home import portable_path
from ktriage.mdsafe import markdown_writer, md_code, md_code_span, md_text
from ktriage.report.rich_table import add_column, add_columns
from ktriage.schema.jsontypes import JSONObject
from ktriage.spec.model import KernelSpec, input_label
from ktriage.spec.sms import pricing_text, spec_sm_count
from ktriage.spec.toml_file import not_loaded_line


def compiled_pass(specs: list[KernelSpec]) -> str | None:
    """The pass the compiled kernels belong to (``fwd``/``bwd``), from the specs themselves; None
    when they do not say (a spec file's kernels) or are of several passes."""
    modes = {str(s.meta["mode"]) for s in specs if s.meta.get("mode")}
    return modes.pop() if len(modes) == 1 and all(s.meta.get("mode") for s in specs) else None


def report_title(target: str, specs: list[KernelSpec]) -> str:
    mode = compiled_pass(specs)
    return f"ktriage explain {target}" + (f" ({mode})" if mode else "")


def _kernel_json(result: KernelResult | CompileFailure) -> JSONObject:
    if isinstance(result, CompileFailure):
        return {"error": result.message, "stage": result.stage, "kind": result.kind}
    res, occ = result.resources, result.occupancy
    data = res.to_json(
        source_lines=False
    )  # per comparison, as the line diff (`lines`); a kernel's whole map is too long here
    data["occupancy"] = occ.to_json()
    artifact: JSONObject = {
        "ptx": portable_path(result.artifact.frontend.ptx_path),
        "cubin": portable_path(result.artifact.cubin.cubin_path),
        "kernel_name": result.artifact.kernel_name,
        "triton_version": result.artifact.frontend.triton_version,
        "ptxas_version": result.artifact.cubin.ptxas_version,
        "lowered_ptx_version": result.artifact.cubin.lowered_ptx_version,
        "placeholder_imports": list(result.artifact.frontend.placeholder_imports),
        "triton_reexports": list(result.artifact.frontend.triton_reexports),
    }
    data["artifact"] = artifact
    spec = result.artifact.spec
    if "launch" in spec.meta:  # a spec written by values: what this toolchain's own JIT decided (docs/specs.md)
        artifact["specialization"] = {
            "signature": spec.signature,
            "constexprs": spec.constexprs,
            "divisible_by_16": list(spec.divisible_by_16),
            "equal_to_1": list(spec.equal_to_1),
            "num_warps": spec.num_warps,
            "num_stages": spec.num_stages,
        }
    return data


def _comparison_json(comparison: CompileDiff) -> JSONObject:
    return {
        "reference": comparison.ref.toolchain.id,
        "toolchain": comparison.new.toolchain.id,
        "attribution": comparison.attribution(),
        "changes": [c.to_json() for c in comparison.changes],
        "opcode_changes": [c.to_json() for c in comparison.opcode_changes],
        "opcode_delta": opcode_delta_text(comparison),
        "cross_errors": comparison.cross_errors,
        "sass_detail": comparison.sass_detail.to_json(),
        "prediction": comparison.prediction.to_json() if comparison.prediction else None,
        "lines": [d.to_json() for d in comparison.lines],
    }


def to_json(result: ExplainResult, findings: list[Finding]) -> JSONObject:
    return {
        "tool": "ktriage explain",
        "ktriage_version": ktriage.__version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "toolchains": [
            {
                "id": t.id,
                "spec": str(t.spec),
                "triton_version": t.triton_version,
                "ptxas_version": t.ptxas_version,
                "ptxas_options": list(t.ptxas_options),
                "assembler": assembler_label(t, result),
                "reference": i == 0,
            }
            for i, t in enumerate(result.toolchains)
        ],
        "complete": result.complete,
        "kernels": [
            {
                "name": item.spec.name,
                "input": input_label(item.spec.meta, item.spec.name),
                "target": item.spec.target,
                "sm_count": spec_sm_count(item.spec),  # the SMs its predictions are priced for
                "spec": item.spec.to_json(),
                "reference": item.reference,
                "reference_fallback": item.reference_fallback,
                "results": {tid: _kernel_json(r) for tid, r in item.results.items()},
                "failures": [failure_json(f) for f in item.failures],
                "comparisons": [_comparison_json(c) for c in item.comparisons],
            }
            for item in result.specs
        ],
        "findings": [f.to_json() for f in findings],
        "grouped_findings": [
            {**g.to_json(), "line_evidence": [e.to_json() for e in group_evidence(result, g)]}
            for g in group_findings(findings)
        ],
        "failures": [f.to_json() for f in collect_failure_findings(result)],
        "threshold": result.threshold,
        # which model priced the predictions, and what their intervals cover (interval_level: 0.8, held out)
        "model": result.model.to_json() if result.model is not None else None,
        "identical_toolchains": identical_lines(result),
    }


T = TypeVar("T")  # a bullet: its words, or its words with their line evidence

SECTIONS = (
    ("regression", "Regressions, most likely impact first"),
    ("improvement", "Improvements"),
    ("change", "Changes predicted neutral"),
)  # kinds by the predicted interval (explain/predicted.py)


def identical_lines(result: ExplainResult) -> list[str]:
    """ "triton==3.4.0,ptxas==12.9.86: identical to triton==3.4.0" for each toolchain reported once."""
    names = {t.id: toolchain_label(t) for t in result.toolchains}
    return [
        f"{names[t]}: identical to {names[u]} (the same resources and SASS for every kernel)"
        for t, u in identical_toolchains(result).items()
    ]


def _arranged(
    sections: list[tuple[str, list[T]]], result: ExplainResult, findings: list[Finding], item: Callable[[str], T]
) -> list[tuple[str, list[T]]]:
    """The finding sections that have bullets, then the toolchains no finding names (``uncovered_lines``),
    then the identical ones; with no bullet at all, the no-change line heads the toolchains' lines. ``item``
    makes a plain line into the caller's bullet (a string, or a string with its line evidence)."""
    quiet = [item(line) for line in uncovered_lines(result, findings)]
    kept = [(title, items) for title, items in sections if items]
    if not kept:
        out = [("", [item(no_change_line(result)), *quiet])]
    else:
        out = kept + ([(WITHOUT_FINDING, quiet)] if quiet else [])
    identical = identical_lines(result)
    if identical:
        out.append(("Identical results (reported once)", [item(line) for line in identical]))
    return out


def _finding_sections(
    result: ExplainResult, findings: list[Finding]
) -> tuple[list[tuple[str, list[str]]], list[FailureFinding]]:
    """The findings as (section title, bullets): one bullet per regression (its evidence grouped),
    ranked by likely impact, then improvements and other changes in their own sections; the
    no-change line when there is nothing; and the failure findings, apart."""
    groups = group_findings(findings)
    sections = [(title, [g.summary() for g in groups if g.kind == kind]) for kind, title in SECTIONS]
    return _arranged(sections, result, findings, lambda line: line), collect_failure_findings(result)


def finding_sections_with_lines(
    result: ExplainResult, findings: list[Finding], evidence: Callable[[LineEvidence], str] = LineEvidence.text
) -> tuple[list[tuple[str, list[tuple[str, list[str]]]]], list[FailureFinding]]:
    """:func:`finding_sections` with each bullet's line evidence (``explain/line_evidence.py``): the
    source lines that carry its change, one line per count (LDL/STL, atomics, ...), as ``evidence``
    writes them (the markdown: its quoted source lines as code spans, the rest escaped)."""
    groups = group_findings(findings)
    sections = [
        (title, [(g.summary(), [evidence(e) for e in group_evidence(result, g)]) for g in groups if g.kind == kind])
        for kind, title in SECTIONS
    ]
    return _arranged(sections, result, findings, lambda line: (line, [])), collect_failure_findings(result)


def finding_lines(result: ExplainResult, findings: list[Finding]) -> tuple[list[str], list[FailureFinding]]:
    """Every finding bullet in report order (regressions by impact, improvements, other changes)."""
    sections, failed = _finding_sections(result, findings)
    return [line for _, lines in sections for line in lines], failed


def _cell(result: KernelResult | CompileFailure | None, compact: bool = False) -> str:
    if result is None:
        return "-"
    if isinstance(result, CompileFailure):
        return f"error: {describe(result, fix=False)}"
    r, o = result.resources, result.occupancy
    spill = "?" if r.spill_store_bytes is None else f"{r.spill_store_bytes}"
    if compact:
        return f"{r.registers} regs, spill {spill} B, {o.ctas_per_sm} CTA/SM"
    return f"{r.registers} regs, spill {spill} B, stack {r.stack_bytes} B, {o.ctas_per_sm} CTA/SM"


def _changes_text(item: SpecExplain, label_toolchains: bool = False) -> str:
    """The changes of one input; ``vs <toolchain>`` where the reference fell back, and never a bare
    "no change" when a cell of the row failed. ``label_toolchains`` (more than two toolchains:
    several comparisons per row) starts each line with the toolchain it compares."""
    ref = item.results.get(item.reference) if item.reference is not None else None
    ref_name = toolchain_label(ref.toolchain) if isinstance(ref, KernelResult) else ""
    vs = f"vs {ref_name}: " if item.reference_fallback and ref_name else ""
    lines = []
    for c in item.comparisons:
        moved = [f"{ch.metric} {ch.ref:g}->{ch.new:g}" for ch in c.changes if ch.metric != "spill_load_bytes"]
        ops = opcode_delta_text(c, limit=4)
        if not moved and not ops:
            continue
        text = "; ".join(moved + ([ops] if ops else []))
        who = f"{toolchain_label(c.new.toolchain)}: " if label_toolchains else ""
        lines.append(f"{who}{vs}[{c.attribution()}] {text}" if who or vs else f"[{c.attribution()}] {text}")
    if lines:
        return "\n".join(lines)
    failed = len(item.failures)
    if not failed:
        return "no change" if item.comparisons else "nothing to compare"
    if item.reference is None:
        return "not compared: no toolchain compiled it"
    if not item.comparisons:
        return f"not compared: only {ref_name} compiled it"
    if vs:
        return f"{vs}same resources ({failed} failed)"
    return f"same resources as {ref_name} where compiled ({failed} failed)"


def compiled_for_line(
    result: ExplainResult, code: Callable[[str], str] = str, text: Callable[[str], str] = str
) -> str | None:
    """``Compiled for: sm_90; priced for 114 SMs (recorded on 132)``, each report's line (None: no kernel);
    ``code``/``text`` mark a target and the rest up for the report's format (markdown: md_code, md_text).

    Why every report says it: a recorded workload explained with --arch is a what-if for another GPU,
    and the registers, occupancy and predictions are that GPU's, not the recording's; --sm-count prices
    the launches for another part (a MIG slice, an H100 PCIe's 114 SMs), and a recorded launch priced for
    another GPU than the recording's says both (spec.sms.pricing_text). A user who passed either reads
    it in the terminal as in the files."""
    targets = sorted({item.spec.target for item in result.specs})
    if not targets:
        return None
    pricing = pricing_text([item.spec for item in result.specs])
    return "Compiled for: " + ", ".join(code(t) for t in targets) + (f"; {text(pricing)}" if pricing else "")


def triton_reexports_line(result: ExplainResult) -> str | None:
    """``Triton's own modules for names a library re-exports: vllm.triton_utils.tl -> triton.language, ...``
    (None: none). Why a report says it: such a kernel was compiled from its own source with the library's
    ``tl``/``triton`` bound to each toolchain's Triton (insitu/reexports.py), not with the library imported;
    a reader of the result should know that this is what was compiled."""
    names = sorted(
        {
            name
            for item in result.specs
            for r in item.results.values()
            if isinstance(r, KernelResult)
            for name in r.artifact.frontend.triton_reexports
        }
    )
    if not names:
        return None
    return "Triton's own modules for names a library re-exports (the library not imported): " + ", ".join(names)


@markdown_writer
def to_markdown(result: ExplainResult, findings: list[Finding], title: str = "ktriage explain") -> str:
    tcs = result.toolchains
    out = [f"# {md_text(title)}", ""]
    out.append(f"{TOOLCHAINS_HEAD}:")
    out += [f"- {toolchain_line(t, result, code=md_code, text=md_text)}" for t in tcs]
    if (compiled := compiled_for_line(result, code=md_code, text=md_text)) is not None:
        out += ["", compiled]
    if (reexported := triton_reexports_line(result)) is not None:
        out += ["", md_text(reexported)]
    out += ["", md_text(gate_line(result.threshold, result.model))]
    if result.model is not None:  # which model priced the predictions (--model, $KTRIAGE_MODEL, the shipped fit)
        out += ["", md_text(result.model.line())]
    sections, failed = finding_sections_with_lines(result, findings, _evidence_markdown)
    out += ["", "## Findings", ""]
    for title, items in sections:
        if title:
            out += [f"**{title}:**", ""]
        for line, where in items:
            out.append(f"- {md_text(line)}")
            out += [f"  - at {w}" for w in where]  # markdown already (_evidence_markdown)
        out.append("")
    out += [f"- **failed:** {md_text(f.summary())}" for f in failed]
    if not failed:
        out.pop()
    failures = [(item, r) for item in result.specs for r in item.failures]
    if failures:
        out += ["", f"## Failures (incomplete: {len(failures)} of {len(result.specs) * len(tcs)} cells)", ""]
        out += [_failure_line(item, r) for item, r in failures if not not_loaded(r) or r is item.failures[0]]
    out += ["", "## Per input", ""]
    shorts = short_labels([item.spec for item in result.specs])
    fulls = [input_label(item.spec.meta, item.spec.name) for item in result.specs]
    shortened = shorts != fulls  # the findings name inputs by their short labels: the full ones beside them
    places = input_places([item.spec for item in result.specs])
    header = ["input"] + (["arguments"] if shortened else []) + [md_code(t.spec) for t in tcs]
    header.append("changes [attribution]")
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "---|" * len(header))
    for item, place, full in zip(result.specs, places, fulls, strict=True):
        row = [md_text(place)] + ([md_text(full)] if shortened else [])
        row += [md_text(_cell(item.results.get(t.id))) for t in tcs]  # an error may quote `a | b`, or anything
        row.append("<br>".join(md_text(part) for part in _changes_text(item, len(tcs) > 2).split("\n")))
        out.append("| " + " | ".join(row) + " |")
    sentences = list(
        dict.fromkeys(
            f"{place}: {ch.sentence}"
            for item, place in zip(result.specs, places, strict=True)
            for c in item.comparisons
            for ch in c.changes
            if ch.metric in ("spill_store_bytes", "registers", "ctas_per_sm")
        )
    )
    if sentences:
        out += ["", "## Attribution detail (cross matrix, first kernels)", ""]
        out += [f"- {md_text(s)}" for s in sentences[:9]]
    out.append("")
    return "\n".join(out)


@markdown_writer
def _evidence_markdown(evidence: LineEvidence) -> str:
    """A line of evidence in markdown: its quoted source lines as code spans (they rendered as escaped
    backticks around plain text through md_text), the rest escaped. A writer of its own (inert is
    idempotent): what it writes is safe before to_markdown's pass too."""
    return evidence.text(code=md_code_span, plain=md_text)


def _failure_line(item: SpecExplain, failure: CompileFailure) -> str:
    """One bullet of the markdown's Failures: a failed cell with its toolchain, or a kernel that did not
    load once (its error is the spec file's, the same with every toolchain: explain/failures.NOT_LOADED)."""
    if not_loaded(failure):
        return f"- {md_text(item.spec.name)}: {md_text(not_loaded_line(one_line(failure.message, failure.kind), fix_for(failure)))}"
    return f"- {md_text(item.spec.name)} with {md_code(failure.toolchain.spec)}: {md_text(describe(failure))}"


def print_table(result: ExplainResult, console: Console, findings: list[Finding]) -> None:
    table = Table(title="ktriage explain", show_lines=False)
    add_column(table, "input", style="bold")
    add_columns(table, [toolchain_label(t) + (" (ref)" if i == 0 else "") for i, t in enumerate(result.toolchains)])
    add_column(table, "changes [attribution]")  # a header is markup too: "[attribution]" was a tag
    # the inputs as the findings name them (explain/labels.py); the full labels: markdown, HTML, JSON
    places = input_places([item.spec for item in result.specs])
    for item, place in zip(result.specs, places, strict=True):
        row = [place]
        cells = [_cell(item.results.get(t.id), compact=True) for t in result.toolchains]
        changes = escape(_changes_text(item, len(result.toolchains) > 2))
        row = [escape(cell) for cell in row] + [
            f"[red]{escape(cell)}[/]" if cell.startswith("error: ") else escape(cell) for cell in cells
        ]
        row.append(changes if changes == "no change" else f"[yellow]{changes}[/]")
        table.add_row(*row)
    console.print(table)
    console.print(f"{TOOLCHAINS_HEAD}:")
    for t in result.toolchains:
        console.print(f"  • {escape(toolchain_line(t, result))}")
    if (compiled := compiled_for_line(result)) is not None:
        console.print(escape(compiled))
    if (reexported := triton_reexports_line(result)) is not None:
        console.print(escape(reexported))
    console.print(escape(gate_line(result.threshold, result.model)))
    if result.model is not None:
        console.print(escape(result.model.line()))
    sections, failed = finding_sections_with_lines(result, findings)
    for title, items in sections:
        console.print(f"[bold]{escape(title or 'Findings')}[/]")
        for line, where in items:
            console.print(f"  • {escape(line)}")
            for w in where:
                console.print(f"      at {escape(w)}")
    if failed:
        console.print(
            f"[bold red]Failures[/] (incomplete: {len(result.failures)} of "
            f"{len(result.specs) * len(result.toolchains)} cells)"
        )
    for f in failed:
        console.print(f"  • [red]{escape(f.summary())}[/]")


FIXES_TITLE = "Fixes (verified by compiling, not timed)"
# the fixes tried that the cost model predicts slower than the kernel as compiled (Fix.recommended)
NOT_RECOMMENDED_TITLE = "Tried, not recommended (predicted slower than the kernel as compiled)"


def no_fix_line(fixes: Sequence[Fix]) -> str | None:
    """The line under the fixes' heading when none is recommended: none tried, or every one predicted slower."""
    if not fixes:
        return "No fix to propose for these findings."
    if not any(f.recommended for f in fixes):
        return "No fix to recommend: each one tried is predicted slower than the kernel as compiled (below)."
    return None


def print_fixes(fixes: Sequence[Fix], console: Console) -> None:
    """The fixes as the terminal shows them, in the findings' style (a bold heading, bullets): the
    markdown's ``**kind**`` and backticks printed raw read as noise in a terminal. Those predicted
    slower come apart, under their own heading: listed among the fixes, "+111 %" read as advice."""
    console.print(f"[bold]{FIXES_TITLE}[/]")
    if (none := no_fix_line(fixes)) is not None:
        console.print(f"  • {none}")
    for title, shown in fix_sections(fixes):
        if title:
            console.print(f"[bold]{title}[/]")
        for f in shown:
            mark = "[green]verified[/]" if f.verified else "[yellow]not verified[/]"
            console.print(
                f"  • [bold]{escape(f.kind)}[/] ({escape(f.kernel)}, {escape(f.toolchain)}): "
                f"{escape(f.description)} — {mark}: {escape(f.effect)}"
            )
            for c in f.caveats:
                console.print(f"      caveat: {escape(c)}")


def fix_sections(fixes: Sequence[Fix]) -> list[tuple[str, list[Fix]]]:
    """The recommended fixes (no heading of their own: the fixes' one), then those predicted slower."""
    slower = [f for f in fixes if not f.recommended]
    return [("", [f for f in fixes if f.recommended])] + ([(NOT_RECOMMENDED_TITLE, slower)] if slower else [])


@markdown_writer
def fixes_markdown(fixes: Sequence[Fix]) -> str:
    """The "## Fixes" section of the explain report (those predicted slower under a heading of their own)."""
    out = [f"## {FIXES_TITLE}", ""]
    if (none := no_fix_line(fixes)) is not None:
        out.append(f"- {none}")
    for title, shown in fix_sections(fixes):
        if title:
            out += ["", f"### {title}", ""]
        for f in shown:
            mark = "verified" if f.verified else "not verified"
            out.append(
                f"- **{md_text(f.kind)}** ({md_text(f.kernel)}, {md_code(f.toolchain)}): {md_text(f.description)} — {mark}: {md_text(f.effect)}"
            )
            out += [f"  - caveat: {md_text(c)}" for c in f.caveats]
    out.append("")
    return "\n".join(out)
