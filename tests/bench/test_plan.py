"""The bench plan: the variants of an input and the pairs the adaptive stop must decide."""

from __future__ import annotations

import json

from ktriage.bench.plan import BenchPlan, comparison_pairs, native_variants, variant_name


def _plan(**kw) -> BenchPlan:
    base = dict(
        op="layer_norm",
        mode="bwd",
        input_ids=[7],
        native_backends=["torch_layer_norm", "liger_layer_norm"],
        artifact_backends=["liger_layer_norm"],
        baseline="torch_layer_norm",
        precision="fp32",
        toolchains=["tcA", "tcB", "tcC"],
    )
    base.update(kw)
    return BenchPlan(**base)


def test_plan_variants_and_the_pairs_the_adaptive_stop_must_decide() -> None:
    plan = _plan()
    keys = plan.variant_keys(7, "(4096, 4608)")
    assert [variant_name(k) for k in keys] == [
        "torch_layer_norm",
        "liger_layer_norm",
        "liger_layer_norm@tcA",
        "liger_layer_norm@tcB",
        "liger_layer_norm@tcC",
    ]
    pairs = comparison_pairs(plan, keys)
    assert ("torch_layer_norm", "liger_layer_norm@tcB") in pairs
    assert ("liger_layer_norm@tcA", "liger_layer_norm@tcC") in pairs
    assert ("torch_layer_norm", "torch_layer_norm") not in pairs
    assert BenchPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan


def test_a_plan_asks_each_variant_its_protocol_unless_one_is_named() -> None:
    from ktriage.bench.worker import plan_protocols

    kinds = {
        "torch_layer_norm": (True, False),
        "liger_layer_norm@tcA": (False, True),
        "liger_layer_norm@tcB": (False, True),
    }
    est = {"torch_layer_norm": 0.1, "liger_layer_norm@tcA": 0.004, "liger_layer_norm@tcB": 0.75}
    auto = plan_protocols(_plan(timing={"mode": "auto"}), kinds, est)
    assert {n: p for n, (p, _) in auto.items()} == {
        "torch_layer_norm": "queued",
        "liger_layer_norm@tcA": "events",
        "liger_layer_norm@tcB": "events",
    }
    assert (
        auto["liger_layer_norm@tcA"][0] == "events"
    )  # one protocol for every toolchain of a backend: the slowest decides
    short = plan_protocols(_plan(), kinds, {**est, "liger_layer_norm@tcB": 0.006})
    assert short["liger_layer_norm@tcA"][0] == short["liger_layer_norm@tcB"][0] == "graph"
    assert plan_protocols(_plan(timing={}), kinds, est) == auto  # auto is the default
    assert plan_protocols(_plan(graph_below_ms=1.0), kinds, est)["liger_layer_norm@tcA"][0] == "graph"
    with_host = plan_protocols(_plan(), {**kinds, "liger_layer_norm": (True, False)}, {**est, "liger_layer_norm": 0.2})
    assert with_host["liger_layer_norm"][0] == "queued" and with_host["liger_layer_norm@tcB"][0] == "events"
    forced = plan_protocols(_plan(timing={"mode": "events"}), kinds, est)
    assert all(p == ("events", "--timing events") for p in forced.values())


def test_old_plans_without_the_new_fields_still_load() -> None:
    data = _plan().to_json()
    del data["graph_below_ms"]
    assert BenchPlan.from_json(data).graph_below_ms == 0.01


def test_the_hosts_own_copy_of_an_artifact_backend_runs_only_when_asked() -> None:
    chosen, native = (
        ["torch_layer_norm", "liger_layer_norm"],
        {"torch_layer_norm", "liger_layer_norm", "triton_layer_norm"},
    )
    assert native_variants(chosen, native, ["liger_layer_norm"], host_artifacts=False) == ["torch_layer_norm"]
    assert native_variants(chosen, native, ["liger_layer_norm"], host_artifacts=True) == chosen
    assert native_variants(chosen, native, [], host_artifacts=False) == chosen  # no toolchains: the host runs it
