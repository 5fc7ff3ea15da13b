"""A refusal that reaches a Python caller names the keyword it passes as well as the command's flag
(ktriage.errors.option): kt.triage(limit=3) was told "--limit 3 applies to the GPU re-run (--bundle,
...)", options a library caller cannot pass by those names. One test per verb family, through kt.*."""

from __future__ import annotations

from pathlib import Path

import pytest

import ktriage.api as kt
from ktriage.errors import KtriageError, option

ROOT = Path(__file__).parents[2]
AA = ROOT / "benchmarks/triage/tritonbench_aa"


def test_option_spells_the_keyword_and_the_flag() -> None:
    """Pure wording: the one helper every such message goes through."""
    assert option("limit", "--limit") == "limit (--limit)"
    assert option("limit", "--limit", 20) == "limit=20 (--limit 20)"
    assert option("max_time", "--max-time", 3.0) == "max_time=3 (--max-time 3)"
    assert option("precision", "--precision", "bf16") == "precision='bf16' (--precision bf16)"
    assert option("measure", "--measure", True) == "measure=True (--measure)"
    assert option("op") == "op"


def test_triage_names_limit_and_max_time_as_keywords() -> None:
    old, new = AA / "layer_norm_bwd_run1.csv", AA / "layer_norm_bwd_run2.csv"
    with pytest.raises(KtriageError) as limit:
        kt.triage(old=old, new=new, limit=3)
    assert limit.value.problem.startswith("limit=3 (--limit 3) applies to the GPU re-run (bundle (--bundle), ")
    assert "workloads (--workload)" in limit.value.problem
    assert "add bundle='DIR' (--bundle DIR), or measure=True (--measure)" in (limit.value.fix or "")
    assert "drop limit (--limit)" in (limit.value.fix or "")
    with pytest.raises(KtriageError) as max_time:
        kt.triage(old=old, new=new, max_time=3)
    assert max_time.value.problem.startswith("max_time=3 (--max-time 3) sets the sampling")
    assert (max_time.value.fix or "").startswith("drop max_time (--max-time); or add bundle='DIR' (--bundle DIR)")


def test_bisect_names_gpus_and_metric_as_keywords() -> None:
    with pytest.raises(KtriageError) as refused:
        kt.bisect(source="ptxas", good="12.4.131", bad="12.8.93", op="liger.embedding", metric="sass:ATOMG", gpus="all")
    assert refused.value.problem == (
        "gpus (--gpus) applies to a timed bisect (metric='latency' (--metric latency)), "
        "not metric='sass:ATOMG' (--metric sass:ATOMG)"
    )
    assert refused.value.fix == (
        "leave gpus (--gpus) out: a compile-only bisect uses no GPU (workers (--workers) parallelizes it)"
    )


def test_bench_names_op_and_timing_as_keywords() -> None:
    with pytest.raises(KtriageError) as no_op:
        kt.bench()
    assert no_op.value.problem == "no op (--op) given"
    assert (no_op.value.fix or "").startswith("e.g. op='layer_norm' (--op layer_norm)")
    with pytest.raises(KtriageError) as timing:
        kt.bench(op="layer_norm", timing="nope")
    assert timing.value.problem == "unknown timing='nope' (--timing nope)"
