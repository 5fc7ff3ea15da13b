"""GPU host only: every native backend of each op matches the baseline (input 0, fwd and bwd), and
the artifact replays from a bundle built on a CPU machine match torch's results.

Needs torch with CUDA, liger-kernel importable (the carried wheel), and for the replay test a bundle:
on the CPU machine
    ktriage bench --op layer_norm --bwd --only liger_layer_norm --input-id 0 --num-inputs 8 \
        -t triton==3.4.0 --compile-only --bundle bundles/gpu-test-layer_norm-bwd
(and the same with --op embedding --only liger_embedding --num-inputs 9 for embedding), then on the GPU host
    KTRIAGE_WORKLOAD_BUNDLES=bundles/gpu-test-layer_norm-bwd:bundles/gpu-test-embedding-bwd pytest -m gpu tests/gpu/test_workload_gpu.py
torch.compile backends use compile_mode="default" here (TritonBench's max-autotune takes minutes).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


# Without a GPU tests/conftest.py skips every test here (the `gpu` marker).

NATIVE = [
    ("layer_norm", "torch_compile_layer_norm"),
    ("layer_norm", "liger_layer_norm"),
    ("layer_norm", "triton_layer_norm"),
    ("embedding", "liger_embedding"),
    ("embedding", "torch_compile_embedding"),
    ("rope", "liger_rotary_pos_emb"),
    ("rope", "torch_compile_rotary_pos_emb_full_op"),
]


@pytest.mark.parametrize("mode", ["fwd", "bwd"])
@pytest.mark.parametrize(("op", "backend"), NATIVE, ids=[b for _, b in NATIVE])
def test_native_backend_matches_baseline(op: str, backend: str, mode: str) -> None:
    import torch

    from ktriage.workload.ops.backends import check_outputs, get_backend, make_input
    from ktriage.workload.ops.opdef import bench_op

    opdef = bench_op(op)
    inp = make_input(op, opdef.inputs()[0], device="cuda")
    base = get_backend(op, opdef.baseline)
    base.prepare(inp, mode)()
    ref = base.outputs()
    cand = get_backend(op, backend, compile_mode="default")
    if cand.fwd_only and mode != "fwd":
        pytest.skip(f"{backend} is forward only")
    timed = cand.prepare(inp, mode)
    for _ in range(3):
        for t in cand.grad_to_none():
            t.grad = None
        timed()
    torch.cuda.synchronize()
    acc = check_outputs(ref, cand.outputs(), precision=inp.precision)
    assert acc.passed, acc


@pytest.mark.parametrize(
    ("op", "backend", "input_id"), [("layer_norm", "liger_layer_norm", 7), ("embedding", "liger_embedding", 8)]
)
def test_recorded_launches_equal_the_catalog_specs(op: str, backend: str, input_id: int) -> None:
    """One real run of the library under the JIT hook gives the catalog's spec for each kernel."""
    import torch

    from ktriage.workload.ops.replay import catalog_spec
    from ktriage.workload.recorded.in_process import record_backend

    sm = torch.cuda.get_device_properties(0).multi_processor_count
    specs = record_backend(op, backend, input_id, "fwd_bwd")
    case = __import__("ktriage.workload.ops.opdef", fromlist=["bench_op"]).bench_op(op).inputs()[input_id]
    by_fn = {s.source_function(): s for s in specs}
    for role in ("fwd", "bwd"):
        want = catalog_spec(backend, case, role, target=specs[0].target, sm_count=sm)
        got = by_fn[want.source_function()]
        assert (
            got.signature,
            got.constexprs,
            set(got.divisible_by_16),
            set(got.equal_to_1),
            got.num_warps,
            got.grid,
        ) == (
            want.signature,
            want.constexprs,
            set(want.divisible_by_16),
            set(want.equal_to_1),
            want.num_warps,
            want.grid,
        )


# ------------------------------------------------------------------ artifact replay from a bundle
def _bundles() -> list[Path]:
    text = os.environ.get("KTRIAGE_WORKLOAD_BUNDLES", "")
    return [Path(p) for p in text.split(os.pathsep) if p]


@pytest.mark.skipif(
    not _bundles(), reason="set KTRIAGE_WORKLOAD_BUNDLES to bundles built on the CPU machine (see the module docstring)"
)
def test_artifact_replays_from_bundles_match_torch() -> None:
    import torch

    from ktriage.measure.loader import runner_loader
    from ktriage.workload.bundles.format import BundleArtifact, load_bundle
    from ktriage.workload.bundles.launch import make_launcher
    from ktriage.workload.ops.backends import check_outputs, get_backend, make_input
    from ktriage.workload.ops.opdef import bench_op
    from ktriage.workload.ops.replay import ROLES_BY_MODE, artifact_backend

    checked = []
    for path in _bundles():
        bundle = load_bundle(path)
        opdef = bench_op(bundle.op)
        for tc_id in bundle.toolchain_ids():
            launch = make_launcher(bundle, tc_id, runner_loader())  # ktriage.measure.launch.LoadedKernel
            for case in bundle.input_cases():
                inp = make_input(bundle.op, case, precision=bundle.precision, device="cuda")
                base = get_backend(bundle.op, opdef.baseline)
                base.prepare(inp, bundle.mode)()
                ref = base.outputs()
                for name in bundle.backends:
                    keys = [bundle.kernel_key(name, case.id, r) for r in ROLES_BY_MODE[bundle.mode]]
                    if any(not isinstance(bundle.artifact(k, tc_id), BundleArtifact) for k in keys):
                        continue  # a compile failure is reported by the runner, not replayed
                    replay = artifact_backend(name, launch=launch, specs=bundle.spec_source(), timing="tritonbench")
                    timed = replay.prepare(inp, bundle.mode)
                    timed()
                    timed()
                    torch.cuda.synchronize()
                    acc = check_outputs(ref, replay.outputs(), precision=bundle.precision)
                    assert acc.passed, (path, tc_id, case, name, acc)
                    checked.append((bundle.op, bundle.mode, name, tc_id, case.id))
    out = os.environ.get("KTRIAGE_GPU_OUT")
    if out:
        import json

        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "workload_replays.json").write_text(json.dumps(checked, indent=1))
    assert checked, "no replay ran (every kernel of the bundles failed to compile?)"
