"""The bench plan: the variants of an input and the pairs the adaptive stop must decide."""

from __future__ import annotations

import json

from ktriage.bench.plan import BenchPlan, comparison_pairs, variant_name


def _plan(**kw) -> BenchPlan:
    base = dict(op="layer_norm", mode="bwd", input_ids=[7], native_backends=["torch_layer_norm", "liger_layer_norm"],
                artifact_backends=["liger_layer_norm"], baseline="torch_layer_norm", precision="fp32",
                toolchains=["tcA", "tcB", "tcC"])
    base.update(kw)
    return BenchPlan(**base)


def test_plan_variants_and_the_pairs_the_adaptive_stop_must_decide() -> None:
    plan = _plan()
    keys = plan.variant_keys(7, "(4096, 4608)")
    assert [variant_name(k) for k in keys] == ["torch_layer_norm", "liger_layer_norm", "liger_layer_norm@tcA",
                                               "liger_layer_norm@tcB", "liger_layer_norm@tcC"]
    pairs = comparison_pairs(plan, keys)
    assert ("torch_layer_norm", "liger_layer_norm@tcB") in pairs
    assert ("liger_layer_norm@tcA", "liger_layer_norm@tcC") in pairs
    assert ("torch_layer_norm", "torch_layer_norm") not in pairs
    assert BenchPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
