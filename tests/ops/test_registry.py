"""The operator registry: one object per op, reached by its TritonBench name and its catalog names."""

from __future__ import annotations

from ktriage.catalog import catalog_op, list_ops
from ktriage.ops import registry
from ktriage.workload.ops.opdef import bench_op
from ktriage.workload.ops.replay import REPLAYS


def test_both_names_resolve_to_one_operator() -> None:
    op = registry.operator("layer_norm")
    assert op is not None
    for name in (
        "liger.layer_norm",
        "liger.layer_norm@0.5.10",
        "liger.layer_norm@0.8.5",
        "liger.layer_norm@latest",
        "tutorial.layer_norm",
    ):
        assert registry.operator(name) is op
    assert bench_op("layer_norm") is op
    assert registry.operator("liger.embedding") is bench_op("embedding")
    assert registry.operator("nope") is None


def test_catalog_views_come_from_the_operator() -> None:
    op = registry.operator("layer_norm")
    assert op is not None
    liger = op.kernels[0]
    info = catalog_op("liger.layer_norm@latest")
    assert info.name == "liger.layer_norm@0.8.5" and info.package == "liger-kernel==0.8.5"
    assert info.kernels == dict(liger.kernels) and info.num_inputs == len(op.inputs()) == 30
    assert catalog_op("tutorial.layer_norm").num_inputs == 5  # the tutorial kernels' own sweep
    assert [o.name for o in list_ops()][:3] == ["liger.layer_norm", "liger.rms_norm", "liger.embedding"]


def test_bench_facts_and_replays_are_the_operators() -> None:
    own = {
        "layer_norm": "torch_layer_norm",
        "rms_norm": "llama_rms",  # not benched here, but an Operator: its baseline is said there, once
        "embedding": "torch_embedding",
        "rope": "apply_rotary_pos_emb",
    }
    assert registry.default_baselines() == {**registry.TRITONBENCH_BASELINES, **own}
    assert not set(own) & set(registry.TRITONBENCH_BASELINES)  # one home per op's baseline
    assert [o.name for o in registry.bench_operators()] == ["layer_norm", "embedding", "rope"]
    assert list(REPLAYS) == ["liger_layer_norm", "liger_embedding", "triton_layer_norm"]
    assert bench_op("layer_norm").catalog_ops == {
        "liger_layer_norm": "liger.layer_norm",
        "triton_layer_norm": "tutorial.layer_norm",
    }
    # tune times candidates only where the replay runs the kernels on the bench op's own sweep
    timed = {name: t[0].name for name in registry.CATALOG if (t := registry.bench_target(name)) is not None}
    assert timed == {"liger.layer_norm": "layer_norm", "liger.embedding": "embedding"}


def test_rms_norm_is_catalog_only() -> None:
    op = registry.operator("liger.rms_norm")
    assert op is not None and op.name == "rms_norm" and not op.backends
    assert "rms_norm" not in {o.name for o in registry.bench_operators()}
    # TritonBench's facts (operators/rms_norm/operator.py), so triage reads its files: x_val (M, H), the
    # baseline, and liger_rms standing for the catalog's kernels, with no replay (nothing here can time them)
    assert (op.x_label, op.x_keys, op.baseline) == ("(M, H)", ("M", "N"), "llama_rms")
    assert op.x_val_text(op.inputs()[4]) == "(2048, 16384)"
    assert op.catalog_ops == {"liger_rms": "liger.rms_norm"} and op.artifact_backends == ()
    assert "liger_rms" not in REPLAYS and registry.by_backend("liger_rms") is None
    assert registry.backend_operators()["liger_rms"] == "rms_norm"
