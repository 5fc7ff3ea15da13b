"""Render an ExplainResult as JSON (for tools), markdown (for CI summaries and issues) or a rich table."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import ktriage
from ktriage.compile.compiler import CompileFailure
from ktriage.explain.engine import (
    Comparison,
    ExplainResult,
    KernelResult,
    SpecExplain,
    toolchain_label,
)
from ktriage.explain.findings import Finding, collect_findings, input_label


def _kernel_json(result: KernelResult | CompileFailure) -> dict[str, Any]:
    if isinstance(result, CompileFailure):
        return {"error": result.message, "stage": result.stage, "kind": result.kind}
    res, occ = result.resources, result.occupancy
    data = res.to_json()
    data["occupancy"] = occ.to_json()
    data["artifact"] = {
        "ptx": str(result.artifact.frontend.ptx_path),
        "cubin": str(result.artifact.cubin.cubin_path),
        "kernel_name": result.artifact.kernel_name,
        "triton_version": result.artifact.frontend.triton_version,
        "ptxas_version": result.artifact.cubin.ptxas_version,
        "lowered_ptx_version": result.artifact.cubin.lowered_ptx_version,
        "placeholder_imports": list(result.artifact.frontend.placeholder_imports),
    }
    return data


def _comparison_json(comparison: Comparison) -> dict[str, Any]:
    return {
        "reference": comparison.ref.toolchain.id,
        "toolchain": comparison.new.toolchain.id,
        "attribution": comparison.attribution(),
        "changes": [c.to_json() for c in comparison.changes],
        "opcode_changes": [c.to_json() for c in comparison.opcode_changes],
        "opcode_delta": opcode_delta_text(comparison),
        "cross_errors": comparison.cross_errors,
        "sass_detail": comparison.sass_detail.to_json(),
    }


def opcode_delta_text(comparison: Comparison, limit: int = 6) -> str:
    """``REDG -32, ATOMG +32`` for the largest opcode changes."""
    parts = [f"{c.metric} {int(c.new - c.ref):+d}" for c in comparison.opcode_changes[:limit]]
    return ", ".join(parts)


def to_json(result: ExplainResult, findings: list[Finding] | None = None) -> dict[str, Any]:
    findings = collect_findings(result) if findings is None else findings
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
                "reference": i == 0,
            }
            for i, t in enumerate(result.toolchains)
        ],
        "kernels": [
            {
                "name": item.spec.name,
                "input": input_label(item.spec.meta, item.spec.name),
                "target": item.spec.target,
                "spec": item.spec.to_json(),
                "results": {tid: _kernel_json(r) for tid, r in item.results.items()},
                "comparisons": [_comparison_json(c) for c in item.comparisons],
            }
            for item in result.specs
        ],
        "findings": [f.to_json() for f in findings],
    }


def _cell(result: KernelResult | CompileFailure | None, compact: bool = False) -> str:
    if result is None:
        return "-"
    if isinstance(result, CompileFailure):
        return f"error ({result.stage})"
    r, o = result.resources, result.occupancy
    spill = "?" if r.spill_store_bytes is None else f"{r.spill_store_bytes}"
    if compact:
        return f"{r.registers} regs, spill {spill} B, {o.ctas_per_sm} CTA/SM"
    return f"{r.registers} regs, spill {spill} B, stack {r.stack_bytes} B, {o.ctas_per_sm} CTA/SM"


def _changes_text(item: SpecExplain) -> str:
    lines = []
    for c in item.comparisons:
        moved = [f"{ch.metric} {ch.ref:g}->{ch.new:g}" for ch in c.changes if ch.metric != "spill_load_bytes"]
        ops = opcode_delta_text(c, limit=4)
        if not moved and not ops:
            continue
        text = "; ".join(moved + ([ops] if ops else []))
        lines.append(f"[{c.attribution()}] {text}")
    return "\n".join(lines) if lines else "no change"


def to_markdown(result: ExplainResult, findings: list[Finding] | None = None, title: str = "ktriage explain") -> str:
    findings = collect_findings(result) if findings is None else findings
    tcs = result.toolchains
    out = [f"# {title}", ""]
    out.append("Toolchains (the first is the reference):")
    out += [f"- `{t.spec}`: Triton {t.triton_version}, ptxas {t.ptxas_version}"
            + (f" {' '.join(t.ptxas_options)}" if t.ptxas_options else "") + f" (`{t.id}`)" for t in tcs]
    out += ["", "## Findings", ""]
    out += [f"- {f.summary()}" for f in findings] or ["- No resource changes between the toolchains."]
    failures = [(item, r) for item in result.specs for r in item.results.values() if isinstance(r, CompileFailure)]
    if failures:
        out += ["", "## Failures", ""]
        out += [f"- {item.spec.name} with `{r.toolchain.spec}` ({r.stage}): {r.message.splitlines()[0] if r.message else ''}"
                for item, r in failures]
    out += ["", "## Per input", ""]
    header = ["input"] + [f"`{t.spec}`" for t in tcs] + ["changes [attribution]"]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "---|" * len(header))
    for item in result.specs:
        row = [input_label(item.spec.meta, item.spec.name)]
        row += [_cell(item.results.get(t.id)) for t in tcs]
        row.append(_changes_text(item).replace("\n", "<br>"))
        out.append("| " + " | ".join(row) + " |")
    sentences = list(dict.fromkeys(
        f"{input_label(item.spec.meta, item.spec.name)}: {ch.sentence}"
        for item in result.specs for c in item.comparisons for ch in c.changes
        if ch.metric in ("spill_store_bytes", "registers", "ctas_per_sm")))
    if sentences:
        out += ["", "## Attribution detail (cross matrix, first kernels)", ""]
        out += [f"- {s}" for s in sentences[:9]]
    out.append("")
    return "\n".join(out)


def print_table(result: ExplainResult, console: Console, findings: list[Finding] | None = None) -> None:
    findings = collect_findings(result) if findings is None else findings
    table = Table(title="ktriage explain", show_lines=False)
    table.add_column("input", style="bold")
    for i, t in enumerate(result.toolchains):
        table.add_column(toolchain_label(t) + (" (ref)" if i == 0 else ""))
    table.add_column("changes [attribution]")
    for item in result.specs:
        row = [input_label(item.spec.meta, item.spec.name)]
        row += [_cell(item.results.get(t.id), compact=True) for t in result.toolchains]
        changes = escape(_changes_text(item))
        row = [escape(cell) for cell in row]
        row.append(changes if changes == "no change" else f"[yellow]{changes}[/]")
        table.add_row(*row)
    console.print(table)
    console.print("[bold]Findings[/]")
    if not findings:
        console.print("  no resource changes between the toolchains")
    for f in findings:
        console.print(f"  • {escape(f.summary())}")
