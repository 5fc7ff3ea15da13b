"""Which metric triage's compile-only bisect tests: one the cause's evidence moved (pure logic)."""

from __future__ import annotations

from ktriage.triage.model import Cause
from ktriage.triage.pipeline import bisect_metric


def test_the_bisected_metric_is_one_the_evidence_moved() -> None:
    # Liger rms_norm bwd at H=16384, 3.3.1 -> 3.6.0 on the H200 (benchmarks/triage/recorded_pairs): "spills"
    # from LDL counts and the stack, the spill stores unchanged: bisecting spill_store_bytes found no difference
    assert (
        bisect_metric(Cause("spills", "frontend", "", ["stack_bytes", "LDL", "main_loop_instructions"])) == "sass:LDL"
    )
    assert (
        bisect_metric(Cause("spills", "frontend", "", ["spill_store_bytes", "stack_bytes", "STL"]))
        == "spill_store_bytes"
    )
    assert (
        bisect_metric(Cause("REDG→ATOMG", "ptxas", "", ["instructions:atomic"])) == "sass:ATOMG"
    )  # the kind's default
    assert bisect_metric(Cause("occupancy", "frontend", "", ["ctas_per_sm"])) == "ctas_per_sm"
