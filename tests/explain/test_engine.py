"""explain end to end on the two real regressions: real Triton wheels, real ptxas, real cuobjdump
(the `ktriage explain` command: tests/cli/test_explain.py)."""

from __future__ import annotations

import pytest

from ktriage.catalog import expand_op
from ktriage.explain.engine import Explainer, KernelResult
from ktriage.explain.findings import collect_findings
from ktriage.report.explain import to_json, to_markdown

pytestmark = pytest.mark.slow


def _change(comparison, metric):
    return next(c for c in comparison.changes + comparison.opcode_changes if c.metric == metric)


def test_layer_norm_backward_spills_come_from_the_frontend(toolchain, shared_compiler) -> None:
    """Liger 0.5.10 layer_norm bwd, N=4608 (TritonBench input 7): Triton 3.4.0 spills much more."""
    specs = expand_op("liger.layer_norm", mode="bwd", target="sm_90", inputs=["7"])
    tcs = [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")]
    result = Explainer(shared_compiler).run(specs, tcs)
    item = result.specs[0]
    ref, new = (item.results[t.id] for t in tcs)
    assert isinstance(ref, KernelResult) and isinstance(new, KernelResult)
    assert ref.resources.spill_store_bytes is not None and new.resources.spill_store_bytes is not None
    assert new.resources.spill_store_bytes > 3 * ref.resources.spill_store_bytes > 0
    comparison = item.comparisons[0]
    spills = _change(comparison, "spill_store_bytes")
    assert spills.attribution == "frontend"
    # the cross matrix: the new PTX spills with the old ptxas too; the old PTX does not with the new one
    assert spills.cells.new_ptx_ref_ptxas is not None and spills.cells.new_ptx_ref_ptxas > 3 * spills.ref
    assert spills.cells.ref_ptx_new_ptxas == spills.ref
    assert _change(comparison, "STL").new > _change(comparison, "STL").ref
    assert comparison.attribution() == "frontend"
    # PTX virtual registers are reported apart: 3.3.1 declares an .f32 class, 3.4.0 does not
    assert "f32" in ref.resources.ptx_registers and "f32" not in new.resources.ptx_registers


def test_embedding_backward_atomics_come_from_ptxas(toolchain, shared_compiler) -> None:
    """Liger 0.5.10 embedding bwd with the Triton 3.4.0 frontend: ptxas 12.4 emits REDG, 12.8 ATOMG."""
    specs = expand_op("liger.embedding", mode="bwd", target="sm_90", inputs=["0"])
    tcs = [toolchain("triton==3.4.0,ptxas==12.4.131"), toolchain("triton==3.4.0")]
    result = Explainer(shared_compiler).run(specs, tcs)
    comparison = result.specs[0].comparisons[0]
    redg, atomg = _change(comparison, "REDG"), _change(comparison, "ATOMG")
    assert redg.ref > 0 and redg.new == 0
    assert atomg.ref == 0 and atomg.new == redg.ref
    assert redg.attribution == atomg.attribution == "ptxas"
    findings = collect_findings(result)
    assert any(f.metric == "ATOMG" and f.attribution == "ptxas" for f in findings)
    data = to_json(result, findings)
    assert data["kernels"][0]["comparisons"][0]["opcode_delta"].count("ATOMG +") == 1


def test_sweep_findings_group_the_layer_norm_cliff(toolchain, shared_compiler) -> None:
    """Inputs 5..8 (N=3584..5120) straddle the 3.4.0 cliff at 4096 -> 4608."""
    specs = expand_op("liger.layer_norm", mode="bwd", target="sm_90", inputs=["5", "6", "7", "8"])
    tcs = [toolchain("triton==3.3.1"), toolchain("triton==3.4.0")]
    result = Explainer(shared_compiler).run(specs, tcs)
    findings = [f for f in collect_findings(result) if f.metric == "spill_store_bytes"]
    assert len(findings) == 1
    assert findings[0].inputs == ["N=4608", "N=5120"] and findings[0].range == "N=4608..5120"
    assert findings[0].attribution == "frontend"
    md = to_markdown(result, findings)
    assert "N=4608..5120" in md and "frontend" in md
    # one bullet per regression: the spills, stack, registers and CTAs/SM of the cliff together
    from ktriage.explain.findings import group_findings

    groups = group_findings(collect_findings(result))
    assert groups[0].kind == "regression" and groups[0].inputs == ["N=4608", "N=5120"]
    assert {"spill_store_bytes", "stack_bytes", "registers", "ctas_per_sm"} <= {f.metric for f in groups[0].findings}
    full = to_markdown(result, collect_findings(result))
    assert "**Regressions, most likely impact first:**" in full
    assert f"- {groups[0].summary()}" in full and groups[0].summary().startswith("N=4608..5120 (2 inputs), ")
